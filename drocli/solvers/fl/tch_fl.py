"""TCH in paper 003's fair-FL experiment (Liu et al. 2024, docs/papers/003.md §2.6, code `Tche`):
the global model is replaced by the locally-updated model of the client with the largest round loss,
θ ← θ_{i*}, i* = argmax_i L_i (first index on ties). Output: the current θ.
"""

from __future__ import annotations

import numpy as np

from drocli.ops.fl_aggregators import tch_step
from drocli.plugins import registry
from drocli.solvers.fl.base import FLMethod, run


class TchFL(FLMethod):
    def aggregate(self, theta, thetas, L, r):
        return tch_step(thetas, L)


@registry.solver(
    "tch_fl",
    reference="Liu et al. (2024) §4.2 baseline",
    family="federated",
    description="TCH (paper 003 fair FL): take the worst client's local model",
)
def solve_tch_fl(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Tchebycheff (TCH) baseline of Liu et al. (2024) §4.2: θ ← θ_{argmax_i L_i}."""
    return run(problem, rng, monitor, TchFL())
