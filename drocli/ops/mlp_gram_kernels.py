"""The elementwise passes of drocli.ops.mlp_gram's step, compiled.

Each kernel repeats what the plain numpy step computes, rounding by rounding: the same
operations in the arrays' dtype (constants come in as scalars of that dtype, so no product
or difference is taken in float64 and rounded later), numpy's pairwise order for a sum along
a row, and row after row for a sum down a column (numpy's orders for these reductions of a
C-contiguous array). No fastmath: no operation is contracted or reordered. So the step's
iterates are numpy's bits; what is saved is the temporaries and the passes over the n x h
arrays (about fifteen numpy calls per step become five kernels).
"""

from __future__ import annotations

import numpy as np

from drocli.ops.jit import njit


@njit(cache=True, inline="always")
def _relu(z):
    """np.maximum(z, 0): z where z > 0 or NaN, else +0."""
    return z if not z <= 0 else 0.0


@njit(cache=True)
def relu(Z1, A):
    """A = np.maximum(Z1, 0) (Z1, A C-contiguous)."""
    z1, a = Z1.reshape(Z1.size), A.reshape(A.size)
    for i in range(z1.size):
        a[i] = _relu(z1[i])


@njit(cache=True)
def shift_logits(lg, b2, y, picked):
    """lg += b2; lg -= its row maxima (NaN if the row has one); picked[i] = lg[i, y[i]]."""
    n, k = lg.shape
    for i in range(n):
        for j in range(k):
            lg[i, j] = lg[i, j] + b2[j]
        m = lg[i, 0]
        for j in range(1, k):
            v = lg[i, j]
            if v > m or v != v:
                m = v
            if m != m:
                break
        for j in range(k):
            lg[i, j] = lg[i, j] - m
        picked[i] = lg[i, y[i]]


@njit(cache=True)
def _block(a, lo, n):
    """numpy's pairwise sum of a[lo:lo + n] for n <= 128: one loop under 8 terms, else 8
    accumulators combined as a tree, then the rest in order (rounding after every addition)."""
    if n < 8:
        r = a[lo]                   # numpy starts from -0.0, and -0.0 + a = a
        for t in range(1, n):
            r = r + a[lo + t]
        return r
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    t = 8
    while t < n - n % 8:
        r0 = r0 + a[lo + t]
        r1 = r1 + a[lo + t + 1]
        r2 = r2 + a[lo + t + 2]
        r3 = r3 + a[lo + t + 3]
        r4 = r4 + a[lo + t + 4]
        r5 = r5 + a[lo + t + 5]
        r6 = r6 + a[lo + t + 6]
        r7 = r7 + a[lo + t + 7]
        t += 8
    r = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while t < n:
        r = r + a[lo + t]
        t += 1
    return r


@njit(cache=True)
def _pairwise(a, lo, n):
    """numpy's pairwise sum of a[lo:lo + n]: above 128 terms, the sum of the halves' sums (the
    first half n // 2 rounded down to a multiple of 8). numpy recurses; here an explicit stack
    walks the same tree (numba cannot cache a recursive kernel that another one calls)."""
    if n <= 128:
        return _block(a, lo, n)
    los = np.empty(192, dtype=np.int64)      # 3 per level, 63 levels at most
    ns = np.empty(192, dtype=np.int64)
    done = np.zeros(192, dtype=np.bool_)
    sums = np.empty(192, dtype=a.dtype)
    los[0], ns[0] = lo, n
    top, k = 1, 0                   # the stack of pending ranges; of partial sums
    while top:
        top -= 1
        s, m = los[top], ns[top]
        if m <= 128:
            sums[k] = _block(a, s, m)
            k += 1
        elif done[top]:             # both halves summed: their sum replaces them
            k -= 1
            sums[k - 1] = sums[k - 1] + sums[k]
        else:
            h = m // 2
            h -= h % 8
            done[top] = True
            los[top + 1], ns[top + 1], done[top + 1] = s + h, m - h, False
            los[top + 2], ns[top + 2], done[top + 2] = s, h, False
            top += 3
    return sums[0]


@njit(cache=True)
def row_sums(G, s):
    """s[i] = G[i].sum() in numpy's pairwise order (G C-contiguous)."""
    n, k = G.shape
    flat = G.reshape(n * k)
    for i in range(n):
        s[i] = _pairwise(flat, i * k, k)


BUFFER = 8192   # numpy's default buffer size: a reduction that casts sums in chunks of this many


def mean_chunk(dtype, n: int) -> int:
    """How many terms numpy's float64 mean of an n-array of `dtype` sums pairwise at a time:
    all n for float64, a buffer's worth when it casts."""
    return n if np.dtype(dtype) == np.float64 else BUFFER


@njit(cache=True)
def softmax_grad(G, s, log_s, picked, y, inv_n, one, chunk):
    """G = (G / s[:, None] - onehot(y)) * inv_n: the gradient of the mean CE w.r.t. the
    logits, from G = exp(shifted logits) and its row sums s. Returns the mean CE,
    np.mean(log_s - picked, dtype=np.float64): the differences in G's dtype, cast to float64
    and summed pairwise `chunk` terms at a time (mean_chunk: numpy's casting reduction sums
    its buffer's worth at a time), the chunks' sums added in order."""
    n, k = G.shape
    for i in range(n):
        si = s[i]
        for j in range(k):
            v = G[i, j] / si
            if j == y[i]:
                v = v - one
            G[i, j] = v * inv_n
    diff = np.empty(n, dtype=np.float64)
    for i in range(n):
        diff[i] = log_s[i] - picked[i]
    lo = min(chunk, n)
    total = _pairwise(diff, 0, lo)
    while lo < n:
        m = min(chunk, n - lo)
        total = total + _pairwise(diff, lo, m)
        lo += m
    return total / n


@njit(cache=True)
def scale_masked(D, Z1, c, zero, one, S, W2, TW, b2, G):
    """The step after its products D = G W2 and TW = G^T A: D = (D ⊙ [Z1 > 0]) c; S += D;
    W2 -= c TW; b2 -= c Σ_rows G (summed row after row). Arrays C-contiguous."""
    d, z1, s = D.reshape(D.size), Z1.reshape(Z1.size), S.reshape(S.size)
    for i in range(d.size):
        v = d[i] * (one if z1[i] > 0 else zero)
        v = v * c
        d[i] = v
        s[i] = s[i] + v
    w2, tw = W2.reshape(W2.size), TW.reshape(TW.size)
    for i in range(w2.size):
        w2[i] = w2[i] - c * tw[i]
    n, k = G.shape
    for j in range(k):
        g = G[0, j]
        for i in range(1, n):
            g = g + G[i, j]
        b2[j] = b2[j] - c * g


@njit(cache=True)
def move_relu(Z1, T, A):
    """Z1 -= T (T = K c D); A = np.maximum(Z1, 0). Arrays C-contiguous."""
    z1, t, a = Z1.reshape(Z1.size), T.reshape(T.size), A.reshape(A.size)
    for i in range(z1.size):
        z = z1[i] - t[i]
        z1[i] = z
        a[i] = _relu(z)
