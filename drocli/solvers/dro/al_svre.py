"""AL-SVRE: Accelerated Loopless Stochastic Variance-Reduced Extragradient (Luo, Xie, Zhang &
Zhang 2021, arXiv:2106.01761), the GDRO baseline of Yu et al. 2024 -- a RECONSTRUCTION
(docs/papers/000.md §3.3 [RECON]; the paper gives no update rule or setting):

Catalyst (Lin et al. 2015) on the w-block, with a loopless variance-reduced extragradient
(MPVR-type mirror prox) inner solver:

  v_0 = w_0 = 0, q_0 = 1/m; snapshot z^s := z_0, full gradient at z^s          [cost N]
  for t = 0, 1, ...:
      P_t(w, q) = F(w, q) + (beta/2)||w - v_t||^2 + (lam/2)||w||^2
      K_in inner iterations on P_t, warm-started at (w_t, current q iterate):
          half step with the full snapshot operator of P_t (its prox-term gradient
          beta(w_s - v_t) + lam w_s is exact and free), one MPVR sample (importance or
          uniform sampling), control variate with the same sample, full step adding the exact
          prox-term gradient beta(w_h - v_t) + lam w_h; anchors alpha on the snapshot point
          and 1 - alpha on the iterate                                           [cost 2]
          with probability p: snapshot := current iterate, full gradient          [cost N]
      (w_{t+1}, q_{t+1}) = inner output (average of the half points, or last iterate)
      v_{t+1} = w_{t+1} + tau_t (w_{t+1} - w_t),
          tau_t = t/(t+3) if lam = 0, else (1 - sqrt(kappa))/(1 + sqrt(kappa)),
          kappa = lam/(lam+beta)
  output: the last outer iterate (w_T, q_T)

The entropic (KL) geometry is used on q, as for the other solvers. Every choice here is a
[DEFAULT] of the reconstruction (docs/papers/000.md §3.3).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.solvers.dro import steps
from drocli.solvers.dro.mirror_prox import (
    VRState,
    effective_steps,
    single_rows,
)


class ALSVREParams(Params):
    """AL-SVRE's parameters (reconstruction, docs/papers/000.md §3.3; tuned steps in the specs)."""

    gamma_w: float = steps.gamma_w(0.001, "inner ")
    gamma_q: float = steps.gamma_q(0.001, "inner ")
    beta: float = Field(0.01, ge=0, description="Catalyst prox weight on w ([DEFAULT] "
                        "docs/papers/000.md §3.3; sweep in docs/reproduction/tuning.md)")
    lam: float = Field(0.0, ge=0, description="extra regulariser ([DEFAULT] §3.3: 0)")
    K_in: int | None = auto("inner iterations; auto: K_in = N ([DEFAULT] §3.3)", ge=1)
    p: float | None = auto("snapshot refresh probability; auto: 1/N ([DEFAULT] §3.3)",
                           legacy=0.0, gt=0, le=1)
    alpha: float | None = auto("snapshot anchor weight; auto: p ([DEFAULT] §3.3)",
                               legacy=0.0, gt=0, le=1)
    sampling: Literal["importance", "uniform"] = Field(
        "importance", description="inner step sampling as MPVR: importance = Option II "
        "[DEFAULT] docs/papers/000.md §3.3; uniform = Option I")
    inner_output: Literal["average", "last"] = Field(
        "average", description="inner solver output: mean of the half points [DEFAULT] "
        "docs/papers/000.md §3.3, or the last one")
    eta: float | None = steps.eta()
    eval_point: steps.EvalPoint = steps.eval_point("the last outer iterate",
                                                   last="the inner iterate")


@registry.solver(
    "al_svre",
    reference="AL-SVRE reconstructed (docs/papers/000.md §3.3)",
    params=ALSVREParams,
    family="gdro",
    description="AL-SVRE (Luo et al. 2021), reconstruction: Catalyst on w + loopless VR "
                "extragradient inner solver",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """AL-SVRE reconstruction (docs/papers/000.md §3.3); returns the last outer iterate (W, q)."""
    sampling = params["sampling"]
    inner_output = params["inner_output"]
    eval_point = params["eval_point"]
    gamma_w, gamma_q = effective_steps(params, problem)
    beta = float(params["beta"])
    lam = float(params["lam"])
    N = problem.N
    K_in = int(params.get("K_in") or 0) or N
    p = float(params.get("p") or 0.0) or 1.0 / N
    alpha = float(params.get("alpha") or 0.0) or p
    if lam > 0:
        kappa = lam / (lam + beta)
        tau_c = (1.0 - math.sqrt(kappa)) / (1.0 + math.sqrt(kappa))

    st = VRState(problem)
    W_out, q_out = st.last()
    w_prev = st.w.copy()

    def point():
        return (W_out, q_out) if eval_point == "output" else st.last()

    def half_gradient():
        return st.gw_full + beta * (st.w_s - st.v) + lam * st.w_s

    keep = monitor(*point())
    if not keep:
        return point()
    st.set_snapshot_at_iterate()                               # cost N
    keep = monitor(*point())
    until = int(rng.geometric(p))
    t = 0
    while keep:
        gw_half = half_gradient()
        st.out_w[:] = 0.0
        st.out_q[:] = 0.0
        st.sums[0] = 0.0
        rows, grps, scale = single_rows(problem, rng, K_in, sampling)
        k = 0
        while keep and k < K_in:
            n = min(K_in - k, until, monitor.steps_until_due(2))
            st.run(rows[k:k + n], grps[k:k + n], scale, alpha, gamma_w, gamma_q, 1.0,
                   gw_half=gw_half, beta=beta, lam=lam)
            k += n
            until -= n
            if until == 0:                                    # loopless snapshot refresh
                st.set_snapshot_at_iterate()                  # cost N
                gw_half = half_gradient()
                until = int(rng.geometric(p))
            if k == K_in:                                     # end of the subproblem
                W_new, q_new = st.output() if inner_output == "average" else st.last()
                w_new = W_new.reshape(-1)
                st.w[:] = w_new                               # warm start of P_{t+1}
                tau = t / (t + 3.0) if lam == 0 else tau_c
                st.v[:] = w_new + tau * (w_new - w_prev)     # Catalyst extrapolation
                w_prev = w_new.copy()
                W_out, q_out = W_new.copy(), q_new.copy()
                t += 1
            keep = monitor(*point())
    return point()
