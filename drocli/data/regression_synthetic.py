"""Synthetic linear regression of Zhao, Lyu & Kolar (TMLR 2023), §4, "data model A"
(docs/papers/002.md §3.1; used by Figs. 1, 2, 3 and, with n = 1000, d = 100, Fig. 5).

  b_i = <theta*, a_i> + zeta_i,  i = 1..n
  a_i ~ N(0, s_i Sigma),  Sigma = diag(cond^{(j-1)/(d-1) - 1}), j = 1..d  (0.04 .. 1 for cond 25)
  s_i = exp(N(0, nu^2))        (nu: smoothness heterogeneity, L_i = ||a_i||^2)
  zeta_i ~ N(0, sigma^2)       (sigma: optimisation heterogeneity sigma_*^2)
  theta*_j ~ N(theta_mean, theta_std^2) = N(10, 3^2)

cov_mode "paper" (default, the text): a_i = sqrt(s_i) sqrt(Sigma_jj) u_ij, u ~ N(0, I_d), i.e.
s_i Sigma is the covariance. "zhao2021_std" (P11, the generator of Zhao et al. 2021):
s_i Sigma_jj is the standard deviation and s is rescaled so that max_i s_i = 10.

Draw order with numpy default_rng(seed), all standard normals scaled afterwards so that a
(seed) shares its random numbers across nu and sigma (common random numbers on a grid):
theta* (d), log-scales (n), u (n, d), zeta (n).

X_train holds the design matrix in float64 (the finite-sum problem needs float64 gaps down to
1e-15); y_train the real-valued targets; g_train is all zeros (one group).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params

KEY = "data.params"
COV_MODES = ("paper", "zhao2021_std")


def sigma_diag(d: int, cond: float) -> np.ndarray:
    """Sigma_jj = cond^{(j-1)/(d-1) - 1}, j = 1..d (d = 1: the single entry 1/cond)."""
    if d == 1:
        return np.array([1.0 / cond])
    return cond ** (np.arange(d) / (d - 1) - 1.0)


class RegressionSyntheticParams(Params):
    """Data model A of paper 002 (§3.1; sizes the captions do not print: §3.9)."""

    n: int = Field(100, ge=1, description="samples")
    d: int = Field(10, ge=1, description="features")
    nu: float = Field(0.0, ge=0, description="log-normal per-sample scale: heterogeneity of "
                      "the L_i (paper: 0, 0.5, 1)")
    sigma: float = Field(1.0, ge=0, description="target noise std (paper: 0.1, 1, 10)")
    cond: float = Field(25.0, ge=1, description="condition number of the feature covariance")
    theta_mean: float = Field(10.0, description="mean of the true parameter's entries")
    theta_std: float = Field(3.0, ge=0, description="std of the true parameter's entries")
    cov_mode: Literal["paper", "zhao2021_std"] = Field(
        "paper", description="feature scaling: the text's (paper) or the Zhao 2021 code's "
        "standardised variant (module docstring)")


@registry.data(
    "regression_synthetic",
    params=RegressionSyntheticParams,
    memory=lambda params: 8 * params["n"] * (params["d"] + 2) + 8 * params["d"] ** 2,
    description="Zhao, Lyu & Kolar 2023 data model A: linear regression with log-normal "
                "per-sample scales (nu) and Gaussian noise (sigma)",
)
def load(params: dict, seed: int) -> GroupedData:
    """Generate data model A (docs/papers/002.md §3.1) deterministically from the seed."""
    n = int(params.get("n", 100))
    d = int(params.get("d", 10))
    nu = float(params.get("nu", 0.0))
    sigma = float(params.get("sigma", 1.0))
    cond = float(params.get("cond", 25.0))
    mode = params.get("cov_mode", "paper")
    if n < 1 or d < 1:
        raise DrocliError(f"need n >= 1 and d >= 1, got n={n}, d={d}", key=KEY,
                          fix="e.g. n: 100, d: 10")
    if nu < 0 or sigma < 0:
        raise DrocliError(f"nu and sigma must be >= 0, got nu={nu}, sigma={sigma}", key=KEY,
                          fix="e.g. nu: 0.5, sigma: 1.0")
    if not cond >= 1:
        raise DrocliError(f"cond must be >= 1, got {cond}", key=f"{KEY}.cond",
                          fix="cond: 25.0 (the paper's condition number of Sigma)")
    if mode not in COV_MODES:
        raise DrocliError(f"unknown cov_mode {mode!r}", key=f"{KEY}.cov_mode",
                          fix="use one of " + ", ".join(COV_MODES))
    rng = np.random.default_rng(seed)
    theta = float(params.get("theta_mean", 10.0)) + float(params.get("theta_std", 3.0)) * \
        rng.standard_normal(d)
    s = np.exp(nu * rng.standard_normal(n))
    u = rng.standard_normal((n, d))
    zeta = sigma * rng.standard_normal(n)
    sd = sigma_diag(d, cond)
    if mode == "paper":
        A = u * np.sqrt(s)[:, None] * np.sqrt(sd)[None, :]
    else:
        s = s / s.max() * 10.0
        A = u * s[:, None] * sd[None, :]
    b = A @ theta + zeta
    L = np.einsum("ij,ij->i", A, A)
    info = {"theta_star": theta, "scales": s, "Sigma_diag": sd, "nu": nu, "sigma": sigma,
            "cov_mode": mode, "seed": int(seed), "L_max": float(L.max()),
            "L_bar": float(L.mean())}
    return GroupedData("regression_synthetic", np.ascontiguousarray(A), b,
                       np.zeros(n, dtype=np.int64), info=info)
