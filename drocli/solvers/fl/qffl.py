"""q-FFL, the q-FedAvg update (Li, Sanjabi, Beirami & Smith 2020, "Fair resource allocation in
federated learning"), as in paper 003's fair-FL experiment (Liu et al. 2024, docs/papers/003.md
§2.6, code `qFFL`), with g_i = (θ - θ_i)/η_θ:
    Δ_i = L_i^q g_i,  h_i = q L_i^(q-1) ||g_i||² + L_i^q/η_θ,  θ ← θ - Σ_i Δ_i / Σ_i h_i
Output: the current θ.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.fl_aggregators import qffl_step
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class QFFLParams(Params):
    """q-FFL's parameter (Li et al. 2020; paper 003 Table 1)."""

    q: float = Field(0.1, gt=0, description="fairness exponent q ([PAPER Table 1] 0.1 in "
                     "every setting; grid 0.1, 0.5, 1, 5, 10)")


class QFFL(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.q = float(p["q"])

    def aggregate(self, theta, thetas, L, r):
        return qffl_step(theta, thetas, L, self.lr, self.q)


@registry.solver(
    "qffl",
    reference="Li et al. (2020); Liu et al. (2024) §4.2",
    params=QFFLParams,
    family="federated",
    description="q-FFL / q-FedAvg (Li et al. 2020), a baseline of paper 003's fair FL",
)
def solve_qffl(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """q-FedAvg (Li et al. 2020) as run in Liu et al. (2024) §4.2."""
    return run(problem, rng, monitor, QFFL(params))
