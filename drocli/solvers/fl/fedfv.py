"""FedFV (Wang, Xu, Liu, Li, Zhang & Zhang 2021, "Federated learning with fair averaging") as in
paper 003's fair-FL experiment (Liu et al. 2024, docs/papers/003.md §2.6, code `FedFV`). Round r =
0, 1, ...:

    u_i = θ_i - θ; clients sorted by ascending L_i
    internal: every client outside order[ceil((m-1)(1-α)):] (the ~αm largest losses) projects
              u_i' against each ORIGINAL u_j, j in ascending-loss order, when <u_j, u_i'> < 0
    g_t = mean_i u_i'
    external (r >= τ): for k = 0..τ-1, against the stored directions of the clients last seen
              in round r-k: g_con = Σ{u_c : <g_t, u_c> < 0}; if <g_t, g_con> < 0 project g_t
    g_t ← g_t ||mean_i u_i|| / ||g_t||;   θ ← θ + g_t
Output: the current θ.

History [CODE]: the state keeps each client's latest direction and the round it was sent, as
FedFV's code does. With all clients participating every round (paper 003), every stored
direction is from the current round, so the external step only ever sees this round's u_c
(§2.6: "effectively this round's directions"); τ only decides from which round it runs.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.fl_aggregators import fedfv_step, updates
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class FedFVParams(Params):
    """FedFV's parameters (Wang et al. 2021; paper 003 Table 1)."""

    alpha: float = Field(0.2, ge=0, le=1, description="share of the most conflicting clients "
                         "projected ([PAPER Table 1] MNIST rotation 0.2; CIFAR C=2 0.1; grid "
                         "0.1, 0.2, 0.5)")
    tau: int = Field(1, ge=0, description="rounds before the projection starts (module "
                     "docstring; [PAPER Table 1] MNIST rotation 1; CIFAR C=2 0; grid 0, 1, 3, "
                     "10)")


class FedFV(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.alpha = float(p["alpha"])
        tau = p["tau"]
        self.tau = int(tau)

    def start(self, problem, theta):
        super().start(problem, theta)
        self.last_dir = None          # each client's latest u_c, (m, P) once a round has run
        self.last_round = np.full(self.m, -1, dtype=np.int64)  # the round it was sent

    def stored(self, r: int) -> list[np.ndarray]:
        """Directions for the external step of round r: groups k = 0..τ-1 (clients last seen
        in round r-k); empty when r < τ."""
        if r < self.tau:
            return []
        groups = []
        for k in range(self.tau):
            seen = self.last_round == r - k
            # every client seen that round (always, when all participate): the array itself,
            # which the external step only reads
            groups.append(self.last_dir if seen.all() else self.last_dir[seen])
        return groups

    def aggregate(self, theta, thetas, L, r):
        self.last_dir = updates(theta, thetas, out=self.last_dir)   # written in place
        self.last_round[:] = r
        return fedfv_step(theta, thetas, L, self.alpha, self.stored(r), U=self.last_dir)


@registry.solver(
    "fedfv",
    reference="Wang et al. (2021); Liu et al. (2024) §4.2",
    params=FedFVParams,
    family="federated",
    description="FedFV (Wang et al. 2021): conflict-projected, norm-rescaled average update",
)
def solve_fedfv(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """FedFV (Wang et al. 2021) as run in Liu et al. (2024) §4.2."""
    return run(problem, rng, monitor, FedFV(params))
