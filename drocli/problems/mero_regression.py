"""MERO on heterogeneous-noise linear regression with closed-form risks (paper 001, Gu & Xu
2024, reconstructed suite, docs/papers/001.md §3.1):

    min_{||w|| <= R} max_i  R_i(w) - R_i^*,   group i: x ~ N(0, I_d), y = <w*_i, x> + sigma_i eps.

- loss "squared" (E1, smooth): R_i(w) = ||w - w*_i||^2 + sigma_i^2;
- loss "absolute" (E2, non-smooth): R_i(w) = sqrt(2/pi) sqrt(||w - w*_i||^2 + sigma_i^2).
R_i^* = R_i(Proj_W(w*_i)) (both risks increase with ||w - w*_i||), i.e. sigma_i^2 and
sqrt(2/pi) sigma_i when ||w*_i|| <= R.

Oracles: solvers draw samples with `sample` (not counted: drawing is free) and evaluate losses
in compiled kernels that add one to `counter[0]` per per-sample function value or gradient
(§2.3, P13). `oracle_calls` is that counter. One "epoch" N = the function values of one
ZO-SMD round at the default mini-batch r = 10: 5 m r (squared) or 6 m r (absolute).

Metrics (`evaluate`, not counted; exact risks, §3.4): iteration (t, passed by the solver),
mer = max_i [R_i(w) - R_i^*], mer_minus_opt, max_risk = max_i R_i(w), gap = eps_phi(w, q) =
mer - min_{w' in W} sum_i q_i [R_i(w') - R_i^*] (closed form for squared; FISTA for absolute),
est_err = max_i [R_i(wbar^(i)) - R_i^*] and est_err_mean (when the solver passes its R_i^*
estimates `wstar`), and with per_group: excess_g<i>, risk_g<i>.
OPT = min_w max_i [R_i(w) - R_i^*] is computed once per instance by a deterministic saddle
solver on the exact risks (SLSQP on the epigraph form, checked by weak duality in the tests)
and stored in `opt` / info["opt"].
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.jit import njit
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.counted import CountedOracles

LOSSES = ("squared", "absolute")
LOSS_IDS = {"squared": 0, "absolute": 1}
C_ABS = math.sqrt(2.0 / math.pi)


# ---- exact risks ------------------------------------------------------------------------------
def risks(W: np.ndarray, sigma: np.ndarray, w: np.ndarray, loss: str) -> np.ndarray:
    """R_i(w) (m,) for one w (d,), or R_i(w_i) for a stack w (m, d)."""
    dist2 = np.sum((np.asarray(w, dtype=np.float64) - W) ** 2, axis=-1)
    if loss == "squared":
        return dist2 + sigma ** 2
    return C_ABS * np.sqrt(dist2 + sigma ** 2)


def project(v: np.ndarray, radius: float) -> np.ndarray:
    nrm = float(np.linalg.norm(v))
    return v * (radius / nrm) if nrm > radius else np.array(v, dtype=np.float64)


@njit(cache=True)
def _abs_inner_min(W, sigma, rstar, q, radius, w0, iters):
    """min_{||w|| <= R} sum_i q_i [c sqrt(||w - w*_i||^2 + s_i^2) - R_i^*] by FISTA with
    step 1/L, L = c sum_i q_i / s_i; returns the best value seen (w0 included)."""
    m, d = W.shape
    c = math.sqrt(2.0 / math.pi)
    L = 0.0
    for i in range(m):
        L += c * q[i] / sigma[i]
    step = 1.0 / L
    x = w0.copy()
    y = w0.copy()
    g = np.zeros(d)
    best = np.inf
    tk = 1.0
    for it in range(iters + 1):
        # value at x (the iterate) and gradient at y (the extrapolated point)
        val = 0.0
        for i in range(m):
            s = 0.0
            for k in range(d):
                diff = x[k] - W[i, k]
                s += diff * diff
            val += q[i] * (c * math.sqrt(s + sigma[i] * sigma[i]) - rstar[i])
        if val < best:
            best = val
        if it == iters:
            break
        for k in range(d):
            g[k] = 0.0
        for i in range(m):
            s = 0.0
            for k in range(d):
                diff = y[k] - W[i, k]
                s += diff * diff
            coef = q[i] * c / math.sqrt(s + sigma[i] * sigma[i])
            for k in range(d):
                g[k] += coef * (y[k] - W[i, k])
        xn = y - step * g
        nrm = math.sqrt(np.sum(xn * xn))
        if nrm > radius:
            xn *= radius / nrm
        tn = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * tk * tk))
        y = xn + ((tk - 1.0) / tn) * (xn - x)
        x = xn
        tk = tn
    return best


def inner_min(W, sigma, rstar, q, radius, loss, w0=None, iters=2000) -> float:
    """min_{||w|| <= R} sum_i q_i [R_i(w) - R_i^*] (exact for squared, FISTA for absolute)."""
    q = np.asarray(q, dtype=np.float64)
    if loss == "squared":
        w = project(q @ W, radius)
        return float(q @ (risks(W, sigma, w, loss) - rstar))
    if w0 is None:
        w0 = project(q @ W, radius)
    # the projected weighted mean is a good second start; keep the better result
    a = _abs_inner_min(W, sigma, rstar, q, radius, np.asarray(w0, dtype=np.float64), iters)
    b = _abs_inner_min(W, sigma, rstar, q, radius, project(q @ W, radius), iters)
    return float(min(a, b))


def saddle_opt(W, sigma, rstar, radius, loss) -> tuple[float, np.ndarray]:
    """OPT = min_{||w|| <= R} max_i [R_i(w) - R_i^*]: SLSQP on min s s.t. excess_i(w) <= s,
    ||w||^2 <= R^2 (deterministic), started at the projected mean of the w*_i."""
    m, d = W.shape

    def excess(w):
        return risks(W, sigma, w, loss) - rstar

    def jac_excess(w):
        diff = w[None, :] - W
        if loss == "squared":
            return 2.0 * diff
        dist = np.sqrt(np.sum(diff ** 2, axis=1) + sigma ** 2)
        return C_ABS * diff / dist[:, None]

    from scipy.optimize import minimize

    w0 = project(W.mean(axis=0), radius)
    z0 = np.concatenate([w0, [float(excess(w0).max())]])
    cons = [
        {"type": "ineq", "fun": lambda z: z[-1] - excess(z[:-1]),
         "jac": lambda z: np.hstack([-jac_excess(z[:-1]), np.ones((m, 1))])},
        {"type": "ineq", "fun": lambda z: np.array([radius ** 2 - z[:-1] @ z[:-1]]),
         "jac": lambda z: np.concatenate([-2.0 * z[:-1], [0.0]])[None, :]},
    ]
    res = minimize(lambda z: z[-1], z0, jac=lambda z: np.eye(d + 1)[-1], method="SLSQP",
                   constraints=cons, options={"ftol": 1e-14, "maxiter": 1000})
    w = project(res.x[:-1], radius)
    return float(excess(w).max()), w


# ---- problem ----------------------------------------------------------------------------------
class MERORegressionProblem(CountedOracles):
    """See the module docstring. Attributes: W_star (m, d), sigma (m,), m, d, radius, loss,
    loss_id, rstar (m,), opt, w_opt (d,), N, counter (1,) int64, info."""

    def __init__(self, data: GroupedData, loss: str = "squared", radius: float = 2.0,
                 per_group: bool = False, inner_iters: int = 2000):
        if loss not in LOSSES:
            raise DrocliError(f"unknown loss {loss!r}", key="problem.params.loss",
                              fix="use squared (E1, smooth) or absolute (E2, non-smooth)")
        if not radius > 0:
            raise DrocliError(f"radius must be > 0, got {radius}", key="problem.params.radius",
                              fix="e.g. radius: 2.0")
        self.name = data.name
        self.loss = loss
        self.loss_id = LOSS_IDS[loss]
        self.smooth = loss == "squared"
        self.radius = float(radius)
        self.per_group = bool(per_group)
        self.inner_iters = int(inner_iters)
        self.W_star = np.ascontiguousarray(data.X_train, dtype=np.float64)
        self.sigma = np.ascontiguousarray(data.y_train, dtype=np.float64)
        self.m, self.d = self.W_star.shape
        if self.sigma.shape != (self.m,) or np.any(self.sigma <= 0):
            raise DrocliError("mero_regression needs one sigma_i > 0 per group",
                              fix="use the mero_regression data source")
        self.rstar = np.array([risks(self.W_star[i], self.sigma[i],
                                     project(self.W_star[i], self.radius), loss)
                               for i in range(self.m)])
        self.opt, self.w_opt = saddle_opt(self.W_star, self.sigma, self.rstar, self.radius,
                                          loss)
        self.N = (5 if self.smooth else 6) * self.m * 10
        # schedule constants (docs/papers/001.md §3.1, §3.3): Euclidean ball, tau1 = tau2 = 1, D^2
        # = R^2/2
        self.D2 = self.radius ** 2 / 2.0
        self.L = 2.0 * self.d                 # E[2 ||x||^2], squared loss
        self.Lstar = math.sqrt(self.d)        # ~ E||x||, absolute loss
        self.init_counter()
        self.info = {"opt": self.opt, "rstar": self.rstar.tolist(), "loss": loss}

    # ---- bookkeeping ----------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, n: int, r: int):
        """n rounds of r samples per group: X (n, m, r, d), Y (n, m, r), float64 (not counted)."""
        X = rng.standard_normal((n, self.m, r, self.d))
        eps = rng.standard_normal((n, self.m, r))
        Y = np.einsum("tijk,ik->tij", X, self.W_star) + self.sigma[None, :, None] * eps
        return X, Y

    def sample_loss(self, w: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Per-sample losses l(w; x, y) (reference for tests; counted: one per sample)."""
        res = Y - X @ np.asarray(w, dtype=np.float64)
        self.counter[0] += res.size
        return res ** 2 if self.smooth else np.abs(res)

    # ---- metrics (not counted) ------------------------------------------------------------------
    def risks(self, w) -> np.ndarray:
        return risks(self.W_star, self.sigma, np.asarray(w, dtype=np.float64), self.loss)

    def excess(self, w) -> np.ndarray:
        return self.risks(w) - self.rstar

    def inner_min(self, q, w0=None) -> float:
        return inner_min(self.W_star, self.sigma, self.rstar, q, self.radius, self.loss, w0,
                         self.inner_iters)

    def evaluate(self, w, q=None, wstar=None, t=None) -> dict:
        """Exact metrics of docs/papers/001.md §3.4 at (w, q); wstar (m, d): the R_i^* estimates."""
        w = np.asarray(w, dtype=np.float64).reshape(-1)
        R = self.risks(w)
        ex = R - self.rstar
        mer = float(ex.max())
        out = {"mer": mer, "mer_minus_opt": mer - self.opt, "max_risk": float(R.max())}
        if t is not None:
            out["iteration"] = float(t)
        if q is not None:
            out["gap"] = mer - self.inner_min(np.asarray(q, dtype=np.float64), w0=w)
        if wstar is not None:
            est = self.risks(np.asarray(wstar, dtype=np.float64)) - self.rstar
            out["est_err"] = float(est.max())
            out["est_err_mean"] = float(est.mean())
        if self.per_group:
            for i in range(self.m):
                out[f"excess_g{i}"] = float(ex[i])
                out[f"risk_g{i}"] = float(R[i])
        return out


class MERORegressionParams(Params):
    """MERO on heterogeneous-noise regression ([RECON] docs/papers/001.md §3.1, §3.4)."""

    loss: Literal["squared", "absolute"] = Field(
        "squared", description="squared (E1, smooth) or absolute (E2, non-smooth)")
    radius: float = Field(2.0, gt=0, description="l2 ball radius of w")
    per_group: bool = Field(False, description="also record each group's risk and excess "
                            "risk (excess_g<i>, risk_g<i>)")
    inner_iters: int = Field(2000, ge=1, description="iterations of the exact inner "
                             "minimum behind the duality gap metric")


METRIC_LABELS = {
    "mer": r"max excess risk $\max_i\,[R_i(w) - R_i^*]$",
    "mer_minus_opt": r"max excess risk $-$ OPT",
    "max_risk": r"max risk $\max_i\,R_i(w)$",
    "gap": r"duality gap $\epsilon_\phi(\bar w_t, \bar q_t)$",
    "est_err": r"$\max_i\,[R_i(\bar w^{(i)}) - R_i^*]$",
    "est_err_mean": r"mean$_i\,[R_i(\bar w^{(i)}) - R_i^*]$",
    "iteration": "iteration t",
}


def metric_label(name: str) -> str | None:
    """The readable y-label of a metric (mathtext, drawn from code: a spec's text is the
    user's), per-group metrics numbered from 1 as in the paper (`excess_g0` is group 1)."""
    if name in METRIC_LABELS:
        return METRIC_LABELS[name]
    kind, _, i = name.rpartition("_g")
    if kind in ("excess", "risk") and i.isdigit():
        k = int(i) + 1
        return (rf"excess risk $R_{{{k}}} - R_{{{k}}}^*$, group {k}" if kind == "excess"
                else rf"risk $R_{{{k}}}$, group {k}")
    return None


@registry.problem(
    "mero_regression",
    params=MERORegressionParams,
    tiny={"data": ("mero_regression", {"groups": 3, "dim": 4}),
          "params": {"loss": "absolute", "radius": 2.0, "inner_iters": 200}},
    metrics=("mer", "mer_minus_opt", "max_risk", "iteration", "gap", "est_err",
             "est_err_mean", "excess_g*", "risk_g*"),
    family="zo_mero",
    metric_label=metric_label,
    description="paper 001 (reconstructed): MERO on heterogeneous-noise regression, "
                "closed-form risks (squared: smooth E1; absolute: non-smooth E2)",
)
def make(data: GroupedData, params: dict) -> MERORegressionProblem:
    """Build the closed-form MERO regression problem (§3.1); computes OPT once."""
    if data.info.get("kind") != "distribution":
        raise DrocliError("problem mero_regression needs the mero_regression data source",
                          key="data.name", fix="data: {name: mero_regression}")
    return MERORegressionProblem(data, loss=params["loss"], radius=params["radius"],
                                 per_group=params["per_group"],
                                 inner_iters=params["inner_iters"])
