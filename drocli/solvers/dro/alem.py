"""ALEM: Yu, Cai, Jiang & Zhang (ICML 2024), "Efficient Algorithms for Empirical Group
Distributionally Robust Optimization and Beyond", Algorithm 2 (two-stage ALEG for empirical
MERO), spec 000 §2.7-§2.8:

  Stage 1, for each group i (budget stage1_epochs * n_i of the run's gradient evaluations):
      wbar_i   = ALEG on R_i alone (m = 1: the q-block drops out, §2.7): S_1 epochs of
                 [full pass n_i + K_i steps of 2 evaluations], step gamma_1, alpha = 1/K_i
      Rhat_i^* = R_i(wbar_i)                                        [one counted pass, n_i]
  Stage 2: ALEG (Algorithm 1, the same code) on the approximate problem (24),
      min_W max_i R_i(W) - Rhat_i^*: only the full-gradient risks are shifted; the
      stochastic correction l(w_h; xi) - l(w_s; xi) is shift-free (§2.8).
  Output: stage 2's eta-weighted output (22).

Stage-1 cost is counted and the monitor is first called after stage 1, so MERO curves start at
the stage-1 cost (spec pitfall 13). S_1 = floor((b_i - n_i) / (n_i + 2 K_i)) with
b_i = stage1_epochs * n_i (spec §4.4: K_i = n_i gives S_1 = 3 and exactly 10 n_i at the
default 10 epochs); if not even one epoch fits, K_i shrinks to fit one.
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.errors import DrocliError
from drocli.ops.mirror_prox import EVAL_POINTS, check_choice, effective_steps
from drocli.problems.mero import group_view
from drocli.solvers.dro.aleg import run_aleg

SCHEDULES = ("decay", "constant")

STAGE1_K = ("n_i", "nbar")


def stage1_budgets(problem, monitor, stage1_epochs: float) -> np.ndarray:
    """Per-group stage-1 budgets b_i proportional to n_i, summing to stage1_epochs * N but
    never more than half of the run's budget (so that a short run still has a stage 2;
    [DEFAULT] spec §4.4). Shared by ALEM, ERMEG and TSA."""
    if not stage1_epochs >= 0:
        raise DrocliError(f"stage1_epochs must be >= 0, got {stage1_epochs}",
                          key="params.stage1_epochs", fix="e.g. stage1_epochs: 10")
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


@registry.solver(
    "alem",
    params={
        "gamma_w": 0.01,        # [DEFAULT] spec §2.5/§4.1: stage-2 w-step (MERO sweep)
        "gamma_q": 0.0316,      # [DEFAULT] spec §2.5/§4.1: stage-2 q-step (MERO sweep)
        "gamma_1": 0.01,        # [DEFAULT] spec §2.7/§4.1: stage-1 step of ALEG(m=1) (sweep)
        "schedule": "decay",    # [DEFAULT] spec §2.5: h_s = max(sqrt(0.05), 1/sqrt(s+1)),
                                #   in both stages (epoch count restarts in stage 2)
        "K": 0,                 # [DEFAULT] spec §2.5: 0 -> stage-2 K = n_bar (Thm 5.3)
        "alpha": 0.0,           # [DEFAULT] spec §2.5: 0 -> alpha = 1/K in both stages
        "eta": 0.0,             # [DEFAULT] spec §2.5: 0 = decoupled steps; > 0: coupled
                                #   geometry gamma_w = R^2 eta, gamma_q = 2 ln(m) eta
        "stage1_epochs": 10.0,  # [DEFAULT] spec §4.4: stage-1 budget 10 N, split by n_i
        "stage1_K": "n_i",      # [DEFAULT] spec §2.8: K_i = n_i; "nbar": the paper's K = n_bar
        "eval_point": "output",  # [DEFAULT] spec §4.1: stage 2's eta-weighted output (22)
    },
    family="mero",
    description="ALEM (Yu et al. 2024, Algorithm 2): per-group ALEG(m=1) estimates of R_i^*, "
                "then ALEG on the shifted risks",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """ALEM, Algorithm 2 of Yu et al. 2024 (two-stage ALEG for empirical MERO); returns the
    stage-2 point (W, q)."""
    schedule = check_choice(params, "schedule", SCHEDULES)
    eval_point = check_choice(params, "eval_point", EVAL_POINTS)
    stage1_K = check_choice(params, "stage1_K", STAGE1_K)
    gamma_w, gamma_q = effective_steps(params, problem)
    gamma_1 = float(params["gamma_1"])
    if not gamma_1 > 0:
        raise DrocliError(f"gamma_1 must be > 0, got {gamma_1}", key="params.gamma_1",
                          fix="e.g. gamma_1: 0.1")
    alpha_given = float(params.get("alpha") or 0.0)
    rhat, _ = stage1(problem, rng, stage1_budgets(problem, monitor, params["stage1_epochs"]),
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
