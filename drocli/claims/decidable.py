"""Which looks of a sequential plan can decide a claim at all (issue 55).

Every verdict also needs an exact sign-flip test, whose smallest p-value is 2^-n over n
paired seeds (2^-(n//2) for the seed spread, which pairs seeds). At a look where that
floor lies above the level the plan spends there, a side can never reject, however large
the effect: with both sides so, the look cannot decide the claim. `run --dry-run` and
`check --plan` name those looks, computed from the claim's confidence, its others, its
panels and the plan's levels alone (no data).
"""

from __future__ import annotations


def floor_p(kind: str, n: int) -> float:
    """The smallest p-value the claim's sign-flip test can reach on n paired seeds."""
    return 2.0 ** -(n // 2 if kind == "spread_below" else n)


def side_alphas(claim) -> tuple[float, float]:
    """(holds, refutes): the one-sided error each side of one comparison is tested at
    before a plan splits it: holds at (1 - confidence) / 2, per panel / (P - needed + 1)
    with `panels_needed`; refutes Bonferroni over the others and the panels."""
    alpha = (1.0 - claim.confidence) / 2
    panels = len(claim.panels or []) or 1
    needed = claim.panels_needed or panels
    hold = alpha / (panels - needed + 1) if claim.panels else alpha
    return hold, alpha / (max(1, len(claim.others)) * panels)


def undecidable_looks(claim, looks: list[int]) -> list[tuple[int, int, str]]:
    """(look number, seeds, which sides cannot reject) for each look of the plan where at
    least one side's level lies below the sign-flip floor; `which` is 'either side' when
    the look cannot decide at all."""
    from drocli.claims.sequential import at_look, levels

    hold_alpha, refute_alpha = side_alphas(claim)
    out = []
    for j, n in enumerate(looks):
        with at_look(looks, j):
            hold, refute = levels(hold_alpha), levels(refute_alpha)
        floor = floor_p(claim.kind, n)
        blocked = [side for side, lv in (("holds", hold.guard), ("refutes", refute.guard))
                   if floor > lv]
        if blocked:
            out.append((j + 1, n, "either side" if len(blocked) == 2 else blocked[0]))
    return out


WORDS = {"either side": "cannot decide", "holds": "can never hold",
         "refutes": "can never be refuted"}


def plan_notes(claims, looks: list[int]) -> list[str]:
    """One line per claim with a look that cannot decide it (or one side of it)."""
    lines = []
    for c in claims:
        if getattr(c, "opaque", False):
            continue
        bad = undecidable_looks(c, looks)
        if not bad:
            continue
        what = "; ".join(f"look {j} ({n} seeds): {WORDS[which]}" for j, n, which in bad)
        pairs = " (the seed spread pairs seeds)" if c.kind == "spread_below" else ""
        lines.append(f"{c.id}: {what}: the smallest sign-flip p-value, 2^-n{pairs}, lies "
                     "above the level the plan spends there")
    return lines
