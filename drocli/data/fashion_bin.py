"""Offline stand-in for the large LIBSVM pairs a8a / w8a of paper 004 (docs/papers/004.md §6): real
Fashion-MNIST images (the Debian package dataset-fashion-mnist or the cache folder, see
`fashion_mnist`) made into sparse binary features like the a/w data: pixel >= threshold,
max-pooled over pool x pool blocks (28x28 -> 14x14 = 196 features at pool 2), label
1[class == positive] (default 8 "Bag": 10 % positives). n_train / n_test rows are drawn
uniformly without replacement by the data seed (a8a: 22,696 train; w8a: 49,749)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.data.fashion_mnist import CLASSES, N_CLASSES, NAME, locate
from drocli.data.idx import read_image_splits
from drocli.plugins import registry
from drocli.plugins.registry import Params, auto


def binary_pooled(raw: np.ndarray, threshold: int, pool: int) -> np.ndarray:
    """uint8 images (n, 784) -> float64 0/1 features (n, (28 / pool)^2)."""
    n = raw.shape[0]
    side = int(round(np.sqrt(raw.shape[1])))
    k = side // pool
    img = (raw.reshape(n, side, side)[:, : k * pool, : k * pool] >= threshold)
    return img.reshape(n, k, pool, k, pool).max(axis=(2, 4)).reshape(n, k * k).astype(np.float64)


class FashionBinParams(Params):
    """Stand-in for a8a / w8a (docs/papers/004.md §6): Fashion-MNIST binarised and max-pooled."""

    path: str | None = auto("folder of the Fashion-MNIST IDX files; auto: as fashion_mnist",
                            legacy="")
    positive: int = Field(8, ge=0, le=9, description="the class labelled 1 (8: Bag)")
    threshold: int = Field(128, ge=1, le=255, description="pixel >= threshold is 1")
    pool: int = Field(2, ge=1, le=28, description="max-pooling window (2: 196 features)")
    n_train: int = Field(20000, ge=1, description="training rows drawn with the seed")
    n_test: int = Field(5000, ge=1, description="test rows drawn with the seed")


def memory(params: dict) -> int:
    """Bytes of the raw images read (70,000 x 784 uint8) and the pooled float rows kept."""
    d = (28 // params["pool"]) ** 2
    return 70000 * 784 + (params["n_train"] + params["n_test"]) * (8 * d + 16)


@registry.data(
    "fashion_bin",
    preflight=locate,
    params=FashionBinParams,
    memory=memory,
    description="offline stand-in for a8a / w8a (§6): Fashion-MNIST binarised and "
                "max-pooled (196 binary features), one class vs the rest",
)
def load(params: dict, seed: int) -> GroupedData:
    """Binarise, pool and subsample (module docstring)."""
    pos, thr, pool = params["positive"], params["threshold"], params["pool"]
    n_tr, n_te = params["n_train"], params["n_test"]
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
