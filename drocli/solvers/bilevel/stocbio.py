"""stocBiO (Ji, Yang & Liang 2021), a baseline of Guo, Hu, Zhang & Yang (docs/papers/004.md §3.4
[RECON]): a double loop with large batches, `inner` warm-started lower SGD steps per outer
step, then a hypergradient whose Hessian inverse is stocBiO's deterministic-length Neumann
series eta_N sum_{q=0..Q} prod (I - eta_N H_q) vec on Q fresh large batches."""

from __future__ import annotations

from functools import partial

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.solvers.bilevel import NeumannSteps, clip_weights, decay
from drocli.solvers.bilevel.bsa import cross_hypergrad, lower_sgd, smoothness


def neumann_stocbio(hvp, vec: np.ndarray, Q: int, eta: float) -> np.ndarray:
    """stocBiO HIA: r_0 = vec, r_q = r_{q-1} - eta hvp(r_{q-1}) (hvp(r) = Hess_ww g(fresh
    batch) @ r), returns eta sum_{q=0..Q} r_q -> [Hess_ww g]^{-1} vec as Q grows
    (0 < eta < 2 / L)."""
    r = vec
    acc = vec.copy()
    for _ in range(Q):
        r = r - eta * hvp(r)
        acc += r
    return eta * acc


class StocBiOParams(NeumannSteps):
    """stocBiO's parameters ([RECON] docs/papers/004.md §3.4 with App. E.1's step rule)."""

    batch_big: int = Field(128, ge=1, description="the large minibatch of every estimate")
    inner: int = Field(10, ge=1, description="inner lower-level steps per outer step")
    Q: int = Field(10, ge=1, description="Neumann terms of the Hessian inverse")


@registry.solver(
    "stocbio",
    reference="Ji, Yang & Liang (2021); docs/papers/004.md §3.4 [RECON], App. E.1 steps",
    params=StocBiOParams,
    tiny={"batch_big": 16, "inner": 2, "Q": 2},
    family="bilevel",
    description="stocBiO: double-loop large-batch stochastic bilevel method with a Neumann "
                "Hessian inverse (Ji, Yang & Liang 2021; baseline of Guo, Hu, Zhang & Yang)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """stocBiO (Ji, Yang & Liang 2021), docs/papers/004.md §3.4 [RECON] with the E.1 step rule of
    App. E.1: at outer step t, eta_t = (t + c0)^(-1/2), every task i runs `inner` warm-started
    lower SGD steps of tau0 eta_t^2 on batches S (|S| = batch_big), then h_i = -grad2_pw g(D_G)
    @ HIA(grad_w f(D_F)) with the stocBiO HIA (Q batches B_q, eta_N = 1/L), all of size
    batch_big; p <- p - gamma eta_t sum_i h_i (E.2: all m tasks).
    Samples per outer step: m (inner + Q + 2) batch_big."""
    bb, inner, Q = params["batch_big"], params["inner"], params["Q"]
    c0, gamma, tau0 = params["c0"], params["gamma"], params["tau0"]
    eta_N = [1.0 / smoothness(problem, params, i) for i in range(problem.m)]
    nonneg = params["nonneg"]

    def hvp(p, w, i, u):                 # Hess_ww g_i(p, w; fresh batch_big rows) @ u
        return problem.hess_vec(p, w, problem.draw_train(rng, bb), u, i)

    p, W = problem.zero_point()
    keep = monitor(p, W)
    t = 0
    while keep:
        eta = decay(t, c0, 0.5)
        h = np.zeros(problem.n)
        for i in range(problem.m):
            w = W[i] = lower_sgd(problem, rng, p, W[i], i, bb, tau0 * eta * eta, inner)
            v = problem.upper_grad(w, problem.draw_val(rng, bb), i)
            r = neumann_stocbio(partial(hvp, p, w, i), v, Q, eta_N[i])
            h += cross_hypergrad(problem, p, w, i, problem.draw_train(rng, bb), r)
        p = clip_weights(p - gamma * eta * h, nonneg)
        t += 1
        keep = monitor(p, W)
    return p, W
