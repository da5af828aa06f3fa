"""SGD with any index sampler, the Fig. 1 baseline of Zhao, Lyu & Kolar, "L-SVRG and
L-Katyusha with Adaptive Sampling" (TMLR 2023), §2.3 of docs/papers/002.md:

  x = x0 = 0
  for t = 0..T-1:
      draw i_1..i_b i.i.d. from p^t;  x = x - eta (1/b) sum_k grad f_{i_k}(x) / (n p_{i_k})   [b]
      sampler update with a_k = ||grad f_{i_k}(x)||^2 (OSMD / AdaOSMD)

SGD = uniform, Optimal-SGD = optimal (p_i proportional to ||grad f_i(x^t)||, [UNSPEC], the
SGD optimum of Zhao & Zhang 2015 / Needell et al. 2016), IS-SGD = importance. Constant step
(P17: the same step as L-SVRG in the same panel, no decay; a number, which the spec may
pair with the data panel, as for L-SVRG). AdaOSMD computes
max_i ||grad f_i(x0)|| with one counted full pass.
"""

from __future__ import annotations

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.samplers import (
    sampler_draw_batch,
    sampler_learns,
    sampler_set_weights,
    sampler_update,
)
from drocli.plugins import registry
from drocli.problems.finite_sum import Snapshot
from drocli.solvers.finite_sum import (
    StepParams,
    Workspace,
    grad_norm_max,
    horizon,
    linear_only,
)
from drocli.solvers.finite_sum.estimators import delta_norms, vr_estimate


@njit(cache=True, _nrt=False)
def sgd_chunk(data, x, zero, U, step, ss, optimal, dr, counter):
    """U.shape[0] SGD steps in place: the estimator of `vr_estimate` with the all-zero
    snapshot `zero` (w = 0, gw = 0), so g = (1/b) sum_k grad f_{i_k}(x) / (n p_{i_k})."""
    g = dr.g
    d = x.shape[0]
    b = dr.idx.shape[0]
    feedback = sampler_learns(ss)
    for t in range(U.shape[0]):
        if optimal:
            delta_norms(data, x, zero, ss.pfix)
            sampler_set_weights(ss)
        sampler_draw_batch(ss, U[t], dr.idx, dr.pk)
        vr_estimate(data, x, zero, dr, feedback)
        counter[0] += b
        for j in range(d):
            x[j] -= step * g[j]
        sampler_update(ss, dr.idx, dr.ak, dr.pk)


@registry.solver(
    "sgd",
    reference="Zhao, Lyu & Kolar (2023) §4.1 baseline (docs/papers/002.md §2.3)",
    params=StepParams,
    family="finite_sum",
    description="SGD with uniform / importance / optimal / OSMD / AdaOSMD sampling "
                "(Zhao, Lyu & Kolar 2023, §4.1 baseline)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """SGD / Optimal-SGD, the Fig. 1 baselines of Zhao, Lyu & Kolar (TMLR 2023), §4.1
    (docs/papers/002.md §2.3): constant step, mini-batch drawn i.i.d. from p^t. Returns the last
    iterate x."""
    linear_only(problem, "sgd")
    b = params["batch"]
    step = params["step"]
    x = problem.zero_point()
    t = 0
    keep = monitor(x, iteration=t)
    abar = 1.0
    if params["sampler"] == "adaosmd":
        snap_s, snap_c, _ = problem.snapshot(x)                # abar needs all n gradients
        abar = grad_norm_max(problem, x, snap_s, snap_c)
    ws = Workspace(problem, params, rng, batch=b, T=horizon(params, monitor, float(b)),
                   abar=abar)
    zero_d, zero_n = np.zeros(problem.d), np.zeros(problem.n)
    zero = Snapshot(zero_d, zero_d, zero_n, zero_n)
    while keep:
        U, _ = ws.stream.take(monitor.steps_until_due(float(b)))
        sgd_chunk(problem.kdata, x, zero, U, step, ws.sampler.state, ws.optimal, ws.draws,
                  problem.counter)
        t += U.shape[0]
        keep = monitor(x, iteration=t)
    return x
