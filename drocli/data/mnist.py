"""MNIST (LeCun et al.) from its IDX files, for paper 003's fair federated learning.

Files (IDX, gzipped or not): train-images-idx3-ubyte, train-labels-idx1-ubyte,
t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (60000 / 10000 images, 28x28 uint8), looked
up in data.params.path, else $DROCLI_DATA/mnist/ (or its raw/ or MNIST/raw/ subfolder, where
torchvision puts them). Nothing is downloaded.

Output (docs/papers/003.md §3.2.1): X = pixel/255 as float32 rows of 784 (no mean/std
normalisation), labels 0..9, g all zeros (the federated problem partitions the clients itself), the
image shape (28, 28) and the seed in info. n_train / n_test are per class, 0 = all images: classes
with more images are subsampled without replacement (train and test with independent streams spawned
from the seed).
"""

from __future__ import annotations

from pathlib import Path

from drocli.data.base import GroupedData, PixelSourceParams, pixel_memory
from drocli.data.cache import find_files, pixel_data
from drocli.data.fetch import Downloads, Remote
from drocli.data.idx import IMAGE_NAMES, read_image_splits
from drocli.plugins import registry

NAME = "mnist"
N_CLASSES = 10
SUBDIRS = ("raw", "MNIST/raw")
SYSTEM_DIRS: list[str] = []


def locate(params: dict) -> Path:
    """The folder holding the four IDX files (one-line DrocliError naming folder and files)."""
    return find_files(NAME, SYSTEM_DIRS, list(IMAGE_NAMES), path=str(params.get("path") or ""),
                      what="MNIST IDX", subdirs=SUBDIRS)


class MNISTParams(PixelSourceParams):
    """MNIST: per-class subsample sizes (one group; the federated problem partitions)."""


memory = pixel_memory(784, 70000)


# torchvision's mirror of the LeCun files (the original host is often down) and the MD5s
# torchvision checks them against (the sizes: the files' Content-Length)
DOWNLOADS = Downloads(
    base="https://ossci-datasets.s3.amazonaws.com/mnist/",
    homepage="http://yann.lecun.com/exdb/mnist/",
    files=(Remote("train-images-idx3-ubyte.gz", md5="f68b3c2dcbeaaa9fbdd348bbdeb94873",
                  size=9912422),
           Remote("train-labels-idx1-ubyte.gz", md5="d53e105ee54ea40749a09fcbcd1e9432",
                  size=28881),
           Remote("t10k-images-idx3-ubyte.gz", md5="9fb629c4189551a2d022fa330f9573f3",
                  size=1648877),
           Remote("t10k-labels-idx1-ubyte.gz", md5="ec29112dd5afa0611ce80d1b7f02629c",
                  size=4542)))

@registry.data(
    NAME,
    preflight=locate,
    downloads=DOWNLOADS,
    params=MNISTParams,
    memory=memory,
    description="MNIST IDX files (60000/10000, 28x28), pixel/255, labels 0..9, one group "
                "(federated problems partition); n_train/n_test per class, 0 = all; looked "
                "up in path, $DROCLI_DATA/mnist/",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load MNIST, optionally subsample per class with the seed, scale to [0, 1]."""
    n_tr, n_te = params["n_train"] or 0, params["n_test"] or 0
    folder = locate(params)
    raw, files = read_image_splits(NAME, folder, "MNIST", N_CLASSES)
    info = {"path": str(folder), "files": [str(f) for f in files],
            "shape": tuple(int(s) for s in raw["shape"]), "seed": int(seed),
            "scaling": "pixel/255"}
    return pixel_data(NAME, raw, n_tr, n_te, N_CLASSES, seed, info)
