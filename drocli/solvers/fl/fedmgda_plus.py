"""FedMGDA+ (Hu, Wang, Zhou & Yu 2022, "Federated learning meets multi-objective optimization")
in the simplified form of paper 003's fair-FL code (Liu et al. 2024, docs/papers/003.md §2.6, code
`FedMGDA`):
    û_i = u_i/||u_i||,  u_i = θ_i - θ
    λ* = argmin_λ ||Σ_i λ_i û_i||²  s.t.  λ ∈ Δ_m, |λ_i - 1/m| <= ε      (QP on the Gram matrix)
    θ ← Σ_i λ*_i θ_i
Output: the current θ. The QP is solved to 1e-13 by FISTA with an exact box∩simplex projection.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.fl_aggregators import fedmgda_step
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class FedMGDAPlusParams(Params):
    """FedMGDA+'s parameter (Hu et al. 2022; paper 003 Table 1)."""

    eps: float = Field(0.5, ge=0, description="max deviation of the weights from uniform "
                       "([PAPER Table 1] MNIST rotation and C=2 0.5; MNIST C=5 0.05; CIFAR "
                       "0.1)")


class FedMGDAPlus(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.eps = float(p["eps"])
        self.lam = None

    def aggregate(self, theta, thetas, L, r):
        new, self.lam = fedmgda_step(theta, thetas, self.eps)
        return new


@registry.solver(
    "fedmgda_plus",
    reference="Hu et al. (2022), simplified as in Liu et al. (2024) §4.2",
    params=FedMGDAPlusParams,
    family="federated",
    description="FedMGDA+ (Hu et al. 2022): min-norm convex combination of normalised updates",
)
def solve_fedmgda_plus(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """FedMGDA+ (Hu et al. 2022), simplified as in Liu et al. (2024) §4.2's code."""
    return run(problem, rng, monitor, FedMGDAPlus(params))
