"""Claim kind `best_below`: the best value over the checkpoints, solver better."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.claims.base import ClaimBase
from drocli.claims.judge import _curve_stats, _judge
from drocli.plugins import registry


class BestBelow(ClaimBase):
    """Best value over the checkpoints (min, or max with direction above)."""

    kind: Literal["best_below"]
    margin: float = Field(0.0, description="the solver must win by more than this "
                          "(negative: may lose by up to |margin|)")
    direction: Literal["below", "above"] = Field(
        "below", description="better = lower (below) or higher (above)")
    x: str = Field("oracle_calls", description="the records column the curves run along")

    def quantity(self) -> str:
        best = "highest" if self.direction == "above" else "lowest"
        return f"{best} {self.metric} over the checkpoints"


@registry.claim("best_below", params=BestBelow,
                description="best value over checkpoints: solver better than every other")
def best_below(claim: BestBelow, data):
    """Best value over checkpoints (min, or max with direction above): solver better."""
    direction = claim.direction

    def best(_x, y):
        y = y[np.isfinite(y)]
        if not len(y):
            return math.nan
        return float(y.min() if direction == "below" else y.max())

    stats, means, mean_seeds = _curve_stats(claim, data, best)
    return _judge(claim, stats, direction=direction, margin=claim.margin,
                  mean_stats=means, mean_seeds=mean_seeds,
                  prefix=f"best {'min' if direction == 'below' else 'max'}: ")
