"""The elementwise passes of drocli.ops.psd's projection, compiled.

Every iteration of SVRB, STABLE and RSVRB forms its STORM Hessian estimate
c H_prev + w (H_cur - c H_old), symmetrises it, 0.5 (H + H^T), and shifts a copy of it by
lam' on the diagonal for the Cholesky test. In numpy these are ten passes, each writing a
temporary of D x D (310 KB at D = 197, beside 2 MB of L2); here they are two passes
over the matrix, the second walked tile by tile so that a row and the column it meets stay
in the first-level cache. Each entry is computed with numpy's operations in numpy's order
(no fastmath: nothing contracted or reordered), so the matrices are numpy's bits.
"""

from __future__ import annotations

from drocli.ops.jit import njit

TILE = 32


@njit(cache=True)
def storm_combine(H_prev, H_cur, H_old, c, w, out):
    """out = c H_prev + w (H_cur - c H_old), entry by entry as numpy computes it."""
    D = out.shape[0]
    for i in range(D):
        for j in range(D):
            out[i, j] = c * H_prev[i, j] + w * (H_cur[i, j] - c * H_old[i, j])


@njit(cache=True)
def symmetrise(A, shift, out, shifted):
    """out = 0.5 (A + A^T) and shifted = out - shift I as numpy computes them
    (`0.5 * (A + A.T)`, then `out - shift * np.eye(D)`: shift * 0.0 off the diagonal).
    `out` may be `A` itself: each pair (i, j), (j, i) is read before it is written."""
    D = A.shape[0]
    off = shift * 0.0
    for bi in range(0, D, TILE):
        for bj in range(bi, D, TILE):
            for i in range(bi, min(bi + TILE, D)):
                for j in range(max(bj, i), min(bj + TILE, D)):
                    a, b = A[i, j], A[j, i]
                    s, t = 0.5 * (a + b), 0.5 * (b + a)
                    out[i, j], out[j, i] = s, t
                    if i == j:
                        shifted[i, i] = s - shift * 1.0
                    else:
                        shifted[i, j], shifted[j, i] = s - off, t - off
