"""STABLE (Chen, Sun, Xiao & Yin 2021), a baseline of Guo, Hu, Zhang & Yang (docs/papers/004.md §3.4
[RECON]): single loop, single time scale. Like SVRB it keeps STORM estimates of the lower
Hessian Hyy (projected onto {H >= lam I}, solved exactly, docs/papers/004.md §1.6) and of the cross
Jacobian Hxy, but uses plain minibatch gradients, and its lower step carries the correction
-Hyy^{-1} Hxy^T (p_{k+1} - p_k) that follows w*(p) along the p step.

Hxy is stored as diag(alpha) X~ (§3.2): Hxy q = alpha * (X~ q), Hxy^T d = X~^T (alpha d).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.ops.psd import FlooredSPD
from drocli.plugins import registry
from drocli.solvers.bilevel import Batches, StormSteps, clip_weights, decay, storm_lower


class STABLEParams(Batches, StormSteps):
    """STABLE's parameters ([RECON] docs/papers/004.md §3.4 with App. E.1's schedules)."""

    init_batch: int = Field(4, ge=1, description="start-up estimates on init_batch x the "
                            "batches")
    beta: float = Field(10.0, gt=0, description="STORM weight min(1, beta eta_t^2)")
    tau0: float = Field(1.0, gt=0, description="lower (y) step multiplier")


@registry.solver(
    "stable",
    reference="Chen, Sun, Xiao & Yin (2021); docs/papers/004.md §3.4 [RECON], App. E.1 steps",
    params=STABLEParams,
    family="bilevel",
    description="STABLE: single-loop single-time-scale bilevel method with STORM Hessian and "
                "Jacobian estimates (Chen et al. 2021; baseline of Guo, Hu, Zhang & Yang)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """STABLE (Chen, Sun, Xiao & Yin 2021), §3.4 [RECON] with the E.1 step rule of
    App. E.1: eta_k = (k + c0)^(-1/2), x step gamma eta_k, lower step tau0 eta_k, STORM
    weight b_k = min(1, beta eta_k^2). Per iteration and task i: h_i = -Hxy_i Hyy_i^{-1}
    grad_w f_i(b_val-batch); p <- p - gamma eta_k sum_i h_i; w_i <- w_i - tau_k grad_w g_i
    (b-batch) - Hyy_i^{-1} Hxy_i^T (p_{k+1} - p_k); then (Hxy_i, Hyy_i) STORM-updated on one
    fresh b-batch at both points. Start: plain estimates on one init_batch b batch per task.
    Samples: m init_batch b once, then m (b_val + 2 b) per iteration."""
    b, bv, b0 = params["batch"], params["batch_val"], params["init_batch"]
    c0, beta = params["c0"], params["beta"]
    gamma, tau0 = params["gamma"], params["tau0"]
    nonneg = params["nonneg"]
    X, m = problem.X, problem.m
    p, W = problem.zero_point()
    keep = monitor(p, W)
    alpha = np.zeros((m, problem.n))
    Hs = []
    for i in range(m):
        B = problem.draw_train(rng, b0 * b)
        _, H, a = problem.lower_terms(p, W[i], B, i)
        alpha[i, B] = a
        Hs.append(FlooredSPD(H, problem.lam))
    k = 0
    while keep:
        eta = decay(k, c0, 0.5)
        h = np.zeros(problem.n)
        G = np.empty_like(W)
        for i in range(m):
            q = Hs[i].solve(problem.upper_grad(W[i], problem.draw_val(rng, bv), i))
            h -= alpha[i] * problem.features_dot(q)
            G[i] = problem.lower_terms(p, W[i], problem.draw_train(rng, b), i, hessian=False)[0]
        p_new = clip_weights(p - gamma * eta * h, nonneg)
        dp = p_new - p
        beta_k = min(1.0, beta * eta * eta)
        for i in range(m):
            w_new = W[i] - tau0 * eta * G[i] - Hs[i].solve(X.T @ (alpha[i] * dp))
            alpha[i] *= 1.0 - beta_k
            Hs[i] = storm_lower(problem, (p, W[i]), (p_new, w_new), i, problem.draw_train(rng, b),
                                Hs[i].matrix, alpha[i], 1.0 - beta_k)[0]
            W[i] = w_new
        p = p_new
        k += 1
        keep = monitor(p, W)
    return p, W
