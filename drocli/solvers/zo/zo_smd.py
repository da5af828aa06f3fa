"""ZO-SMD: zeroth-order stochastic mirror descent for minimax excess risk optimization, Gu & Xu
(2024), Algorithm 1 (smooth losses, two-point sphere estimator, eqs. 10-17) and Algorithm 2
(non-smooth losses, double-smoothing estimator, eqs. 61-68); docs/papers/001.md §2.

One loop runs, at every round t = 1..T, on the same m r round-t samples (docs/papers/001.md P12):
  (1) m R_i^*-estimation chains  w^(i) <- Proj_W(w^(i) - eta_t^(i) g_i)   (ZO estimate at w^(i)),
      wbar_t^(i) = suffix average of w_j^(i), j = ceil(t/2)..t (weights eta_j^(i));
  (2) the saddle chain  g_w = sum_i q_i g_i(w_t)  (ZO estimates at the shared w_t),
      g_q,i = mean_j [l(w_t; z_ij) - l(wbar_t^(i); z_ij)]                 (eq. 14 / 65),
      w <- Proj_W(w - eta^w g_w),  q <- q exp(eta^q g_q) / Z               (eqs. 15-16),
      (wbar_t, qbar_t) = suffix averages with weights eta^w, eta^q          (eq. 17 / 68).
Euclidean mirror map on W = {||w|| <= R} (tau1 = tau2 = 1, D^2 = R^2/2), entropy on q.
Suffix averages come from prefix sums S_t = sum_{j<=t} eta_j x_j (P6), O(T m d) memory.
Schedules: `drocli.ops.zo_estimators.smooth_schedule` / `nonsmooth_schedule` (Theorems 2-3,
6-7), times `eta_scale` / `mu_scale` (1 = the theorems). Directions are fresh for every
(stage, i, j) (§2.4 default); share_directions=True reuses the r directions of a round
across groups and stages (the literal reading of eq. 13). gdro=True: R_i^* = 0 (GDRO
contrast, docs/papers/001.md §3.2): the chains are skipped and g_q,i = mean_j l(w_t; z_ij).

Cost per round, counted by the kernel (one per per-sample function value or gradient, spec
§2.3): smooth 5 m r (l(w_t; z) of g_w reused in g_q), non-smooth 6 m r; GDRO 2 m r / 3 m r.
The first-order counterpart (`fo_smd`) shares this kernel (mode 2).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
from pydantic import Field

from drocli.ops import zo_estimators as zo
from drocli.ops.jit import njit
from drocli.ops.rows import log_normalize_probs
from drocli.plugins import registry
from drocli.plugins.registry import Params

BLOCK = 64      # rounds of samples and directions drawn per rng call (checkpoint independent)
MODE_SMOOTH, MODE_NONSMOOTH, MODE_FO = 0, 1, 2


@njit(cache=True, inline="always")
def _loss(res, loss_id):
    return res * res if loss_id == 0 else abs(res)


@njit(cache=True, inline="always")
def _dloss(res, loss_id):
    """d l / d res (a subgradient for the absolute loss: sign(res), 0 at 0)."""
    if loss_id == 0:
        return 2.0 * res
    if res > 0:
        return 1.0
    if res < 0:
        return -1.0
    return 0.0


@njit(cache=True)
def _estimate(w, X, Y, U, V, mu1, mu2, mode, loss_id, out, fw):
    """Gradient estimate at w from the r samples X (r, d), Y (r,) into out (d,);
    fw (r,) receives l(w; z_j) when it is computed (smooth ZO, FO), else NaN.
    Returns the number of oracle calls spent."""
    r, d = X.shape
    for k in range(d):
        out[k] = 0.0
    calls = 0
    for j in range(r):
        xw = 0.0
        for k in range(d):
            xw += X[j, k] * w[k]
        res = Y[j] - xw
        if mode == 0:          # two-point, unit sphere, factor d (eq. 10)
            xu = 0.0
            for k in range(d):
                xu += X[j, k] * U[j, k]
            f0 = _loss(res, loss_id)
            f1 = _loss(res - mu1 * xu, loss_id)
            fw[j] = f0
            c = (f1 - f0) * d / (mu1 * r)
            for k in range(d):
                out[k] += c * U[j, k]
            calls += 2
        elif mode == 1:        # double smoothing, no factor d (eq. 61)
            xu = 0.0
            xv = 0.0
            for k in range(d):
                xu += X[j, k] * U[j, k]
                xv += X[j, k] * V[j, k]
            f1 = _loss(res - mu1 * xu, loss_id)
            f2 = _loss(res - mu1 * xu - mu2 * xv, loss_id)
            fw[j] = np.nan
            c = (f2 - f1) / (mu2 * r)
            for k in range(d):
                out[k] += c * V[j, k]
            calls += 2
        else:                  # first order: (1/r) sum grad l(w; z_j), value comes with it
            fw[j] = _loss(res, loss_id)
            c = -_dloss(res, loss_id) / r
            for k in range(d):
                out[k] += c * X[j, k]
            calls += 1
    return calls


@njit(cache=True)
def _project(v, radius):
    s = 0.0
    for k in range(v.shape[0]):
        s += v[k] * v[k]
    nrm = math.sqrt(s)
    if nrm > radius:
        f = radius / nrm
        for k in range(v.shape[0]):
            v[k] *= f


class Samples(NamedTuple):
    """A block of rounds: samples X (n, m, r, d), Y (n, m, r) and the directions of the
    R_i^* chains (Uc, Vc) and of the saddle chain (Us, Vs), each (n, m, r, d)."""

    X: np.ndarray
    Y: np.ndarray
    Uc: np.ndarray
    Vc: np.ndarray
    Us: np.ndarray
    Vs: np.ndarray


class Schedule(NamedTuple):
    """Per-round steps and smoothing radii (n,) of Theorems 2-3 / 6-7."""

    eta_i: np.ndarray
    eta_w: np.ndarray
    eta_q: np.ndarray
    mu1: np.ndarray
    mu2: np.ndarray


class Config(NamedTuple):
    mode: int              # MODE_SMOOTH, MODE_NONSMOOTH or MODE_FO
    gdro: bool             # R_i^* = 0 (no R_i^* chains)
    loss_id: int           # 0 squared, 1 absolute
    radius: float          # the ball of w


class Chains(NamedTuple):
    """The iterates (Wc (m, d) of the R_i^* chains, w, lq) and the prefix sums of the
    step-weighted points (PC, PW, PQ) and of the steps (HC, HW, HQ), indexed by round."""

    Wc: np.ndarray
    w: np.ndarray
    lq: np.ndarray
    PC: np.ndarray
    HC: np.ndarray
    PW: np.ndarray
    HW: np.ndarray
    PQ: np.ndarray
    HQ: np.ndarray


@njit(cache=True)
def zo_smd_chunk(smp, sch, cfg, ch, t0, n, counter):
    """Rounds t0+1 .. t0+n (chunk rows 0..n-1); see the module docstring for the steps."""
    X, Y, Uc, Vc, Us, Vs = smp.X, smp.Y, smp.Uc, smp.Vc, smp.Us, smp.Vs
    eta_i, eta_w, eta_q, mu1, mu2 = sch.eta_i, sch.eta_w, sch.eta_q, sch.mu1, sch.mu2
    mode, gdro, loss_id, radius = cfg.mode, cfg.gdro, cfg.loss_id, cfg.radius
    Wc, w, lq, PC, HC, PW, HW, PQ, HQ = ch.Wc, ch.w, ch.lq, ch.PC, ch.HC, ch.PW, ch.HW, \
        ch.PQ, ch.HQ
    m, r, d = X.shape[1], X.shape[2], X.shape[3]
    g = np.zeros(d)
    gw = np.zeros(d)
    fw = np.zeros(r)
    gq = np.zeros(m)
    wbar = np.zeros(d)
    q = np.exp(lq)
    for k in range(n):
        t = t0 + k + 1
        a = (t + 1) // 2                       # ceil(t/2)
        # (1) R_i^* chains: prefix sums with w_t^(i), their suffix average, then the step
        if not gdro:
            HC[t] = HC[t - 1] + eta_i[k]
            for i in range(m):
                for c in range(d):
                    PC[t, i, c] = PC[t - 1, i, c] + eta_i[k] * Wc[i, c]
                counter[0] += _estimate(Wc[i], X[k, i], Y[k, i], Uc[k, i], Vc[k, i],
                                        mu1[k], mu2[k], mode, loss_id, g, fw)
                for c in range(d):
                    Wc[i, c] -= eta_i[k] * g[c]
                _project(Wc[i], radius)
        # (2) saddle chain at (w_t, q_t)
        HW[t] = HW[t - 1] + eta_w[k]
        HQ[t] = HQ[t - 1] + eta_q[k]
        for c in range(d):
            PW[t, c] = PW[t - 1, c] + eta_w[k] * w[c]
            gw[c] = 0.0
        for i in range(m):
            PQ[t, i] = PQ[t - 1, i] + eta_q[k] * q[i]
        for i in range(m):
            counter[0] += _estimate(w, X[k, i], Y[k, i], Us[k, i], Vs[k, i], mu1[k], mu2[k],
                                    mode, loss_id, g, fw)
            for c in range(d):
                gw[c] += q[i] * g[c]
            s = 0.0
            for j in range(r):
                if math.isnan(fw[j]):          # non-smooth: l(w_t; z) not yet computed
                    xw = 0.0
                    for c in range(d):
                        xw += X[k, i, j, c] * w[c]
                    fw[j] = _loss(Y[k, i, j] - xw, loss_id)
                    counter[0] += 1
                s += fw[j]
            if not gdro:
                den = HC[t] - HC[a - 1]
                for c in range(d):
                    wbar[c] = (PC[t, i, c] - PC[a - 1, i, c]) / den
                for j in range(r):
                    xw = 0.0
                    for c in range(d):
                        xw += X[k, i, j, c] * wbar[c]
                    s -= _loss(Y[k, i, j] - xw, loss_id)
                counter[0] += r
            gq[i] = s / r
        for c in range(d):
            w[c] -= eta_w[k] * gw[c]
        _project(w, radius)
        for i in range(m):
            lq[i] += eta_q[k] * gq[i]
        log_normalize_probs(lq, q)


def round_cost(mode: int, gdro: bool, m: int, r: int) -> int:
    """Oracle calls per round (docs/papers/001.md §2.3): what the kernel counts."""
    if mode == MODE_SMOOTH:
        return (2 if gdro else 5) * m * r
    if mode == MODE_NONSMOOTH:
        return (3 if gdro else 6) * m * r
    return (1 if gdro else 3) * m * r


def run(problem, params: dict, rng: np.random.Generator, monitor, first_order: bool):
    """Shared driver of zo_smd and fo_smd: draws samples/directions in blocks, runs the kernel
    between checkpoints, reports (wbar_t, qbar_t) and the R_i^* estimates wbar_t^(i)."""
    smooth = params["smoothness"]
    is_smooth = problem.smooth if smooth == "auto" else smooth == "smooth"
    pair = params["pair"]
    r = int(params["r"])
    gdro, share = bool(params["gdro"]), bool(params["share_directions"])
    eta_scale, mu_scale = float(params["eta_scale"]), float(params["mu_scale"])
    mode = MODE_FO if first_order else (MODE_SMOOTH if is_smooth else MODE_NONSMOOTH)
    m, d, R = problem.m, problem.d, problem.radius
    cost = round_cost(mode, gdro, m, r)
    T = int(max(0, monitor.budget - problem.oracle_calls) // cost) + 2
    Wc = np.zeros((m, d))
    w = np.zeros(d)
    lq = np.full(m, -math.log(m))
    PC = np.zeros((1 if gdro else T + 1, m, d))
    HC = np.zeros(T + 1)
    PW = np.zeros((T + 1, d))
    HW = np.zeros(T + 1)
    PQ = np.zeros((T + 1, m))
    HQ = np.zeros(T + 1)
    t = 0

    def averages(t):
        if t == 0:
            return w.copy(), np.exp(lq), (None if gdro else Wc.copy())
        a = (t + 1) // 2
        wb = (PW[t] - PW[a - 1]) / (HW[t] - HW[a - 1])
        qb = (PQ[t] - PQ[a - 1]) / (HQ[t] - HQ[a - 1])
        wc = None if gdro else (PC[t] - PC[a - 1]) / (HC[t] - HC[a - 1])
        return wb, qb, wc

    def report(t):
        wb, qb, wc = averages(t)
        return monitor(wb, qb, wstar=wc, t=t)

    cfg = Config(int(mode), gdro, int(problem.loss_id), float(R))
    chains = Chains(Wc, w, lq, PC, HC, PW, HW, PQ, HQ)
    empty = np.zeros((BLOCK, m, r, d))
    keep = report(0)
    pos = BLOCK
    while keep and t < T:
        if pos == BLOCK:
            X, Y = problem.sample(rng, BLOCK, r)
            if mode == MODE_FO:
                Uc = Vc = Us = Vs = empty
            elif share:
                # literal reading of eq. 13 (§2.4): r directions per round, the same for
                # every group and for both stages
                if mode == MODE_SMOOTH:
                    Us, Vs = zo.unit_sphere(rng, (BLOCK, 1, r), d), empty[:, :1]
                else:
                    Us, Vs = zo.direction_pair(rng, (BLOCK, 1, r), d, pair)
                Us = np.ascontiguousarray(np.broadcast_to(Us, (BLOCK, m, r, d)))
                Vs = np.ascontiguousarray(np.broadcast_to(Vs, (BLOCK, m, r, d)))
                Uc, Vc = Us, Vs
            elif mode == MODE_SMOOTH:
                Uc = empty if gdro else zo.unit_sphere(rng, (BLOCK, m, r), d)
                Us = zo.unit_sphere(rng, (BLOCK, m, r), d)
                Vc = Vs = empty
            else:
                Uc, Vc = (empty, empty) if gdro else zo.direction_pair(rng, (BLOCK, m, r), d,
                                                                       pair)
                Us, Vs = zo.direction_pair(rng, (BLOCK, m, r), d, pair)
            pos = 0
        n = min(BLOCK - pos, monitor.steps_until_due(cost), T - t)
        ts = np.arange(t + 1, t + n + 1, dtype=np.float64)
        if is_smooth:
            sch = zo.smooth_schedule(ts, d, problem.L, problem.D2, m,
                                     zeroth_order=not first_order)
            mu1 = mu_scale * sch["mu"]
            mu2 = np.zeros(n)
        else:
            sch = zo.nonsmooth_schedule(ts, d, problem.Lstar, problem.D2, m,
                                        zeroth_order=not first_order)
            mu1 = mu_scale * sch["mu1"]
            mu2 = mu_scale * sch["mu2"]
        sl = slice(pos, pos + n)
        zo_smd_chunk(Samples(X[sl], Y[sl], Uc[sl], Vc[sl], Us[sl], Vs[sl]),
                     Schedule(eta_scale * sch["eta_i"], eta_scale * sch["eta_w"],
                              eta_scale * sch["eta_q"], mu1, mu2),
                     cfg, chains, t, n, problem.counter)
        pos += n
        t += n
        keep = report(t)
    wb, qb, _ = averages(t)
    return wb, qb


class SMDBase(Params):
    """Shared by ZO-SMD and FO-SMD (docs/papers/001.md §3.2-3.3)."""

    smoothness: Literal["auto", "smooth", "nonsmooth"] = Field(
        "auto", description="schedule of Algorithm 1 (smooth) or 2 (non-smooth); auto: "
        "from the problem's loss")
    r: int = Field(10, ge=1, description="mini-batch = directions per estimate ([RECON] "
                   "docs/papers/001.md §3.3)")
    gdro: bool = Field(False, description="R_i^* = 0: the GDRO contrast (docs/papers/001.md §3.2 "
                       "zo-smd-gdro)")
    eta_scale: float = Field(1.0, gt=0, description="multiplier of every step (1 = Theorems "
                             "2-3 / 6-7)")


class ZOSMDParams(SMDBase):
    """ZO-SMD's parameters (Gu & Xu 2024, Algorithms 1-2; docs/papers/001.md §1.4, §3.3)."""

    pair: Literal["gauss", "ball", "ball_sphere"] = Field(
        "gauss", description="non-smooth direction pair (docs/papers/001.md §1.4(b))")
    share_directions: bool = Field(False, description="one set of r directions per round "
                                   "for all i and stages")
    mu_scale: float = Field(1.0, gt=0, description="multiplier of the smoothing radii (1 = "
                            "the theorems)")


@registry.solver("zo_smd",
                 reference="Gu & Xu (2024), Alg. 1 (smooth) / Alg. 2 (non-smooth), eqs. (17), (68)",
                 params=ZOSMDParams, family="zo_mero",
                 description="ZO-SMD (Gu & Xu 2024, Algorithms 1-2): zeroth-order SMD for "
                             "MERO with concurrent R_i^* chains; gdro=True: GDRO contrast")
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """ZO-SMD, Gu & Xu (2024) Algorithm 1 (smooth) / Algorithm 2 (non-smooth); returns
    (wbar_T, qbar_T), the suffix step-weighted averages (eq. 17 / 68)."""
    return run(problem, params, rng, monitor, first_order=False)
