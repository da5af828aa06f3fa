"""SMD: stochastic mirror descent for the GDRO saddle problem (Nemirovski, Juditsky, Lan &
Shapiro 2009, SIAM J. Optim., §3 "stochastic mirror descent for saddle point problems"), with
the m-samples-per-round group sampling of Zhang et al. 2023 -- the baseline of Yu et al. 2024
(docs/papers/000.md §3.1, [RECON] update rule):

  w_1 = 0, q_1 = 1/m
  for t = 1..T:
      one uniform sample xi_{t,i} per group i                                  [cost m]
      g_w = sum_i q_{t,i} grad l(w_t; xi_{t,i});   r_i = l(w_t; xi_{t,i})
      w_{t+1}      = Proj_W(w_t - gamma_w h_t g_w)                         (SGD on w)
      log q_{t+1}  = normalize(log q_t + gamma_q h_t r)                    (Hedge on q)
  output: the h_t-weighted average of (w_t, q_t), t = 1..T

h_t = 1 ("constant", tuned steps for the known horizon, [DEFAULT]) or 1/sqrt(t) ("sqrt").
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.ops.simplex import uniform_log
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.dro import steps
from drocli.solvers.dro.kernels import SMDScratch, SMDState, group_data, smd_chunk
from drocli.solvers.dro.mirror_prox import effective_steps, group_rows

BLOCK = 1024  # rounds of indices drawn per rng call (trajectory independent of checkpoints)


class SMDParams(Params):
    """SMD's parameters (§3.1; steps tuned by §4.1; tuned values in the specs)."""

    gamma_w: float = steps.gamma_w(0.003)
    gamma_q: float = steps.gamma_q(0.1)
    schedule: Literal["constant", "sqrt"] = Field(
        "constant", description="constant steps [DEFAULT] §3.1; sqrt: steps / sqrt(t)")
    eta: float | None = steps.eta()
    eval_point: steps.EvalPoint = steps.eval_point("the running (weighted) average")


@registry.solver(
    "smd",
    reference="Nemirovski et al. (2009) (docs/papers/000.md §3.1)",
    params=SMDParams,
    family="gdro",
    description="SMD (Nemirovski et al. 2009) with m-sample group sampling: SGD on w, "
                "Hedge on q",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """Group-sampling SMD (Nemirovski et al. 2009; docs/papers/000.md §3.1); returns (W, q)."""
    schedule = params["schedule"]
    eval_point = params["eval_point"]
    gamma_w, gamma_q = effective_steps(params, problem)
    d, k = problem.shape
    m = problem.m
    w = np.zeros(d * k)
    lq = uniform_log(m)
    out_w = np.zeros(d * k)
    out_q = np.zeros(m)
    sums = np.zeros(1)
    g = np.zeros(d * k)
    q = np.exp(lq)                 # kept equal to exp(lq) by the kernel
    r = np.zeros(m)
    s = np.zeros(k)
    ds = np.zeros(k)

    data = group_data(problem)
    st, sc = SMDState(w, lq, q, out_w, out_q, sums), SMDScratch(g, r, s, ds)

    def point():
        if eval_point == "last" or sums[0] <= 0:
            return w.reshape(d, k).copy(), np.exp(lq)
        return (out_w / sums[0]).reshape(d, k), out_q / sums[0]

    keep = monitor(*point())
    t = 0
    rows = group_rows(problem, rng, BLOCK)
    pos = 0
    while keep:
        if pos == BLOCK:
            rows = group_rows(problem, rng, BLOCK)
            pos = 0
        n = min(BLOCK - pos, monitor.steps_until_due(m))
        if schedule == "sqrt":
            hs = 1.0 / np.sqrt(np.arange(t + 1, t + n + 1, dtype=np.float64))
        else:
            hs = np.ones(n)
        smd_chunk(data, rows[pos:pos + n], hs, st, gamma_w, gamma_q, problem.counter, sc)
        pos += n
        t += n
        keep = monitor(*point())
    return point()
