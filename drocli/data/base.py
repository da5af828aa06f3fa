"""Grouped data sets: the contract between data sources and problems."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import Field

from drocli.plugins.registry import Params, auto


@dataclass
class GroupedData:
    """Train (and optional test) samples with a group index per row.

    X is float32 (n x d); y holds +-1 labels (binary) or integer classes; g holds the group
    of each row in 0..m-1. Problems sort rows by group themselves.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    g_train: np.ndarray
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    g_test: np.ndarray | None = None
    n_classes: int | None = None  # None or 2 with +-1 labels: binary; >2: multiclass
    info: dict = field(default_factory=dict)

    @property
    def groups(self) -> int:
        return int(self.g_train.max()) + 1

    @property
    def dim(self) -> int:
        return int(self.X_train.shape[1])


class ClassImageParams(Params):
    """Fields shared by the class-grouped image sources (one group per class)."""

    path: str | None = auto("folder of the files; auto: $DROCLI_DATA/<source>/ and the "
                            "system folders", legacy="")
    standardize: bool = Field(True, description="pixels / 255, then standardised with the "
                              "training mean and std")
    bias: bool = Field(False, description="append a constant-1 feature")


def image_memory(n_classes: int, dim: int, params: dict) -> int:
    """Bytes of a class-image split: float32 features (+ bias) and int labels."""
    rows = n_classes * (params["n_train"] + params["n_test"])
    return int(rows * (4 * (dim + 1) + 16))


class PixelSourceParams(Params):
    """Fields of the one-group pixel sources (MNIST, CIFAR-10) that federated problems split."""

    path: str | None = auto("folder of the files; auto: $DROCLI_DATA/<source>/", legacy="")
    n_train: int | None = auto("training images kept per class; auto: all", ge=1)
    n_test: int | None = auto("test images kept per class; auto: all", ge=1)


def pixel_memory(dim: int, total: int):
    """A `memory=` estimate for a pixel source: float32 pixels of the images kept."""
    def memory(params: dict) -> int:
        rows = min(total, 10 * ((params["n_train"] or total) + (params["n_test"] or total)))
        return rows * (4 * dim + 16)
    return memory
