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
    ablates: str          # the claim it re-tests (the paper profile's, or a revision's)
    changes: str
    verdict: str          # the re-testing claim's verdict, as shown
    original: str | None  # the paper profile's verdict, None when its folder is not reported
    page: str             # the re-testing claim's page (results folder name)
    original_page: str | None
    kind: str = "ablation"   # ablation (a setting changed) or revision (the test corrected)


def link(pages: list) -> dict[str, list[Pair]]:
    """page name -> the pairs it shows: a re-testing page its own claims, the page that
    judged the re-tested claim every ablation and revision of it. `pages` have name,
    experiment, profile and claims (ClaimResult). A claim is paired only where it was judged
    (a study that also judges the paper's claims skips the other studies' own); the re-tested
    claim's verdict comes from the page of its experiment that judged it, the paper
    profile's first (a second revision re-tests the first revision's claim)."""
    from drocli.claims.verdict_text import tag

    out: dict[str, list[Pair]] = {}
    for p in pages:
        for c in p.claims:
            for field, kind in FIELDS.items():
                ref = getattr(c, field, None)
                if not ref or c.status == "skipped":
                    continue
                base, orig = _judged(pages, p.experiment, ref["claim"])
                pair = Pair(p.experiment, c.id, ref["claim"], ref["changes"], tag(c),
                            tag(orig) if orig is not None else None, p.name,
                            base.name if base is not None else None, kind)
                out.setdefault(p.name, []).append(pair)
                if base is not None and base.name != p.name:
                    out.setdefault(base.name, []).append(pair)
    return out


def _judged(pages: list, experiment: str, claim_id: str):
    """(page, claim) where the experiment's claim `claim_id` was judged, the paper profile's
    page first; (None, None) when no reported page judged it."""
    mine = sorted((p for p in pages if p.experiment == experiment),
                  key=lambda p: p.profile != "paper")
    for p in mine:
        for o in p.claims:
            if o.id == claim_id and o.status != "skipped":
                return p, o
    return None, None


HEADER = ("the claim re-tested", "its verdict", "re-tested by", "kind", "its verdict",
          "what changes")


def rows(pairs: list[Pair]) -> list[tuple[str, ...]]:
    """The table's rows, in HEADER's order (folder names beside the verdicts)."""
    return [(p.ablates, f"{p.original} ({p.original_page})" if p.original is not None
             else "its folder is not in this report", p.claim, p.kind,
             f"{p.verdict} ({p.page})", p.changes) for p in pairs]
