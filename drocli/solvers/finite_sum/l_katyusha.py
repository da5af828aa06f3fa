"""L-Katyusha with any index sampler: Algorithm 2 (AS-LKatyusha) of Zhao, Lyu & Kolar,
"L-SVRG and L-Katyusha with Adaptive Sampling" (TMLR 2023), with the parameters of
Theorem 3 (docs/papers/002.md §2.2):

  v = w = z = x0 = 0;  gw = grad F(w)                                              [n]
  for t = 0..T-1:
      x = theta1 z + theta2 w + (1 - theta1 - theta2) v
      draw i_1..i_b i.i.d. from p^t;  g = (1/b) sum_k Delta_k / (n p_{i_k}) + gw       [2b]
         (Delta_k = grad f_{i_k}(x) - grad f_{i_k}(w); [TYPO] Alg. 2 step 6 drops two nablas)
      z_new = (eta kappa x + z - (eta / L) g) / (1 + eta kappa)
      v_new = x + theta1 (z_new - z)
      with probability rho: w = v (the OLD v), gw = grad F(w)                          [n]
      sampler update with a_k = ||Delta_k||^2 from the OLD w;  z, v = z_new, v_new

Theorem 3: theta2 = 1/2, theta1 = min{sqrt(2 kappa n / 3), 1/2}, kappa = mu / L,
eta = theta2 / ((1 + theta2) theta1), rho = 1/n. L per sampler (§4, "L_rule: paper"):
L_max for uniform ([TYPO] "for L-SVRG", P2), L-bar for importance and optimal,
0.4 L_max + 0.6 L-bar for osmd / adaosmd. mu: the problem's strong convexity
(lambda_min(A^T A / n) for unregularised least squares, P12). Output and metric point: v
(docs/papers/002.md §3.9: F(v^t)); eval_point "x" reports the query point instead.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
from pydantic import Field

from drocli.errors import DrocliError
from drocli.ops.jit import njit
from drocli.ops.samplers import (
    sampler_draw_batch,
    sampler_learns,
    sampler_set_weights,
    sampler_update,
)
from drocli.plugins import registry
from drocli.plugins.registry import auto
from drocli.problems.finite_sum import full_pass
from drocli.solvers.finite_sum import (
    KEY,
    SamplerParams,
    Workspace,
    grad_norm_max,
    horizon,
    linear_only,
    snapshot_prob,
)
from drocli.solvers.finite_sum.estimators import delta_norms, vr_estimate

L_RULES = ("paper", "L_max", "L_bar", "mixed", "expected_smoothness")
PAPER_L = {"uniform": "L_max", "importance": "L_bar", "optimal": "L_bar", "osmd": "mixed",
           "adaosmd": "mixed"}


def smoothness_L(problem, rule: str, sampler: str, batch: int) -> float:
    """L of Algorithm 2 by rule: paper (per sampler, §4), L_max, L_bar, mixed
    (0.4 L_max + 0.6 L_bar) or expected_smoothness (L_F + (L_max - L_F)/b, §3.8)."""
    if rule == "paper":
        rule = PAPER_L[sampler]
    if rule == "L_max":
        return problem.L_max
    if rule == "L_bar":
        return problem.L_bar
    if rule == "mixed":
        return 0.4 * problem.L_max + 0.6 * problem.L_bar
    return problem.L_F + (problem.L_max - problem.L_F) / batch


def theorem3(problem, params: dict, batch: int) -> dict:
    """(L, mu, kappa, theta1, theta2, eta) of Theorem 3 with the overrides in params."""
    L = params["L"] or smoothness_L(problem, params["L_rule"], params["sampler"], batch)
    mu = params["mu"] or problem.strong_convexity
    if not (mu > 0 and L > 0):
        raise DrocliError(f"L-Katyusha needs mu > 0 and L > 0, got mu={mu:.3g}, L={L:.3g}",
                          key=f"{KEY}.mu", fix="give a strongly convex problem (problem "
                          "params mu > 0, or n >= d for least squares) or set solver mu")
    kappa = mu / L
    theta2 = float(params["theta2"])
    theta1 = params["theta1"] or min(math.sqrt(2.0 * kappa * problem.n / 3.0),
                                                     0.5)
    if not (0 < theta1 and 0 <= theta2 and theta1 + theta2 <= 1):
        raise DrocliError(f"need theta1 > 0, theta2 >= 0, theta1 + theta2 <= 1, got "
                          f"{theta1}, {theta2}", key=f"{KEY}.theta1",
                          fix="theta1: 0.0 (Theorem 3), theta2: 0.5")
    eta = theta2 / ((1.0 + theta2) * theta1)
    return {"L": L, "mu": mu, "kappa": kappa, "theta1": theta1, "theta2": theta2, "eta": eta}


class Iterates(NamedTuple):
    """Algorithm 2's points: x (the query point buffer), z and v; w is the snapshot's."""

    x: np.ndarray
    z: np.ndarray
    v: np.ndarray


class Steps(NamedTuple):
    """Algorithm 2's constants (Theorem 3, or the overrides)."""

    theta1: float
    theta2: float
    eta: float
    kappa: float
    L: float


@njit(cache=True, _nrt=False)
def lkatyusha_chunk(data, it, snap, U, coins, rho, st, ss, optimal, dr, counter):
    """U.shape[0] iterations of Algorithm 2 in place (it.x is the query-point buffer)."""
    x, z, v, w, g = it.x, it.z, it.v, snap.w, dr.g
    theta1, theta2 = st.theta1, st.theta2
    d = x.shape[0]
    b = dr.idx.shape[0]
    th3 = 1.0 - theta1 - theta2
    ek = st.eta * st.kappa
    inv = 1.0 / (1.0 + ek)
    eL = st.eta / st.L
    feedback = sampler_learns(ss)
    for t in range(U.shape[0]):
        for j in range(d):
            x[j] = theta1 * z[j] + theta2 * w[j] + th3 * v[j]
        if optimal:
            delta_norms(data, x, snap, ss.pfix)
            sampler_set_weights(ss)
        sampler_draw_batch(ss, U[t], dr.idx, dr.pk)
        vr_estimate(data, x, snap, dr, feedback)
        counter[0] += 2 * b
        if coins[t] < rho:
            for j in range(d):
                w[j] = v[j]
            full_pass(data, snap, counter)
        for j in range(d):
            zn = (ek * x[j] + z[j] - eL * g[j]) * inv
            v[j] = x[j] + theta1 * (zn - z[j])
            z[j] = zn
        sampler_update(ss, dr.idx, dr.ak, dr.pk)


class LKatyushaParams(SamplerParams):
    """L-Katyusha's parameters (Algorithm 2 with Theorem 3's choices; docs/papers/002.md §2.2)."""

    rho: float | None = auto("snapshot refresh probability; auto: 1/n (the paper's, "
                             "docs/papers/002.md §2.5)", legacy=0.0, gt=0, le=1)
    L_rule: Literal["paper", "L_max", "L_bar", "mixed", "expected_smoothness"] = Field(
        "paper", description="the L of Algorithm 2: paper = per sampler (§4), L_max, L_bar, "
        "mixed (0.4 L_max + 0.6 L_bar) or expected_smoothness (docs/papers/002.md §3.8)")
    L: float | None = auto("smoothness L; auto: by L_rule", legacy=0.0, gt=0)
    mu: float | None = auto("strong convexity mu; auto: the problem's", legacy=0.0, gt=0)
    theta1: float | None = auto("theta1; auto: min(sqrt(2 kappa n / 3), 1/2) (Theorem 3)",
                                legacy=0.0, gt=0, le=1)
    theta2: float = Field(0.5, ge=0, le=1, description="theta2 (Theorem 3: 1/2)")
    eval_point: Literal["v", "x"] = Field("v", description="v: the paper's F(v^t); x: the "
                                          "query point")


@registry.solver(
    "l_katyusha",
    reference="Zhao, Lyu & Kolar (2023), Alg. 2, Thm. 3",
    params=LKatyushaParams,
    family="finite_sum",
    description="L-Katyusha with uniform / importance / optimal / OSMD / AdaOSMD sampling, "
                "Theorem 3 parameters (Zhao, Lyu & Kolar 2023, Algorithm 2)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """L-Katyusha / AS-LKatyusha, Zhao, Lyu & Kolar (TMLR 2023), Algorithm 2 with Theorem 3's
    parameters and the per-sampler L of §4 (§2.2); L, mu, theta1 > 0 override them.
    Returns v (or the query point x with eval_point: x)."""
    linear_only(problem, "l_katyusha")
    b = params["batch"]
    n = problem.n
    rho = snapshot_prob(params, n)
    eval_point = params["eval_point"]
    th = theorem3(problem, params, b)
    cost = 2.0 * b + rho * n
    v = problem.zero_point()
    z, w, x = v.copy(), v.copy(), v.copy()
    t = 0
    keep = monitor(v, iteration=t)
    snap = problem.snapshot_at(w)                               # grad F(w^0): n calls
    ws = Workspace(problem, params, rng, batch=b, T=horizon(params, monitor, cost),
                   abar=grad_norm_max(problem, w, snap.s, snap.c))
    it = Iterates(x, z, v)
    steps = Steps(*(float(th[k]) for k in Steps._fields))
    while keep:
        U, coins = ws.stream.take(monitor.steps_until_due(cost))
        lkatyusha_chunk(problem.kdata, it, snap, U, coins, rho, steps, ws.sampler.state,
                        ws.optimal, ws.draws, problem.counter)
        t += U.shape[0]
        keep = monitor(v if eval_point == "v" else x, iteration=t)
    return v if eval_point == "v" else x
