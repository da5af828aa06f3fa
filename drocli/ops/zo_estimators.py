"""Zeroth-order gradient estimators and the smoothing / step schedules of Gu & Xu (2024),
"Zeroth-Order Stochastic Mirror Descent Algorithms for Minimax Excess Risk Optimization"
(docs/papers/001.md §1.4, §2). Everything is float64 (docs/papers/001.md pitfall P4).

Estimators (numpy references; the solvers' compiled kernels do the same arithmetic):
- smooth, "UniGE" (eq. 5/10): g = (1/r) sum_j [l(w + mu u_j; z_j) - l(w; z_j)] / (mu / d) u_j,
  u_j uniform on the unit SPHERE (pitfall P1), both values on the same sample z_j (P3).
  E_u g = grad f_mu(w), f_mu(w) = E_{v ~ unit ball} f(w + mu v).
- non-smooth, double smoothing (Duchi et al. 2015; eq. 7/61):
  g = (1/r) sum_j [l(w + mu1 u_j + mu2 v_j; z_j) - l(w + mu1 u_j; z_j)] / mu2 v_j, NO factor d;
  (u, v) from one of the three pairs of the paper: "gauss" (both N(0, I)), "ball" (both
  uniform in the l2 ball of radius sqrt(d+2)), "ball_sphere" (u in that ball, v uniform on the
  sphere of radius sqrt(d); the paper does not say which slot gets which law, §1.4(b)).

Schedules (Theorems 2, 3, 6, 7; t = 1, 2, ...): see `smooth_schedule`, `nonsmooth_schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

PAIRS = ("gauss", "ball", "ball_sphere")


# ---- directions --------------------------------------------------------------------------------
def unit_sphere(rng: np.random.Generator, shape: tuple, d: int) -> np.ndarray:
    """Uniform on the unit sphere in R^d: g / ||g||, g ~ N(0, I_d); shape + (d,)."""
    g = rng.standard_normal(tuple(shape) + (d,))
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def uniform_ball(rng: np.random.Generator, shape: tuple, d: int, radius: float) -> np.ndarray:
    """Uniform in the l2 ball of the given radius: radius * u * U^(1/d) (§1.4(b))."""
    u = unit_sphere(rng, shape, d)
    rad = rng.random(tuple(shape) + (1,)) ** (1.0 / d)
    return radius * rad * u


def direction_pair(rng: np.random.Generator, shape: tuple, d: int, pair: str = "gauss"):
    """(u, v) of the double-smoothing estimator, each of shape shape + (d,); every law has
    E[v v^T] = I (`pair_second_moment`)."""
    if pair == "gauss":
        return (rng.standard_normal(tuple(shape) + (d,)),
                rng.standard_normal(tuple(shape) + (d,)))
    if pair == "ball":
        rho = math.sqrt(d + 2.0)
        return uniform_ball(rng, shape, d, rho), uniform_ball(rng, shape, d, rho)
    if pair == "ball_sphere":
        return (uniform_ball(rng, shape, d, math.sqrt(d + 2.0)),
                math.sqrt(d) * unit_sphere(rng, shape, d))
    raise ValueError(f"unknown direction pair {pair!r}; use one of {', '.join(PAIRS)}")


def pair_second_moment(pair: str, d: int) -> float:
    """E[v v^T] = c I for the law of v in `pair`: c = 1 for all three pairs
    (N(0, I); ball of radius sqrt(d+2): (d+2)/(d+2); sphere of radius sqrt(d): d/d)."""
    if pair not in PAIRS:
        raise ValueError(f"unknown direction pair {pair!r}")
    return 1.0


# ---- estimators (numpy references) --------------------------------------------------------------
def two_point_smooth(loss: Callable[[np.ndarray], np.ndarray], w: np.ndarray, mu: float,
                     U: np.ndarray) -> np.ndarray:
    """UniGE at w: loss(P) maps points P (r, d) to the r per-sample losses (sample j at row j,
    common random numbers); U (r, d) unit-sphere directions. Returns g (d,)."""
    w = np.asarray(w, dtype=np.float64)
    d = w.shape[0]
    f0 = loss(np.broadcast_to(w, U.shape))
    f1 = loss(w[None, :] + mu * U)
    return ((f1 - f0) * (d / mu)) @ U / U.shape[0]


def double_smoothing(loss: Callable[[np.ndarray], np.ndarray], w: np.ndarray, mu1: float,
                     mu2: float, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Double-smoothing estimate at w (Duchi et al. 2015): U, V (r, d) direction pairs."""
    w = np.asarray(w, dtype=np.float64)
    base = w[None, :] + mu1 * U
    f1 = loss(base)
    f2 = loss(base + mu2 * V)
    return ((f2 - f1) / mu2) @ V / V.shape[0]


# ---- schedules ----------------------------------------------------------------------------------
def smooth_schedule(t, d: int, L: float, D2: float, m: int, tau1: float = 1.0,
                    tau2: float = 1.0, zeroth_order: bool = True) -> dict:
    """Theorems 2-3 (Algorithm 1): eta_t = 1/(sqrt2 tau1 tau2 d sqrt(t+1)) (= eta_t^(i)),
    eta^w = 2 D^2 eta_t, eta^q = 2 ln(m) eta_t, mu_t = 2/(tau1 L sqrt(t+1)).
    zeroth_order=False drops the factor d (the first-order baseline, docs/papers/001.md §3.2)."""
    t = np.asarray(t, dtype=np.float64)
    dd = d if zeroth_order else 1.0
    eta = 1.0 / (math.sqrt(2.0) * tau1 * tau2 * dd * np.sqrt(t + 1.0))
    return {"eta_i": eta, "eta": eta, "eta_w": 2.0 * D2 * eta,
            "eta_q": 2.0 * math.log(m) * eta, "mu": 2.0 / (tau1 * L * np.sqrt(t + 1.0))}


def nonsmooth_schedule(t, d: int, Lstar: float, D2: float, m: int, tau1: float = 1.0,
                       tau2: float = 1.0, zeroth_order: bool = True) -> dict:
    """Theorems 6-7 (Algorithm 2): eta_t^(i) = sqrt2/(tau2 L* d sqrt(t+1)),
    eta_t = 1/(sqrt2 tau1 tau2 L* d sqrt(t+1)), eta^w = 2 D^2 eta_t, eta^q = 2 ln(m) eta_t,
    mu1_t = 1/(t+1), mu2_t = 1/(d (t+1)^2). zeroth_order=False drops the factor d in the steps."""
    t = np.asarray(t, dtype=np.float64)
    dd = d if zeroth_order else 1.0
    s = np.sqrt(t + 1.0)
    eta = 1.0 / (math.sqrt(2.0) * tau1 * tau2 * Lstar * dd * s)
    return {"eta_i": math.sqrt(2.0) / (tau2 * Lstar * dd * s), "eta": eta,
            "eta_w": 2.0 * D2 * eta, "eta_q": 2.0 * math.log(m) * eta,
            "mu1": 1.0 / (t + 1.0), "mu2": 1.0 / (d * (t + 1.0) ** 2)}


# ---- suffix averaging ---------------------------------------------------------------------------
def suffix_average(X: np.ndarray, eta: np.ndarray, t: int) -> np.ndarray:
    """x-bar_t = sum_{j=ceil(t/2)}^t eta_j x_j / sum eta_j (eqs. 12, 17), rows j = 1..t of X
    stored at X[j-1]; direct (reference) form of the solvers' prefix sums."""
    a = (t + 1) // 2          # ceil(t/2)
    w = np.asarray(eta[a - 1:t], dtype=np.float64)
    return np.tensordot(w, X[a - 1:t], axes=1) / w.sum()


# ---- smoothed quadratic (test oracle) -----------------------------------------------------------
def smoothed_quadratic_grad(A: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """grad of f(w) = 1/2 w^T A w + b^T w; smoothing with any zero-mean direction law leaves the
    gradient unchanged (f_mu = f + const), so this is also grad f_mu."""
    return A @ w + b


def smoothed_abs_grad(a: np.ndarray, w: np.ndarray, mu: float, d: int, law: str = "gauss"
                      ) -> np.ndarray:
    """grad of f_mu(w) = E |<a, w + mu u>| for u ~ N(0, I) (law "gauss"):
    <a,w + mu u> ~ N(s, (mu ||a||)^2), d/dw E|.| = a (2 Phi(s/sd) - 1) = a erf(s/(sd sqrt2))."""
    if law != "gauss":
        raise ValueError("closed form only for Gaussian smoothing")
    s = float(a @ w)
    sd = mu * float(np.linalg.norm(a))
    return a * math.erf(s / (sd * math.sqrt(2.0)))
