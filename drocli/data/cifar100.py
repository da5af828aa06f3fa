"""CIFAR-100 (python-pickle release) as grouped data: group i = fine class i (m = 100).

docs/papers/000.md §4.3 (E2/E4): 500 train / 100 test images per class, softmax over the 100
classes, a linear model on the flattened 32x32x3 pixels. Files `train` and `test` of
cifar-100-python.tar.gz: pickled dicts with keys b'data' (uint8, N x 3072, channel-major:
1024 red, 1024 green, 1024 blue) and b'fine_labels'. Looked up in data.params.path, else
$DROCLI_DATA/cifar100/ (or its cifar-100-python/ subfolder, where the archive extracts to)
and Keras' download folder. Nothing is downloaded.

Preprocessing [DEFAULT, §4.3]: pixel/255, then (standardize) per channel with the mean
and std (ddof 0) of the FULL train file — on the real release (0.5071, 0.4865, 0.4409) and
(0.2673, 0.2564, 0.2762); bias appends a constant-1 feature. X keeps the pickle's
channel-major order. n_train / n_test are per class: classes with more images are
subsampled without replacement (train and test with independent streams spawned from the
seed); the defaults keep all 500 / 100.

The pickles are read by drocli.data.cifar_pickle, with an unpickler that only admits numpy
arrays and plain containers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field

from drocli.data.base import ClassImageParams, GroupedData, image_memory
from drocli.data.cache import (
    affine_features,
    cached_arrays,
    find_files,
    per_class_subsample,
    resolve,
)
from drocli.data.cifar_pickle import read_cifar_pickle
from drocli.data.fetch import Downloads, Remote
from drocli.plugins import registry

NAME = "cifar100"
N_CLASSES = 100
FILES = ("train", "test")
ARCHIVE = "cifar-100-python.tar.gz"
SUBDIRS = ("cifar-100-python",)
SYSTEM_DIRS = ["~/.keras/datasets/cifar-100-python"]
FIX = f"use the files `train` and `test` extracted from {ARCHIVE}"

def _read_split(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(data (n, 3072) uint8, fine labels (n,) int64) of one pickle file, validated."""
    return read_cifar_pickle(folder, split, label_key="fine_labels", n_classes=N_CLASSES,
                             what="CIFAR-100", fix=FIX)


def _channel_stats(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and std (ddof 0) of pixel/255, exact via 256-bin histograms."""
    v = np.arange(256) / 255.0
    mean, std = np.empty(3), np.empty(3)
    for c in range(3):
        hist = np.bincount(data[:, c * 1024:(c + 1) * 1024].reshape(-1),
                           minlength=256).astype(np.float64)
        n = hist.sum()
        mean[c] = hist @ v / n
        std[c] = np.sqrt(max(hist @ (v * v) / n - mean[c] ** 2, 0.0))
    std[std == 0] = 1.0
    return mean, std


def _cached_stats(folder: Path, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_channel_stats of the train file, memoised on disk (~1 s at full size)."""

    def build():
        mean, std = _channel_stats(data)
        return {"mean": mean, "std": std}

    stats = cached_arrays(NAME, [resolve(folder, "train")], build, tag="channel_stats")
    return np.array(stats["mean"]), np.array(stats["std"])


def locate(params: dict) -> Path:
    """The folder holding the CIFAR-100 python files (DrocliError saying where to put them)."""
    return find_files(NAME, SYSTEM_DIRS, list(FILES), path=str(params.get("path") or ""),
                      what="CIFAR-100 python", archive=ARCHIVE, subdirs=SUBDIRS)


class CIFAR100Params(ClassImageParams):
    """CIFAR-100 (docs/papers/000.md §4.5): per-class subsample sizes (500 / 100 = all)."""

    n_train: int = Field(500, ge=1, description="training images kept per class (<= 500)")
    n_test: int = Field(100, ge=0, description="test images kept per class (<= 100); 0: no "
                        "test split")


def memory(params: dict) -> int:
    """Bytes of the features kept (32 x 32 x 3 float32 per image)."""
    return image_memory(N_CLASSES, 3072, params)


# Krizhevsky's release, its MD5 and size (https://www.cs.toronto.edu/~kriz/cifar.html)
DOWNLOADS = Downloads(
    base="https://www.cs.toronto.edu/~kriz/",
    homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
    files=(Remote(ARCHIVE, md5="eb9058c3a382ffc7106e4002c42a8d85", size=169001437,
                  extract=FILES),))

@registry.data(
    NAME,
    preflight=locate,
    downloads=DOWNLOADS,
    params=CIFAR100Params,
    memory=memory,
    description="CIFAR-100 python pickles (train, test), 100 groups = fine classes (500/100 "
                "per class), softmax labels; looked up in path, $DROCLI_DATA/cifar100/",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load, subsample per class with the seed, scale and standardise (module docstring)."""
    n_tr, n_te = params["n_train"], params["n_test"]
    folder = locate(params)
    data, labels = _read_split(folder, "train")
    if params["standardize"]:  # the histograms take ~1 s at full size: cached
        mean, std = _cached_stats(folder, data)
    else:
        mean, std = np.zeros(3), np.ones(3)
    scale = np.repeat(1.0 / (255.0 * std), 1024)
    shift = np.repeat(-mean / std, 1024)
    bias = params["bias"]
    rng_tr, rng_te = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))

    rows = per_class_subsample(labels, n_tr, N_CLASSES, rng_tr)
    X_tr = affine_features(data, scale, shift, bias, None if rows.size == labels.size else rows)
    y_tr = labels[rows]
    del data
    info = {"path": str(folder), "channel_mean": mean.tolist(), "channel_std": std.tolist(),
            "standardize": bool(params["standardize"]), "bias": bias,
            "n_train_per_class": np.bincount(y_tr, minlength=N_CLASSES).tolist()}
    if n_te == 0:
        return GroupedData(NAME, X_tr, y_tr, y_tr.copy(), n_classes=N_CLASSES, info=info)
    data_t, labels_t = _read_split(folder, "test")
    rows_t = per_class_subsample(labels_t, n_te, N_CLASSES, rng_te)
    X_te = affine_features(data_t, scale, shift, bias,
                           None if rows_t.size == labels_t.size else rows_t)
    y_te = labels_t[rows_t]
    info["n_test_per_class"] = np.bincount(y_te, minlength=N_CLASSES).tolist()
    return GroupedData(NAME, X_tr, y_tr, y_tr.copy(), X_te, y_te, y_te.copy(),
                       n_classes=N_CLASSES, info=info)
