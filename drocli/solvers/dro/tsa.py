"""TSA: the two-stage stochastic approximation of Zhang, Bai, Tu, Yang & Hu (ICML 2024),
"Efficient Stochastic Approximation of Minimax Excess Risk Optimization", Algorithm 2, as
the empirical-MERO baseline of Yu et al. 2024 (docs/papers/000.md §3.5). Reconstruction ([RECON]:
the update rule follows that paper's biased-gradient idea; the step sizes are not given):

  Stage 1, for each group i (budget b_i = stage1_epochs * n_i):
      projected SGD on R_i from 0 with uniform samples of group i, constant step gamma_1,
      T_1 = b_i steps (b_i - n_i with shift "full"); wbar_i = average of the iterates
      [shift "full": Rhat_i^* = R_i(wbar_i), one counted pass]
  Stage 2: group-sampling SMD (docs/papers/000.md §3.1) with a biased excess-risk estimate on q:
      one uniform sample xi_{t,i} per group;  g_w = sum_i q_{t,i} grad l(w_t; xi_{t,i})
      r_i = l(w_t; xi_{t,i}) - l(wbar_i; xi_{t,i})   (shift "sample": the same sample;
                                                       cost m gradients + m losses)
          = l(w_t; xi_{t,i}) - Rhat_i^*              (shift "full"; cost m)
      w_{t+1} = Proj(w_t - gamma_w g_w);  log q_{t+1} = normalize(log q_t + gamma_q r)
  output: the running averages of (w_t, q_t).

Both stages run in compiled loops (stage 1 is `smd_chunk` on a one-group view, whose
q-block is trivial); the monitor is first called after stage 1 (docs/papers/000.md pitfall 13).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.ops.jit import njit
from drocli.ops.rows import (
    axpy_row,
    log_normalize_probs,
    loss_dscore,
    project_ball_flat,
    scores_row,
)
from drocli.ops.simplex import uniform_log
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.mero import group_view
from drocli.solvers.dro import steps
from drocli.solvers.dro.alem import stage1_budgets
from drocli.solvers.dro.kernels import (
    SMDScratch,
    SMDState,
    group_data,
    smd_chunk,
    smd_state,
)
from drocli.solvers.dro.mirror_prox import effective_steps, group_rows

BLOCK = 1024  # rounds of indices drawn per rng call (trajectory independent of checkpoints)


@njit(cache=True)
def tsa_chunk(data, rows, wbars, shift, use_sample, st, gamma_w, gamma_q, counter, sc):
    """Run rows.shape[0] TSA stage-2 rounds in place (docs/papers/000.md §3.5).

    rows (n, m): one global row per group per round. wbars (m, D): stage-1 points (flat);
    shift (m,): Rhat_i^*. use_sample: r_i = l(w_t; row_i) - l(wbar_i; row_i) (counted 2m),
    else r_i = l(w_t; row_i) - shift_i (counted m). Output: uniform average of the points
    (w_t, q_t) at which the gradients are taken; st.q is kept equal to exp(st.lq). The
    bundles are those of `smd_chunk` (drocli.solvers.dro.kernels).
    """
    X, y, loss_id, k, radius = data.X, data.y, data.loss_id, data.k, data.radius
    w, lq, q, out_w, out_q, sums = st.w, st.lq, st.q, st.out_w, st.out_q, st.sums
    g, r, s, ds = sc.g, sc.r, sc.s, sc.ds
    n = rows.shape[0]
    m = lq.shape[0]
    D = w.shape[0]
    for t in range(n):
        for j in range(D):
            out_w[j] += w[j]
            g[j] = 0.0
        for i in range(m):
            out_q[i] += q[i]
        sums[0] += 1.0
        for i in range(m):
            row = rows[t, i]
            scores_row(X, row, w, k, s)
            r[i] = loss_dscore(s, y[row], loss_id, ds)
            for c in range(k):
                ds[c] *= q[i]
            axpy_row(X, row, ds, k, g)
            if use_sample:
                scores_row(X, row, wbars[i], k, s)
                r[i] -= loss_dscore(s, y[row], loss_id, ds)
            else:
                r[i] -= shift[i]
        counter[0] += 2 * m if use_sample else m
        for j in range(D):
            w[j] -= gamma_w * g[j]
        project_ball_flat(w, radius)
        for i in range(m):
            lq[i] += gamma_q * r[i]
        log_normalize_probs(lq, q)


def sgd_average(view, rng, steps: int, gamma: float) -> np.ndarray:
    """Projected SGD with uniform samples on a one-group view, `steps` counted steps from 0;
    returns the average of the iterates w_0..w_{T-1} (flat)."""
    st, sc = smd_state(view.d * view.k, 1, view.k, uniform_log(1))
    data = group_data(view)
    done = 0
    while done < steps:
        n = min(BLOCK * 16, steps - done)
        rows = group_rows(view, rng, n)
        smd_chunk(data, rows, np.ones(n), st, gamma, 0.0, view.counter, sc)
        done += n
    return st.out_w / st.sums[0] if st.sums[0] > 0 else st.w


def stage1(problem, rng, budgets, gamma_1: float, use_sample: bool = True):
    """TSA's stage 1: (wbars (m, d*k), Rhat^* (m,)) by averaged projected SGD per group
    (counted); Rhat^* = R_i(wbar_i) by one counted pass per group only if not use_sample
    (zeros otherwise)."""
    d, k = problem.shape
    wbars = np.zeros((problem.m, d * k))
    rhat = np.zeros(problem.m)
    for i in range(problem.m):
        view = group_view(problem, i)
        steps = int(budgets[i]) - (0 if use_sample else view.N)
        wbars[i] = sgd_average(view, rng, max(1, steps), gamma_1)
        if not use_sample:
            rhat[i] = view.full_oracle(wbars[i].reshape(d, k), np.zeros(1))[0][0]  # n_i
    return wbars, rhat


class TSAParams(Params):
    """TSA's parameters (reconstruction, docs/papers/000.md §3.5; MERO sweep; values in the
    specs)."""

    gamma_w: float = steps.gamma_w(0.003, "stage-2 SMD ")
    gamma_q: float = steps.gamma_q(0.0316, "stage-2 SMD ")
    gamma_1: float = Field(0.003, gt=0, description="stage-1 SGD step ([DEFAULT] spec "
                           "§3.5/§4.1; MERO sweep)")
    stage1_epochs: float = steps.stage1_epochs()
    stage1_share: float | None = steps.stage1_share()
    shift: Literal["sample", "full"] = Field(
        "sample", description="the excess-risk shift: l(wbar_i; xi) on the same sample "
        "[DEFAULT] docs/papers/000.md §3.5, or the full stage-1 risk")
    eta: float | None = steps.eta()
    eval_point: steps.EvalPoint = steps.eval_point("the running average")


@registry.solver(
    "tsa",
    reference="Zhang et al. (2024), Alg. 2, reconstructed (docs/papers/000.md §3.5)",
    params=TSAParams,
    family="mero",
    description="TSA (Zhang et al. 2024, reconstruction): per-group SGD, then SMD with a "
                "biased excess-risk estimate on q",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """TSA (Zhang et al. ICML 2024, Algorithm 2; reconstruction of docs/papers/000.md §3.5); returns
    (W, q)."""
    shift_mode = params["shift"]
    eval_point = params["eval_point"]
    gamma_w, gamma_q = effective_steps(params, problem)
    gamma_1 = float(params["gamma_1"])
    d, k = problem.shape
    m = problem.m
    D = d * k
    use_sample = shift_mode == "sample"

    budgets = stage1_budgets(problem, monitor, params["stage1_epochs"],
                             params.get("stage1_share"))
    wbars, rhat = stage1(problem, rng, budgets, gamma_1, use_sample)

    # ---- stage 2: SMD with the biased excess-risk estimate ----------------------------------
    w = np.zeros(D)
    lq = uniform_log(m)
    q = np.exp(lq)
    out_w = np.zeros(D)
    out_q = np.zeros(m)
    sums = np.zeros(1)
    g = np.zeros(D)
    r = np.zeros(m)
    s = np.zeros(k)
    ds = np.zeros(k)
    cost = 2 * m if use_sample else m
    data = group_data(problem)
    st, sc = SMDState(w, lq, q, out_w, out_q, sums), SMDScratch(g, r, s, ds)

    def point():
        if eval_point == "last" or sums[0] <= 0:
            return w.reshape(d, k).copy(), np.exp(lq)
        return (out_w / sums[0]).reshape(d, k), out_q / sums[0]

    keep = monitor(*point())
    rows = group_rows(problem, rng, BLOCK)
    pos = 0
    while keep:
        if pos == BLOCK:
            rows = group_rows(problem, rng, BLOCK)
            pos = 0
        n = min(BLOCK - pos, monitor.steps_until_due(cost))
        tsa_chunk(data, rows[pos:pos + n], wbars, rhat, use_sample, st, gamma_w, gamma_q,
                  problem.counter, sc)
        pos += n
        keep = monitor(*point())
    return point()
