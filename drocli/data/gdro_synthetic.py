"""Synthetic grouped logistic data of Yu et al. 2024, §6.1 (spec 000 §4.2, E1; §4.4, E3).

m groups, each with its own true direction w_i* uniform on the unit sphere of R^d (drawn as a
normalised standard Gaussian); x ~ N(0, I_d) (float32); y = sign(x . w_i*) (sign(0) := +1),
flipped independently with probability noise_i. Draw order with numpy default_rng(seed):
all w_i* first, then per group: train X, train flip mask, test X, test flip mask.

noise_i = label_noise + i * noise_step (E1: 0.1 and 0; E3's p_i = 0.95 - i/160 is label_noise
0.05 and noise_step 1/160 = 0.00625), or label_noise given as a list of m values.
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.errors import DrocliError

KEY = "data.params"


def _noise(params: dict, m: int) -> np.ndarray:
    ln = params.get("label_noise", 0.1)
    if isinstance(ln, (list, tuple, np.ndarray)):
        noise = np.asarray(ln, dtype=np.float64)
        if noise.shape != (m,):
            raise DrocliError(f"label_noise has {noise.size} values for {m} groups",
                              key=f"{KEY}.label_noise", fix="give one value per group or a number")
    else:
        noise = float(ln) + float(params.get("noise_step", 0.0)) * np.arange(m)
    if np.any(noise < 0) or np.any(noise > 1):
        raise DrocliError(f"label noise must lie in [0, 1], got "
                          f"{noise.min():.4g}..{noise.max():.4g}",
                          key=f"{KEY}.label_noise", fix="e.g. label_noise: 0.1")
    return noise


def _sizes(n: int, n_max: int, m: int, what: str) -> np.ndarray:
    if n < 1:
        raise DrocliError(f"{what} must be >= 1, got {n}", key=f"{KEY}.{what}",
                          fix=f"e.g. {what}: 5000")
    if n_max and n_max > n:
        return np.round(np.linspace(n, n_max, m)).astype(np.int64)
    return np.full(m, n, dtype=np.int64)


@registry.data(
    "gdro_synthetic",
    params={"groups": 25, "dim": 1024, "n_train": 5000, "n_test": 5000, "label_noise": 0.1,
            "noise_step": 0.0, "n_train_max": 0},
    accepts={"label_noise": (list,)},
    description="Yu et al. 2024 synthetic GDRO/MERO data: m Gaussian groups, each labelled by "
                "its own random direction, with label noise",
)
def load(params: dict, seed: int) -> GroupedData:
    """Generate the synthetic grouped data (spec 000 §4.2); X float32, y float64 +-1.

    n_train_max > n_train gives heterogeneous group sizes evenly spaced from n_train to
    n_train_max ([DEFAULT] spec §4.2 option); test sizes are n_test for every group.
    """
    m = int(params.get("groups", 25))
    d = int(params.get("dim", 1024))
    if m < 1 or d < 1:
        raise DrocliError(f"need groups >= 1 and dim >= 1, got {m}, {d}", key=KEY,
                          fix="e.g. groups: 25, dim: 1024")
    n_tr = _sizes(int(params.get("n_train", 5000)), int(params.get("n_train_max", 0) or 0), m,
                  "n_train")
    n_te = int(params.get("n_test", 5000))
    if n_te < 0:
        raise DrocliError(f"n_test must be >= 0, got {n_te}", key=f"{KEY}.n_test",
                          fix="e.g. n_test: 5000 (0: no test split)")
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
