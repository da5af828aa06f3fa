"""FO-SMD: first-order stochastic mirror descent for MERO, the baseline of paper 001's
RECONSTRUCTED suite (docs/papers/001.md §3.2; after Zhang & Tu 2023, whose exact constants we could
not read). The ZO-SMD loop (`drocli.solvers.zo.zo_smd`, same kernel, mode 2) with the zeroth-order
estimates replaced by mini-batch stochastic (sub)gradients (1/r) sum_j grad l(w; z_j), g_q
unchanged, and the step sizes of Theorems 3 / 7 with the factor d removed
(eta_t = 1/(sqrt2 sqrt(t+1)); non-smooth: L* kept), times `eta_scale`.
Cost per round: 3 m r (m r gradients for the R_i^* chains, m r gradients at w_t whose values
feed g_q, m r values at wbar_t^(i)); GDRO: m r.
"""

from __future__ import annotations

import numpy as np

from drocli.plugins import registry
from drocli.solvers.zo.zo_smd import SMDBase, run


class FOSMDParams(SMDBase):
    """FO-SMD's parameters ([RECON] docs/papers/001.md §3.2): ZO-SMD's schedules of Theorem 3
    (smooth) or 7 (non-smooth) with d removed; r is the mini-batch per group and round."""


@registry.solver("fo_smd",
                 reference="first-order SMD reconstructed (docs/papers/001.md §3.2)",
                 params=FOSMDParams, family="zo_mero",
                 description="FO-SMD for MERO (reconstructed baseline after Zhang & Tu 2023): "
                             "ZO-SMD's loop with stochastic gradients")
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """First-order SMD for MERO, reconstructed (docs/papers/001.md §3.2, Zhang & Tu 2023 style);
    returns the suffix averages (wbar_T, qbar_T)."""
    fixed = {"pair": "gauss", "mu_scale": 1.0, "share_directions": False}
    return run(problem, {**params, **fixed}, rng, monitor, first_order=True)
