"""Claim kind `reach_first`: the solver reaches a level of the metric at a smaller x (budget,
time) than every other; others may never reach it."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from drocli.claims.base import ClaimBase
from drocli.claims.inference import CANNOT_DECIDE
from drocli.claims.judge import (
    SkipClaim,
    _curve_stats,
    _curves,
    _judge,
    fmt_values,
    overall,
)
from drocli.plugins import registry


class ReachFirst(ClaimBase):
    """First x at which the curve reaches a level: solver first."""

    kind: Literal["reach_first"]
    level: float | None = Field(None, description="absolute level of the metric")
    level_fraction: float | None = Field(
        None, gt=0, le=1, description="level = start - fraction x (start - best final mean "
        "over the compared labels)")
    direction: Literal["below", "above"] = Field(
        "below", description="reach = fall to the level (below) or rise to it (above)")
    x: str = Field("oracle_calls", description="the records column the curves run along")
    factor: float = Field(1.0, ge=1e-6, le=1, description="the solver must reach it before "
                          "factor x the other's x (e.g. 0.5: in half the budget)")
    x_from: Literal["first", "shared"] | None = Field(
        None, description="x counted from 0 (unset); from each run's first record (first); or "
        "from the first x by which every compared run has started, the largest of their "
        "first records (shared: a figure whose axis starts after a stage every method "
        "shares, e.g. MERO's stage 1, when some methods record a checkpoint inside it)")

    def quantity(self) -> str:
        level = (f"{self.level:g}" if self.level is not None else
                 f"{self.level_fraction:.0%} of the way from the start to the best final "
                 "seed-mean value")
        since = {"first": " since the run's first record",
                 "shared": " since every compared run's first record"}.get(self.x_from, "")
        return (f"first {self.x}{since} at which {self.metric} "
                f"{'rises' if self.direction == 'above' else 'falls'} to {level} (never reached: "
                "the horizon)")

    def relation(self) -> str:
        return ("earlier than " + (f"{self.factor:g} x " if self.factor != 1 else "")
                + ", ".join(self.others))

    def unit(self) -> str:
        return self.x

    def effect_text(self) -> str:
        scale = f"{self.factor:g} x " if self.factor != 1 else ""
        other = f"{self.others[0]}'s" if len(self.others) == 1 else "the other's"
        return (f"effect = mean over seeds of ({scale}{other} {self.x} at reaching the level "
                f"minus {self.solver}'s; never reached: the last {self.x} recorded), in "
                f"{self.x}; " + self.favours())

    @model_validator(mode="after")
    def _one_level(self):
        if (self.level is None) == (self.level_fraction is None):
            raise ValueError("kind 'reach_first' needs exactly one of `level` (absolute) or "
                             "`level_fraction` (in (0, 1])")
        return self


def _first_reach(x: np.ndarray, y: np.ndarray, level: float, direction: str) -> float:
    """First x where y reaches level (linear between checkpoints); inf if never."""
    with np.errstate(invalid="ignore"):
        hit = (y <= level) if direction == "below" else (y >= level)
    hit &= np.isfinite(y)
    if not hit.any():
        return math.inf
    k = int(np.argmax(hit))
    if k == 0 or not np.isfinite(y[k - 1]) or y[k] == y[k - 1]:
        return float(x[k])
    t = (level - y[k - 1]) / (y[k] - y[k - 1])
    return float(x[k - 1] + min(max(t, 0.0), 1.0) * (x[k] - x[k - 1]))


def _fmt_budget(values) -> list[str]:
    return ["never" if math.isinf(float(v)) or math.isnan(float(v)) else f"{float(v):.3g}"
            for v in values]


@registry.claim("reach_first", params=ReachFirst,
                description="solver reaches a level of the metric first (in x)",
                tiny={"level_fraction": 0.5})
def reach_first(claim: ReachFirst, data):
    """The solver reaches `level` at a smaller x than every other (others may never)."""
    from drocli.results.aggregate import final_values

    direction = claim.direction
    x = claim.x
    curves = _curves(data, claim)
    if claim.level is not None:
        level = float(claim.level)
        how = f"{level:g}"
    else:
        per_seed, agg = curves[claim.solver]
        if agg is not None:
            start = float(agg.center[0]) if len(agg.center) else math.nan
        else:   # no seed-mean curve (seeds do not overlap in x): the mean of the seeds' starts
            firsts = [float(c.y[0]) for c in per_seed if len(c.y)]
            start = float(np.mean(firsts)) if firsts else math.nan
        finals = []
        for label in claim.labels:
            fv = final_values(data[label], what=f"claims[{claim.id}] ({label})")
            finals.append(float(fv["value"].mean(skipna=False)))
        finals = [f for f in finals if math.isfinite(f)]
        if not math.isfinite(start) or not finals:
            raise SkipClaim(f"cannot derive the level: start of {claim.solver} is {start:g}, "
                            f"finite final means: {len(finals)}")
        best = min(finals) if direction == "below" else max(finals)
        level = start - claim.level_fraction * (start - best)
        s, b, lv = fmt_values([start, best, level])
        how = (f"{lv} (= start {s} - {claim.level_fraction:g} x (start - best final "
               f"{b}))")
    shared = max((float(c.x[0]) for per_seed, _ in curves.values() for c in per_seed
                  if len(c.x)), default=0.0)

    def origin_of(xs) -> float:
        if claim.x_from == "first":
            return float(xs[0]) if len(xs) else 0.0
        return shared if claim.x_from == "shared" else 0.0

    def reach(xs, ys):
        return max(_first_reach(xs, ys, level, direction) - origin_of(xs), 0.0)

    stats, means, mean_seeds = _curve_stats(claim, data, reach, curves=curves)
    # a level never reached is censored at the horizon (the largest x recorded) for the
    # effects: the true x is at least that, so an other that never reaches it is credited
    # less than its real disadvantage, and a solver that never does cannot come out ahead
    # of an other on that seed (the difference there is <= 0)
    horizon = max(float(c.x[-1]) - origin_of(c.x)
                  for per_seed, _ in curves.values() for c in per_seed if len(c.x))
    if means is not None:
        means = {k: math.inf if math.isnan(v) else v for k, v in means.items()}
    # reaching earlier is "below" in x, whatever the direction of the metric
    holds, detail, shown, effects = _judge(
        claim, {k: v.fillna(math.inf) for k, v in stats.items()}, direction="below",
        factor=claim.factor, fmt=_fmt_budget, mean_stats=means, mean_seeds=mean_seeds,
        censor=horizon, prefix=f"first {x} with {claim.metric} "
                               f"{'<=' if direction == 'below' else '>='} {how}: ")
    if not math.isfinite(shown[claim.solver]):
        holds = False
        detail += f"; {claim.solver} never reaches it"
    if overall(effects) == "inconclusive" and _all_start_past(curves, level, direction):
        why = cannot_decide(claim, level)
        for e in effects.values():
            if e["verdict"] == "inconclusive":
                e["why"] = why
        detail += f"; {why}"
    return holds, detail, shown, effects


def _all_start_past(curves, level: float, direction: str) -> bool:
    """Every seed curve of every label is at the level from its first point: all reach it
    at their start, so more seeds cannot tell them apart."""
    starts = [float(c.y[0]) for per_seed, _ in curves.values() for c in per_seed if len(c.y)]
    if not starts or len(starts) < sum(len(per_seed) for per_seed, _ in curves.values()):
        return False
    return all(math.isfinite(y) and (y <= level if direction == "below" else y >= level)
               for y in starts)


def cannot_decide(claim: ReachFirst, level: float) -> str:
    """Why an inconclusive claim whose every method starts at its level never decides,
    and the fix."""
    where = "below" if claim.direction == "below" else "above"
    if claim.level is None:
        fix = ("the best final value is no better than the start, so no level_fraction "
               "gives a level to reach: judge the final values (final_below) instead")
    else:
        fix = "lower the level" if claim.direction == "below" else "raise the level"
    return (f"{CANNOT_DECIDE}every method starts {where} the level {fmt_values([level])[0]}; "
            f"{fix}")
