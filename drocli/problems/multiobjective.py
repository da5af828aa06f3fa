"""VLMOP2: the synthetic two-objective problem of paper 003 (Liu et al., OMD-TCH, eqs. 18-19;
docs/papers/003.md §3.1.1), with a preference vector w for Tchebycheff scalarization:

    c = 1/sqrt(d),  f1(θ) = 1 - exp(-||θ - c1||^2),  f2(θ) = 1 - exp(-||θ + c1||^2),
    ∇f1 = 2(θ - c1) exp(-||θ - c1||^2),  ∇f2 = 2(θ + c1) exp(-||θ + c1||^2),
    Θ = [-1, 1]^d  (d = 10 in the paper).

The paper projects onto Θ; the official code clips to [-1 + 1e-5, 1 - 1e-5] ([CODE]); the
`box_eps` parameter selects the latter (default 0: the paper's box).

Pareto set: θ = u c 1 for u in [-1, 1]; front: (1 - e^{-(u-1)^2}, 1 - e^{-(u+1)^2}) (concave,
joining (0, 1 - e^-4) to (1 - e^-4, 0)). The TCH optimum for w (f >= 0, ideal point 0) is the
front point with w1 f1 = w2 f2 (docs/papers/003.md §1.4 Thm 1), found by brentq on u.

Oracles: `oracle(θ)` returns F (m,) and J (m, d) and adds m to the counter: one call per
objective-gradient evaluation (the value comes with its gradient). One "epoch" N = m, i.e. one
full-gradient iteration, so `budget: {epochs: 1000}` is the paper's T = 1000 [CODE].

Metrics (`evaluate`, not counted): f1, f2, tch = max_i w_i f_i, tch_gap = tch - TCH optimum,
eq_err = |w1 f1 - w2 f2|, ray_dist = ||f(θ) - f*_w|| (distance to the analytic intersection of
the front with the ray of direction 1/w), front_dist = distance in objective space to the
analytic front (dense grid of the front curve, refined by bounded scalar minimisation), and
hv = 2-D hypervolume of {f(θ)} with reference point (1, 1). Artifacts (per cell): the final
θ, the front and the attainable region (`artifacts`).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, field_validator

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.counted import CountedOracles

KEY = "problem.params"
HV_REF = (1.0, 1.0)


def preference_grid(n: int = 10, clip: float = 0.01) -> np.ndarray:
    """The paper's preferences (§3.1.2): w1 = linspace(clip, 1 - clip, n), w2 = 1 - w1."""
    w1 = np.linspace(clip, 1.0 - clip, n)
    return np.stack([w1, 1.0 - w1], axis=1)


def front_point(u) -> np.ndarray:
    """Front point(s) of θ = u c 1 (any d): (1 - e^-(u-1)^2, 1 - e^-(u+1)^2)."""
    u = np.asarray(u, dtype=np.float64)
    return np.stack([1.0 - np.exp(-(u - 1.0) ** 2), 1.0 - np.exp(-(u + 1.0) ** 2)], axis=-1)


def front(n: int = 1000) -> np.ndarray:
    """n points (n, 2) of the analytic Pareto front, u = linspace(-1, 1, n)."""
    return front_point(np.linspace(-1.0, 1.0, n))


def tch_optimum_u(w) -> float:
    """u in [-1, 1] with w1 f1(u) = w2 f2(u): the TCH solution θ* = u c 1 (w > 0)."""
    from scipy.optimize import brentq

    w = np.asarray(w, dtype=np.float64)

    def g(u):
        f = front_point(u)
        return w[0] * f[0] - w[1] * f[1]

    return float(brentq(g, -1.0, 1.0, xtol=1e-14, rtol=1e-14))


def endpoint_distance(F) -> float:
    """Distance from F (2,) to the nearer front end point, (0, 1 - e^-4) or (1 - e^-4, 0)."""
    F = np.asarray(F, dtype=np.float64)
    e = 1.0 - math.exp(-4.0)
    return float(min(math.hypot(F[0], F[1] - e), math.hypot(F[0] - e, F[1])))


def feasible_boundary(n: int = 1000, u_max: float = 4.0) -> np.ndarray:
    """Boundary (n, 2) of the attainable set {f(θ)} (box ignored), a closed polygon.

    With a = ||θ - c1||^2, b = ||θ + c1||^2 and ||2c1|| = 2, the triangle inequality gives
    exactly sqrt(a) + sqrt(b) >= 2 (the front, u in [-1, 1]) and |sqrt(a) - sqrt(b)| <= 2, whose
    boundary is the same curve front_point(u) for |u| >= 1. Sampling u in [-u_max, u_max]
    (f within e^-9 of 1 at u_max = 4) and closing at (1, 1) gives the region above/right of the
    front. The box [-1, 1]^d keeps every such point with max(f1, f2) <= 0.99 (d = 10: take
    θ = s c1 + r v, v = (1, -1, ...)/sqrt(d); then ||θ||_inf <= (|s| + r)/sqrt(d) <= 1).
    """
    return front_point(np.linspace(-u_max, u_max, n))


def vlmop2_values(theta) -> np.ndarray:
    """f(θ) (2,) of VLMOP2 in any dimension d = len(θ), c = 1/sqrt(d): a pure function of θ,
    registered as the problem's `objectives` (plots evaluate averaged θ with it)."""
    theta = np.asarray(theta, dtype=np.float64).reshape(-1)
    c = 1.0 / math.sqrt(theta.size)
    a = np.sum((theta - c) ** 2)
    b = np.sum((theta + c) ** 2)
    return np.array([1.0 - math.exp(-a), 1.0 - math.exp(-b)])


def front_distance(F) -> float:
    """Euclidean distance from an objective vector F (2,) to the analytic front."""
    from scipy.optimize import minimize_scalar

    F = np.asarray(F, dtype=np.float64)
    us = np.linspace(-1.0, 1.0, 2001)
    d2 = np.sum((front_point(us) - F) ** 2, axis=1)
    k = int(np.argmin(d2))
    lo, hi = us[max(k - 1, 0)], us[min(k + 1, us.size - 1)]
    res = minimize_scalar(lambda u: float(np.sum((front_point(u) - F) ** 2)), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    return math.sqrt(max(0.0, min(float(res.fun), float(d2[k]))))


def hypervolume_2d(points, ref=HV_REF) -> float:
    """Hypervolume (area) dominated by 2-D points (minimisation) up to the reference point."""
    P = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    P = P[np.all(P < np.asarray(ref), axis=1)]
    if P.size == 0:
        return 0.0
    P = P[np.lexsort((P[:, 1], P[:, 0]))]
    hv, best2 = 0.0, ref[1]
    for f1, f2 in P:
        if f2 < best2:
            hv += (ref[0] - f1) * (best2 - f2)
            best2 = f2
    return float(hv)


class VLMOP2Problem(CountedOracles):
    """See the module docstring. Attributes: d, m = 2, c, w (2,), lower, upper, N = m,
    counter (1,) int64, tch_opt, u_opt, theta_opt (d,), f_opt (2,), info."""

    def __init__(self, dim: int = 10, pref=0.5, box_eps: float = 0.0):
        if int(dim) != dim or dim < 1:
            raise DrocliError(f"dim must be an integer >= 1, got {dim}", key=f"{KEY}.dim",
                              fix="the paper uses dim: 10")
        w = np.atleast_1d(np.asarray(pref, dtype=np.float64))
        if w.size == 1:
            w = np.array([w[0], 1.0 - w[0]])
        if w.shape != (2,) or np.any(w <= 0) or abs(w.sum() - 1.0) > 1e-9:
            raise DrocliError(f"pref must be w1 in (0, 1) or [w1, w2] > 0 summing to 1, got "
                              f"{pref}", key=f"{KEY}.pref",
                              fix="e.g. pref: 0.5 (the paper clips its grid to [0.01, 0.99])")
        if not 0.0 <= box_eps < 1.0:
            raise DrocliError(f"box_eps must be in [0, 1), got {box_eps}", key=f"{KEY}.box_eps",
                              fix="0 (paper's box [-1, 1]^d) or 1e-5 (official code)")
        self.name = "vlmop2"
        self.d = int(dim)
        self.m = 2
        self.c = 1.0 / math.sqrt(self.d)
        self.w = w
        self.lower = -1.0 + float(box_eps)
        self.upper = 1.0 - float(box_eps)
        self.N = self.m
        self.init_counter()
        self.u_opt = tch_optimum_u(w)
        self.theta_opt = np.full(self.d, self.u_opt * self.c)
        self.f_opt = front_point(self.u_opt)
        self.tch_opt = float(np.max(w * self.f_opt))
        self.info = {"pref": w.tolist(), "tch_opt": self.tch_opt, "f_opt": self.f_opt.tolist()}

    # ---- bookkeeping --------------------------------------------------------------------------
    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """θ^(1) ~ U(-c, c)^d ([CODE], docs/papers/003.md §3.1.3)."""
        return rng.uniform(-self.c, self.c, self.d)

    def project(self, theta: np.ndarray) -> np.ndarray:
        """Π_Θ: clipping onto the box (exact Euclidean projection onto a box)."""
        return np.clip(theta, self.lower, self.upper)

    # ---- objectives ---------------------------------------------------------------------------
    def values(self, theta) -> np.ndarray:
        """f(θ) (2,), not counted (metrics, tests)."""
        return vlmop2_values(theta)

    def front_curve(self, n: int = 1000) -> np.ndarray:
        """n points (n, 2) of the analytic Pareto front, for plotting (§3.1.1)."""
        return front(n)

    def feasible_boundary(self, n: int = 1000) -> np.ndarray:
        """Closed boundary (n, 2) of the attainable objective set, for shading."""
        return feasible_boundary(n)

    def oracle(self, theta) -> tuple[np.ndarray, np.ndarray]:
        """F = f(θ) (2,), J = ∇f(θ) (2, d); counted: m calls."""
        theta = np.asarray(theta, dtype=np.float64)
        dm = theta - self.c
        dp = theta + self.c
        ea = math.exp(-float(dm @ dm))
        eb = math.exp(-float(dp @ dp))
        self.counter[0] += self.m
        return np.array([1.0 - ea, 1.0 - eb]), np.stack([2.0 * dm * ea, 2.0 * dp * eb])

    # ---- metrics (not counted) ----------------------------------------------------------------
    def evaluate(self, theta, t=None) -> dict:
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        F = self.values(theta)
        wf = self.w * F
        tch = float(wf.max())
        out = {"f1": float(F[0]), "f2": float(F[1]), "tch": tch, "tch_gap": tch - self.tch_opt,
               "eq_err": float(abs(wf[0] - wf[1])),
               "ray_dist": float(np.linalg.norm(F - self.f_opt)),
               "front_dist": front_distance(F), "endpoint_dist": endpoint_distance(F),
               "hv": hypervolume_2d(F)}
        if t is not None:
            out["iteration"] = float(t)
        return out

    def artifacts(self, theta) -> dict:
        """Arrays kept with the cell: the final θ (seed averages are taken in decision space,
        docs/papers/003.md §3.1.5) and the analytic front and attainable region the figures draw."""
        return {"theta": np.asarray(theta, dtype=np.float64).reshape(-1),
                "front": self.front_curve(), "region": self.feasible_boundary()}


class VLMOP2Params(Params):
    """VLMOP2 with a Tchebycheff preference (paper 003 §6.1, App. B.1; docs/papers/003.md §3.1)."""

    dim: int = Field(10, ge=1, description="d, the decision dimension (paper: 10)")
    pref: float | list[float] = Field(
        0.5, description="preference w: w1 in (0, 1), read as (w1, 1 - w1), or [w1, w2] > 0 "
        "summing to 1 (the paper clips its grid to [0.01, 0.99])")
    box_eps: float = Field(0.0, ge=0, lt=1, description="box [-1 + eps, 1 - eps]^d: 0 is the "
                           "paper's, 1e-5 the official code's")

    @field_validator("pref")
    @classmethod
    def _pref(cls, v):
        w = [v, 1.0 - v] if not isinstance(v, list) else v
        if len(w) != 2 or min(w) <= 0 or abs(sum(w) - 1.0) > 1e-9:
            raise ValueError("pref must be w1 in (0, 1) or [w1, w2] > 0 summing to 1")
        return v


@registry.problem(
    "vlmop2",
    params=VLMOP2Params,
    tiny={"data": ("moo_none", {}), "params": {"dim": 10, "pref": 0.3}},
    metrics=("f1", "f2", "tch", "tch_gap", "eq_err", "ray_dist", "front_dist",
             "endpoint_dist", "hv", "iteration"),
    family="moo",
    objectives=vlmop2_values,
    description="paper 003: VLMOP2 (d = 10, box [-1, 1]^d) with a Tchebycheff preference w, "
                "analytic Pareto front",
)
def make(data: GroupedData, params: dict) -> VLMOP2Problem:
    """Build VLMOP2 (§3.1.1) for preference w = (pref, 1 - pref) or pref = [w1, w2]."""
    return VLMOP2Problem(dim=params["dim"], pref=params["pref"], box_eps=params["box_eps"])
