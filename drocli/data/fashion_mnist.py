"""Fashion-MNIST (Xiao et al. 2017) as grouped data: group i = class i (m = 10), softmax labels.

Files (IDX, gzipped or not): train-images-idx3-ubyte, train-labels-idx1-ubyte,
t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; 6000 train / 1000 test images per class,
28x28 uint8. Looked up in data.params.path, else $DROCLI_DATA/fashion_mnist/, the Debian
package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/) and Keras' download folder.

Preprocessing: pixel/255, then (standardize) one mean and std over all pixels of the FULL
train set (before any subsampling); bias appends a constant-1 feature. With standardize:
false and bias: false, X is pixel/255 in [0, 1] (paper 003's federated problem, which reads
the image shape (28, 28) and the seed from info). n_train / n_test are
per class: classes with more images are subsampled without replacement, train and test
with independent streams spawned from the seed; classes with fewer keep all of them.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from drocli.data.base import ClassImageParams, GroupedData, image_memory
from drocli.data.cache import affine_features, find_files, per_class_subsample
from drocli.data.fetch import Downloads, Remote
from drocli.data.idx import IMAGE_NAMES, read_image_splits
from drocli.plugins import registry

NAME = "fashion_mnist"
N_CLASSES = 10
SYSTEM_DIRS = ["/usr/share/datasets/fashion-mnist", "~/.keras/datasets/fashion-mnist"]
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot")


def _pixel_stats(images: np.ndarray) -> tuple[float, float]:
    """Mean and std (ddof 0) of pixel/255 over all pixels, exact via a 256-bin histogram."""
    hist = np.bincount(np.asarray(images).reshape(-1), minlength=256).astype(np.float64)
    v = np.arange(256) / 255.0
    n = hist.sum()
    mean = float(hist @ v / n)
    var = float(hist @ (v * v) / n - mean * mean)
    return mean, float(np.sqrt(max(var, 0.0)))


def locate(params: dict):
    """The folder holding the four IDX files (DrocliError saying where to put them)."""
    return find_files(NAME, SYSTEM_DIRS, list(IMAGE_NAMES), path=str(params.get("path") or ""),
                      what="Fashion-MNIST IDX")


class FashionMNISTParams(ClassImageParams):
    """Fashion-MNIST (stand-in for CIFAR-100, docs/papers/000.md §4.5): per-class subsample
    sizes."""

    n_train: int = Field(6000, ge=1, description="training images kept per class (<= 6000)")
    n_test: int = Field(1000, ge=0, description="test images kept per class (<= 1000); 0: "
                        "no test split")


def memory(params: dict) -> int:
    """Bytes of the features kept (28 x 28 float32 per image)."""
    return image_memory(N_CLASSES, 784, params)


# Zalando Research's address, the published MD5s and the files' sizes
# (github.com/zalandoresearch/fashion-mnist)
DOWNLOADS = Downloads(
    base="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
    homepage="https://github.com/zalandoresearch/fashion-mnist",
    files=(Remote("train-images-idx3-ubyte.gz", md5="8d4fb7e6c68d591d4c3dfef9ec88bf0d",
                  size=26421880),
           Remote("train-labels-idx1-ubyte.gz", md5="25c81989df183df01b3e8a0aad5dffbe",
                  size=29515),
           Remote("t10k-images-idx3-ubyte.gz", md5="bef4ecab320f06d8554ea6380940ec79",
                  size=4422102),
           Remote("t10k-labels-idx1-ubyte.gz", md5="bb300cfdad3c16e7a12a480ee83cd310",
                  size=5148)))

@registry.data(
    NAME,
    preflight=locate,
    downloads=DOWNLOADS,
    params=FashionMNISTParams,
    memory=memory,
    description="Fashion-MNIST IDX files, 10 groups = classes (6000/1000 per class), softmax "
                "labels; looked up in path, $DROCLI_DATA/fashion_mnist/, "
                "/usr/share/datasets/fashion-mnist/",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load, subsample per class with the seed, scale and standardise (module docstring)."""
    n_tr, n_te = params["n_train"], params["n_test"]
    folder = locate(params)
    raw, files = read_image_splits(NAME, folder, "Fashion-MNIST", N_CLASSES)
    d = raw["X_train"].shape[1]
    if params["standardize"]:
        mean, std = _pixel_stats(raw["X_train"])
        std = std if std > 0 else 1.0
    else:
        mean, std = 0.0, 1.0
    scale = np.full(d, 1.0 / (255.0 * std))
    shift = np.full(d, -mean / std)
    bias = params["bias"]
    rng_tr, rng_te = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))

    y_all = np.asarray(raw["y_train"], dtype=np.int64)
    rows = per_class_subsample(y_all, n_tr, N_CLASSES, rng_tr)
    X_tr = affine_features(raw["X_train"], scale, shift, bias,
                           None if rows.size == y_all.size else rows)
    y_tr = y_all[rows]
    side = math.isqrt(d)
    info = {"path": str(folder), "files": [str(f) for f in files], "classes": list(CLASSES),
            "shape": (side, side) if side * side == d else (d,), "seed": int(seed),
            "pixel_mean": mean, "pixel_std": std, "standardize": params["standardize"],
            "bias": bias, "n_train_per_class": np.bincount(y_tr, minlength=N_CLASSES).tolist()}
    if n_te == 0:
        return GroupedData(NAME, X_tr, y_tr, y_tr.copy(), n_classes=N_CLASSES, info=info)
    yt_all = np.asarray(raw["y_test"], dtype=np.int64)
    rows_t = per_class_subsample(yt_all, n_te, N_CLASSES, rng_te)
    X_te = affine_features(raw["X_test"], scale, shift, bias,
                           None if rows_t.size == yt_all.size else rows_t)
    y_te = yt_all[rows_t]
    info["n_test_per_class"] = np.bincount(y_te, minlength=N_CLASSES).tolist()
    return GroupedData(NAME, X_tr, y_tr, y_tr.copy(), X_te, y_te, y_te.copy(),
                       n_classes=N_CLASSES, info=info)
