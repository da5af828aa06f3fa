"""Learning per-example training weights as (multi-task) stochastic bilevel optimisation:
Guo, Hu, Zhang & Yang, "Randomized Stochastic Variance-Reduced Methods for Multi-Task
Stochastic Bilevel Optimization", Appendix E (docs/papers/004.md §3.1-3.3):

  min_p  F(p) = sum_{i=1..m} f_i(w_i*(p)),   f_i(w) = (1/n_va) sum_{k in D_va} L_i(w; k)
  w_i*(p) = argmin_w g_i(p, w) = (1/n) sum_{j in D_tr} p_j L_i(w; j) + (lam/2) ||w||^2

with L_i(w; x, y) = log(1 + exp(-y w.x~ / sigma_i)), x~ = [x; 1] (bias, regularised with w),
labels y in {-1, +1} (0/1 labels are mapped), x := p in R^n (one weight per training row),
y_i := w_i in R^D. E.1: m = 1, sigma = 1. E.2: m tasks, sigma_i ~ U[1, 11] drawn once from
`task_seed`, D_va = `n_val` test rows drawn once from `val_seed` (docs/papers/004.md §3.3, P15).

Oracles (§3.2), on one minibatch B of training rows (size b) and B' of validation rows:
  lower_terms: gw = (1/b) sum_B p_j grad L_j + lam w,  H = (1/b) sum_B p_j Hess L_j + lam I,
               a_j = -(1/b)(y_j/sigma) s_j  (grad2_pw g = diag(a) X~_B: row j = (1/b) grad L_j)
  upper_grad:  v = (1/b') sum_B' grad L_k   (grad_p f = 0, so u = 0)
with s_j = 1/(1 + exp(r_j/sigma)), r_j = y_j w.x~_j. Sample accounting (§3.6): drawing a
batch adds its size to `counter` (`draw_train`, `draw_val`); re-evaluating the same batch at
another point (STORM) adds nothing; a baseline touching m tasks draws (and pays) per task.

Metrics (`evaluate(p, W)`, not counted, outside the solver clock): objective = sum_i f_i(w_i)
at the current lower iterates (the plotted quantity, §3.5 default), val_error (task 0's
0/1 error on D_va), weight_mean (the mean example weight: p_0 = 1; a method that wins only
by inflating every weight shows here), and with exact: objective_exact = F(p) with w_i*(p)
by damped Newton to ||grad_w g|| <= 1e-10 (warm-started), hypergrad_norm = ||grad F(p)||
(Prop. 1, §1.5).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator
from scipy.linalg import cho_factor, cho_solve
from scipy.special import expit, log_expit

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.bitpacked import BitMatrix
from drocli.ops.psd import FlooredSPD
from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.problems.counted import CountedOracles

KEY = "problem.params"
NEWTON_TOL = 1e-10


def _pm1(y: np.ndarray) -> np.ndarray:
    """Binary labels (0/1 or -1/+1) as -1/+1."""
    y = np.asarray(y, dtype=np.float64)
    if np.unique(y).size > 2:
        raise DrocliError("bilevel_weights needs binary labels", key="data.name",
                          fix="use a binary data source (libsvm_pair, digits_split, fashion_bin)")
    return np.where(y > 0, 1.0, -1.0)


def _features(X: np.ndarray, bias: bool) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if bias:
        X = np.hstack([X, np.ones((X.shape[0], 1))])
    return np.ascontiguousarray(X)


def power_top_eigenvalue(matvec, dim: int, tol: float = 1e-10, max_iter: int = 1000) -> float:
    """The top eigenvalue of a symmetric PSD operator by power iteration from the all-ones
    vector (deterministic), stopped when the Rayleigh quotient changes by < tol relatively.
    It converges from below."""
    v = np.ones(dim) / np.sqrt(dim)
    top = 0.0
    for _ in range(max_iter):
        u = matvec(v)
        new = float(v @ u)
        norm = float(np.linalg.norm(u))
        if norm == 0.0:
            return 0.0
        v = u / norm
        if abs(new - top) <= tol * abs(new):
            return new
        top = new
    return top


class BilevelWeightsProblem(CountedOracles):
    """See the module docstring. Attributes: X (n, D), y (n,), Xv (n_va, D), yv (n_va,),
    n, n_va, D, m, sigma (m,), lam, L_g (an upper bound on the lower smoothness at p = 1),
    N = n (one epoch = n samples), counter, info."""

    def __init__(self, data: GroupedData, lam: float = 0.01, tasks: int = 1,
                 sigma_range=(1.0, 11.0), task_seed: int = 0, n_val: int = 0,
                 val_seed: int = 0, bias: bool = True, exact: bool = True):
        if not lam > 0:
            raise DrocliError(f"lam must be > 0, got {lam}", key=f"{KEY}.lam",
                              fix="lam: 0.01 (docs/papers/004.md §3.1 default)")
        if tasks < 1:
            raise DrocliError(f"tasks must be >= 1, got {tasks}", key=f"{KEY}.tasks",
                              fix="tasks: 1 (E.1) or 200 / 500 (E.2)")
        if data.X_test is None:
            raise DrocliError("bilevel_weights needs a test split (the upper-level data)",
                              key="data.name", fix="use libsvm_pair, digits_split or fashion_bin")
        self.name = data.name
        self.lam = float(lam)
        self.X = _features(data.X_train, bias)
        self.y = _pm1(data.y_train)
        Xv, yv = _features(data.X_test, bias), _pm1(data.y_test)
        if n_val:
            if not 0 < n_val <= Xv.shape[0]:
                raise DrocliError(f"n_val must lie in 1..{Xv.shape[0]}, got {n_val}",
                                  key=f"{KEY}.n_val", fix="n_val: 100 (E.2) or 0 (all test)")
            rows = np.sort(np.random.default_rng(val_seed).choice(Xv.shape[0], n_val,
                                                                  replace=False))
            Xv, yv = Xv[rows], yv[rows]
        self.Xv, self.yv = np.ascontiguousarray(Xv), yv
        self.n, self.D = self.X.shape
        self._bits = BitMatrix.of(self.X)   # binary features (a1a, w8a, their stand-ins)
        self.n_va = self.Xv.shape[0]
        self.m = int(tasks)
        if self.m == 1:
            self.sigma = np.ones(1)
        else:
            lo, hi = (float(s) for s in sigma_range)
            if not 0 < lo <= hi:
                raise DrocliError(f"sigma_range must be 0 < low <= high, got {sigma_range}",
                                  key=f"{KEY}.sigma_range", fix="sigma_range: [1.0, 11.0]")
            self.sigma = np.random.default_rng(task_seed).uniform(lo, hi, self.m)
        self.exact = bool(exact)
        row_sq = np.einsum("ij,ij->i", self.X, self.X)
        self.L_g = 0.25 * float(row_sq.max()) / float(self.sigma.min()) ** 2 + self.lam
        self.N = self.n
        self.init_counter()
        self._wstar = np.zeros((self.m, self.D))
        self.info = {"n": self.n, "n_va": self.n_va, "D": self.D, "m": self.m,
                     "sigma": self.sigma.tolist(), "lam": self.lam, "L_g": self.L_g,
                     "positives_train": int((self.y > 0).sum())}

    # ---- starting point and draws (counted) ---------------------------------------------
    def zero_point(self) -> tuple[np.ndarray, np.ndarray]:
        """(p_0, W_0) = (all ones, zeros (m, D)) (docs/papers/004.md §3.1 defaults)."""
        return np.ones(self.n), np.zeros((self.m, self.D))

    def draw_train(self, rng: np.random.Generator, b: int) -> np.ndarray:
        """b training rows (all n if b >= n), uniform without replacement; counts them."""
        b = min(b, self.n)
        self.counter[0] += b
        return rng.choice(self.n, size=b, replace=False)

    def draw_val(self, rng: np.random.Generator, b: int) -> np.ndarray:
        """b validation rows (all n_va if b >= n_va), uniform without replacement; counts them."""
        b = min(b, self.n_va)
        self.counter[0] += b
        return rng.choice(self.n_va, size=b, replace=False)

    # ---- minibatch oracles (not counted: the draw paid) ------------------------------------
    def lower_terms(self, p: np.ndarray, w: np.ndarray, B: np.ndarray | None, i: int = 0,
                    hessian: bool = True):
        """(grad_w g, Hess_ww g or None, a) on the batch B of task i at (p, w); a (b,) is the
        cross-Jacobian row scale: grad2_pw g_hat = rows a_j x~_j^T at j in B. B None: every
        row, read in place (the same numbers as B = arange(n), without copying X)."""
        if B is None:
            X, y, pB = self.X, self.y, p
        else:
            X, y, pB = self.X[B], self.y[B], p[B]
        s = self.sigma[i]
        b = len(y)
        sj = expit(-y * (X @ w) / s)
        a = -(y / s) * sj / b
        gw = X.T @ (pB * a) + self.lam * w
        H = None
        if hessian:
            c = pB * sj * (1.0 - sj) / (s * s * b)
            H = (X.T * c) @ X
            H[np.diag_indices_from(H)] += self.lam
        return gw, H, a

    def hess_vec(self, p: np.ndarray, w: np.ndarray, B: np.ndarray, vec: np.ndarray,
                 i: int = 0) -> np.ndarray:
        """Hess_ww g_hat(p, w; B) @ vec without forming the matrix (Neumann baselines)."""
        X, y, s = self.X[B], self.y[B], self.sigma[i]
        sj = expit(-y * (X @ w) / s)
        c = p[B] * sj * (1.0 - sj) / (s * s * len(B))
        return X.T @ (c * (X @ vec)) + self.lam * vec

    def upper_grad(self, w: np.ndarray, Bv: np.ndarray | None, i: int = 0) -> np.ndarray:
        """grad_w f_i on the validation batch Bv (None: every validation row, in place)."""
        X, y = (self.Xv, self.yv) if Bv is None else (self.Xv[Bv], self.yv[Bv])
        s = self.sigma[i]
        sk = expit(-y * (X @ w) / s)
        return X.T @ (-(y / s) * sk) / len(y)

    def features_dot(self, q: np.ndarray) -> np.ndarray:
        """X~ q (n,): the n-vector of the full hypergradient -alpha ∘ (X~ H^{-1} v) (spec
        §3.2); by table lookup on packed bits when the features are 0/1 (drocli.ops.bitpacked,
        same sums in another order)."""
        return self.X @ q if self._bits is None else self._bits.dot(q)

    def cross_apply(self, B: np.ndarray, a: np.ndarray, q: np.ndarray) -> np.ndarray:
        """grad2_pw g_hat @ q as a dense n-vector: a_j (x~_j . q) on the rows B, 0 elsewhere."""
        out = np.zeros(self.n)
        np.add.at(out, B, a * (self.X[B] @ q))
        return out

    # ---- curvature of the lower problems (the Neumann constant) -----------------------------
    def curvature(self, i: int = 0) -> float:
        """lambda_max of Hess_ww g_i(p_0, w_0) with p_0 = 1, w_0 = 0: (1 / (4 sigma_i^2))
        lambda_max(X~^T X~ / n) + lam, the top eigenvalue by power iteration (matrix-free,
        computed once). At w = 0 the logistic curvature s (1 - s) is at its maximum 1/4, so
        this bounds Hess_ww g_i(p_0, w) for every w: the smoothness constant the Neumann
        series of BSA / TTSA / stocBiO asks for, where `L_g` (0.25 max ||x~_j||^2 + lam)
        is a loose bound on it (docs/papers/004.md §3.4, issue 26)."""
        if getattr(self, "_gram_top", None) is None:
            self._gram_top = power_top_eigenvalue(lambda v: self.X.T @ (self.X @ v) / self.n,
                                                  self.D)
        return 0.25 * self._gram_top / float(self.sigma[i]) ** 2 + self.lam

    # ---- full quantities (tests, metrics; not counted) --------------------------------------
    def lower_value(self, p: np.ndarray, w: np.ndarray, i: int = 0) -> float:
        r = self.y * (self.X @ w) / self.sigma[i]
        return float(-(p @ log_expit(r)) / self.n + 0.5 * self.lam * w @ w)

    def upper_value(self, w: np.ndarray, i: int = 0) -> float:
        return float(-np.mean(log_expit(self.yv * (self.Xv @ w) / self.sigma[i])))

    def lower_full(self, p: np.ndarray, w: np.ndarray, i: int = 0):
        """(grad_w g, Hess_ww g) on the whole training set."""
        return self.lower_terms(p, w, None, i)[:2]

    def solve_lower(self, p: np.ndarray, i: int = 0, w0: np.ndarray | None = None):
        """w_i*(p) by damped Newton (Armijo backtracking) to ||grad_w g|| <= NEWTON_TOL.
        With negative weights g_i(p, .) may be nonconvex: where the Hessian is indefinite
        the step uses its projection onto {H >= lam I} (a descent direction); NaN when no
        strict local minimum is reached in 100 steps."""
        return self._newton(p, i, w0)[0]

    def _newton(self, p: np.ndarray, i: int = 0, w0: np.ndarray | None = None):
        """(w_i*(p), Hess_ww g_i at it) of `solve_lower` (the Hessian None where w is NaN):
        the last Newton step's full Hessian is the one the hypergradient needs there."""
        nan = np.full(self.D, np.nan), None
        w = np.zeros(self.D) if w0 is None else np.array(w0, dtype=np.float64)
        val = self.lower_value(p, w, i)
        for _ in range(100):
            g, H = self.lower_full(p, w, i)
            converged = np.linalg.norm(g) <= NEWTON_TOL * max(1.0, np.sqrt(self.D))
            if not converged:
                try:
                    step = cho_solve(cho_factor(H), g)
                except np.linalg.LinAlgError:
                    step = FlooredSPD(H, self.lam).solve(g)
                slope = float(g @ step)
                converged = slope <= 1e-24          # Newton decrement at rounding level
            if converged:
                return (w, H) if np.linalg.eigvalsh(H)[0] > 0 else nan
            if slope <= 1e-10 * max(1.0, abs(val)):    # below what values resolve: the
                w = w - step                          # quadratic region, full steps
                val = self.lower_value(p, w, i)
                continue
            t = 1.0
            while t > 1e-12:
                cand = w - t * step
                cval = self.lower_value(p, cand, i)
                if cval <= val - 1e-4 * t * slope:
                    break
                t *= 0.5
            else:                                   # no decrease left: rounding level
                return (w, H) if np.linalg.eigvalsh(H)[0] > 0 else nan
            w, val = cand, cval
        return nan

    def hypergradient(self, p: np.ndarray, W: np.ndarray | None = None,
                      hessians: list | None = None) -> np.ndarray:
        """grad F(p) = sum_i -grad2_pw g_i [Hess_ww g_i]^{-1} grad_w f_i at w_i*(p) (Prop. 1/2),
        with the lower solutions W (m, D) if given, else solved here, and their full
        Hessians if given (`_newton`'s), else computed."""
        out = np.zeros(self.n)
        for i in range(self.m):
            w = self.solve_lower(p, i, self._wstar[i]) if W is None else W[i]
            H = hessians[i] if hessians is not None else None
            if H is None:
                _, H = self.lower_full(p, w, i)
            q = np.linalg.solve(H, self.upper_grad(w, None, i))
            sj = expit(-self.y * (self.X @ w) / self.sigma[i])
            out += (self.y / self.sigma[i]) * sj * (self.X @ q) / self.n
        return out

    # ---- metrics ---------------------------------------------------------------------------
    metrics_on_request = True   # the Monitor passes the metrics it keeps (`wanted`)

    def evaluate(self, p, W, wanted=None, **_) -> dict:
        """The metrics at (p, W); with `wanted`, the exact lower solves (m damped Newton
        runs) and the hypergradient (at the Hessians of their last Newton steps) only when
        a kept metric needs them, with the same values as without it."""
        W = np.asarray(W, dtype=np.float64).reshape(self.m, self.D)
        out = {"objective": sum(self.upper_value(W[i], i) for i in range(self.m)),
               "val_error": float(np.mean(self.yv * (self.Xv @ W[0]) <= 0.0)),
               "weight_mean": float(np.mean(p))}
        want_grad = wanted is None or "hypergrad_norm" in wanted
        if self.exact and (want_grad or "objective_exact" in wanted):
            solved = [self._newton(p, i, self._wstar[i]) for i in range(self.m)]
            ws = np.array([w for w, _ in solved])
            if np.all(np.isfinite(ws)):
                self._wstar = ws
            out["objective_exact"] = sum(self.upper_value(ws[i], i) for i in range(self.m))
            if want_grad:
                out["hypergrad_norm"] = float(np.linalg.norm(
                    self.hypergradient(p, ws, [H for _, H in solved])))
        return out


class BilevelWeightsParams(Params):
    """The example-weight bilevel problem of App. E (docs/papers/004.md §3.1-3.3)."""

    lam: float = Field(0.01, gt=0, description="l2 weight of the lower problems ([UNSPEC], "
                       "docs/papers/004.md §3.1)")
    tasks: int = Field(1, ge=1, description="m, the lower problems (E.1: 1; E.2: 200 or 500)")
    sigma_range: list[float] = Field([1.0, 11.0], min_length=2, max_length=2,
                                     description="task temperatures sigma_i ~ U[low, high] "
                                     "(E.2: [1, 11])")
    task_seed: int = Field(0, ge=0, description="seed of the sigma_i draw (drawn once)")
    n_val: int | None = auto("validation rows drawn once from the test part (E.2: 100); "
                             "auto: every test row", ge=1)
    val_seed: int = Field(0, ge=0, description="seed of the validation draw")
    bias: bool = Field(True, description="append a constant-1 feature")
    exact: bool = Field(True, description="also record the exact F(p) and hypergradient norm "
                        "(a Newton lower solve per evaluation)")

    @model_validator(mode="after")
    def _range(self):
        lo, hi = self.sigma_range
        if not 0 < lo <= hi:
            raise ValueError("sigma_range must be [low, high] with 0 < low <= high")
        return self


@registry.problem(
    "bilevel_weights",
    params=BilevelWeightsParams,
    tiny={"data": ("digits_split", {"n_train": 200}), "params": {"lam": 0.1, "tasks": 1}},
    metrics=("objective", "val_error", "objective_exact", "hypergrad_norm", "weight_mean"),
    family="bilevel",
    description="per-example training weights by (multi-task) stochastic bilevel optimisation: "
                "validation logistic loss over lower weighted-logistic problems "
                "(Guo, Hu, Zhang & Yang, App. E)",
)
def make(data: GroupedData, params: dict) -> BilevelWeightsProblem:
    """Build the example-weight bilevel problem (E.1: tasks 1; E.2: tasks m, n_val 100)."""
    return BilevelWeightsProblem(
        data, lam=params["lam"], tasks=params["tasks"], sigma_range=params["sigma_range"],
        task_seed=params["task_seed"], n_val=params["n_val"] or 0, val_seed=params["val_seed"],
        bias=params["bias"], exact=params["exact"])
