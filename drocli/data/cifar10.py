"""CIFAR-10 (python-pickle release) for paper 003's fair federated learning.

Files of cifar-10-python.tar.gz: data_batch_1..5 (10000 images each) and test_batch, pickled
dicts with keys b'data' (uint8, N x 3072, channel-major: 1024 red, 1024 green, 1024 blue,
each 32x32 row-major) and b'labels' (0..9). Looked up in data.params.path, else
$DROCLI_DATA/cifar10/ (or its cifar-10-batches-py/ subfolder, where the archive extracts to)
and Keras' download folder. Nothing is downloaded. The pickles are read with the restricted
unpickler of drocli.data.cifar_pickle (numpy arrays and plain containers only).

Output (docs/papers/003.md §3.2.1): X = pixel/255 as float32 rows of 3072 in the pickle's
channel-major order (no mean/std normalisation, no augmentation), labels 0..9, g all zeros (the
federated problem partitions), info["shape"] = (3, 32, 32) and the seed. n_train / n_test are per
class, 0 = all (5000 / 1000): classes with more images are subsampled without replacement.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from drocli.data.base import GroupedData, PixelSourceParams, pixel_memory
from drocli.data.cache import cached_arrays, find_files, pixel_data, resolve
from drocli.data.cifar_pickle import read_cifar_pickle
from drocli.data.fetch import Downloads, Remote
from drocli.plugins import registry

NAME = "cifar10"
N_CLASSES = 10
SHAPE = (3, 32, 32)
TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILE = "test_batch"
FILES = TRAIN_FILES + (TEST_FILE,)
ARCHIVE = "cifar-10-python.tar.gz"
SUBDIRS = ("cifar-10-batches-py",)
SYSTEM_DIRS = ["~/.keras/datasets/cifar-10-batches-py"]
FIX = f"use the files data_batch_1..5 and test_batch extracted from {ARCHIVE}"


def read_batch(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(data (n, 3072) uint8, labels (n,) uint8) of one CIFAR-10 pickle, validated."""
    data, labels = read_cifar_pickle(folder, name, label_key="labels", n_classes=N_CLASSES,
                                     what="CIFAR-10", fix=FIX)
    return data, labels.astype(np.uint8)


def locate(params: dict) -> Path:
    """The folder holding the six CIFAR-10 pickles (DrocliError saying where to put them)."""
    return find_files(NAME, SYSTEM_DIRS, list(FILES), path=str(params.get("path") or ""),
                      what="CIFAR-10 python", archive=ARCHIVE, subdirs=SUBDIRS)


class CIFAR10Params(PixelSourceParams):
    """CIFAR-10: per-class subsample sizes (one group; the federated problem partitions)."""


memory = pixel_memory(3072, 60000)


# Krizhevsky's release, its MD5 and size (https://www.cs.toronto.edu/~kriz/cifar.html)
DOWNLOADS = Downloads(
    base="https://www.cs.toronto.edu/~kriz/",
    homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
    files=(Remote(ARCHIVE, md5="c58f30108f718f92721af3b95e74349a", size=170498071,
                  extract=FILES),))

@registry.data(
    NAME,
    preflight=locate,
    downloads=DOWNLOADS,
    params=CIFAR10Params,
    memory=memory,
    description="CIFAR-10 python pickles (data_batch_1..5, test_batch), pixel/255, labels "
                "0..9, one group (federated problems partition); n_train/n_test per class, "
                "0 = all; looked up in path, $DROCLI_DATA/cifar10/",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load CIFAR-10, optionally subsample per class with the seed, scale to [0, 1]."""
    n_tr, n_te = params["n_train"] or 0, params["n_test"] or 0
    folder = locate(params)
    files = [resolve(folder, n) for n in FILES]

    def build():
        parts = [read_batch(folder, n) for n in TRAIN_FILES]
        Xte, yte = read_batch(folder, TEST_FILE)
        return {"X_train": np.concatenate([p[0] for p in parts]),
                "y_train": np.concatenate([p[1] for p in parts]),
                "X_test": Xte, "y_test": yte}

    raw = cached_arrays(NAME, files, build, tag="pickle")
    info = {"path": str(folder), "shape": SHAPE, "seed": int(seed), "scaling": "pixel/255",
            "layout": "channel-major (3, 32, 32)"}
    return pixel_data(NAME, raw, n_tr, n_te, N_CLASSES, seed, info)
