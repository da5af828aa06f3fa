"""τ full-batch gradient steps on the 2-layer MLP of drocli.ops.mlp, in the Gram form.

Same iterates as τ calls of `mlp.loss_grad` followed by θ -= c_t ∇ (exact algebra, only the
floating-point rounding differs), at a fraction of the cost when the client holds fewer rows
than about twice its input width. Why: full-batch GD on a fixed X changes the first layer by
W1 -= c_t D_t^T X and b1 -= c_t 1^T D_t, so the pre-activations move by
Z1 -= c_t (X X^T + 1 1^T) D_t = c_t K D_t. Keeping Z1 and S = Σ c_t D_t replaces the two
(n x d) x (d x h) matmuls of every step by one (n x n) x (n x h) matmul with the client's
fixed kernel K, and W1, b1 are written once at the end: W1 -= S^T X, b1 -= 1^T S.
Per step that is 2 n^2 h flops instead of 4 n d h, plus 4 n d h once per call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drocli.ops import mlp


def kernel(X: np.ndarray) -> np.ndarray:
    """K = X X^T + 1 1^T (n, n) in X's dtype: the bias is a column of ones appended to X."""
    K = X @ X.T
    K += K.dtype.type(1.0)
    return K


def worth_it(n: int, d: int, steps: int) -> bool:
    """True when the Gram form costs fewer flops than `steps` direct steps on n rows of width d:
    steps * 2 n^2 h + 4 n d h < steps * 4 n d h (h cancels)."""
    return steps >= 2 and steps * n * n < 2 * (steps - 1) * n * d


def gd_steps(phi: np.ndarray, X: np.ndarray, K: np.ndarray, y: np.ndarray, dims: mlp.Dims,
             steps: int, step_size: Callable[[float], tuple[float, float]]) -> float:
    """Run `steps` full-batch GD steps on phi (flat, X's dtype, updated in place).

    step_size(ce) -> (value, c): the loss value to record for a step whose mean CE is ce and
    its step size c (c = lr for plain CE; lr x ℓ'(CE) for a loss ℓ(CE), e.g. PropFair).
    Returns the sum of the recorded values. K = kernel(X)."""
    dt = X.dtype.type
    W1, b1, W2, b2 = mlp.unpack(phi, dims)
    Z1 = X @ W1.T
    Z1 += b1
    S = np.zeros_like(Z1)
    A = np.empty_like(Z1)
    total = 0.0
    for _ in range(steps):
        np.maximum(Z1, 0, out=A)
        lg = A @ W2.T
        lg += b2
        ce, G = mlp.ce_grad_logits(lg, y)
        value, c = step_size(ce)
        total += value
        D = G @ W2
        D *= Z1 > 0
        D *= dt(c)                    # c_t D_t
        W2 -= dt(c) * (G.T @ A)
        b2 -= dt(c) * G.sum(axis=0)
        S += D
        Z1 -= K @ D
    W1 -= S.T @ X
    b1 -= S.sum(axis=0)
    return total
