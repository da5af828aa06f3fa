"""Ablations beside the claims they re-test (issue 55).

An ablation is a profile of a spec that changes one setting we chose and re-tests the paper
profile's claims under it, on fresh seeds, with its own plan: each of its claims names the
claim it re-tests in `ablates: {claim, changes}`. A report over both folders shows, on each
page, the two verdicts side by side: whether the negative verdict a setting explains turns
when that setting is the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    experiment: str
    claim: str            # the ablation's claim
    ablates: str          # the paper profile's claim it re-tests
    changes: str
    verdict: str          # the ablation's verdict, as shown
    original: str | None  # the paper profile's verdict, None when its folder is not reported
    page: str             # the ablation's page (results folder name)
    original_page: str | None


def link(pages: list) -> dict[str, list[Pair]]:
    """page name -> the pairs it shows: an ablation page its own claims, the paper profile's
    page every ablation of its claims. `pages` have name, experiment, profile and claims
    (ClaimResult); the paper profile's page is the one of the same experiment whose
    profile is `paper`."""
    from drocli.claims.verdict_text import tag

    papers = {p.experiment: p for p in pages if p.profile == "paper"}
    out: dict[str, list[Pair]] = {}
    for p in pages:
        for c in p.claims:
            if not c.ablates:
                continue
            base = papers.get(p.experiment)
            orig = next((o for o in base.claims if o.id == c.ablates["claim"]), None) \
                if base is not None else None
            pair = Pair(p.experiment, c.id, c.ablates["claim"], c.ablates["changes"], tag(c),
                        tag(orig) if orig is not None else None, p.name,
                        base.name if base is not None else None)
            out.setdefault(p.name, []).append(pair)
            if base is not None and base.name != p.name:
                out.setdefault(base.name, []).append(pair)
    return out


HEADER = ("paper profile's claim", "its verdict", "ablation's claim", "ablation's verdict",
          "what the ablation changes")


def rows(pairs: list[Pair]) -> list[tuple[str, ...]]:
    """The table's rows, in HEADER's order (folder names beside the verdicts)."""
    return [(p.ablates, f"{p.original} ({p.original_page})" if p.original is not None
             else "its folder is not in this report", p.claim, f"{p.verdict} ({p.page})",
             p.changes) for p in pairs]
