"""RE-RSVRB: Algorithm 3 of Guo, Hu, Zhang & Yang (docs/papers/004.md §2.4), RSVRB restarted in
stages with shrinking constant steps, the method of their E.2 (10 tasks per iteration).

Each stage k runs the RSVRB iteration of `rsvrb.run` (Algorithm 2, same estimators, sampling
and sample cost) from the state the previous stage left (warm start of ALL state: x, y, the
estimators, d), so the whole method is RSVRB with a stage-dependent step. Practical schedule
[UNSPEC -> default, §2.4]: eta_1 given, T_1 = stage_iters, eta_{k+1} = eta_k / sqrt(2),
T_{k+1} = 2 T_k, until the budget is used; tau_t = eta_k; beta = min(1, c_beta eta_k^2) for all
estimators and d. Theorem 3's constants are not computable (pitfall 16).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.solvers.bilevel.rsvrb import TaskSampling, run


def stage_schedule(eta1: float, T1: int, c_beta: float):
    """t -> (eta_k, tau_t = eta_k, min(1, c_beta eta_k^2)) for the stage k holding iteration t
    (stage k, 0-based, covers T1 (2^k - 1) <= t < T1 (2^(k+1) - 1))."""
    def schedule(t: int):
        k, end = 0, T1
        while t >= end:
            k += 1
            end += T1 << k
        eta = eta1 * math.sqrt(0.5) ** k
        return eta, eta, min(1.0, c_beta * eta * eta)
    return schedule


class RERSVRBParams(TaskSampling):
    """RE-RSVRB's parameters (Algorithm 3: stages with eta / sqrt(2), length x 2)."""

    eta1: float = Field(0.01, gt=0, description="first stage's step (tuned)")
    stage_iters: int = Field(500, ge=1, description="first stage's length in iterations")
    c_beta: float = Field(10.0, gt=0, description="STORM weight min(1, c_beta eta^2)")
    gamma: float = Field(1.0, gt=0, description="upper (x) step multiplier")
    tau: float = Field(0.5, gt=0, description="lower (y) step multiplier")
    nonneg: bool = Field(False, description="clip the weights p at 0 (docs/papers/004.md P14)")


@registry.solver(
    "re_rsvrb",
    reference="Guo, Hu, Zhang & Yang, Alg. 3 (docs/papers/004.md §2.4)",
    params=RERSVRBParams,
    tiny={"tasks_per_iter": 1},
    family="bilevel",
    description="RE-RSVRB: RSVRB restarted in stages, step / sqrt(2) and stage length x 2 "
                "(Guo, Hu, Zhang & Yang, Algorithm 3)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """RE-RSVRB, Guo, Hu, Zhang & Yang, Algorithm 3 (§2.4 practical schedule): the
    RSVRB iteration (Algorithm 2, tasks_per_iter tasks scaled by m/S, d over tasks_d uniform
    tasks, lazy H [RECON]) with constant steps per stage, eta_1 = eta1, T_1 = stage_iters,
    eta / sqrt(2) and T x 2 per stage, warm start of all state; x step eta_k gamma d, y step
    eta_k tau G_i, STORM weight min(1, c_beta eta_k^2)."""
    eta1, c_beta = params["eta1"], params["c_beta"]
    gamma, tau = params["gamma"], params["tau"]
    schedule = stage_schedule(eta1, params["stage_iters"], c_beta)
    return run(problem, params, rng, monitor, schedule, gamma, tau)
