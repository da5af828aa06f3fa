"""Claim kind `smoother`: the curve's total variation after a fraction of its x-range,
solver lower (a steadier curve)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.claims.base import ClaimBase
from drocli.claims.judge import _curve_stats, _judge
from drocli.plugins import registry


class Smoother(ClaimBase):
    """Total variation (or excess variation) of the curve: solver lower."""

    kind: Literal["smoother"]
    after_fraction: float = Field(0.2, ge=0, lt=1, description="skip this fraction of the "
                                  "x-range (the transient)")
    x: str = Field("oracle_calls", description="the records column the curves run along")
    measure: Literal["tv", "excess"] = Field(
        "tv", description="tv = total variation; excess = TV - |net change| (wiggles only)")
    factor: float = Field(1.0, ge=1e-6, le=1, description="the solver's variation must lie "
                          "below factor x the other's (the claim's size: 0.95 for a visible "
                          "difference, 0.5 for 'significantly steadier')")

    def quantity(self) -> str:
        what = "total variation" if self.measure == "tv" else "excess variation (TV - |net|)"
        return f"{what} of {self.metric} after the first {self.after_fraction:.0%} of {self.x}"

    def relation(self) -> str:
        return ("lower than " + (f"{self.factor:g} x " if self.factor != 1 else "")
                + ", ".join(self.others))


@registry.claim("smoother", params=Smoother,
                description="curve total variation after a fraction of x: solver lower")
def smoother(claim: Smoother, data):
    """Total variation of the curve after `after_fraction` of its x-range: solver lower.
    The excess variation TV - |net change| is computed as 2 min(total rise, total fall),
    the same number without the rounding of a difference of two sums: a monotone curve has
    exactly 0, where TV - |net change| left noise of 1e-17 that the paired interval took
    for an effect (six claims of omd_tch_fl_mnist were projected to "decide" on it)."""
    frac = claim.after_fraction
    measure = claim.measure

    def tv(x, y):
        if not len(x):
            return math.nan
        m = x >= x[0] + frac * (x[-1] - x[0])
        w = y[m]
        if len(w) < 2 or not np.all(np.isfinite(w)):
            return math.nan      # diverged: worst
        d = np.diff(w)
        if measure == "excess":   # TV - |net| = 2 min(rise, fall): exactly 0 when monotone
            return 2.0 * min(float(d[d > 0].sum()), float(-d[d < 0].sum()))
        return float(np.abs(d).sum())

    name = "total variation" if measure == "tv" else "excess variation (TV - |net change|)"
    stats, means, mean_seeds = _curve_stats(claim, data, tv)
    return _judge(claim, stats, mean_stats=means, mean_seeds=mean_seeds,
                  factor=claim.factor, prefix=f"{name} after {frac:g} of x: ")
