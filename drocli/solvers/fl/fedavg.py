"""FedAvg = linear scalarization (LS) in paper 003's fair-FL experiment (McMahan et al. 2017;
Liu et al. 2024, docs/papers/003.md §2.6, code `FedAvg`): θ ← (1/m) Σ_i θ_i, UNWEIGHTED even when
client sizes differ (pitfall 14). Output: the current θ.
"""

from __future__ import annotations

import numpy as np

from drocli.ops.fl_aggregators import fedavg_step
from drocli.plugins import registry
from drocli.solvers.fl.base import FLMethod, run


class FedAvg(FLMethod):
    def aggregate(self, theta, thetas, L, r):
        return fedavg_step(thetas)


@registry.solver(
    "fedavg",
    reference="McMahan et al. (2017); Liu et al. (2024) §4.2",
    family="federated",
    description="FedAvg / LS (paper 003 fair FL): unweighted mean of the local models",
)
def solve_fedavg(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """FedAvg (McMahan et al. 2017) as LS in Liu et al. (2024) §4.2: θ ← (1/m) Σ θ_i."""
    return run(problem, rng, monitor, FedAvg())
