"""STCH / TERM in paper 003's fair-FL experiment (Lin et al. 2024 smooth Tchebycheff; Li et al.
2021 TERM; Liu et al. 2024, docs/papers/003.md §2.6, code `STche`):
    p = softmax((1/m) L / μ),  θ ← Σ_i p_i θ_i       (TERM with tilt 1/(mμ); momentum off)
Output: the current θ.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.fl_aggregators import stch_step
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class STCHFLParams(Params):
    """STCH / TERM's parameter (paper 003 Table 1)."""

    mu: float = Field(0.01, gt=0, description="smoothing mu ([PAPER Table 1] 0.01 MNIST and "
                      "CIFAR rotation; 0.03 CIFAR C=2/5)")


class StchFL(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.mu = float(p["mu"])

    def aggregate(self, theta, thetas, L, r):
        return stch_step(thetas, L, self.mu)


@registry.solver(
    "stch_fl",
    reference="Liu et al. (2024) §4.2 baseline",
    params=STCHFLParams,
    family="federated",
    description="STCH/TERM (paper 003 fair FL): softmax(L/(m mu))-weighted local models",
)
def solve_stch_fl(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Smooth Tchebycheff (STCH = TERM) baseline of Liu et al. (2024) §4.2."""
    return run(problem, rng, monitor, StchFL(params))
