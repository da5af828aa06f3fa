"""Offline stand-in for the small LIBSVM pairs a1a / w1a of paper 004 (spec 004 §6.3): the
binarised digits of `digits_bin` (scikit-learn's bundled 8x8 digits, features
1[pixel >= threshold], label 1[digit == positive], about 10 % positives: sparse binary
features and imbalanced labels like the a/w data), split once by the data seed into
n_train training rows (a1a: 1,605; w1a: 2,477) and the rest as the test split (the upper
level's validation data, as the paper uses the test split)."""

from __future__ import annotations

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.data.cache import count_param
from drocli.data.libsvm import load_digits_bin
from drocli.errors import DrocliError


@registry.data(
    "digits_split",
    params={"threshold": 8, "positive": 0, "n_train": 1000},
    description="offline stand-in for a1a / w1a (spec 004 §6.3): binarised digits, one digit "
                "vs the rest, a seeded train / test split",
)
def load(params: dict, seed: int) -> GroupedData:
    """digits_bin rows permuted by the seed: the first n_train train, the rest test."""
    full = load_digits_bin({"threshold": params.get("threshold", 8),
                            "positive": params.get("positive", 0)}, seed)
    n = full.X_train.shape[0]
    n_tr = count_param(params, "n_train", 1000, minimum=1)
    if n_tr >= n:
        raise DrocliError(f"n_train must be below the {n} digits, got {n_tr}",
                          key="data.params.n_train", fix="n_train: 1000")
    perm = np.random.default_rng(seed).permutation(n)
    tr, te = np.sort(perm[:n_tr]), np.sort(perm[n_tr:])
    X, y = full.X_train, full.y_train
    info = {**full.info, "n_train": n_tr, "n_test": n - n_tr,
            "positives_train": int(y[tr].sum()), "positives_test": int(y[te].sum())}
    return GroupedData("digits_split", X[tr], y[tr], np.zeros(n_tr, dtype=np.int64), X[te],
                       y[te], np.zeros(n - n_tr, dtype=np.int64), info=info)
