"""Compiled (numba) inner loops of the GDRO solvers.

Conventions shared by every kernel:
- X is the (N, d) float32 design matrix with rows sorted by group; y (N,) float64 holds +-1
  labels (logistic, loss_id 0) or class indices (softmax, loss_id 1).
- Model parameters W (d, k) are passed FLAT as float64 arrays of length d*k (index j*k + c),
  so the logistic case k = 1 is a plain vector and the softmax case a row-major matrix.
- q is passed as log-probabilities `lq` and re-normalised with a max-subtracted logsumexp after
  every step.
- Every per-sample gradient (or loss) evaluation increments `counter[0]` by one, inside the
  kernel: the x-axis is measured by the oracle, not claimed by the solver (spec 000 §2.6).
- Random indices are drawn by the caller with numpy and passed in; kernels are deterministic,
  run without fastmath and never allocate inside their loops.
"""

from __future__ import annotations

import math

import numpy as np

from drocli.ops.jit import njit

LOGISTIC = 0
SOFTMAX = 1


# ------------------------------------------------------------------------------------------
# scalar / vector helpers
# ------------------------------------------------------------------------------------------
@njit(cache=True)
def dot_row(X, r, w):
    """sum_j X[r, j] * w[j] in float64 (4 independent accumulators, fixed order)."""
    d = w.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = 0
    while j + 4 <= d:
        s0 += X[r, j] * w[j]
        s1 += X[r, j + 1] * w[j + 1]
        s2 += X[r, j + 2] * w[j + 2]
        s3 += X[r, j + 3] * w[j + 3]
        j += 4
    while j < d:
        s0 += X[r, j] * w[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def sqnorm(v):
    """sum v^2 (4 accumulators, fixed order)."""
    n = v.shape[0]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = 0
    while j + 4 <= n:
        s0 += v[j] * v[j]
        s1 += v[j + 1] * v[j + 1]
        s2 += v[j + 2] * v[j + 2]
        s3 += v[j + 3] * v[j + 3]
        j += 4
    while j < n:
        s0 += v[j] * v[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True)
def project_ball_flat(v, radius):
    """In place: v <- v * min(1, radius / ||v||) (no-op for radius <= 0)."""
    if radius <= 0.0:
        return
    ss = sqnorm(v)
    if ss > radius * radius:
        sc = radius / math.sqrt(ss)
        for j in range(v.shape[0]):
            v[j] *= sc


@njit(cache=True)
def log_normalize_inplace(lq):
    """lq <- lq - logsumexp(lq) (max subtracted)."""
    m = lq.shape[0]
    mx = lq[0]
    for i in range(1, m):
        if lq[i] > mx:
            mx = lq[i]
    tot = 0.0
    for i in range(m):
        tot += math.exp(lq[i] - mx)
    lse = mx + math.log(tot)
    for i in range(m):
        lq[i] -= lse


@njit(cache=True)
def log_normalize_probs(lq, q):
    """lq <- lq - logsumexp(lq) and q[:m] <- exp(lq), with one exp per entry."""
    m = lq.shape[0]
    mx = lq[0]
    for i in range(1, m):
        if lq[i] > mx:
            mx = lq[i]
    tot = 0.0
    for i in range(m):
        e = math.exp(lq[i] - mx)
        q[i] = e
        tot += e
    lse = mx + math.log(tot)
    inv = 1.0 / tot
    for i in range(m):
        lq[i] -= lse
        q[i] *= inv


@njit(cache=True)
def scores_row(X, r, W, k, out):
    """out[c] = sum_j X[r, j] W[j*k + c]."""
    if k == 1:
        out[0] = dot_row(X, r, W)
        return
    d = X.shape[1]
    for c in range(k):
        out[c] = 0.0
    for j in range(d):
        xj = np.float64(X[r, j])
        base = j * k
        for c in range(k):
            out[c] += xj * W[base + c]


@njit(cache=True)
def axpy_row(X, r, coef, k, G):
    """G[j*k + c] += X[r, j] * coef[c]."""
    d = X.shape[1]
    if k == 1:
        c0 = coef[0]
        for j in range(d):
            G[j] += X[r, j] * c0
        return
    for j in range(d):
        xj = np.float64(X[r, j])
        base = j * k
        for c in range(k):
            G[base + c] += xj * coef[c]


@njit(cache=True)
def loss_dscore(s, yv, loss_id, ds):
    """Loss value for scores s (k,) and label yv; writes dl/ds into ds (k,)."""
    if loss_id == LOGISTIC:
        mg = yv * s[0]
        if mg > 0.0:
            e = math.exp(-mg)
            val = math.log1p(e)
            sig = e / (1.0 + e)          # sigma(-mg)
        else:
            e = math.exp(mg)
            val = -mg + math.log1p(e)
            sig = 1.0 / (1.0 + e)
        ds[0] = -yv * sig
        return val
    k = s.shape[0]
    mx = s[0]
    for c in range(1, k):
        if s[c] > mx:
            mx = s[c]
    tot = 0.0
    for c in range(k):
        tot += math.exp(s[c] - mx)
    lse = mx + math.log(tot)
    lab = int(yv)
    for c in range(k):
        ds[c] = math.exp(s[c] - lse)
    ds[lab] -= 1.0
    return lse - s[lab]


# ------------------------------------------------------------------------------------------
# SMD with group sampling (spec 000 §3.1)
# ------------------------------------------------------------------------------------------
@njit(cache=True)
def smd_chunk(X, y, loss_id, k, rows, hs, w, lq, gamma_w, gamma_q, radius,
              out_w, out_q, sums, counter, g, q, r, s, ds):
    """Run rows.shape[0] SMD rounds in place.

    rows (n, m): one global row index per group per round. hs (n,): step factor of each round
    (1 for constant steps); the output is the hs-weighted average of the points (w_t, q_t) at
    which the gradients are taken (Nemirovski et al. 2009, eq. 3.6 weights).
    State: w, lq and q = exp(lq) (q must match lq on entry; it is kept in step with lq, so
    the trajectory does not depend on how the rounds are split into chunks).
    """
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
@njit(cache=True)
def vr_prox_chunk(X, y, loss_id, k, rows, grps, scale_g,
                  w, lq, wbar, Lbar, q_s, gw_half, gw_base, r_full, snap_loss, snap_ds,
                  a, gamma_w, gamma_q, radius, h, beta, lam, v,
                  out_w, out_q, acc_w, acc_q, acc_L, sums, counter,
                  wh, qn, lqh, qh, r, s, ds):
    """Run rows.shape[0] inner iterations of variance-reduced stochastic mirror prox in place.

    One iteration (spec 000 §2.4; ALEG eqs. (17)-(21), MPVR Algorithm 3):
      w_h  = Proj( a*wbar + (1-a)*w - gamma_w*gw_half )                   # eq. (17), w-block
      lq_h = normalize( a*Lbar + (1-a)*lq + gamma_q*r_full )              # eq. (17), q-block
      for each drawn pair (row, group i) with scale c = scale_g[i]:       # eqs. (18)-(20)
          g_w += c*(q_h[i]*grad l(w_h; row) - q_s[i]*grad l(w_s; row))
          r[i] += c*(l(w_h; row) - l(w_s; row))                           # r starts at r_full
      g_w  = gw_base + corrections + (beta + lam)*w_h - beta*v   # beta=lam=0: ALEG/MPVR
      w    = Proj( a*wbar + (1-a)*w - gamma_w*g_w )                        # eq. (21)
      lq   = normalize( a*Lbar + (1-a)*lq + gamma_q*r )
      out += h*(w_h, q_h); acc += a*(w, q, lq)                             # eqs. (22), (14)-(15)
    The snapshot terms l(w_s; row), grad l(w_s; row) = x_row * snap_ds[row] are read from the
    full pass at the snapshot (same samples as the half point: pitfall 4); both evaluations
    are counted (2 per drawn sample, spec §2.6).
    sums = [sum of h, sum of a]. The w-update is applied without forming g_w:
    w <- a*wbar + (1-a)*w - gamma_w*gw_base, then the prox and per-sample terms are added.
    wh, qn, lqh, qh, r, s, ds are scratch buffers (qn holds q_{k+1}).
    """
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
