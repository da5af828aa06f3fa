"""A claim judged at the looks of a sequential plan: the first look that decides gives the
verdict (drocli.claims.sequential); without a plan, one look on every seed."""

from __future__ import annotations

from drocli.claims.base import ClaimBase, judged_on
from drocli.claims.evaluate_one import evaluate_claim
from drocli.claims.result import ClaimResult


def rows_of_seeds(rows, want):
    """The rows whose seed, as text, is in `want`."""
    seed = rows["seed"]
    return rows[seed.isin([v for v in seed.unique() if str(v) in want])]


def evaluate_at_looks(records, claim: ClaimBase, profile: str, plan: dict | None,
                      of_seeds=None) -> ClaimResult:
    """evaluate_claim, at the looks of a sequential plan ({looks, order}: the seed counts
    and the seeds in the order they are added) reached by the records: the first look
    that decides gives the verdict (drocli.claims.sequential); without a plan, one look on
    every seed. `of_seeds(records, seeds)` takes a look's rows (default `rows_of_seeds`;
    evaluate_claims keeps each look's rows for the claims that share them)."""
    if not plan or not judged_on(claim.profiles, profile):
        return evaluate_claim(records, claim, profile)
    from drocli.claims.sequential import at_look

    looks, order = list(plan["looks"]), list(plan["order"])
    have = {str(s) for s in records["seed"].unique()} if "seed" in records.columns else set()
    last = None
    for j, n in enumerate(looks):
        want = {str(s) for s in order[:n]}
        if not want <= have:
            break
        sub = (of_seeds or rows_of_seeds)(records, frozenset(want))
        with at_look(looks, j):
            res = evaluate_claim(sub, claim, profile)
        res.look = {"look": j + 1, "of": len(looks), "seeds": n, "looks": looks}
        last = res
        if res.status != "inconclusive":
            break
    if last is None:
        reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
            else profile in claim.reproduced
        last = ClaimResult(claim.id, claim.text, claim.kind, "inconclusive",
                           f"the plan's first look ({looks[0]} seeds: "
                           f"{', '.join(map(str, order[:looks[0]][:6]))}...) is not reached "
                           "in the records", reproduced, source=claim.source)
        last.look = {"look": 0, "of": len(looks), "seeds": 0, "looks": looks}
        return last
    j = last.look["look"]
    where = (f"decided at look {j} of {len(looks)} ({last.look['seeds']} seeds)"
             if last.status not in ("inconclusive", "skipped") else
             f"undecided at look {j} of {len(looks)} ({last.look['seeds']} seeds)"
             + (": the last look" if j == len(looks) else f"; next look at {looks[j]} seeds"))
    if last.status != "skipped":
        last.detail = f"{last.detail} [{where}]"
    return last
