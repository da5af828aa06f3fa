"""MNIST (LeCun et al.) from its IDX files, for paper 003's fair federated learning.

Files (IDX, gzipped or not): train-images-idx3-ubyte, train-labels-idx1-ubyte,
t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (60000 / 10000 images, 28x28 uint8), looked
up in data.params.path, else $DROCLI_DATA/mnist/ (or its raw/ or MNIST/raw/ subfolder, where
torchvision puts them). Nothing is downloaded.

Output (spec 003 §3.2.1): X = pixel/255 as float32 rows of 784 (no mean/std normalisation),
labels 0..9, g all zeros (the federated problem partitions the clients itself), the image
shape (28, 28) and the seed in info. n_train / n_test are per class, 0 = all images:
classes with more images are subsampled without replacement (train and test with
independent streams spawned from the seed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from drocli import registry
from drocli.data.base import GroupedData
from drocli.data.cache import (
    affine_features,
    cached_arrays,
    count_param,
    find_files,
    per_class_subsample,
    resolve,
)
from drocli.data.idx import read_idx
from drocli.errors import DrocliError

NAME = "mnist"
N_CLASSES = 10
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
SUBDIRS = ("raw", "MNIST/raw")
SYSTEM_DIRS: list[str] = []


def read_idx_split(folder: Path, img_name: str, lab_name: str, what: str = "MNIST",
                   n_classes: int = N_CLASSES) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, rows, cols) uint8, labels (n,) uint8) of one IDX image/label pair."""
    img_path, lab_path = resolve(folder, img_name), resolve(folder, lab_name)
    images, labels = read_idx(img_path), read_idx(lab_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise DrocliError(f"expected uint8 images of shape (n, rows, cols), got "
                          f"{images.dtype} {images.shape}", file=str(img_path),
                          fix=f"use the {what} image file (idx3-ubyte)")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise DrocliError(f"expected uint8 labels of shape (n,), got {labels.dtype} "
                          f"{labels.shape}", file=str(lab_path),
                          fix=f"use the {what} label file (idx1-ubyte)")
    if labels.shape[0] != images.shape[0]:
        raise DrocliError(f"{labels.shape[0]} labels for {images.shape[0]} images",
                          file=str(lab_path), fix="use the label file of the same split")
    if labels.size and labels.max() >= n_classes:
        raise DrocliError(f"label {int(labels.max())} outside 0..{n_classes - 1}",
                          file=str(lab_path), fix=f"use the {what} label file")
    return images, labels


def locate(params: dict) -> Path:
    """The folder holding the four IDX files (one-line DrocliError naming folder and files)."""
    return find_files(NAME, SYSTEM_DIRS, [n for pair in FILES.values() for n in pair],
                      path=str(params.get("path") or ""), what="MNIST IDX", subdirs=SUBDIRS)


def scaled_split(raw_X: np.ndarray, raw_y: np.ndarray, n_per_class: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(pixel/255 float32 (n, d), int64 labels), subsampled per class (0 = all rows)."""
    y = np.asarray(raw_y, dtype=np.int64)
    rows = None
    if n_per_class:
        rows = per_class_subsample(y, n_per_class, N_CLASSES, rng)
        if rows.size == y.size:
            rows = None
    d = raw_X.shape[1]
    X = affine_features(raw_X, np.full(d, 1.0 / 255.0), np.zeros(d), False, rows)
    return X, (y if rows is None else y[rows])


@registry.data(
    NAME,
    preflight=locate,
    params={"path": "", "n_train": 0, "n_test": 0},
    description="MNIST IDX files (60000/10000, 28x28), pixel/255, labels 0..9, one group "
                "(federated problems partition); n_train/n_test per class, 0 = all; looked "
                "up in path, $DROCLI_DATA/mnist/",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load MNIST, optionally subsample per class with the seed, scale to [0, 1]."""
    n_tr = count_param(params, "n_train", 0)
    n_te = count_param(params, "n_test", 0)
    folder = locate(params)
    files = [resolve(folder, n) for pair in FILES.values() for n in pair]

    def build():
        Xtr, ytr = read_idx_split(folder, *FILES["train"])
        Xte, yte = read_idx_split(folder, *FILES["test"])
        if Xte.shape[1:] != Xtr.shape[1:]:
            raise DrocliError(f"test images are {Xte.shape[1:]}, train {Xtr.shape[1:]}",
                              file=str(files[2]), fix="use the files of one release")
        return {"X_train": Xtr.reshape(Xtr.shape[0], -1), "y_train": ytr,
                "X_test": Xte.reshape(Xte.shape[0], -1), "y_test": yte,
                "shape": np.asarray(Xtr.shape[1:], dtype=np.int64)}

    raw = cached_arrays(NAME, files, build, tag="idx")
    rng_tr, rng_te = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    X_tr, y_tr = scaled_split(raw["X_train"], raw["y_train"], n_tr, rng_tr)
    X_te, y_te = scaled_split(raw["X_test"], raw["y_test"], n_te, rng_te)
    info = {"path": str(folder), "files": [str(f) for f in files],
            "shape": tuple(int(s) for s in raw["shape"]), "seed": int(seed),
            "scaling": "pixel/255",
            "n_train_per_class": np.bincount(y_tr, minlength=N_CLASSES).tolist(),
            "n_test_per_class": np.bincount(y_te, minlength=N_CLASSES).tolist()}
    return GroupedData(NAME, X_tr, y_tr, np.zeros(y_tr.size, np.int64), X_te, y_te,
                       np.zeros(y_te.size, np.int64), n_classes=N_CLASSES, info=info)
