"""ERMEG: Agarwal & Zhang (COLT 2022), "Minimax Regret Optimization for Robust Machine
Learning under Distribution Shift", Section 6 -- exponentiated gradient on q against an ERM
oracle for w -- as the empirical-MERO baseline of Yu et al. 2024 (docs/papers/000.md §3.4).
Reconstruction ([RECON]: the papers give no implementable oracle or step sizes):

  Stage 1, for each group i (budget b_i = stage1_epochs * n_i):
      w_i = FISTA on R_i from 0 with floor(b_i / n_i) - 1 counted full-gradient steps
      Rhat_i^* = R_i(w_i)                                            [one counted pass, n_i]
  q_1 = uniform, w_0 = 0
  round t = 1, 2, ...:
      w_t = ERM oracle on sum_i q_{t,i} R_i: E counted accelerated projected gradient
            (FISTA) steps from w_{t-1}, step 1 / max_i L_i                        [cost E N]
      e_i = R_i(w_t) - Rhat_i^*                                              [cost N]
      log q_{t+1} = normalize(log q_t + gamma_q e)                      (Hedge / EG)
  output: the averages (1/T) sum_t w_t and (1/T) sum_t q_t over completed rounds
  (Agarwal & Zhang output a uniform mixture; averaging is its convex-loss analogue).

The ERM oracle is `drocli.ops.erm.fista` fed with the problem's COUNTED oracles, so its
cost is measured, not claimed; the monitor is called after every counted pass (first after
stage 1, docs/papers/000.md pitfall 13) and reports the average of the completed rounds. L_i =
lambda_max(X_i^T X_i) / (4 n_i) (logistic; / (2 n_i) softmax) is a data constant computed
with the problem (not a gradient evaluation).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli import registry
from drocli.ops.erm import fista, smoothness
from drocli.ops.simplex import uniform_log
from drocli.problems.mero import group_view
from drocli.registry import Params
from drocli.solvers.dro.alem import stage1_budgets


def _lipschitz(problem) -> np.ndarray:
    lh = getattr(problem, "lhat_train", None)
    if lh is not None and np.all(np.isfinite(lh)):
        return np.asarray(lh, dtype=np.float64)
    return np.array([smoothness(problem.X[problem.offsets[i]:problem.offsets[i + 1]],
                                problem.loss) for i in range(problem.m)])


def stage1(problem, budgets, L, restart: bool = True) -> np.ndarray:
    """ERMEG's stage 1: Rhat^* (m,) by the counted ERM oracle, max(1, b_i // n_i - 1) FISTA
    steps on R_i from 0 (cost n_i each), then R_i at the last iterate (cost n_i)."""
    rhat = np.empty(problem.m)
    for i in range(problem.m):
        view = group_view(problem, i)
        steps = max(1, int(budgets[i]) // view.N - 1)
        res = fista(lambda w, v=view: v.group_oracle(w, 0), np.zeros(problem.shape), L[i],
                    problem.radius, tol=0.0, max_iter=steps, restart=restart)
        rhat[i] = view.full_oracle(res.x, np.zeros(1))[0][0]          # cost n_i
    return rhat


class ERMEGParams(Params):
    """ERMEG's parameters (reconstruction, §3.4; MERO sweep; values in the specs)."""

    gamma_q: float = Field(31.6, ge=0, description="Hedge step on q ([DEFAULT] spec "
                           "§3.4/§4.1; MERO sweep)")
    E: int = Field(1, ge=1, description="FISTA steps of the ERM oracle per round (§3.4 "
                   "proposes 20; the MERO sweep picks 1: E = 20 completes no round in 10 N)")
    stage1_epochs: float = Field(10.0, ge=0, description="stage-1 budget in units of N, "
                                 "split by n_i ([DEFAULT] docs/papers/000.md §4.4: 10)")
    restart: bool = Field(True, description="FISTA with gradient restart ([DEFAULT] "
                          "docs/papers/000.md §4.1)")
    eval_point: Literal["output", "last"] = Field(
        "output", description="output = the running average [DEFAULT] §4.1; last = w_t")


@registry.solver(
    "ermeg",
    params=ERMEGParams,
    family="mero",
    description="ERMEG (Agarwal & Zhang 2022, reconstruction): Hedge on q against a counted "
                "FISTA ERM oracle on sum_i q_i R_i",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """ERMEG (Agarwal & Zhang 2022, §6; reconstruction of §3.4); returns (W, q)."""
    eval_point = params["eval_point"]
    gamma_q = float(params["gamma_q"])
    E = int(params["E"])
    restart = bool(params["restart"])
    m = problem.m
    L = _lipschitz(problem)

    rhat = stage1(problem, stage1_budgets(problem, monitor, params["stage1_epochs"]), L,
                  restart)

    # ---- stage 2: Hedge on q against the ERM oracle on sum_i q_i R_i --------------------
    Lmax = float(np.max(L))
    zeros = np.zeros(m)
    w = np.zeros(problem.shape)
    lq = uniform_log(m)
    sum_w = np.zeros(problem.shape)
    sum_q = np.zeros(m)
    rounds = [0]

    def point():
        if eval_point == "last" or rounds[0] == 0:
            return w.copy(), np.exp(lq)
        return sum_w / rounds[0], sum_q / rounds[0]

    keep = [monitor(*point())]

    def after_step(_x):
        keep[0] = monitor(*point())
        return keep[0]

    while keep[0]:
        q = np.exp(lq)
        res = fista(lambda v, q=q: problem.full_oracle(v, q), w, Lmax, problem.radius,
                    tol=0.0, max_iter=E, restart=restart, callback=after_step)
        if not keep[0]:
            break
        w = res.x
        R, _ = problem.full_oracle(w, zeros)                             # cost N
        sum_w += w
        sum_q += q
        rounds[0] += 1
        lq = lq + gamma_q * (R - rhat)
        lq -= np.max(lq)
        lq -= np.log(np.sum(np.exp(lq)))
        keep[0] = monitor(*point())
    return point()
