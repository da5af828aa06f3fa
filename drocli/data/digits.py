"""scikit-learn's bundled digits (UCI optical digits, 8x8) as grouped data: group = class.

A small real-data proxy for CIFAR-100 that needs no download (docs/papers/000.md §4.3): 1797 images,
64 features with values 0..16, 10 classes (about 180 each), softmax labels.
Deterministic stratified split with the seed: per class (class 0 first) a permutation from
numpy default_rng(seed); the first round(test_fraction * n_c) rows go to the test split.
Preprocessing: x/16, then (standardize) per feature with the train split's mean and std
(ddof 0); zero-variance features are only centred. bias appends a constant-1 feature.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.data.cache import affine_features
from drocli.plugins import registry
from drocli.plugins.registry import Params

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


class DigitsParams(Params):
    """scikit-learn's digits (1797 images, 8 x 8): the split and the features."""

    test_fraction: float = Field(0.25, ge=0, lt=1, description="stratified test share "
                                 "(0: no test split)")
    standardize: bool = Field(True, description="pixels / 16, then standardised with the "
                              "training mean and std")
    bias: bool = Field(False, description="append a constant-1 feature")


def memory(params: dict) -> int:
    """Bytes of the 1797 x 64 features and labels."""
    return 1797 * (8 * 65 + 16)


@registry.data(
    NAME,
    params=DigitsParams,
    memory=memory,
    description="scikit-learn's bundled 8x8 digits (no download), 10 groups = classes, "
                "stratified train/test split with the seed, softmax labels",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load the digits, split them stratified with the seed, scale and standardise."""
    frac = float(params["test_fraction"])
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = np.asarray(X, dtype=np.float64) / 16.0
    y = np.asarray(y, dtype=np.int64)
    tr, te = stratified_split(y, frac, seed)
    d = X.shape[1]
    if params["standardize"]:
        mean = X[tr].mean(axis=0)
        std = X[tr].std(axis=0)
        std[std < 1e-12] = 1.0
    else:
        mean, std = np.zeros(d), np.ones(d)
    bias = params["bias"]
    X_tr = affine_features(X, 1.0 / std, -mean / std, bias, tr)
    info = {"source": "sklearn.datasets.load_digits", "test_fraction": frac,
            "standardize": bool(params["standardize"]), "bias": bias,
            "feature_mean": mean, "feature_std": std}
    if te.size == 0:
        return GroupedData(NAME, X_tr, y[tr], y[tr].copy(), n_classes=N_CLASSES, info=info)
    X_te = affine_features(X, 1.0 / std, -mean / std, bias, te)
    return GroupedData(NAME, X_tr, y[tr], y[tr].copy(), X_te, y[te], y[te].copy(),
                       n_classes=N_CLASSES, info=info)
