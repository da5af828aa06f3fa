"""Per-sample losses for linear models, in a form the GDRO problem and solvers share.

A linear model has parameters W (d, k) and scores s = x^T W (k,). Every loss here is given by
its value and its derivative w.r.t. the scores ("dscore", shape (n, k)); the per-sample gradient
is then x dscore^T (d, k). Label conventions:
- "logistic": k = 1, y in {-1, +1}:  l = log(1 + exp(-y s)),  dl/ds = -y sigma(-y s)
  (computed as logaddexp(0, -y s) and expit: stable for any margin, docs/papers/000.md pitfall 15).
- "softmax": k = C classes, y in {0..C-1} (stored as float or int):
  l = logsumexp(s) - s_y,  dl/ds = softmax(s) - e_y  (max-subtracted, pitfall 16).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp

LOSS_IDS = {"logistic": 0, "softmax": 1}


def logistic_loss(margins: np.ndarray) -> np.ndarray:
    """log(1 + exp(-margin)), stable."""
    return np.logaddexp(0.0, -np.asarray(margins, dtype=np.float64))


def loss_dscore(scores: np.ndarray, y: np.ndarray, loss: str = "logistic"):
    """Losses (n,) and score derivatives (n, k) for scores (n, k) (float64 computations)."""
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim == 1:
        S = S[:, None]
    if loss == "logistic":
        yv = np.asarray(y, dtype=np.float64)
        marg = yv * S[:, 0]
        val = np.logaddexp(0.0, -marg)
        ds = (-yv * expit(-marg))[:, None]
        return val, ds
    if loss == "softmax":
        lab = np.asarray(y).astype(np.int64)
        lse = logsumexp(S, axis=1)
        rows = np.arange(S.shape[0])
        val = lse - S[rows, lab]
        ds = np.exp(S - lse[:, None])
        ds[rows, lab] -= 1.0
        return val, ds
    raise ValueError(f"unknown loss {loss!r}")


def linear_loss_grad(W: np.ndarray, X: np.ndarray, y: np.ndarray, loss: str = "logistic"):
    """Mean loss and its gradient (d, k) of a linear model on (X, y), all in float64.

    Reference implementation (upcasts X): for tests and small problems only.
    """
    W = np.asarray(W, dtype=np.float64)
    W2 = W[:, None] if W.ndim == 1 else W
    X64 = np.asarray(X, dtype=np.float64)
    val, ds = loss_dscore(X64 @ W2, y, loss)
    n = X64.shape[0]
    grad = X64.T @ ds / n
    return float(val.mean()), (grad[:, 0] if W.ndim == 1 else grad)


def per_sample_grads(W: np.ndarray, X: np.ndarray, y: np.ndarray, loss: str = "logistic"):
    """Per-sample losses (n,) and gradients (n, d, k), float64 (small inputs only)."""
    W2 = np.asarray(W, dtype=np.float64)
    W2 = W2[:, None] if W2.ndim == 1 else W2
    X64 = np.asarray(X, dtype=np.float64)
    val, ds = loss_dscore(X64 @ W2, y, loss)
    return val, X64[:, :, None] * ds[:, None, :]
