"""ALEM: Yu, Cai, Jiang & Zhang (ICML 2024), "Efficient Algorithms for Empirical Group
Distributionally Robust Optimization and Beyond", Algorithm 2 (two-stage ALEG for empirical
MERO), docs/papers/000.md §2.7-§2.8:

  Stage 1, for each group i (budget stage1_epochs * n_i of the run's gradient evaluations):
      wbar_i   = ALEG on R_i alone (m = 1: the q-block drops out, §2.7): S_1 epochs of
                 [full pass n_i + K_i steps of 2 evaluations], step gamma_1, alpha = 1/K_i
      Rhat_i^* = R_i(wbar_i)                                        [one counted pass, n_i]
  Stage 2: ALEG (Algorithm 1, the same code) on the approximate problem (24),
      min_W max_i R_i(W) - Rhat_i^*: only the full-gradient risks are shifted; the
      stochastic correction l(w_h; xi) - l(w_s; xi) is shift-free (§2.8).
  Output: stage 2's eta-weighted output (22).

Stage-1 cost is counted and the monitor is first called after stage 1, so MERO curves start at
the stage-1 cost (docs/papers/000.md pitfall 13). S_1 = floor((b_i - n_i) / (n_i + 2 K_i)) with
b_i = stage1_epochs * n_i (§4.4: K_i = n_i gives S_1 = 3 and exactly 10 n_i at the default 10
epochs), or stage1_share x the run's budget split by n_i; if not even one epoch fits, K_i
shrinks to fit one. The paper's rule (§2.8; the MERO specs): stage1_share = 0.5 and
gamma_1 = gamma_w -- Algorithm 2 runs both stages with the same S, K, alpha and steps.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.problems.mero import group_view
from drocli.solvers.dro import steps
from drocli.solvers.dro.aleg import run_aleg
from drocli.solvers.dro.mirror_prox import effective_steps


def stage1_budgets(problem, monitor, stage1_epochs: float,
                   share: float | None = None) -> np.ndarray:
    """Per-group stage-1 budgets b_i proportional to n_i, summing to stage1_epochs * N but
    never more than half of the run's budget (so that a short run still has a stage 2;
    [DEFAULT] docs/papers/000.md §4.4); with `share`, summing to share x the run's budget
    instead (stage1_epochs unused): share 0.5 is the paper's rule, the same S epochs in both
    stages (Theorem 5.2 / Corollary 5.4; docs/papers/000.md §2.8). Shared by ALEM, ERMEG
    and TSA."""
    if share is not None:
        total = float(share) * monitor.budget
    else:
        total = min(float(stage1_epochs) * problem.N, 0.5 * monitor.budget)
    return np.floor(total * problem.n_i / problem.N).astype(np.int64)


def stage1_plan(n_i: int, K_i: int, b_i: int) -> tuple[int, int]:
    """(epochs S_1, inner length K_i) of ALEG(m=1) on a group of n_i rows within budget b_i:
    S_1 epochs cost S_1 (n_i + 2 K_i) plus the final pass n_i. At least one epoch of at
    least one step."""
    S = (b_i - n_i) // (n_i + 2 * K_i)
    if S >= 1:
        return int(S), int(K_i)
    return 1, int(max(1, min(K_i, (b_i - 2 * n_i) // 2)))


class ALEMParams(Params):
    """ALEM's parameters (§2.5-2.8; steps tuned on the MERO sweep; values in the specs)."""

    gamma_w: float = steps.gamma_w(0.01, "stage-2 ")
    gamma_q: float = steps.gamma_q(0.0316, "stage-2 ")
    gamma_1: float = Field(0.01, gt=0, description="stage-1 step of ALEG(m=1) ([DEFAULT] "
                           "docs/papers/000.md §2.7/§4.1; MERO sweep); the paper's rule "
                           "(Algorithm 2 passes the same learning rates to both stages) is "
                           "gamma_1 = gamma_w, docs/papers/000.md §2.8")
    schedule: steps.EpochSchedule = steps.epoch_schedule(
        "h_s = max(sqrt(0.05), 1/sqrt(s+1)) in both stages (epoch count restarts in stage 2)")
    K: int | None = auto("stage-2 inner iterations; auto: K = n_bar (Thm 5.3, [DEFAULT] "
                         "docs/papers/000.md §2.5)", ge=1)
    alpha: float | None = auto("snapshot weight; auto: 1/K in both stages ([DEFAULT] "
                               "docs/papers/000.md §2.5)", legacy=0.0, gt=0, le=1)
    eta: float | None = steps.eta()
    stage1_epochs: float = steps.stage1_epochs()
    stage1_share: float | None = steps.stage1_share()
    stage1_K: Literal["n_i", "nbar"] = Field(
        "n_i", description="stage-1 inner iterations K_i = n_i [DEFAULT] §2.8; nbar: "
        "the paper's K = n_bar")
    eval_point: steps.EvalPoint = steps.eval_point("stage 2's eta-weighted output (22)")


@registry.solver(
    "alem",
    reference="Yu et al. (2024), Alg. 2",
    params=ALEMParams,
    family="mero",
    description="ALEM (Yu et al. 2024, Algorithm 2): per-group ALEG(m=1) estimates of R_i^*, "
                "then ALEG on the shifted risks",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """ALEM, Algorithm 2 of Yu et al. 2024 (two-stage ALEG for empirical MERO); returns the
    stage-2 point (W, q)."""
    schedule = params["schedule"]
    eval_point = params["eval_point"]
    stage1_K = params["stage1_K"]
    gamma_w, gamma_q = effective_steps(params, problem)
    gamma_1 = float(params["gamma_1"])
    alpha_given = float(params.get("alpha") or 0.0)
    rhat, _ = stage1(problem, rng, stage1_budgets(problem, monitor, params["stage1_epochs"],
                                                params.get("stage1_share")),
                     gamma_1, schedule, stage1_K, alpha_given)
    K = int(params.get("K") or 0) or max(1, int(round(problem.N / problem.m)))  # K = n_bar
    alpha = alpha_given or 1.0 / K
    with problem.shifted(rhat):
        st = run_aleg(problem, rng, monitor, gamma_w=gamma_w, gamma_q=gamma_q,
                      schedule=schedule, K=K, alpha=alpha, eval_point=eval_point)
    return st.point(eval_point)


def stage1(problem, rng, budgets, gamma_1: float, schedule: str = "decay",
           stage1_K: str = "n_i", alpha: float = 0.0) -> tuple[np.ndarray, list]:
    """Algorithm 2's stage 1: (Rhat^* (m,), [wbar_i]) by ALEG(m=1) per group (counted)."""
    m = problem.m
    rhat = np.empty(m)
    wbars = []
    for i in range(m):
        view = group_view(problem, i)
        n_i = view.N
        K_i = n_i if stage1_K == "n_i" else max(1, int(round(problem.nbar)))
        S, K_i = stage1_plan(n_i, K_i, int(budgets[i]))
        st = run_aleg(view, rng, None, gamma_w=gamma_1, gamma_q=0.0, schedule=schedule,
                      K=K_i, alpha=alpha or 1.0 / K_i, epochs=S)
        w_i, _ = st.output()
        R, _ = view.full_oracle(w_i, np.zeros(1))          # Rhat_i^* = R_i(wbar_i), cost n_i
        rhat[i] = R[0]
        wbars.append(w_i)
    return rhat, wbars
