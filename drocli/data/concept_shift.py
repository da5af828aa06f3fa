"""Synthetic "concept shift" regression of Zhao, Lyu & Kolar (TMLR 2023), §4.3, "data model B"
(docs/papers/002.md §3.5; used by Fig. 4, IS vs AS sampling).

  b_i = <theta*, a_i> + zeta_i,  i = 1..n,   zeta_i ~ N(0, noise_std^2) = N(0, 0.5^2)
  a_i has ONE nonzero coordinate supp(i) ~ Uniform{1..d},  a_i[supp(i)] ~ N(1.0, 0.1^2)
  theta*_j = exp(N(0, nu^2))   (nu: spread of the per-sample minimisers, the concept shift)

L_i = a_i[supp(i)]^2 ~ 1, so importance sampling (p_i ~ L_i) is nearly uniform, while
||grad f_i(x)|| = |(x - theta*)[supp(i)] a_i[supp(i)] + zeta_i| varies with theta*: the case
where adaptive sampling should beat IS. Defaults: n = 300, d = 30 ([PAPER] §4.3).

Draw order with numpy default_rng(seed), standard normals scaled afterwards so that a seed
shares its random numbers across nu (common random numbers on a grid): theta* log-scales (d),
supports (n, integers in 0..d-1), coordinate values (n), noise (n).

X_train holds the design matrix in float64; y_train the real-valued targets; g_train is all
zeros (one group). An empty coordinate (no sample on it) is possible; x* by lstsq handles it.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params

NAME = "concept_shift"
KEY = "data.params"


class ConceptShiftParams(Params):
    """Data model B of paper 002 (concept shift; [RECON] docs/papers/002.md §3.4)."""

    n: int = Field(300, ge=1, description="samples")
    d: int = Field(30, ge=1, description="one-hot dimension")
    nu: float = Field(1.0, ge=0, description="concept shift: theta*_j = exp(N(0, nu^2))")
    noise_std: float = Field(0.5, ge=0, description="target noise std")
    value_mean: float = Field(1.0, description="mean of the one-hot values")
    value_std: float = Field(0.1, ge=0, description="std of the one-hot values")


@registry.data(
    NAME,
    params=ConceptShiftParams,
    memory=lambda params: 8 * params["n"] * (params["d"] + 2),
    description="Zhao, Lyu & Kolar 2023 data model B: one-hot regression, theta*_j = "
                "exp(N(0, nu^2)) (concept shift), L_i ~ 1",
)
def load(params: dict, seed: int) -> GroupedData:
    """Generate data model B (docs/papers/002.md §3.5) deterministically from the seed."""
    n = int(params.get("n", 300))
    d = int(params.get("d", 30))
    nu = float(params.get("nu", 1.0))
    noise = float(params.get("noise_std", 0.5))
    vmean = float(params.get("value_mean", 1.0))
    vstd = float(params.get("value_std", 0.1))
    if n < 1 or d < 1:
        raise DrocliError(f"need n >= 1 and d >= 1, got n={n}, d={d}", key=KEY,
                          fix="e.g. n: 300, d: 30")
    if nu < 0 or noise < 0 or vstd < 0:
        raise DrocliError(f"nu, noise_std and value_std must be >= 0, got {nu}, {noise}, "
                          f"{vstd}", key=KEY, fix="e.g. nu: 1.0, noise_std: 0.5, value_std: 0.1")
    rng = np.random.default_rng(seed)
    theta = np.exp(nu * rng.standard_normal(d))
    supp = rng.integers(0, d, size=n)
    vals = vmean + vstd * rng.standard_normal(n)
    zeta = noise * rng.standard_normal(n)
    A = np.zeros((n, d))
    A[np.arange(n), supp] = vals
    b = vals * theta[supp] + zeta
    L = vals ** 2
    info = {"theta_star": theta, "support": supp, "nu": nu, "noise_std": noise,
            "L_max": float(L.max()), "L_bar": float(L.mean()),
            "empty_coordinates": int(d - np.unique(supp).size)}
    return GroupedData(NAME, np.ascontiguousarray(A), b, np.zeros(n, dtype=np.int64),
                       info=info)
