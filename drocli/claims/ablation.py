"""Ablations and revisions beside the claims they re-test (issue 55).

An ablation is a profile of a spec that changes one setting we chose and re-tests the paper
profile's claims under it, on fresh seeds, with its own plan: each of its claims names the
claim it re-tests in `ablates: {claim, changes}`. A revision corrects a defective test the
same way: a new study on fresh seeds, registered before it runs, whose claim names the claim
it corrects in `revises: {claim, changes}`. A report over the folders shows, on each page,
the two verdicts side by side: whether a negative verdict that a setting or a test explains
turns when the setting is the paper's, or the test reads the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

FIELDS = {"ablates": "ablation", "revises": "revision"}   # claim field -> kind of re-test


@dataclass(frozen=True)
class Pair:
    experiment: str
    claim: str            # the re-testing claim
    ablates: str          # the paper profile's claim it re-tests
    changes: str
    verdict: str          # the re-testing claim's verdict, as shown
    original: str | None  # the paper profile's verdict, None when its folder is not reported
    page: str             # the re-testing claim's page (results folder name)
    original_page: str | None
    kind: str = "ablation"   # ablation (a setting changed) or revision (the test corrected)


def link(pages: list) -> dict[str, list[Pair]]:
    """page name -> the pairs it shows: a re-testing page its own claims, the paper
    profile's page every ablation and revision of its claims. `pages` have name, experiment,
    profile and claims (ClaimResult); the paper profile's page is the one of the same
    experiment whose profile is `paper`."""
    from drocli.claims.verdict_text import tag

    papers = {p.experiment: p for p in pages if p.profile == "paper"}
    out: dict[str, list[Pair]] = {}
    for p in pages:
        for c in p.claims:
            for field, kind in FIELDS.items():
                ref = getattr(c, field, None)
                if not ref:
                    continue
                base = papers.get(p.experiment)
                orig = next((o for o in base.claims if o.id == ref["claim"]), None) \
                    if base is not None else None
                pair = Pair(p.experiment, c.id, ref["claim"], ref["changes"], tag(c),
                            tag(orig) if orig is not None else None, p.name,
                            base.name if base is not None else None, kind)
                out.setdefault(p.name, []).append(pair)
                if base is not None and base.name != p.name:
                    out.setdefault(base.name, []).append(pair)
    return out


HEADER = ("paper profile's claim", "its verdict", "re-tested by", "kind", "its verdict",
          "what changes")


def rows(pairs: list[Pair]) -> list[tuple[str, ...]]:
    """The table's rows, in HEADER's order (folder names beside the verdicts)."""
    return [(p.ablates, f"{p.original} ({p.original_page})" if p.original is not None
             else "its folder is not in this report", p.claim, p.kind,
             f"{p.verdict} ({p.page})", p.changes) for p in pairs]
