"""A two-layer ReLU MLP on a flat parameter vector, with hand-written backprop (docs/papers/003.md
§3.2.2).

θ = [W1 (h x d), b1 (h), W2 (k x h), b2 (k)], row-major, concatenated (PyTorch's Linear
layout: W has shape (out, in)). logits = relu(X W1^T + b1) W2^T + b2; the loss is the mean
cross-entropy with a stable log-softmax.

Precision: every function computes in the dtype of X (float32 or float64); θ is cast to it.
The federated problem hands the solvers float64 θ (so their aggregation is exact) and by
default trains in float32 (client data and a float32 working copy of the client's parameters
during its local steps): the two big matmuls per step run about twice as fast, and PyTorch
(the paper's code) trains in float32 too. The tests use float64 X for finite differences.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Dims(NamedTuple):
    d: int  # inputs
    h: int  # hidden units
    k: int  # classes

    @property
    def size(self) -> int:
        return self.h * self.d + self.h + self.k * self.h + self.k


def n_params(d: int, h: int, k: int) -> int:
    return Dims(d, h, k).size


def unpack(theta: np.ndarray, dims: Dims):
    """(W1 (h, d), b1 (h,), W2 (k, h), b2 (k,)): views into the flat θ (no copy)."""
    d, h, k = dims
    theta = theta.reshape(-1)
    if theta.size != dims.size:
        raise ValueError(f"θ has {theta.size} entries, the MLP {d}-{h}-{k} needs {dims.size}")
    a = h * d
    b = a + h
    c = b + k * h
    return (theta[:a].reshape(h, d), theta[a:b], theta[b:c].reshape(k, h), theta[c:])


def init(dims: Dims, rng: np.random.Generator) -> np.ndarray:
    """PyTorch's default Linear init: weights and biases ~ U(±1/sqrt(fan_in)); float64 (P,)."""
    d, h, k = dims
    theta = np.empty(dims.size)
    W1, b1, W2, b2 = unpack(theta, dims)
    s1, s2 = 1.0 / np.sqrt(d), 1.0 / np.sqrt(h)
    W1[:] = rng.uniform(-s1, s1, (h, d))
    b1[:] = rng.uniform(-s1, s1, h)
    W2[:] = rng.uniform(-s2, s2, (k, h))
    b2[:] = rng.uniform(-s2, s2, k)
    return theta


def _dtype(X: np.ndarray):
    return X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _params(theta, dims: Dims, dtype):
    return unpack(np.asarray(theta).astype(dtype, copy=False), dims)


def _layers(theta, X: np.ndarray, dims: Dims):
    """(Z1 = X W1^T + b1, the output layer as a function of the activations), in X's dtype."""
    W1, b1, W2, b2 = _params(theta, dims, _dtype(X))
    Z1 = X @ W1.T
    Z1 += b1

    def output(A: np.ndarray) -> np.ndarray:
        lg = A @ W2.T
        lg += b2
        return lg
    return Z1, output


def forward(theta, X: np.ndarray, dims: Dims):
    """(Z1 = pre-activations (n, h), A = relu(Z1), logits (n, k)), in X's dtype."""
    Z1, output = _layers(theta, X, dims)
    A = np.maximum(Z1, 0)
    return Z1, A, output(A)


def logits(theta, X: np.ndarray, dims: Dims) -> np.ndarray:
    """forward's logits, with the ReLU taken in place (one n x h array fewer; same bits)."""
    Z, output = _layers(theta, X, dims)
    np.maximum(Z, 0, out=Z)
    return output(Z)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def per_sample_ce(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Cross-entropy of each row: logsumexp(logits) - logits[y] (stable)."""
    mx = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - mx).sum(axis=1)) + mx[:, 0]
    return lse - logits[np.arange(y.shape[0]), y]


def loss(theta, X: np.ndarray, y: np.ndarray, dims: Dims) -> float:
    """Mean cross-entropy (float64 accumulation)."""
    return float(np.mean(per_sample_ce(logits(theta, X, dims), y), dtype=np.float64))


def accuracy(theta, X: np.ndarray, y: np.ndarray, dims: Dims) -> float:
    """Fraction of rows whose argmax logit is the label (ties: the first maximum)."""
    return float(np.mean(np.argmax(logits(theta, X, dims), axis=1) == y))


def ce_grad_logits(lg: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """(mean CE of the logits lg (n, k), G = (softmax - onehot) / n in lg's dtype).

    Overwrites lg (G is computed in its place); the mean CE accumulates in float64."""
    n = lg.shape[0]
    lg -= lg.max(axis=1, keepdims=True)
    rows = np.arange(n)
    picked = lg[rows, y]
    G = np.exp(lg, out=lg)
    s = G.sum(axis=1, keepdims=True)
    ce = float(np.mean(np.log(s[:, 0]) - picked, dtype=np.float64))
    G /= s
    G[rows, y] -= 1
    G *= G.dtype.type(1.0 / n)
    return ce, G


def loss_grad(theta, X: np.ndarray, y: np.ndarray, dims: Dims,
              out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """(mean CE, its gradient w.r.t. the flat θ), the gradient in X's dtype (P,).

    Backprop: G = (softmax - onehot) / n; ∇W2 = G^T A; ∇b2 = Σ G; D = (G W2) ⊙ [Z1 > 0];
    ∇W1 = D^T X; ∇b1 = Σ D. `out` (P,) of X's dtype receives the gradient if given.
    """
    dt = _dtype(X)
    W1, b1, W2, b2 = _params(theta, dims, dt)
    Z1 = X @ W1.T
    Z1 += b1
    A = np.maximum(Z1, 0)
    lg = A @ W2.T
    lg += b2
    ce, G = ce_grad_logits(lg, y)
    g = np.empty(dims.size, dtype=dt) if out is None else out
    gW1, gb1, gW2, gb2 = unpack(g, dims)
    np.matmul(G.T, A, out=gW2)
    np.sum(G, axis=0, out=gb2)
    D = G @ W2
    D *= Z1 > 0
    np.matmul(D.T, X, out=gW1)
    np.sum(D, axis=0, out=gb1)
    return ce, g
