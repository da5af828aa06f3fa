"""PropFair (Zhang, Kang, Abdul, Liang & Yu 2022, "Proportional fairness in federated learning")
as in paper 003's fair-FL experiment (Liu et al. 2024, spec §2.6, code `PropFair`).

Clients minimise, per local minibatch, ℓ_PF = CE/M if M - CE < ε0 else -log(1 - CE/M)
(the problem's `local_round(..., loss="propfair", M=M, eps0=ε0)` implements this); the server
takes the unweighted mean θ ← (1/m) Σ_i θ_i. Output: the current θ.
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.ops.fl_aggregators import fedavg_step
from drocli.solvers.fl.base import FLMethod, require, run

PARAMS = {
    "M": 2.0,     # [PAPER Table 1] MNIST rotation (and MNIST C=2/5, CIFAR C=5); 3/4 CIFAR rot/C=2
    "eps0": 1.0,  # [CODE] the shared --epsilon argument's default; the paper does not state it
}


class PropFair(FLMethod):
    def __init__(self, params: dict):
        p = {**PARAMS, **params}
        self.M, self.eps0 = float(p["M"]), float(p["eps0"])
        require(self.M > 0, "M", f"need M > 0, got {self.M}", "Table 1 grid: 2.0, 3.0, 4.0, 5.0")
        require(self.eps0 >= 0, "eps0", f"need eps0 >= 0, got {self.eps0}",
                "the code's default 1.0")
        self.local_kwargs = {"loss": "propfair", "M": self.M, "eps0": self.eps0}

    def aggregate(self, theta, thetas, L, r):
        return fedavg_step(thetas)


@registry.solver(
    "propfair",
    params=dict(PARAMS),
    family="federated",
    description="PropFair (Zhang et al. 2022): clients minimise the PropFair loss, mean model",
)
def solve_propfair(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """PropFair (Zhang et al. 2022) as run in Liu et al. (2024) §4.2."""
    return run(problem, rng, monitor, PropFair(params))
