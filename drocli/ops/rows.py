"""Compiled (numba) row primitives shared by the GDRO, MERO, ZO and finite-sum kernels:
dot products with a row of the design, scores, loss derivatives, projections and
log-normalisation. The solver families' compiled steps sit beside their solvers (e.g.
`drocli.solvers.dro.kernels`).

Conventions:
- X is the (N, d) float32 design matrix with rows sorted by group; y (N,) float64 holds +-1
  labels (logistic, loss_id 0) or class indices (softmax, loss_id 1).
- Model parameters W (d, k) are passed FLAT as float64 arrays of length d*k (index j*k + c),
  so the logistic case k = 1 is a plain vector and the softmax case a row-major matrix.
- q is passed as log-probabilities `lq` and re-normalised with a max-subtracted logsumexp after
  every step.
- Every per-sample gradient (or loss) evaluation increments `counter[0]` by one, inside the
  kernel: the x-axis is measured by the oracle, not claimed by the solver (docs/papers/000.md §2.6).
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
# inlined into its callers: compiled apart, LLVM kept it a call, and at d = 10 the call cost
# a full pass as much as its arithmetic (docs/benchmarks.md, Finite-sum throughput)
@njit(cache=True, inline="always")
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


@njit(cache=True, _nrt=False, inline="always")
def dot_row2(X, r, u, v):
    """(dot_row(X, r, u), dot_row(X, r, v)) in one pass over the row, same bits."""
    d = u.shape[0]
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    j = 0
    while j + 4 <= d:
        x0, x1, x2, x3 = X[r, j], X[r, j + 1], X[r, j + 2], X[r, j + 3]
        a0 += x0 * u[j]
        a1 += x1 * u[j + 1]
        a2 += x2 * u[j + 2]
        a3 += x3 * u[j + 3]
        b0 += x0 * v[j]
        b1 += x1 * v[j + 1]
        b2 += x2 * v[j + 2]
        b3 += x3 * v[j + 3]
        j += 4
    while j < d:
        a0 += X[r, j] * u[j]
        b0 += X[r, j] * v[j]
        j += 1
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


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
def logsumexp_parts(v, out):
    """(max v, sum_i exp(v_i - max v)): log-sum-exp is max + log(sum), the max subtracted so
    that no exp overflows. Each exp(v_i - max v) also goes to out[i] when out has entries
    (pass v[:0] to keep none). The one logsumexp loop of these kernels."""
    n = v.shape[0]
    keep = out.shape[0] > 0
    mx = v[0]
    for i in range(1, n):
        if v[i] > mx:
            mx = v[i]
    tot = 0.0
    for i in range(n):
        e = math.exp(v[i] - mx)
        if keep:
            out[i] = e
        tot += e
    return mx, tot


@njit(cache=True)
def logsumexp(v):
    """log sum_i exp(v_i), max subtracted."""
    mx, tot = logsumexp_parts(v, v[:0])
    return mx + math.log(tot)


@njit(cache=True)
def log_normalize_inplace(lq):
    """lq <- lq - logsumexp(lq) (max subtracted)."""
    lse = logsumexp(lq)
    for i in range(lq.shape[0]):
        lq[i] -= lse


@njit(cache=True)
def log_normalize_probs(lq, q):
    """lq <- lq - logsumexp(lq) and q[:m] <- exp(lq), with one exp per entry."""
    mx, tot = logsumexp_parts(lq, q)
    lse = mx + math.log(tot)
    inv = 1.0 / tot
    for i in range(lq.shape[0]):
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
    lse = logsumexp(s)
    lab = int(yv)
    for c in range(s.shape[0]):
        ds[c] = math.exp(s[c] - lse)
    ds[lab] -= 1.0
    return lse - s[lab]
