"""ERM oracle: accelerated projected gradient (FISTA, Beck & Teboulle 2009) on an empirical
risk over the l2 / Frobenius ball W = {||W|| <= R} (docs/papers/000.md §4.1).

Two uses, one algorithm (`fista`), which only sees a value-and-gradient callable:
- Ground truth R_i^* of the MERO metric (`erm_group` / `erm_groups`): float64 copy of group i's
  rows, step 1/L_i with L_i = lambda_max(X_i^T X_i) / (4 n_i) (logistic) or / (2 n_i) (softmax
  bound: the softmax Hessian in the scores is <= I/2), stop at a gradient-mapping norm < tol
  (1e-7) or max_iter (5000) iterations. NOT counted on any oracle counter: it is the metric's
  reference, not part of an algorithm (docs/papers/000.md §2.6).
- The ERM oracle of ERMEG (Agarwal & Zhang 2022; §3.4): the solver passes the problem's
  COUNTED oracles (`full_oracle` / `group_oracle`) as the callable, so every FISTA iteration
  costs one counted pass, and a `callback` lets it call the monitor between iterations.

FISTA with the gradient restart of O'Donoghue & Candes (2015) ([DEFAULT] §4.1 says
"accelerated projected GD"; the restart keeps the accelerated rate and makes the ground truth
converge linearly on these well-conditioned problems, about 4x fewer iterations than plain
FISTA at n_i = 5000, d = 1024; `restart=False` gives plain FISTA).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drocli.ops.losses import loss_dscore

DENSE_MAX_DIM = 512   # lambda_max by a dense eigen-solve up to this dimension, else Lanczos


@dataclass
class FistaResult:
    """x: last projected iterate Proj(y - grad f(y) / L); grad_map_norm: ||L (y - x)|| at the
    last gradient point y; reached: grad_map_norm < tol; iterations: gradient evaluations."""

    x: np.ndarray
    grad_map_norm: float
    reached: bool
    iterations: int


@dataclass
class ERMResult:
    """R_i^* = R_i(w) at the returned point (uncounted), and the oracle's diagnostics."""

    rstar: float
    w: np.ndarray
    reached: bool
    grad_map_norm: float
    iterations: int
    lipschitz: float


def project_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """In place: v <- v min(1, R / ||v||) (Frobenius norm of the whole array); returns v."""
    if radius > 0 and math.isfinite(radius):
        nrm = float(np.sqrt(np.sum(v * v)))
        if nrm > radius:
            v *= radius / nrm
    return v


def fista(value_grad: Callable[[np.ndarray], tuple[float, np.ndarray]], w0: np.ndarray,
          lipschitz: float, radius: float, tol: float = 1e-7, max_iter: int = 5000,
          restart: bool = True, callback: Callable[[np.ndarray], bool] | None = None
          ) -> FistaResult:
    """Accelerated projected gradient on f over the ball, step 1/lipschitz.

        x_{k+1} = Proj(y_k - grad f(y_k) / L)
        t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2
        y_{k+1} = x_{k+1} + (t_k - 1)/t_{k+1} (x_{k+1} - x_k)
    with the gradient restart (t <- 1, y <- x_{k+1} when <y_k - x_{k+1}, x_{k+1} - x_k> > 0).
    One `value_grad` call per iteration (tol = 0: exactly max_iter calls). Stops when the
    gradient-mapping norm L ||y_k - x_{k+1}|| < tol, after max_iter iterations, or when
    `callback(x_{k+1})` returns False.
    """
    L = float(lipschitz)
    if not (L > 0 and math.isfinite(L)):
        raise ValueError(f"lipschitz must be positive and finite, got {lipschitz}")
    x = project_ball(np.array(w0, dtype=np.float64), radius)
    y = x.copy()
    t = 1.0
    gm = math.inf
    it = 0
    while it < max_iter:
        _, g = value_grad(y)
        it += 1
        x_new = project_ball(y - g / L, radius)
        diff = y - x_new
        gm = L * float(np.sqrt(np.sum(diff * diff)))
        step = x_new - x
        if restart and float(np.sum(diff * step)) > 0.0:
            t_new = 1.0
            y = x_new.copy()
        else:
            t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            y = x_new + ((t - 1.0) / t_new) * step
        x, t = x_new, t_new
        if gm < tol:
            break
        if callback is not None and not callback(x):
            break
    return FistaResult(x, gm, bool(gm < tol), it)


def lambda_max_gram(X: np.ndarray) -> float:
    """lambda_max(X^T X) (float64): dense eigen-solve for small d, else Lanczos (ARPACK) on
    v -> X^T (X v) from a fixed start vector (deterministic)."""
    X64 = np.asarray(X, dtype=np.float64)
    n, d = X64.shape
    if n == 0:
        return 0.0
    if d <= DENSE_MAX_DIM or n <= 2:
        G = X64.T @ X64 if d <= n else X64 @ X64.T
        return float(np.linalg.eigvalsh(G)[-1])
    from scipy.sparse.linalg import LinearOperator, eigsh

    if n < d:   # same nonzero spectrum, smaller operator
        op = LinearOperator((n, n), matvec=lambda v: X64 @ (X64.T @ v), dtype=np.float64)
        size = n
    else:
        op = LinearOperator((d, d), matvec=lambda v: X64.T @ (X64 @ v), dtype=np.float64)
        size = d
    val = eigsh(op, k=1, which="LA", tol=1e-10, v0=np.ones(size), return_eigenvectors=False)
    return float(val[0])


def smoothness(X: np.ndarray, loss: str) -> float:
    """L-hat of the mean loss over the rows of X: lambda_max(X^T X)/(4n) for logistic,
    /(2n) for softmax (docs/papers/000.md §4.1)."""
    n = X.shape[0]
    c = 4.0 if loss == "logistic" else 2.0
    return max(lambda_max_gram(X) / (c * max(n, 1)), 1e-300)


def risk_value_grad(X64: np.ndarray, y: np.ndarray, loss: str):
    """(W) -> (mean loss, gradient (d, k)) on rows (X64, y), float64, uncounted."""
    n = X64.shape[0]

    def vg(W):
        val, ds = loss_dscore(X64 @ W, y, loss)
        return float(val.mean()), X64.T @ ds / n

    return vg


def erm_group(X: np.ndarray, y: np.ndarray, loss: str, k: int, radius: float,
              tol: float = 1e-7, max_iter: int = 5000, restart: bool = True) -> ERMResult:
    """Ground-truth ERM on one group's rows: FISTA from W = 0 in float64, uncounted."""
    X64 = np.asarray(X, dtype=np.float64)
    d = X64.shape[1]
    if X64.shape[0] == 0:
        return ERMResult(math.nan, np.zeros((d, k)), False, math.nan, 0, math.nan)
    L = smoothness(X64, loss)
    vg = risk_value_grad(X64, y, loss)
    res = fista(vg, np.zeros((d, k)), L, radius, tol=tol, max_iter=max_iter, restart=restart)
    val, _ = loss_dscore(X64 @ res.x, y, loss)
    return ERMResult(float(val.mean()), res.x, res.reached, res.grad_map_norm, res.iterations,
                     L)


def erm_groups(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, loss: str, k: int,
               radius: float, tol: float = 1e-7, max_iter: int = 5000) -> dict:
    """`erm_group` for every group of a group-sorted split; arrays of length m:
    rstar, reached, grad_map_norm, iterations, lipschitz."""
    m = len(offsets) - 1
    out = {"rstar": np.full(m, np.nan), "reached": np.zeros(m, dtype=bool),
           "grad_map_norm": np.full(m, np.nan), "iterations": np.zeros(m, dtype=np.int64),
           "lipschitz": np.full(m, np.nan)}
    for i in range(m):
        lo, hi = int(offsets[i]), int(offsets[i + 1])
        r = erm_group(X[lo:hi], y[lo:hi], loss, k, radius, tol, max_iter)
        out["rstar"][i] = r.rstar
        out["reached"][i] = r.reached
        out["grad_map_norm"][i] = r.grad_map_norm
        out["iterations"][i] = r.iterations
        out["lipschitz"][i] = r.lipschitz
    return out
