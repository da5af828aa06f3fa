"""PropFair (Zhang, Kang, Abdul, Liang & Yu 2022, "Proportional fairness in federated learning")
as in paper 003's fair-FL experiment (Liu et al. 2024, docs/papers/003.md §2.6, code `PropFair`).

Clients minimise, per local minibatch, ℓ_PF = CE/M if M - CE < ε0 else -log(1 - CE/M)
(the problem's `local_round(..., loss="propfair", M=M, eps0=ε0)` implements this); the server
takes the unweighted mean θ ← (1/m) Σ_i θ_i. Output: the current θ.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.fl_aggregators import fedavg_step
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class PropFairParams(Params):
    """PropFair's parameters (Zhang et al. 2022; paper 003 Table 1)."""

    M: float = Field(2.0, gt=0, description="baseline M of the PropFair loss ([PAPER Table 1] "
                     "2 MNIST and CIFAR C=5; 3 / 4 CIFAR rotation / C=2)")
    eps0: float = Field(1.0, ge=0, description="threshold of the loss's linear part ([CODE] "
                        "the --epsilon default; the paper does not state it)")


class PropFair(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.M, self.eps0 = float(p["M"]), float(p["eps0"])
        self.local_kwargs = {"loss": "propfair", "M": self.M, "eps0": self.eps0}

    def aggregate(self, theta, thetas, L, r):
        return fedavg_step(thetas)


@registry.solver(
    "propfair",
    reference="Zhang et al. (2022); Liu et al. (2024) §4.2",
    params=PropFairParams,
    family="federated",
    description="PropFair (Zhang et al. 2022): clients minimise the PropFair loss, mean model",
)
def solve_propfair(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """PropFair (Zhang et al. 2022) as run in Liu et al. (2024) §4.2."""
    return run(problem, rng, monitor, PropFair(params))
