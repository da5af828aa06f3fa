"""Euclidean (l2 / Frobenius) ball projection: the domain W = {w : ||w|| <= R} of
docs/papers/000.md §1.4."""

from __future__ import annotations

import numpy as np


def project_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """Proj_ball(v) = v * min(1, R / ||v||), ||.|| the l2 norm of the whole array (Frobenius
    for a matrix). Returns a new float64 array; radius <= 0 or inf means no constraint."""
    v = np.array(v, dtype=np.float64)
    if not np.isfinite(radius) or radius <= 0:
        return v
    nrm = float(np.sqrt(np.sum(v * v)))
    if nrm > radius:
        v *= radius / nrm
    return v


def project_ball_inplace(v: np.ndarray, radius: float) -> float:
    """In-place version; returns the norm before projection."""
    nrm = float(np.sqrt(np.sum(v * v)))
    if np.isfinite(radius) and radius > 0 and nrm > radius:
        v *= radius / nrm
    return nrm
