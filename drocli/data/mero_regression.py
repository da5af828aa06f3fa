"""Heterogeneous-noise linear regression of paper 001's reconstructed suite (docs/papers/001.md
§3.1).

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
from pydantic import Field, model_validator

from drocli.data.base import GroupedData
from drocli.plugins import registry
from drocli.plugins.registry import Params

KEY = "data.params"


class MERORegressionDataParams(Params):
    """m regression laws with heterogeneous noise ([RECON] docs/papers/001.md §3.1)."""

    groups: int = Field(10, ge=2, description="m, the groups (laws)")
    dim: int = Field(20, ge=1, description="d, the feature dimension")
    sigma_min: float = Field(0.1, gt=0, description="smallest noise level (sigma_i evenly "
                             "spaced from sigma_min to sigma_max)")
    sigma_max: float = Field(1.0, gt=0, description="largest noise level")

    @model_validator(mode="after")
    def _order(self):
        if self.sigma_min > self.sigma_max:
            raise ValueError("need sigma_min <= sigma_max")
        return self


@registry.data(
    "mero_regression",
    params=MERORegressionDataParams,
    memory=lambda params: 16 * params["groups"] * (params["dim"] + 1),
    description="paper 001 (reconstructed): m linear-regression laws with heterogeneous "
                "Gaussian noise, w*_i on the unit sphere (docs/papers/001.md §3.1)",
)
def load(params: dict, seed: int) -> GroupedData:
    """w*_i = g_i / ||g_i||, g_i ~ N(0, I_d) from default_rng(seed); sigma_i on a linspace."""
    m, d = params["groups"], params["dim"]
    lo, hi = float(params["sigma_min"]), float(params["sigma_max"])
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((m, d))
    W = g / np.linalg.norm(g, axis=1, keepdims=True)
    sigma = np.linspace(lo, hi, m)
    return GroupedData("mero_regression", np.ascontiguousarray(W), sigma.copy(),
                       np.arange(m, dtype=np.int64),
                       info={"w_star": W, "sigma": sigma, "kind": "distribution"})
