"""BSA (Ghadimi & Wang 2018), a baseline of Guo, Hu, Zhang & Yang (docs/papers/004.md §3.4 [RECON]):
a double loop that warm-starts a few lower SGD steps per outer step, then moves p along a
stochastic hypergradient whose Hessian inverse is a randomly truncated Neumann series.

This module also holds the Neumann pieces the other baselines share (TTSA uses the same
Ghadimi-Wang HIA, stocBiO its own series with the same cross-Jacobian product): the
hypergradient h = -grad2_pw g(zeta0) @ HIA(grad_w f(xi)) (grad_p f = 0 here) is nonzero
only on the rows of zeta0 (docs/papers/004.md §3.2), so each step moves b weights per task.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.solvers.bilevel import Batches, NeumannSteps, clip_weights, decay


def smoothness(problem, params: dict, i: int = 0) -> float:
    """Task i's Neumann constant L (= 1 / eta_N): the param L if given, else by L_rule: the
    loose row-norm bound problem.L_g (every task), or L_safety x task i's lower curvature at
    the start (problem.curvature, power iteration)."""
    if params.get("L"):
        return float(params["L"])
    if params.get("L_rule", "bound") == "curvature":
        return float(params.get("L_safety", 1.0)) * problem.curvature(i)
    return float(problem.L_g)


def neumann_gw(hvp, vec: np.ndarray, k: int, N: int, L: float) -> np.ndarray:
    """Ghadimi-Wang HIA for one drawn k in {0..N-1}: (N/L) prod_{j<k} (I - H_j/L) vec, where
    hvp(r) = Hess_ww g(fresh batch) @ r. Its mean over k is the truncated Neumann sum
    (1/L) sum_{k<N} (I - H/L)^k vec of [Hess_ww g]^{-1} vec."""
    r = vec
    for _ in range(k):
        r = r - hvp(r) / L
    return (N / L) * r


def cross_hypergrad(problem, p, w, i: int, B0: np.ndarray, r: np.ndarray) -> np.ndarray:
    """-grad2_pw g_i(p, w; B0) @ r (an n-vector, nonzero on the rows B0 only)."""
    a = problem.lower_terms(p, w, B0, i, hessian=False)[2]
    return -problem.cross_apply(B0, a, r)


def gw_hypergrad(problem, rng, p, w, i: int, b: int, bv: int, N: int, L: float):
    """Task i's stochastic hypergradient with the GW HIA: costs bv + k b + b samples."""
    v = problem.upper_grad(w, problem.draw_val(rng, bv), i)
    k = int(rng.integers(N))
    r = neumann_gw(lambda u: problem.hess_vec(p, w, problem.draw_train(rng, b), u, i), v, k,
                   N, L)
    return cross_hypergrad(problem, p, w, i, problem.draw_train(rng, b), r)


def lower_sgd(problem, rng, p, w, i: int, b: int, tau: float, steps: int) -> np.ndarray:
    """`steps` warm-started SGD steps w <- w - tau grad_w g_i(p, w; fresh b-batch)."""
    for _ in range(steps):
        w = w - tau * problem.lower_terms(p, w, problem.draw_train(rng, b), i,
                                          hessian=False)[0]
    return w


class BSAParams(Batches, NeumannSteps):
    """BSA's parameters ([RECON] docs/papers/004.md §3.4 with App. E.1's step rule)."""

    N: int = Field(10, ge=1, description="Neumann terms of the Hessian inverse")
    inner_max: int = Field(10, ge=1, description="cap on the inner lower-level steps")


@registry.solver(
    "bsa",
    reference="Ghadimi & Wang (2018); docs/papers/004.md §3.4 [RECON], App. E.1 steps",
    params=BSAParams,
    family="bilevel",
    description="BSA: double-loop stochastic bilevel approximation with a Neumann Hessian "
                "inverse (Ghadimi & Wang 2018; baseline of Guo, Hu, Zhang & Yang, App. E)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """BSA (Ghadimi & Wang 2018), §3.4 [RECON] with the E.1 step rule of App. E.1:
    at outer step t, eta_t = (t + c0)^(-1/2), every task i runs T_in = min(ceil(sqrt(t+1)),
    inner_max) warm-started lower SGD steps of tau0 eta_t^2, then forms its GW-HIA
    hypergradient h_i (N terms, L); p <- p - gamma eta_t sum_i h_i (E.2: all m tasks).
    Samples per outer step: m (T_in b + b_val + k_i b + b), k_i ~ U{0..N-1}."""
    b, bv, N = params["batch"], params["batch_val"], params["N"]
    inner_max = params["inner_max"]
    c0, gamma, tau0 = params["c0"], params["gamma"], params["tau0"]
    Ls = [smoothness(problem, params, i) for i in range(problem.m)]
    nonneg = params["nonneg"]
    p, W = problem.zero_point()
    keep = monitor(p, W)
    t = 0
    while keep:
        eta = decay(t, c0, 0.5)
        T_in = min(math.ceil(math.sqrt(t + 1)), inner_max)
        h = np.zeros(problem.n)
        for i in range(problem.m):
            W[i] = lower_sgd(problem, rng, p, W[i], i, b, tau0 * eta * eta, T_in)
            h += gw_hypergrad(problem, rng, p, W[i], i, b, bv, N, Ls[i])
        p = clip_weights(p - gamma * eta * h, nonneg)
        t += 1
        keep = monitor(p, W)
    return p, W
