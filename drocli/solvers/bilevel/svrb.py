"""SVRB: Algorithm 1 of Guo, Hu, Zhang & Yang (docs/papers/004.md §2.2, clean 0-indexed version),
with the settings of their Appendix E.1 (eta_t = tau_t = (t + c0)^(-1/3), one common STORM weight
beta_t = min(1, beta eta_t^2) for all estimators, H^{-1} v from the projected estimate).

STORM (Lemma 8) on the lower gradient w, the Hessian H (projected onto {H >= lam I} every
iteration, P5), the cross Jacobian V and the upper gradient v, each on ONE batch evaluated
at the current and the previous point (P2: the previous p too); u = grad_p f = 0 here.
V is kept in the structured form diag(alpha) X~ (§3.2), so its spectral-ball projection
is inactive (C_gxy = inf, P6). The hypergradient z = -V H^{-1} v is an n-vector: every
weight p_j moves each iteration.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.errors import DrocliError
from drocli.ops.psd import FlooredSPD, ball_clip
from drocli.ops.weight_step import weight_step
from drocli.plugins import registry
from drocli.plugins.registry import auto
from drocli.solvers.bilevel import Batches, StormSteps, decay, storm_lower


class SVRBParams(Batches, StormSteps):
    """SVRB's parameters (Algorithm 1 with App. E.1's schedules; docs/papers/004.md §2.2, §3.1)."""

    init_batch: int = Field(4, ge=1, description="start-up estimates on init_batch x the "
                            "batches (P1)")
    beta: float = Field(10.0, gt=0, description="STORM weight min(1, beta eta_t^2)")
    tau: float = Field(1.0, gt=0, description="lower (y) step multiplier")
    C_fy: float | None = auto("radius of the projection of v; auto: inactive (infinite, "
                              "docs/papers/004.md §3.1)", legacy=0.0, gt=0)


@registry.solver(
    "svrb",
    reference="Guo, Hu, Zhang & Yang, Alg. 1 (docs/papers/004.md §2.2), App. E.1 schedules",
    params=SVRBParams,
    family="bilevel",
    description="SVRB: single-loop STORM bilevel method, Hessian inverse from the projected "
                "estimate (Guo, Hu, Zhang & Yang, Algorithm 1)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """SVRB, Guo, Hu, Zhang & Yang, Algorithm 1 (docs/papers/004.md §2.2) with App. E.1's schedules:
    x step eta_t gamma z, y step tau_t tau w, eta_t = tau_t = (t + c0)^(-1/3), STORM weight
    min(1, beta eta_t^2); start-up estimates on init_batch x the batches (P1); C_fy > 0
    projects v onto that ball (0: inactive). Single task
    (problem.m = 1; RSVRB handles m > 1). Per iteration: batch + batch_val samples."""
    if problem.m != 1:
        raise DrocliError(f"svrb solves one lower problem, the problem has {problem.m}",
                          key="problem.params.tasks", fix="tasks: 1, or use rsvrb / re_rsvrb")
    b, bv, b0 = params["batch"], params["batch_val"], params["init_batch"]
    c0, beta = params["c0"], params["beta"]
    gamma, tau = params["gamma"], params["tau"]
    C_fy = params["C_fy"] or np.inf        # 0: no projection of v
    nonneg = params["nonneg"]
    lam = problem.lam
    p, W = problem.zero_point()
    w = W[0]
    keep = monitor(p, w[None])
    # start-up (t = 0): plain minibatch estimates at (p_0, w_0), one plain step
    B, Bv = problem.draw_train(rng, b0 * b), problem.draw_val(rng, b0 * bv)
    gw, H, a = problem.lower_terms(p, w, B)
    alpha = np.zeros(problem.n)
    alpha[B] = a
    v = ball_clip(problem.upper_grad(w, Bv), C_fy)
    Hs = FlooredSPD(H, lam)
    t = 0
    while keep:
        q = problem.features_dot(Hs.solve(v))     # the hypergradient is z = -alpha ∘ q
        eta = decay(t, c0, 1.0 / 3.0)
        p_prev, w_prev = p, w
        p = weight_step(p, alpha, q, eta * gamma, nonneg)   # clip(p - eta gamma z), one pass
        w = w - eta * tau * gw
        t += 1
        keep = monitor(p, w[None])
        if not keep:
            break
        eta = decay(t, c0, 1.0 / 3.0)
        beta_t = min(1.0, beta * eta * eta)
        B, Bv = problem.draw_train(rng, b), problem.draw_val(rng, bv)
        alpha *= 1.0 - beta_t
        Hs, g_cur, g_old = storm_lower(problem, (p_prev, w_prev), (p, w), 0, B, Hs.matrix,
                                       alpha, 1.0 - beta_t)
        gw = (1.0 - beta_t) * (gw - g_old) + g_cur
        v = ball_clip((1.0 - beta_t) * (v - problem.upper_grad(w_prev, Bv))
                      + problem.upper_grad(w, Bv), C_fy)
    return p, w[None]
