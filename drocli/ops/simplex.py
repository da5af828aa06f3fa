"""Probability-simplex helpers: log-domain normalisation, entropic mirror steps, projection.

q is kept as log-probabilities (`lq`) everywhere in the GDRO solvers (docs/papers/000.md §7 pitfall
1): normalise with logsumexp after every step, never round-trip through q to get log q.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def log_normalize(lq: np.ndarray) -> np.ndarray:
    """Return lq - logsumexp(lq), so that exp(result) sums to one."""
    lq = np.asarray(lq, dtype=np.float64)
    return lq - logsumexp(lq)


def probs_from_log(lq: np.ndarray) -> np.ndarray:
    """exp of the normalised log-probabilities (max subtracted before exp)."""
    return np.exp(log_normalize(lq))


def uniform_log(m: int) -> np.ndarray:
    """log of the uniform distribution on m points, the entropic centre argmin psi_q."""
    return np.full(int(m), -np.log(m))


def entropic_step(lq_anchor: np.ndarray, lq_cur: np.ndarray, a: float, gamma_q: float,
                  g_q: np.ndarray) -> np.ndarray:
    """Entropic prox step of docs/papers/000.md §1.4, q-block, in log coordinates.

    Solves argmin_{q in simplex} gamma_q <g_q, q> + a KL(q, qbar) + (1-a) KL(q, q_k), where
    log qbar = `lq_anchor` (a mirror point: any log-weights, only defined up to a constant)
    and log q_k = `lq_cur`. The minimiser is
    log q_new = normalize(a * lq_anchor + (1 - a) * lq_cur - gamma_q * g_q).
    With the merged GDRO operator g_q = -risks, so q moves toward higher risk.
    """
    return log_normalize(a * np.asarray(lq_anchor) + (1.0 - a) * np.asarray(lq_cur)
                         - gamma_q * np.asarray(g_q))


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) = sum p log(p/q) with 0 log 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    nz = p > 0
    return float(np.sum(p[nz] * (np.log(p[nz]) - np.log(q[nz]))))


def project_simplex(v: np.ndarray, z: float = 1.0) -> np.ndarray:
    """Euclidean projection of v onto {x >= 0, sum x = z} (sort-based, Held et al. / Duchi 2008).

    O(m log m). Used only by Euclidean-on-q variants; the entropic solvers never need it.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError("project_simplex expects a non-empty 1-D array")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - z
    ind = np.arange(1, v.size + 1)
    cond = u - css / ind > 0
    rho = ind[cond][-1]
    theta = css[cond][-1] / rho
    return np.maximum(v - theta, 0.0)
