"""scikit-learn's bundled digits (UCI optical digits, 8x8) as grouped data: group = class.

A small real-data proxy for CIFAR-100 that needs no download (spec 000 §4.3): 1797 images,
64 features with values 0..16, 10 classes (about 180 each), softmax labels.
Deterministic stratified split with the seed: per class (class 0 first) a permutation from
numpy default_rng(seed); the first round(test_fraction * n_c) rows go to the test split.
Preprocessing: x/16, then (standardize) per feature with the train split's mean and std
(ddof 0); zero-variance features are only centred. bias appends a constant-1 feature.
"""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.data.cache import affine_features
from drocli.errors import DrocliError

NAME = "digits"
N_CLASSES = 10


def stratified_split(y: np.ndarray, test_fraction: float, seed: int):
    """(train rows, test rows), both ascending; per class round(test_fraction * n_c) test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(int(y.max()) + 1):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(round(test_fraction * idx.size))
        test.append(idx[:k])
        train.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


@registry.data(
    NAME,
    params={"test_fraction": 0.25, "standardize": True, "bias": False},
    description="scikit-learn's bundled 8x8 digits (no download), 10 groups = classes, "
                "stratified train/test split with the seed, softmax labels",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load the digits, split them stratified with the seed, scale and standardise."""
    frac = float(params.get("test_fraction", 0.25))
    if not 0.0 <= frac < 1.0:
        raise DrocliError(f"test_fraction must lie in [0, 1), got {frac}",
                          key="data.params.test_fraction", fix="e.g. test_fraction: 0.25 "
                          "(0: no test split)")
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = np.asarray(X, dtype=np.float64) / 16.0
    y = np.asarray(y, dtype=np.int64)
    tr, te = stratified_split(y, frac, seed)
    d = X.shape[1]
    if params.get("standardize", True):
        mean = X[tr].mean(axis=0)
        std = X[tr].std(axis=0)
        std[std < 1e-12] = 1.0
    else:
        mean, std = np.zeros(d), np.ones(d)
    bias = bool(params.get("bias", False))
    X_tr = affine_features(X, 1.0 / std, -mean / std, bias, tr)
    info = {"source": "sklearn.datasets.load_digits", "test_fraction": frac,
            "standardize": bool(params.get("standardize", True)), "bias": bias,
            "feature_mean": mean, "feature_std": std}
    if te.size == 0:
        return GroupedData(NAME, X_tr, y[tr], y[tr].copy(), n_classes=N_CLASSES, info=info)
    X_te = affine_features(X, 1.0 / std, -mean / std, bias, te)
    return GroupedData(NAME, X_tr, y[tr], y[tr].copy(), X_te, y[te], y[te].copy(),
                       n_classes=N_CLASSES, info=info)
