"""Finite-sum convex problems of Zhao, Lyu & Kolar (TMLR 2023), docs/papers/002.md §1.1:

  min_x F(x) = (1/n) sum_i f_i(x),   f_i(x) = phi(a_i.x; y_i) + (mu/2) ||x||^2

- objective "least_squares": phi(s; y) = (1/2)(s - y)^2, L_i = ||a_i||^2 + mu (§3.1);
- objective "logistic": labels y in {0, 1} (+-1 labels are mapped to {0, 1}),
  phi(s; y) = log(1 + e^s) - y s (cross entropy, §3.7), L_i = ||a_i||^2 / 4 + mu (§3.8).

x* comes from an independent exact solve: `numpy.linalg.lstsq` for least squares (the
augmented system [A/sqrt(n); sqrt(mu) I] when mu > 0), damped Newton to ||grad F|| <= 1e-12
(relative to max(1, ||grad F(0)||)) for logistic; the solver, tolerance and final gradient
norm are recorded in `info`. F* = F(x*).

Oracle accounting (§3.0): every per-sample gradient adds 1 to `counter[0]`; a full
gradient costs n. The compiled solver kernels receive `counter` and count their own
per-sample gradients. `evaluate`, `loss` and `gap` are metrics and are NOT counted.

The compiled helpers are built with `_nrt=False` (they never allocate): numba's reference
counting of array arguments costs about 20 ns per array per call, more than a whole L-SVRG
step at d = 10. The problem's compiled oracles live here: `dphi` (d phi / d s) and `full_pass`
(the snapshot: scores, score derivatives and grad F at w; counted n), on the named bundles
`LinearData` (the problem's arrays, `problem.kdata`) and `Snapshot`. The solvers' compiled
steps (the estimator of §2.0, the Optimal sampler's norms) sit beside the solvers, in
`drocli.solvers.finite_sum.estimators`. Per-sample gradients are
grad f_i(x) = dphi(a_i.x; y_i) a_i + mu x.
"""

from __future__ import annotations

import hashlib
import math
import weakref
import zlib
from collections import OrderedDict
from typing import Literal, NamedTuple

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.jit import njit
from drocli.ops.rows import dot_row
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.counted import CountedOracles

LEAST_SQUARES = 0
LOGISTIC = 1
OBJECTIVES = {"least_squares": LEAST_SQUARES, "logistic": LOGISTIC}
NEWTON_TOL = 1e-12


# ------------------------------------------------------------------------------------------
# compiled per-sample math
# ------------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def dphi(s, yv, obj):
    """d phi(s; y) / ds: s - y (least squares) or sigmoid(s) - y (logistic, y in {0, 1})."""
    if obj == LEAST_SQUARES:
        return s - yv
    if s >= 0.0:
        return 1.0 / (1.0 + math.exp(-s)) - yv
    e = math.exp(s)
    return e / (1.0 + e) - yv


class LinearData(NamedTuple):
    """A linear finite-sum problem as the compiled kernels see it."""

    A: np.ndarray          # (n, d) design, float64, C order
    y: np.ndarray          # (n,) targets / {0, 1} labels
    obj: int               # LEAST_SQUARES or LOGISTIC
    mu: float              # ridge
    row_sq: np.ndarray     # (n,) ||a_i||^2


class Snapshot(NamedTuple):
    """The full pass at the control point w (L-SVRG / L-Katyusha): s_i = a_i.w,
    c_i = dphi(s_i; y_i) and gw = grad F(w). SGD uses an all-zero snapshot."""

    w: np.ndarray          # (d,)
    gw: np.ndarray         # (d,)
    s: np.ndarray          # (n,)
    c: np.ndarray          # (n,)


@njit(cache=True, _nrt=False)
def full_pass(data, snap, counter):
    """Snapshot at snap.w (counted: n): snap.s[i] = a_i.w, snap.c[i] = dphi(snap.s[i]; y_i)
    and snap.gw = grad F(w) = (1/n) sum_i snap.c[i] a_i + mu w."""
    A, y, obj, mu = data.A, data.y, data.obj, data.mu
    w, snap_s, snap_c, gw = snap.w, snap.s, snap.c, snap.gw
    n, d = A.shape
    for j in range(d):
        gw[j] = 0.0
    for i in range(n):
        s = dot_row(A, i, w)
        c = dphi(s, y[i], obj)
        snap_s[i] = s
        snap_c[i] = c
        for j in range(d):
            gw[j] += c * A[i, j]
    inv = 1.0 / n
    for j in range(d):
        gw[j] = gw[j] * inv + mu * w[j]
    counter[0] += n


# ------------------------------------------------------------------------------------------
# numpy (uncounted) math
# ------------------------------------------------------------------------------------------
def _phi_np(s: np.ndarray, y: np.ndarray, obj: int) -> np.ndarray:
    if obj == LEAST_SQUARES:
        return 0.5 * (s - y) ** 2
    return np.logaddexp(0.0, s) - y * s


def _dphi_np(s: np.ndarray, y: np.ndarray, obj: int) -> np.ndarray:
    if obj == LEAST_SQUARES:
        return s - y
    # the logistic sigmoid as scipy.special.expit computes it, 1 / (1 + exp(-s)) (0 where
    # exp overflows), without importing scipy.special (a quarter of a short run's start-up)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-s)) - y


def _newton_logistic(A, y, mu, tol=NEWTON_TOL, max_iter=200):
    """Damped Newton (Armijo backtracking) for the logistic objective; returns (x, info)."""
    n, d = A.shape

    def value(x):
        return float(np.mean(_phi_np(A @ x, y, LOGISTIC)) + 0.5 * mu * (x @ x))

    x = np.zeros(d)
    f = value(x)
    g0 = None
    gn = np.inf
    it = 0
    stalled = 0
    converged = False
    for it in range(1, max_iter + 1):  # noqa: B007 - `it` is reported
        s = A @ x
        r = _dphi_np(s, y, LOGISTIC)
        g = A.T @ r / n + mu * x
        gn = float(np.linalg.norm(g))
        if g0 is None:
            g0 = max(1.0, gn)
        if gn <= tol * g0:
            converged = True
            break
        wts = (r + y) * (1.0 - (r + y))          # sigmoid (1 - sigmoid)
        H = _weighted_gram(A, wts) / n + mu * np.eye(d)
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        slope = float(g @ step)
        while True:
            xn = x - t * step
            fn = value(xn)
            if fn <= f - 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12 and fn > f:
            break
        stalled = stalled + 1 if f - fn <= 1e-15 * max(1.0, abs(f)) else 0
        x, f = xn, fn
        if stalled >= 3:            # no finite minimiser (separable data, mu = 0): stop
            break
    info = {"x_star_solver": "newton", "x_star_tol": tol, "x_star_grad_norm": gn,
            "x_star_converged": converged, "x_star_iterations": it}
    return x, info


BLOCK_BYTES = 1 << 23     # row blocks of about 8 MB: temporaries never scale with n


def _row_blocks(A: np.ndarray):
    """Slices of A's rows, each about BLOCK_BYTES."""
    n, d = A.shape
    step = max(1, BLOCK_BYTES // (8 * max(d, 1)))
    for lo in range(0, n, step):
        yield slice(lo, min(n, lo + step))


def _weighted_gram(A: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """A^T diag(wts) A, block by block (no n x d temporary)."""
    d = A.shape[1]
    out = np.zeros((d, d))
    for b in _row_blocks(A):
        Ab = A[b]
        out += (Ab.T * wts[b]) @ Ab
    return out


_SOLVE_CACHE: dict = {}
_SOLVE_CACHE_SIZE = 4
_DERIVED: OrderedDict = OrderedDict()   # (id(A), shape, y digest, obj, mu) -> (ref to A, dict)
_DERIVED_SIZE = 2


def _data_key(A: np.ndarray, y: np.ndarray) -> str:
    """A key for the data's bytes: CRC-32 of the design and of the targets (A hashed in
    place, no copy). It only has to tell data sets apart: a stored x* is used only after it
    passes the convergence test on the data at hand, so a colliding key costs a solve,
    never a wrong F*. CRC-32 reads 800 MB in half the time SHA-1 takes."""
    return f"{zlib.crc32(A):08x}{zlib.crc32(y):08x}"


def _solve_cached(problem):
    """(x*, its info, A x*), x* and info copies, cached per (data bytes, objective, mu): a
    Newton solve at w8a size takes seconds. Kept in this process, for the same data held in
    other arrays (the same arrays hit `_DERIVED` first), and on disk
    (`drocli.problems.solution_cache`), so a data set is solved once. Every x* taken from a
    cache passes the convergence test on this problem's arrays first (`check_solution`); the
    scores A x* of that test are handed on, so F* costs no further pass."""
    from drocli.problems import solution_cache

    key = (_data_key(problem.A, problem.y), problem.A.shape, problem.obj, problem.mu)
    name = f"{key[0]}-{key[1][0]}x{key[1][1]}-{key[2]}-{key[3]!r}"
    scores = None
    found = _SOLVE_CACHE.get(key) or solution_cache.load(name, problem.d)
    if found is not None:
        ok, scores = problem.check_solution(found[0])
        if not ok:
            found = None
    if found is None:
        x, info = problem._solve()
        ok, scores = problem.check_solution(x)
        if ok:
            solution_cache.store(name, x, info)
        found = (x, info)
    if len(_SOLVE_CACHE) >= _SOLVE_CACHE_SIZE and key not in _SOLVE_CACHE:
        _SOLVE_CACHE.pop(next(iter(_SOLVE_CACHE)))
    _SOLVE_CACHE[key] = found
    x, info = found
    return x.copy(), dict(info), scores


# ------------------------------------------------------------------------------------------
# the problem
# ------------------------------------------------------------------------------------------
class FiniteSumProblem(CountedOracles):
    """F(x) = (1/n) sum_i f_i(x) with counted oracles.

    Arrays for the compiled kernels: A (n, d) float64 C-contiguous, y (n,) float64 (targets,
    or 0/1 labels), obj (0 least squares, 1 logistic), mu, row_sq (n,) = ||a_i||^2 and
    counter = np.zeros(1, np.int64). Constants: L (n,) per-sample smoothness, L_bar, L_max,
    L_F (smoothness of F), strong_convexity (lambda_min(A^T A / n) + mu for least squares,
    mu for logistic: docs/papers/002.md P12 and §2.2), x_star, f_star, sigma_star2 (§1.2, eq. 9).
    """

    def __init__(self, A, y, objective: str = "least_squares", mu: float = 0.0,
                 name: str = "finite_sum", info: dict | None = None):
        if objective not in OBJECTIVES:
            raise DrocliError(f"unknown objective {objective!r}", key="problem.params.objective",
                              fix="use one of " + ", ".join(OBJECTIVES))
        mu = float(mu)
        if not mu >= 0:
            raise DrocliError(f"mu must be >= 0, got {mu}", key="problem.params.mu",
                              fix="e.g. mu: 0.0 (no l2 term) or mu: 1.0e-7")
        A = np.ascontiguousarray(A, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        if A.ndim != 2 or A.shape[0] != y.shape[0] or A.shape[0] < 1:
            raise DrocliError(f"design {A.shape} and targets {y.shape} do not match",
                              fix="check the data source")
        self.objective = objective
        self.obj = OBJECTIVES[objective]
        if self.obj == LOGISTIC:
            labels = np.unique(y)
            if np.all(np.isin(labels, (-1.0, 1.0))):
                y = (y > 0).astype(np.float64)
            elif not np.all(np.isin(labels, (0.0, 1.0))):
                raise DrocliError("logistic objective needs labels in {0, 1} or {-1, +1}",
                                  key="problem.params.objective",
                                  fix="use objective: least_squares for real-valued targets")
        self.name = name
        self.A, self.y, self.mu = A, y, mu
        self.n, self.d = A.shape
        self.N = self.n
        self.init_counter()
        self.info = dict(info or {})
        key = (id(A), A.shape, hashlib.sha1(y).hexdigest(), self.obj, mu)
        hit = _DERIVED.get(key)
        if hit is None or hit[0]() is not A:
            hit = (weakref.ref(A), self._derive())
            _DERIVED[key] = hit
            while len(_DERIVED) > _DERIVED_SIZE:
                _DERIVED.popitem(last=False)
        d = hit[1]
        self._derived = d
        self.row_sq = d["row_sq"]
        self.kdata = LinearData(A, y, int(self.obj), mu, self.row_sq)
        scale = 1.0 if self.obj == LEAST_SQUARES else 0.25
        self.L = scale * self.row_sq + mu
        self.L_bar = float(self.L.mean())
        self.L_max = float(self.L.max())
        self.x_star, solve_info = d["x_star"].copy(), dict(d["solve_info"])
        self.info.update(solve_info)
        self.f_star = d["f_star"]
        self.gap_floor = 1e-16 * max(1.0, abs(self.f_star))
        self.info.update(L_bar=self.L_bar, L_max=self.L_max, f_star=self.f_star)

    # ---- constants derived on first use (kept with the data's derived ones) ------------
    def _gram(self) -> tuple[float, float]:
        """The Gram matrix A^T A / n's extreme eigenvalues (lambda_min clipped at 0), on first
        use: a pass of n d^2 multiply-adds that only L-Katyusha's smoothness and the least-
        squares strong convexity need."""
        d = self._derived
        if "lmax" not in d:
            if self.d <= 2000:
                eigs = np.linalg.eigvalsh(self.A.T @ self.A / self.n)
                d["lmin"], d["lmax"] = max(float(eigs[0]), 0.0), float(eigs[-1])
            else:  # pragma: no cover - very wide data
                from drocli.ops.erm import lambda_max_gram

                d["lmin"], d["lmax"] = 0.0, lambda_max_gram(self.A) / self.n
        return d["lmin"], d["lmax"]

    @property
    def L_F(self) -> float:
        """Smoothness of F: lambda_max(A^T A / n) (times 1/4 for logistic) + mu."""
        return (1.0 if self.obj == LEAST_SQUARES else 0.25) * self._gram()[1] + self.mu

    @property
    def strong_convexity(self) -> float:
        """lambda_min(A^T A / n) + mu for least squares, mu for logistic."""
        return (self._gram()[0] + self.mu) if self.obj == LEAST_SQUARES else self.mu

    @property
    def sigma_star2(self) -> float:
        """(1/n) sum_i ||grad f_i(x*)||^2 (§1.2, eq. 9), on first use (no solver needs it)."""
        d = self._derived
        if "sigma_star2" not in d:
            d["sigma_star2"] = self._sigma_star2()
        return d["sigma_star2"]

    def _derive(self) -> dict:
        """What the problem derives from its data once: ||a_i||^2, x* (with its solve's
        info) and F* (from the scores A x* of x*'s convergence test: no further pass). Kept
        per data arrays in this process (`_DERIVED`): the warm-up and the cell build the
        same problem. The Gram eigenvalues and sigma*^2 join it on first use."""
        A = self.A
        out = {"row_sq": np.einsum("ij,ij->i", A, A)}
        self.x_star, out["solve_info"], scores = _solve_cached(self)   # a copy: kept as is
        out["x_star"] = self.x_star
        out["f_star"] = (self.loss(self.x_star) if scores is None
                         else self._loss_at(scores, self.x_star))
        return out

    # ---- exact solution (independent of the solvers) -------------------------------------
    def _solve(self):
        A, y, mu, n = self.A, self.y, self.mu, self.n
        if self.obj == LEAST_SQUARES:
            if mu > 0:
                Aug = np.vstack([A / math.sqrt(n), math.sqrt(mu) * np.eye(self.d)])
                rhs = np.concatenate([y / math.sqrt(n), np.zeros(self.d)])
                x = np.linalg.lstsq(Aug, rhs, rcond=None)[0]
            else:
                x = np.linalg.lstsq(A, y, rcond=None)[0]
            g = A.T @ (A @ x - y) / n + mu * x
            return x, {"x_star_solver": "lstsq", "x_star_grad_norm": float(np.linalg.norm(g)),
                       "x_star_converged": True}
        return _newton_logistic(A, y, mu)

    def _sigma_star2(self) -> float:
        """(1/n) sum_i ||grad f_i(x*)||^2 (§1.2, eq. 9), block by block."""
        total = 0.0
        for b in _row_blocks(self.A):
            Ab = self.A[b]
            G = _dphi_np(Ab @ self.x_star, self.y[b], self.obj)[:, None] * Ab
            G += self.mu * self.x_star[None, :]
            total += float(np.einsum("ij,ij->", G, G))
        return total / self.n

    def is_solution(self, x) -> bool:
        """Whether x meets the exact solve's own test, ||grad F(x)|| <= 1e-12 max(1,
        ||grad F(0)||) (uncounted): see `check_solution`."""
        return self.check_solution(x)[0]

    def check_solution(self, x) -> tuple[bool, np.ndarray | None]:
        """(is_solution(x), the scores A x), in two passes over A: A x, then A^T times the
        two residual columns at x and at 0 together. A stored x* is used only when it
        passes; its scores then give F* without another pass."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.d,) or not np.all(np.isfinite(x)):
            return False, None
        s = self.A @ x
        R = np.empty((self.n, 2))
        R[:, 0] = _dphi_np(s, self.y, self.obj)
        R[:, 1] = _dphi_np(np.zeros(1), self.y, self.obj)
        G = self.A.T @ R / self.n
        g = G[:, 0] + self.mu * x
        g0 = float(np.linalg.norm(G[:, 1]))
        return float(np.linalg.norm(g)) <= NEWTON_TOL * max(1.0, g0), s

    # ---- bookkeeping ---------------------------------------------------------------------
    def zero_point(self) -> np.ndarray:
        """x0 = 0 (docs/papers/002.md §2.5, [UNSPEC] -> zeros)."""
        return np.zeros(self.d)

    # ---- counted oracles -----------------------------------------------------------------
    def snapshot(self, w):
        """Full pass at w (counted: n): (snap_s, snap_c, grad F(w)); see `full_pass`."""
        snap = self.snapshot_at(np.ascontiguousarray(w, dtype=np.float64))
        return snap.s, snap.c, snap.gw

    def snapshot_at(self, w: np.ndarray) -> Snapshot:
        """The Snapshot bound to the array w itself (counted: n): kernels that move w in
        place refresh it with `full_pass(problem.kdata, snap, counter)`."""
        snap = Snapshot(w, np.empty(self.d), np.empty(self.n), np.empty(self.n))
        full_pass(self.kdata, snap, self.counter)
        return snap

    def full_gradient(self, x) -> np.ndarray:
        """grad F(x) (counted: n)."""
        return self.snapshot(x)[2]

    def sample_gradients(self, x, rows) -> np.ndarray:
        """Per-sample gradients grad f_i(x), one row per entry of `rows` (counted)."""
        x = np.asarray(x, dtype=np.float64)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        Ar = self.A[rows]
        c = _dphi_np(Ar @ x, self.y[rows], self.obj)
        self.counter[0] += rows.size
        return c[:, None] * Ar + self.mu * x[None, :]

    # ---- metrics (not counted) -----------------------------------------------------------
    def loss(self, x) -> float:
        """F(x) (NOT counted)."""
        x = np.asarray(x, dtype=np.float64)
        return self._loss_at(self.A @ x, x)

    def _loss_at(self, s: np.ndarray, x: np.ndarray) -> float:
        """F(x) from its scores s = A x."""
        return float(np.mean(_phi_np(s, self.y, self.obj)) + 0.5 * self.mu * (x @ x))

    def gap(self, x) -> float:
        """F(x) - F* (NOT counted). Least squares: the exact identity
        (1/2)(||A e||^2 / n + mu ||e||^2), e = x - x*, free of cancellation."""
        x = np.asarray(x, dtype=np.float64)
        return self._gap(x, None)

    def _gap(self, x: np.ndarray, loss: float | None) -> float:
        """gap(x), reusing F(x) when the caller has it (logistic: gap = F(x) - F*), so a
        checkpoint evaluates the loss once."""
        if self.obj == LEAST_SQUARES:
            e = x - self.x_star
            Ae = self.A @ e
            return float(0.5 * (Ae @ Ae / self.n + self.mu * (e @ e)))
        return (self.loss(x) if loss is None else loss) - self.f_star

    def evaluate(self, x, iteration=None) -> dict:
        """Metrics at x: gap F(x) - F*, log10_gap = log10(max(gap, 1e-16 max(1, |F*|))) (spec
        002 §3.0, P14), loss F(x), dist2 = ||x - x*||^2; `iteration` is passed through."""
        x = np.asarray(x, dtype=np.float64)
        loss = self.loss(x)
        gap = self._gap(x, loss)
        log_gap = math.log10(max(gap, self.gap_floor)) if math.isfinite(gap) else math.nan
        e = x - self.x_star
        out = {"gap": gap, "log10_gap": log_gap, "loss": loss, "dist2": float(e @ e)}
        if iteration is not None:
            out["iteration"] = float(iteration)
        return out


def from_data(data: GroupedData, objective: str = "least_squares", mu: float = 0.0):
    """A FiniteSumProblem from GroupedData (X_train, y_train; the groups are ignored)."""
    return FiniteSumProblem(data.X_train, data.y_train, objective=objective, mu=mu,
                            name=data.name, info=data.info)


class FiniteSumParams(Params):
    """The convex finite sums of paper 002 (docs/papers/002.md §1.2, §3)."""

    objective: Literal["least_squares", "logistic"] = Field(
        "least_squares", description="least squares (data model A/B) or 0/1 logistic (w8a)")
    mu: float = Field(0.0, ge=0, description="l2 term mu/2 ||x||^2 (logistic: P12)")


@registry.problem("finite_sum", params=FiniteSumParams, family="finite_sum",
                  tiny={"data": ("regression_synthetic", {"n": 30, "d": 4, "nu": 0.0,
                                                          "sigma": 1.0})},
                  metrics=("gap", "log10_gap", "loss", "dist2", "iteration"),
                  description="finite-sum convex problem (1/n) sum_i f_i(x): least squares or "
                              "0/1 logistic, + mu/2 ||x||^2 (Zhao, Lyu & Kolar 2023)")
def make(data: GroupedData, params: dict) -> FiniteSumProblem:
    """Build the finite-sum problem (objective: least_squares | logistic; mu >= 0)."""
    return from_data(data, objective=params["objective"], mu=params["mu"])
