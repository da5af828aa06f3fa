"""Offline stand-in for the large LIBSVM pairs a8a / w8a of paper 004 (spec 004 §6): real
Fashion-MNIST images (the Debian package dataset-fashion-mnist or the cache folder, see
`fashion_mnist`) made into sparse binary features like the a/w data: pixel >= threshold,
max-pooled over pool x pool blocks (28x28 -> 14x14 = 196 features at pool 2), label
1[class == positive] (default 8 "Bag": 10 % positives). n_train / n_test rows are drawn
uniformly without replacement by the data seed (a8a: 22,696 train; w8a: 49,749)."""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.data.cache import count_param
from drocli.data.fashion_mnist import CLASSES, N_CLASSES, NAME, locate
from drocli.data.idx import read_image_splits
from drocli.errors import DrocliError


def binary_pooled(raw: np.ndarray, threshold: int, pool: int) -> np.ndarray:
    """uint8 images (n, 784) -> float64 0/1 features (n, (28 / pool)^2)."""
    n = raw.shape[0]
    side = int(round(np.sqrt(raw.shape[1])))
    k = side // pool
    img = (raw.reshape(n, side, side)[:, : k * pool, : k * pool] >= threshold)
    return img.reshape(n, k, pool, k, pool).max(axis=(2, 4)).reshape(n, k * k).astype(np.float64)


@registry.data(
    "fashion_bin",
    preflight=locate,
    params={"path": "", "positive": 8, "threshold": 128, "pool": 2, "n_train": 20000,
            "n_test": 5000},
    description="offline stand-in for a8a / w8a (spec 004 §6): Fashion-MNIST binarised and "
                "max-pooled (196 binary features), one class vs the rest",
)
def load(params: dict, seed: int) -> GroupedData:
    """Binarise, pool and subsample (module docstring)."""
    pos = params.get("positive", 8)
    if isinstance(pos, bool) or pos not in range(N_CLASSES):
        raise DrocliError(f"positive must be a class 0..9, got {pos!r}",
                          key="data.params.positive", fix="positive: 8 (Bag)")
    thr = count_param(params, "threshold", 128, minimum=1)
    pool = count_param(params, "pool", 2, minimum=1)
    n_tr = count_param(params, "n_train", 20000, minimum=1)
    n_te = count_param(params, "n_test", 5000, minimum=1)
    raw, _ = read_image_splits(NAME, locate(params), "Fashion-MNIST", N_CLASSES)
    rng_tr, rng_te = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    out = []
    for split, n_keep, rng in (("train", n_tr, rng_tr), ("test", n_te, rng_te)):
        X, y = raw[f"X_{split}"], np.asarray(raw[f"y_{split}"])
        rows = np.sort(rng.choice(X.shape[0], min(n_keep, X.shape[0]), replace=False))
        out += [binary_pooled(X[rows], thr, pool), (y[rows] == pos).astype(np.float64)]
    X, y, Xt, yt = out
    info = {"positive": CLASSES[pos], "threshold": thr, "pool": pool, "n_train": X.shape[0],
            "n_test": Xt.shape[0], "features": X.shape[1], "positives_train": int(y.sum()),
            "nnz_per_row": float(X.sum() / X.shape[0])}
    return GroupedData("fashion_bin", X, y, np.zeros(X.shape[0], dtype=np.int64), Xt, yt,
                       np.zeros(Xt.shape[0], dtype=np.int64), info=info)
