"""Claim kind `spread_below`: the spread over seeds of the final value (sample standard
deviation), solver smaller: "the standard deviation is reduced" (paper 002, Sec. 5)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from drocli.claims.base import ClaimBase
from drocli.claims.judge import _final_stats, _relation, effects_text
from drocli.plugins import registry


class SpreadBelow(ClaimBase):
    """Seed standard deviation of the final values: solver smaller than every other."""

    kind: Literal["spread_below"]

    def quantity(self) -> str:
        return f"seed standard deviation of the final {self.metric}"

    def relation(self) -> str:
        return "smaller than " + ", ".join(self.others)

    def unit(self) -> str:
        return "ln of the ratio of seed stds"

    def effect_text(self) -> str:
        return (f"effect = ln(seed std of the other's final {self.metric} / that of "
                f"{self.solver}'s), no unit (+0.69: the other's spread is twice "
                f"{self.solver}'s); positive favours {self.solver}; judged by exact p-values "
                f"(a small 'for': {self.solver} spreads less; a small 'against': more)")

    def procedure(self) -> str:
        return (f"exact sign-flip test on log(std other / std solver) at {self.confidence:.0%}"
                " (a verdict needs 12 paired seeds: it pairs seeds)" + self.panels_clause())


@registry.claim("spread_below", params=SpreadBelow,
                description="seed std of the final value: solver smaller than every other")
def spread_below(claim: SpreadBelow, data):
    """Sample std over seeds of each label's final value: solver below every other. Judged
    on log(std_other / std_solver) over the seeds both labels ran, by the exact sign-flip
    test of `drocli.claims.inference` on differences within pairs of seeds (a verdict at
    95 % needs 12 paired seeds)."""
    from drocli.claims.inference import diverged_guard, family, note, spread_effect

    raw = _final_stats(data, claim)
    note(raw)
    stats = {k: v[np.isfinite(v.to_numpy(dtype=float))] for k, v in raw.items()}
    sd = {k: float(v.std(ddof=1)) if len(v) > 1 else math.nan for k, v in stats.items()}
    effects = {}
    k = family(claim, len(claim.others))
    for o in claim.others:
        common = [s for s in stats[claim.solver].index if s in set(stats[o].index)]
        a = stats[claim.solver].loc[common].to_numpy(dtype=float)
        b = stats[o].loc[common].to_numpy(dtype=float)
        effects[o] = diverged_guard(spread_effect(a, b, confidence=claim.confidence, k=k),
                                    raw[claim.solver], raw[o], claim.solver, o)
    n = max((e["n"] for e in effects.values()), default=0)
    ok = {o: sd[claim.solver] < sd[o] for o in claim.others}
    line = _relation(claim.solver, sd[claim.solver], {o: sd[o] for o in claim.others}, ok, "<")
    tail = (f"seed std of the final value over {n} paired seed(s); effect = log(std "
            f"ratio); " + effects_text(effects))
    return all(ok.values()), f"spread: {line} ({tail})", sd, effects
