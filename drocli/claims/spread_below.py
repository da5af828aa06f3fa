"""Claim kind `spread_below`: the spread over seeds of the final value (sample standard
deviation), solver smaller: "the standard deviation is reduced" (paper 002, Sec. 5)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from drocli import registry
from drocli.claims import ClaimBase
from drocli.claims.judge import _final_stats, _relation, effects_text


class SpreadBelow(ClaimBase):
    """Seed standard deviation of the final values: solver smaller than every other."""

    kind: Literal["spread_below"]


@registry.claim("spread_below", params=SpreadBelow,
                description="seed std of the final value: solver smaller than every other")
def spread_below(claim: SpreadBelow, data):
    """Sample std over seeds of each label's final value: solver below every other. Judged
    on log(std_other / std_solver) with a seed bootstrap (paired when the seeds match)."""
    from drocli.claims.bootstrap import DRAWS, RNG_SEED, bootstrap_effects, resample_weights

    stats = {k: v.dropna() for k, v in _final_stats(data, claim).items()}
    sd = {k: float(v.std(ddof=1)) if len(v) > 1 else math.nan for k, v in stats.items()}
    paired = len({tuple(v.index) for v in stats.values()}) == 1
    draws = {}
    for j, (k, v) in enumerate(stats.items()):
        x = v.to_numpy(dtype=float)
        if len(x) < 2:
            draws[k] = np.full(DRAWS, np.nan)
            continue
        w = resample_weights(len(x), seed=RNG_SEED if paired else RNG_SEED + j)
        mean = w @ x
        var = (w @ x**2 - mean**2) * len(x) / (len(x) - 1)
        draws[k] = 0.5 * np.log(np.maximum(var, 1e-300))
    point = {k: math.log(s) if s > 0 else (-math.inf if s == 0 else math.nan)
             for k, s in sd.items()}
    n = min(len(v) for v in stats.values())
    effects = bootstrap_effects(point, draws, n, claim.solver, claim.others,
                                confidence=claim.confidence)
    ok = {o: sd[claim.solver] < sd[o] for o in claim.others}
    line = _relation(claim.solver, sd[claim.solver], {o: sd[o] for o in claim.others}, ok, "<")
    tail = (f"seed std of the final value over {n} seed(s); effect = log(std ratio); "
            + effects_text(effects))
    return all(ok.values()), f"spread: {line} ({tail})", sd, effects
