"""Compiled inner loops of the GDRO / MERO solvers: SMD rounds (also TSA's stage 1) and the
variance-reduced stochastic mirror-prox iteration of ALEG, MPVR and AL-SVRE's inner solver.

The kernels take named bundles (numba handles NamedTuples of arrays and scalars; array
fields change in place): `GroupData` (the problem), the solver's state and accumulators,
its scratch buffers and its steps. Conventions of `drocli.ops.rows`: X (N, d) float32 rows
sorted by group, W (d, k) kept FLAT, q kept as log-probabilities `lq`, every per-sample
gradient or loss counted in `counter[0]` inside the kernel (docs/papers/000.md §2.6); no allocation
inside the loops, no fastmath.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.rows import (
    axpy_row,
    log_normalize_probs,
    loss_dscore,
    project_ball_flat,
    scores_row,
)


class GroupData(NamedTuple):
    """A grouped classification problem as the kernels see it."""

    X: np.ndarray          # (N, d) float32, rows sorted by group
    y: np.ndarray          # (N,) +-1 labels (logistic) or class indices (softmax)
    loss_id: int           # LOGISTIC or SOFTMAX (drocli.ops.rows)
    k: int                 # scores per row (1: logistic)
    radius: float          # the ball W = {||W||_F <= radius}


def group_data(problem) -> GroupData:
    """The problem's arrays and constants for the kernels."""
    return GroupData(problem.X, problem.y, int(problem.loss_id), int(problem.k),
                     float(problem.radius))


class SMDState(NamedTuple):
    """SMD's iterate (w, lq and q = exp(lq), kept in step) and its weighted output sums."""

    w: np.ndarray          # (D,)
    lq: np.ndarray         # (m,)
    q: np.ndarray          # (m,)
    out_w: np.ndarray      # (D,) sum of h_t w_t
    out_q: np.ndarray      # (m,) sum of h_t q_t
    sums: np.ndarray       # (1,) sum of h_t


class SMDScratch(NamedTuple):
    g: np.ndarray          # (D,) the w-gradient
    r: np.ndarray          # (m,) the sampled losses
    s: np.ndarray          # (k,) scores
    ds: np.ndarray         # (k,) d loss / d scores


def smd_state(D: int, m: int, k: int, lq: np.ndarray) -> tuple[SMDState, SMDScratch]:
    """Zero iterate w, the given lq (q = exp(lq)), empty sums, and scratch."""
    st = SMDState(np.zeros(D), lq, np.exp(lq), np.zeros(D), np.zeros(m), np.zeros(1))
    return st, SMDScratch(np.zeros(D), np.zeros(m), np.zeros(k), np.zeros(k))


# ------------------------------------------------------------------------------------------
# SMD with group sampling (docs/papers/000.md §3.1)
# ------------------------------------------------------------------------------------------
@njit(cache=True)
def smd_chunk(data, rows, hs, st, gamma_w, gamma_q, counter, sc):
    """Run rows.shape[0] SMD rounds in place.

    rows (n, m): one global row index per group per round. hs (n,): step factor of each round
    (1 for constant steps); the output is the hs-weighted average of the points (w_t, q_t) at
    which the gradients are taken (Nemirovski et al. 2009, eq. 3.6 weights).
    State: st.w, st.lq and st.q = exp(lq) (q must match lq on entry; it is kept in step with
    lq, so the trajectory does not depend on how the rounds are split into chunks).
    """
    X, y, loss_id, k, radius = data.X, data.y, data.loss_id, data.k, data.radius
    w, lq, q, out_w, out_q, sums = st.w, st.lq, st.q, st.out_w, st.out_q, st.sums
    g, r, s, ds = sc.g, sc.r, sc.s, sc.ds
    n = rows.shape[0]
    m = lq.shape[0]
    D = w.shape[0]
    for t in range(n):
        h = hs[t]
        for j in range(D):
            out_w[j] += h * w[j]
            g[j] = 0.0
        for i in range(m):
            out_q[i] += h * q[i]
        sums[0] += h
        for i in range(m):
            row = rows[t, i]
            scores_row(X, row, w, k, s)
            r[i] = loss_dscore(s, y[row], loss_id, ds)
            for c in range(k):
                ds[c] *= q[i]
            axpy_row(X, row, ds, k, g)
        counter[0] += m
        gw = gamma_w * h
        for j in range(D):
            w[j] -= gw * g[j]
        project_ball_flat(w, radius)
        gq = gamma_q * h
        for i in range(m):
            lq[i] += gq * r[i]
        log_normalize_probs(lq, q)


# ------------------------------------------------------------------------------------------
# Variance-reduced mirror prox inner loop: ALEG (group sampling), MPVR (single sample),
# AL-SVRE's inner solver (single sample + Catalyst prox term)
# ------------------------------------------------------------------------------------------
class VRSnapshot(NamedTuple):
    """The snapshot of an epoch (docs/papers/000.md eqs. (14)-(16)): mirror anchors and full
    pass."""

    wbar: np.ndarray       # (D,) mirror snapshot of w (= the snapshot, Euclidean)
    Lbar: np.ndarray       # (m,) mirror snapshot of q (mean of the log q_k)
    q_s: np.ndarray        # (m,) arithmetic mean of the q_k
    gw_full: np.ndarray    # (D,) full w-gradient at the snapshot
    r_full: np.ndarray     # (m,) full group risks at the snapshot
    snap_loss: np.ndarray  # (N,) l(w_s; row)
    snap_ds: np.ndarray    # (N, k) d l(w_s; row) / d scores


class VRIterate(NamedTuple):
    """The iterate, the Catalyst centre v and the output / next-snapshot accumulators."""

    w: np.ndarray          # (D,)
    lq: np.ndarray         # (m,)
    v: np.ndarray          # (D,) prox centre (AL-SVRE; unused when beta = lam = 0)
    out_w: np.ndarray      # (D,) sum of h w_h, eq. (22)
    out_q: np.ndarray      # (m,) sum of h q_h
    acc_w: np.ndarray      # (D,) sum of a w, eqs. (14)-(15)
    acc_q: np.ndarray      # (m,) sum of a q
    acc_L: np.ndarray      # (m,) sum of a lq
    sums: np.ndarray       # (2,) [sum of h, sum of a]


class VRSteps(NamedTuple):
    a: float               # anchor weight of the snapshot
    gamma_w: float
    gamma_q: float
    h: float               # output weight of this call's iterations
    beta: float            # Catalyst prox weight (0: ALEG / MPVR)
    lam: float             # extra l2 weight (0: ALEG / MPVR)


class VRScratch(NamedTuple):
    wh: np.ndarray         # (D,) half point w
    qn: np.ndarray         # (m,) q_{k+1}
    lqh: np.ndarray        # (m,) half point log q
    qh: np.ndarray         # (m,) half point q
    r: np.ndarray          # (m,) variance-reduced risks
    s: np.ndarray          # (k,)
    ds: np.ndarray         # (k,)


@njit(cache=True)
def vr_prox_chunk(data, rows, grps, scale_g, snap, gw_half, it, st, counter, sc):
    """Run rows.shape[0] inner iterations of variance-reduced stochastic mirror prox in place.

    One iteration (docs/papers/000.md §2.4; ALEG eqs. (17)-(21), MPVR Algorithm 3), a = st.a:
      w_h  = Proj( a*wbar + (1-a)*w - gamma_w*gw_half )                   # eq. (17), w-block
      lq_h = normalize( a*Lbar + (1-a)*lq + gamma_q*r_full )              # eq. (17), q-block
      for each drawn pair (row, group i) with scale c = scale_g[i]:       # eqs. (18)-(20)
          g_w += c*(q_h[i]*grad l(w_h; row) - q_s[i]*grad l(w_s; row))
          r[i] += c*(l(w_h; row) - l(w_s; row))                           # r starts at r_full
      g_w  = gw_full + corrections + (beta + lam)*w_h - beta*v   # beta=lam=0: ALEG/MPVR
      w    = Proj( a*wbar + (1-a)*w - gamma_w*g_w )                        # eq. (21)
      lq   = normalize( a*Lbar + (1-a)*lq + gamma_q*r )
      out += h*(w_h, q_h); acc += a*(w, q, lq)                             # eqs. (22), (14)-(15)
    The snapshot terms l(w_s; row), grad l(w_s; row) = x_row * snap_ds[row] are read from the
    full pass at the snapshot (same samples as the half point: pitfall 4); both evaluations
    are counted (2 per drawn sample, docs/papers/000.md §2.6).
    it.sums = [sum of h, sum of a]. The w-update is applied without forming g_w:
    w <- a*wbar + (1-a)*w - gamma_w*gw_full, then the prox and per-sample terms are added.
    """
    X, y, loss_id, k, radius = data.X, data.y, data.loss_id, data.k, data.radius
    wbar, Lbar, q_s, gw_base = snap.wbar, snap.Lbar, snap.q_s, snap.gw_full
    r_full, snap_loss, snap_ds = snap.r_full, snap.snap_loss, snap.snap_ds
    w, lq, v = it.w, it.lq, it.v
    out_w, out_q, acc_w, acc_q, acc_L, sums = it.out_w, it.out_q, it.acc_w, it.acc_q, \
        it.acc_L, it.sums
    a, gamma_w, gamma_q, h, beta, lam = st.a, st.gamma_w, st.gamma_q, st.h, st.beta, st.lam
    wh, qn, lqh, qh, r, s, ds = sc.wh, sc.qn, sc.lqh, sc.qh, sc.r, sc.s, sc.ds
    n = rows.shape[0]
    b = rows.shape[1]
    m = lq.shape[0]
    D = w.shape[0]
    a1 = 1.0 - a
    prox = beta != 0.0 or lam != 0.0
    bl = beta + lam
    for t in range(n):
        # ---- half step with the full snapshot gradient, eq. (17); the deterministic part of
        #      the full step (21) uses the same anchors and is formed in the same pass
        for j in range(D):
            anc = a * wbar[j] + a1 * w[j]
            wh[j] = anc - gamma_w * gw_half[j]
            w[j] = anc - gamma_w * gw_base[j]
        project_ball_flat(wh, radius)
        for i in range(m):
            lqh[i] = a * Lbar[i] + a1 * lq[i] + gamma_q * r_full[i]
        log_normalize_probs(lqh, qh)
        # ---- variance-reduced stochastic gradient at the half point, eqs. (19)-(20)
        if prox:
            for j in range(D):
                w[j] -= gamma_w * (bl * wh[j] - beta * v[j])
        for i in range(m):
            r[i] = r_full[i]
        for bb in range(b):
            row = rows[t, bb]
            gi = grps[t, bb]
            c = scale_g[gi]
            scores_row(X, row, wh, k, s)
            lh = loss_dscore(s, y[row], loss_id, ds)
            for cc in range(k):
                ds[cc] = -gamma_w * c * (qh[gi] * ds[cc] - q_s[gi] * snap_ds[row, cc])
            axpy_row(X, row, ds, k, w)
            r[gi] += c * (lh - snap_loss[row])
        counter[0] += 2 * b
        # ---- full step, eq. (21)
        project_ball_flat(w, radius)
        for i in range(m):
            lq[i] = a * Lbar[i] + a1 * lq[i] + gamma_q * r[i]
        log_normalize_probs(lq, qn)
        # ---- output (22) and next snapshot (14)-(15) accumulators
        for j in range(D):
            out_w[j] += h * wh[j]
            acc_w[j] += a * w[j]
        for i in range(m):
            out_q[i] += h * qh[i]
            acc_q[i] += a * qn[i]
            acc_L[i] += a * lq[i]
        sums[0] += h
        sums[1] += a
