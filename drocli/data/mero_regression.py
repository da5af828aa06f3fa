"""Heterogeneous-noise linear regression of paper 001's reconstructed suite (spec 001 §3.1).

A distribution, not a sample: group i has x ~ N(0, I_d), y = <w*_i, x> + eps,
eps ~ N(0, sigma_i^2), with w*_i uniform on the unit sphere (drawn from the data seed, spec
§3.1: data_seed 0 for every repetition) and sigma_i = linspace(sigma_min, sigma_max, m).
The problem (`drocli.problems.mero_regression`) draws fresh samples from these laws and has
closed-form risks.

GroupedData carries the distribution parameters: X_train = W* (m, d) float64 (row i = w*_i),
y_train = sigma (m,), g_train = 0..m-1; info holds the same as "w_star" and "sigma".
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.errors import DrocliError

KEY = "data.params"


@registry.data(
    "mero_regression",
    params={"groups": 10, "dim": 20, "sigma_min": 0.1, "sigma_max": 1.0},
    description="paper 001 (reconstructed): m linear-regression laws with heterogeneous "
                "Gaussian noise, w*_i on the unit sphere (spec 001 §3.1)",
)
def load(params: dict, seed: int) -> GroupedData:
    """w*_i = g_i / ||g_i||, g_i ~ N(0, I_d) from default_rng(seed); sigma_i on a linspace."""
    m = int(params.get("groups", 10))
    d = int(params.get("dim", 20))
    lo = float(params.get("sigma_min", 0.1))
    hi = float(params.get("sigma_max", 1.0))
    if m < 2 or d < 1:
        raise DrocliError(f"need groups >= 2 and dim >= 1, got groups={m}, dim={d}", key=KEY,
                          fix="e.g. groups: 10, dim: 20")
    if not (0 < lo <= hi):
        raise DrocliError(f"need 0 < sigma_min <= sigma_max, got {lo}, {hi}", key=KEY,
                          fix="e.g. sigma_min: 0.1, sigma_max: 1.0 (sigma > 0 keeps the "
                              "absolute-loss risks smooth)")
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((m, d))
    W = g / np.linalg.norm(g, axis=1, keepdims=True)
    sigma = np.linspace(lo, hi, m)
    return GroupedData("mero_regression", np.ascontiguousarray(W), sigma.copy(),
                       np.arange(m, dtype=np.int64),
                       info={"w_star": W, "sigma": sigma, "kind": "distribution"})
