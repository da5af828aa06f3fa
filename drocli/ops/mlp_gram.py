"""τ full-batch gradient steps on the 2-layer MLP of drocli.ops.mlp, in the Gram form.

Same iterates as τ calls of `mlp.loss_grad` followed by θ -= c_t ∇ (exact algebra, only the
floating-point rounding differs), at a fraction of the cost when the client holds fewer rows
than about twice its input width. Why: full-batch GD on a fixed X changes the first layer by
W1 -= c_t D_t^T X and b1 -= c_t 1^T D_t, so the pre-activations move by
Z1 -= c_t (X X^T + 1 1^T) D_t = c_t K D_t. Keeping Z1 and S = Σ c_t D_t replaces the two
(n x d) x (d x h) matmuls of every step by one (n x n) x (n x h) matmul with the client's
fixed kernel K, and W1, b1 are written once at the end: W1 -= S^T X, b1 -= 1^T S.
Per step that is 2 n^2 h flops instead of 4 n d h, plus 4 n d h once per call.

The matrix products run in numpy's BLAS, the exponentials and logarithms in numpy; the
elementwise work between them runs in the compiled kernels of drocli.ops.mlp_gram_kernels,
fused into a few passes over preallocated arrays. Those kernels repeat numpy's operations
one rounding at a time and in numpy's summation order, so the iterates are the bits of the
plain numpy step (tests/test_mlp_gram.py holds that step and compares to the bit).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drocli.ops import mlp
from drocli.ops import mlp_gram_kernels as kern


def kernel(X: np.ndarray) -> np.ndarray:
    """K = X X^T + 1 1^T (n, n) in X's dtype: the bias is a column of ones appended to X."""
    K = X @ X.T
    K += K.dtype.type(1.0)
    return K


def worth_it(n: int, d: int, steps: int) -> bool:
    """True when the Gram form costs fewer flops than `steps` direct steps on n rows of width d:
    steps * 2 n^2 h + 4 n d h < steps * 4 n d h (h cancels)."""
    return steps >= 2 and steps * n * n < 2 * (steps - 1) * n * d


class Workspace:
    """The arrays one call of gd_steps works in, kept between calls so that a client's rounds
    reuse warm memory instead of mapping fresh pages (n x h arrays are past malloc's mmap
    threshold). Every array is written before it is read, so reuse changes no bit."""

    def __init__(self, n: int, dims: mlp.Dims, dtype):
        d, h, k = dims
        self.key = (n, dims, np.dtype(dtype))
        nh = lambda: np.empty((n, h), dtype=dtype)  # noqa: E731
        self.Z1, self.S, self.A, self.D, self.T = nh(), nh(), nh(), nh(), nh()
        self.lg = np.empty((n, k), dtype=dtype)      # logits, then G in place
        self.picked, self.s, self.log_s = (np.empty(n, dtype=dtype) for _ in range(3))
        self.TW = np.empty((k, h), dtype=dtype)
        self.dW1 = np.empty((h, d), dtype=dtype)


def gd_steps(phi: np.ndarray, X: np.ndarray, K: np.ndarray, y: np.ndarray, dims: mlp.Dims,
             steps: int, step_size: Callable[[float], tuple[float, float]],
             work: Workspace | None = None) -> float:
    """Run `steps` full-batch GD steps on phi (flat, X's dtype, updated in place).

    step_size(ce) -> (value, c): the loss value to record for a step whose mean CE is ce and
    its step size c (c = lr for plain CE; lr x ℓ'(CE) for a loss ℓ(CE), e.g. PropFair).
    Returns the sum of the recorded values. K = kernel(X). `work`: a Workspace for X's shape
    to reuse (a fresh one if None)."""
    dt = X.dtype.type
    n = X.shape[0]
    if work is None or work.key != (n, dims, X.dtype):
        work = Workspace(n, dims, X.dtype)
    W1, b1, W2, b2 = mlp.unpack(phi, dims)
    y = np.ascontiguousarray(y, dtype=np.intp)
    Z1, S, A, D, T, lg = work.Z1, work.S, work.A, work.D, work.T, work.lg
    picked, s, log_s, TW = work.picked, work.s, work.log_s, work.TW
    np.matmul(X, W1.T, out=Z1)
    Z1 += b1
    S.fill(0)
    kern.relu(Z1, A)
    inv_n, zero, one = dt(1.0 / n), dt(0), dt(1)
    chunk = kern.mean_chunk(X.dtype, n)
    total = 0.0
    for _ in range(steps):
        np.matmul(A, W2.T, out=lg)
        kern.shift_logits(lg, b2, y, picked)          # lg + b2 - row max; picked = lg[y]
        np.exp(lg, out=lg)
        kern.row_sums(lg, s)                          # numpy's pairwise order
        np.log(s, out=log_s)
        # G = (softmax - onehot) / n in lg's place; ce = mean(log_s - picked) in float64
        ce = kern.softmax_grad(lg, s, log_s, picked, y, inv_n, one, chunk)
        value, c = step_size(ce)
        total += value
        np.matmul(lg, W2, out=D)
        np.matmul(lg.T, A, out=TW)
        # D = c D ⊙ [Z1 > 0]; S += D; W2 -= c G^T A; b2 -= c Σ G
        kern.scale_masked(D, Z1, dt(c), zero, one, S, W2, TW, b2, lg)
        np.matmul(K, D, out=T)
        kern.move_relu(Z1, T, A)                      # Z1 -= K c D; A = relu(Z1)
    np.matmul(S.T, X, out=work.dW1)
    W1 -= work.dW1
    b1 -= S.sum(axis=0)
    return total
