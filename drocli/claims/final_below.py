"""Claim kind `final_below`: the value at each cell's last checkpoint, solver better than
every other (by a margin)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from drocli.claims.base import ClaimBase
from drocli.claims.judge import _final_stats, _judge
from drocli.plugins import registry


class FinalBelow(ClaimBase):
    """Final values: solver better than every other (seed by seed by default)."""

    per_seed_default = True

    kind: Literal["final_below"]
    margin: float = Field(0.0, description="the solver must win by more than this "
                          "(negative: may lose by up to |margin|)")
    direction: Literal["below", "above"] = Field(
        "below", description="better = lower (below) or higher (above)")
    factor: float = Field(1.0, ge=1e-6, le=1e6,
                          description="compare with factor x the other's value "
                          "(e.g. 1.05 below: at most 5 % above it)")

    def quantity(self) -> str:
        return f"final {self.metric}"


@registry.claim("final_below", params=FinalBelow,
                description="final value: solver better than every other")
def final_below(claim: FinalBelow, data):
    """Value at each cell's last checkpoint: solver below every other (minus margin)."""
    return _judge(claim, _final_stats(data, claim), direction=claim.direction,
                  margin=claim.margin, factor=claim.factor)
