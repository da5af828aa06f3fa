"""Claim kind `wall_time_below`: the solver's wall time below a factor of every other's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from drocli.claims.base import ClaimBase
from drocli.claims.judge import _final_stats, _judge
from drocli.plugins import registry


class WallTimeBelow(ClaimBase):
    """time_s at the last checkpoint: solver below factor x every other's."""

    needs_metric = False

    kind: Literal["wall_time_below"]
    factor: float = Field(1.0, ge=1e-6, le=1e6, description="solver time < factor x the other's")

    def quantity(self) -> str:
        return "time_s at the last checkpoint (warm-up excluded)"

    def unit(self) -> str:
        return "seconds"


@registry.claim("wall_time_below", params=WallTimeBelow,
                description="wall time: solver below factor x every other's")
def wall_time_below(claim: WallTimeBelow, data):
    """Solver wall time (time_s at the last checkpoint) below factor x every other's."""
    stats = _final_stats(data, claim, column="time_s")
    return _judge(claim, stats, factor=claim.factor, unit=" s",
                  fmt=lambda vs: [f"{float(v):.3g}" for v in vs], prefix="wall time: ")
