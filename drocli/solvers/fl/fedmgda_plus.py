"""FedMGDA+ (Hu, Wang, Zhou & Yu 2022, "Federated learning meets multi-objective optimization")
in the simplified form of paper 003's fair-FL code (Liu et al. 2024, spec §2.6, code `FedMGDA`):
    û_i = u_i/||u_i||,  u_i = θ_i - θ
    λ* = argmin_λ ||Σ_i λ_i û_i||²  s.t.  λ ∈ Δ_m, |λ_i - 1/m| <= ε      (QP on the Gram matrix)
    θ ← Σ_i λ*_i θ_i
Output: the current θ. The QP is solved to 1e-13 by FISTA with an exact box∩simplex projection.
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.ops.fl_aggregators import fedmgda_step
from drocli.solvers.fl.base import FLMethod, require, run

PARAMS = {
    "eps": 0.5,  # [PAPER Table 1] MNIST rotation and C=2 (0.05 MNIST C=5, 0.1 CIFAR)
}


class FedMGDAPlus(FLMethod):
    def __init__(self, params: dict):
        p = {**PARAMS, **params}
        self.eps = float(p["eps"])
        require(self.eps >= 0, "eps", f"need eps >= 0, got {self.eps}",
                "Table 1 grid: 0.05, 0.1, 0.5, 1.0")
        self.lam = None

    def aggregate(self, theta, thetas, L, r):
        new, self.lam = fedmgda_step(theta, thetas, self.eps)
        return new


@registry.solver(
    "fedmgda_plus",
    params=dict(PARAMS),
    family="federated",
    description="FedMGDA+ (Hu et al. 2022): min-norm convex combination of normalised updates",
)
def solve_fedmgda_plus(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """FedMGDA+ (Hu et al. 2022), simplified as in Liu et al. (2024) §4.2's code."""
    return run(problem, rng, monitor, FedMGDAPlus(params))
