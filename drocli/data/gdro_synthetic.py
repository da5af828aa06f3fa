"""Synthetic grouped logistic data of Yu et al. 2024, §6.1 (docs/papers/000.md §4.2, E1; §4.4, E3).

m groups, each with its own true direction w_i* uniform on the unit sphere of R^d (drawn as a
normalised standard Gaussian); x ~ N(0, I_d) (float32); y = sign(x . w_i*) (sign(0) := +1),
flipped independently with probability noise_i. Draw order with numpy default_rng(seed):
all w_i* first, then per group: train X, train flip mask, test X, test flip mask.

noise_i = label_noise + i * noise_step (E1: 0.1 and 0; E3's p_i = 0.95 - i/160 is label_noise
0.05 and noise_step 1/160 = 0.00625), or label_noise given as a list of m values.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator, model_validator

from drocli.data.base import GroupedData
from drocli.plugins import registry
from drocli.plugins.registry import Params, auto


class GDROSyntheticParams(Params):
    """docs/papers/000.md §4.2 (E1) and §4.4 (E3); the paper prints m, d and the noise only."""

    groups: int = Field(25, ge=1, description="m, the number of groups (paper §6.1: 25)")
    dim: int = Field(1024, ge=1, description="d, the feature dimension (paper §6.1: 1024)")
    n_train: int = Field(5000, ge=1, description="training rows per group (paper silent; "
                         "[DEFAULT] docs/papers/000.md §4.2)")
    n_test: int = Field(5000, ge=0, description="test rows per group; 0: no test split")
    label_noise: float | list[float] = Field(
        0.1, description="label-flip probability, one number or one per group (paper §6.1: "
        "0.1)")
    noise_step: float = Field(0.0, description="added to group i's noise as i * noise_step "
                              "(E3: p_i = 0.95 - i/160 is label_noise 0.05, step 1/160)")
    n_train_max: int | None = auto("> n_train: group sizes evenly spaced from n_train to "
                                   "n_train_max ([DEFAULT] §4.2 option); auto: equal "
                                   "sizes", ge=1)

    @field_validator("label_noise")
    @classmethod
    def _noise_range(cls, v):
        vals = v if isinstance(v, list) else [v]
        if any(not 0 <= x <= 1 for x in vals):
            raise ValueError("label noise must lie in [0, 1]")
        return v

    @model_validator(mode="after")
    def _per_group(self):
        if isinstance(self.label_noise, list) and len(self.label_noise) != self.groups:
            raise ValueError(f"label_noise has {len(self.label_noise)} values for "
                             f"{self.groups} groups")
        top = self.label_noise if isinstance(self.label_noise, list) else \
            [self.label_noise + self.noise_step * (self.groups - 1), self.label_noise]
        if any(not 0 <= x <= 1 for x in top):
            raise ValueError("label_noise + i * noise_step must stay in [0, 1] for every group")
        return self


def _noise(params: dict, m: int) -> np.ndarray:
    ln = params["label_noise"]
    if isinstance(ln, list):
        return np.asarray(ln, dtype=np.float64)
    return float(ln) + float(params["noise_step"]) * np.arange(m)


def _sizes(n: int, n_max: int | None, m: int) -> np.ndarray:
    if n_max and n_max > n:
        return np.round(np.linspace(n, n_max, m)).astype(np.int64)
    return np.full(m, n, dtype=np.int64)


def memory(params: dict) -> int:
    """Bytes of the arrays: float32 features and float64 labels, train and test."""
    m, d = params["groups"], params["dim"]
    rows = m * (max(params["n_train"], params["n_train_max"] or 0) + params["n_test"])
    return int(rows * (4 * d + 16))


@registry.data(
    "gdro_synthetic",
    params=GDROSyntheticParams,
    memory=memory,
    description="Yu et al. 2024 synthetic GDRO/MERO data: m Gaussian groups, each labelled by "
                "its own random direction, with label noise",
)
def load(params: dict, seed: int) -> GroupedData:
    """Generate the synthetic grouped data (docs/papers/000.md §4.2); X float32, y float64 +-1.

    n_train_max > n_train gives heterogeneous group sizes evenly spaced from n_train to
    n_train_max ([DEFAULT] docs/papers/000.md §4.2 option); test sizes are n_test for every group.
    """
    m, d = params["groups"], params["dim"]
    n_tr = _sizes(params["n_train"], params["n_train_max"], m)
    n_te = params["n_test"]
    noise = _noise(params, m)
    rng = np.random.default_rng(seed)

    w_star = rng.standard_normal((m, d))
    w_star /= np.linalg.norm(w_star, axis=1, keepdims=True)

    off = np.concatenate([[0], np.cumsum(n_tr)])
    X_tr = np.empty((int(off[-1]), d), dtype=np.float32)
    y_tr = np.empty(int(off[-1]))
    X_te = np.empty((m * n_te, d), dtype=np.float32)
    y_te = np.empty(m * n_te)
    flips = np.zeros(m)

    def labels(X, wi, noise_i):
        clean = np.where(X.astype(np.float64) @ wi >= 0.0, 1.0, -1.0)
        flip = rng.random(X.shape[0]) < noise_i
        return np.where(flip, -clean, clean), flip

    for i in range(m):
        lo, hi = off[i], off[i + 1]
        rng.standard_normal(out=X_tr[lo:hi], dtype=np.float32)
        y_tr[lo:hi], flip = labels(X_tr[lo:hi], w_star[i], noise[i])
        flips[i] = flip.mean() if flip.size else 0.0
        if n_te:
            sl = slice(i * n_te, (i + 1) * n_te)
            rng.standard_normal(out=X_te[sl], dtype=np.float32)
            y_te[sl], _ = labels(X_te[sl], w_star[i], noise[i])

    g_tr = np.repeat(np.arange(m, dtype=np.int64), n_tr)
    g_te = np.repeat(np.arange(m, dtype=np.int64), n_te)
    info = {"w_star": w_star, "label_noise": noise, "flip_rate_train": flips}
    if n_te == 0:
        return GroupedData("gdro_synthetic", X_tr, y_tr, g_tr, info=info)
    return GroupedData("gdro_synthetic", X_tr, y_tr, g_tr, X_te, y_te, g_te, info=info)
