"""Offline stand-in for the small LIBSVM pairs a1a / w1a of paper 004 (docs/papers/004.md §6.3): the
binarised digits of `digits_bin` (scikit-learn's bundled 8x8 digits, features
1[pixel >= threshold], label 1[digit == positive], about 10 % positives: sparse binary
features and imbalanced labels like the a/w data), split once by the data seed into
n_train training rows (a1a: 1,605; w1a: 2,477) and the rest as the test split (the upper
level's validation data, as the paper uses the test split)."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.plugins import registry
from drocli.plugins.registry import Params


class DigitsSplitParams(Params):
    """Stand-in for a1a / w1a (docs/papers/004.md §6.3): binarised digits, one digit vs the rest."""

    threshold: int = Field(8, ge=1, le=16, description="pixel >= threshold is 1 (of 0..16)")
    positive: int = Field(0, ge=0, le=9, description="the digit labelled +1")
    n_train: int = Field(1000, ge=1, lt=1797, description="training rows; the other of the "
                         "1797 rows are the test (validation) part")


@registry.data(
    "digits_split",
    params=DigitsSplitParams,
    memory=lambda params: 1797 * (8 * 65 + 16),
    description="offline stand-in for a1a / w1a (§6.3): binarised digits, one digit "
                "vs the rest, a seeded train / test split",
)
def load(params: dict, seed: int) -> GroupedData:
    """digits_bin rows permuted by the seed: the first n_train train, the rest test."""
    entry = registry.get("data", "digits_bin")
    full = entry.func(registry.resolve_params(entry, {"threshold": params["threshold"],
                                                      "positive": params["positive"]}), seed)
    n = full.X_train.shape[0]
    n_tr = params["n_train"]
    perm = np.random.default_rng(seed).permutation(n)
    tr, te = np.sort(perm[:n_tr]), np.sort(perm[n_tr:])
    X, y = full.X_train, full.y_train
    info = {**full.info, "n_train": n_tr, "n_test": n - n_tr,
            "positives_train": int(y[tr].sum()), "positives_test": int(y[te].sum())}
    return GroupedData("digits_split", X[tr], y[tr], np.zeros(n_tr, dtype=np.int64), X[te],
                       y[te], np.zeros(n - n_tr, dtype=np.int64), info=info)
