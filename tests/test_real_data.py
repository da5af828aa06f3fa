"""Real-data loaders: CIFAR-100 pickles, Fashion-MNIST IDX files, scikit-learn digits.

Small files in the real formats are written to tmp_path; the Fashion-MNIST test on the real
files runs only where the Debian package dataset-fashion-mnist is installed.
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from drocli.data import cache, idx
from drocli.errors import DrocliError
from drocli.plugins import registry
from tests.conftest import load_source as load

FASHION_SYSTEM = Path("/usr/share/datasets/fashion-mnist")
IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")


pytestmark = pytest.mark.usefixtures("data_home")


# ---- writers of the real formats ----------------------------------------------------------
def _images(rng, n, d, channels):
    """uint8 images whose channels have clearly different distributions."""
    out = np.empty((n, d), dtype=np.uint8)
    per = d // channels
    for c in range(channels):
        lo, hi = 20 * c, 150 + 50 * c
        out[:, c * per:(c + 1) * per] = rng.integers(lo, hi, size=(n, per), dtype=np.uint8)
    return out


def write_cifar(folder: Path, n_train=4, n_test=2, seed=0, protocol=2, gz=False):
    """`train` / `test` pickles as in cifar-100-python (bytes keys, uint8 data, fine labels)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        labels = rng.permutation(np.repeat(np.arange(100), n))
        data = _images(rng, labels.size, 3072, 3)
        obj = {b"filenames": [b"x.png"] * labels.size, b"batch_label": split.encode(),
               b"fine_labels": labels.tolist(), b"coarse_labels": (labels // 5).tolist(),
               b"data": data}
        blob = pickle.dumps(obj, protocol=protocol)
        if gz:
            (folder / f"{split}.gz").write_bytes(gzip.compress(blob))
        else:
            (folder / split).write_bytes(blob)
        out[split] = (data, labels)
    return out


def idx_bytes(arr: np.ndarray, code=0x08) -> bytes:
    big = arr.astype(np.dtype(idx.DTYPES[code]))
    return (struct.pack(">BBBB", 0, 0, code, arr.ndim)
            + struct.pack(f">{arr.ndim}I", *arr.shape) + big.tobytes())


def write_fashion(folder: Path, n_train=5, n_test=3, seed=0, gz=("train",)):
    """The four IDX files; the splits named in `gz` are gzipped (train by default)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, prefix, n in (("train", "train", n_train), ("test", "t10k", n_test)):
        labels = rng.permutation(np.repeat(np.arange(10, dtype=np.uint8), n))
        images = _images(rng, labels.size, 784, 1).reshape(-1, 28, 28)
        for name, arr in ((f"{prefix}-images-idx3-ubyte", images),
                          (f"{prefix}-labels-idx1-ubyte", labels)):
            blob = idx_bytes(arr)
            if split in gz:
                (folder / f"{name}.gz").write_bytes(gzip.compress(blob))
            else:
                (folder / name).write_bytes(blob)
        out[split] = (images.reshape(labels.size, -1), labels.astype(np.int64))
    return out


# ---- registry ---------------------------------------------------------------------------------
def test_registered_names_and_defaults():
    c = registry.get("data", "cifar100").defaults
    assert c == {"path": None, "n_train": 500, "n_test": 100, "standardize": True, "bias": False}
    f = registry.get("data", "fashion_mnist").defaults
    assert f == {"path": None, "n_train": 6000, "n_test": 1000, "standardize": True,
                 "bias": False}
    d = registry.get("data", "digits").defaults
    assert d == {"test_fraction": 0.25, "standardize": True, "bias": False}


# ---- CIFAR-100 ------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_cifar_shapes_labels_and_standardisation(tmp_path, protocol):
    raw = write_cifar(tmp_path / "c", protocol=protocol)
    d = load("cifar100", {"path": str(tmp_path / "c")})
    assert d.X_train.shape == (400, 3072) and d.X_train.dtype == np.float32
    assert d.X_test.shape == (200, 3072) and d.X_test.dtype == np.float32
    assert d.n_classes == 100 and d.groups == 100 and d.dim == 3072
    # all rows kept in file order: labels = groups = the fine labels
    np.testing.assert_array_equal(d.y_train, raw["train"][1])
    np.testing.assert_array_equal(d.g_train, raw["train"][1])
    np.testing.assert_array_equal(d.y_test, raw["test"][1])
    np.testing.assert_array_equal(d.g_test, raw["test"][1])
    np.testing.assert_array_equal(np.bincount(d.g_train), [4] * 100)
    # per-channel (channel-major blocks of 1024) train mean 0, std 1
    for c in range(3):
        block = d.X_train[:, c * 1024:(c + 1) * 1024].astype(np.float64)
        assert abs(block.mean()) < 1e-5 and abs(block.std() - 1.0) < 1e-5
    # test split uses the train statistics, computed as numpy would
    tr = raw["train"][0].reshape(400, 3, 1024) / 255.0
    mean, std = tr.mean(axis=(0, 2)), tr.std(axis=(0, 2))
    np.testing.assert_allclose(d.info["channel_mean"], mean, rtol=1e-12)
    np.testing.assert_allclose(d.info["channel_std"], std, rtol=1e-12)
    expect = ((raw["test"][0].reshape(200, 3, 1024) / 255.0 - mean[:, None]) / std[:, None])
    np.testing.assert_allclose(d.X_test, expect.reshape(200, 3072), atol=2e-6)


def test_cifar_from_drocli_data_subfolder_gz_bias_and_raw_scale(data_home):
    # the archive extracts to cifar-100-python/; gzipped pickles are accepted too
    raw = write_cifar(data_home / "cifar100" / "cifar-100-python", gz=True)
    d = load("cifar100", {"bias": True, "standardize": False})
    assert d.info["path"] == str(data_home / "cifar100" / "cifar-100-python")
    assert d.X_train.shape == (400, 3073) and d.X_test.shape == (200, 3073)
    np.testing.assert_array_equal(d.X_train[:, -1], 1.0)
    np.testing.assert_array_equal(d.X_test[:, -1], 1.0)
    np.testing.assert_allclose(d.X_train[:, :-1], raw["train"][0] / 255.0, atol=1e-7)


def test_cifar_per_class_subsampling_is_deterministic(tmp_path):
    raw = write_cifar(tmp_path / "c", n_train=6, n_test=4)
    p = {"path": str(tmp_path / "c"), "n_train": 2, "n_test": 3, "standardize": False}
    a, b, c = load("cifar100", p, seed=3), load("cifar100", p, seed=3), load("cifar100", p, 4)
    np.testing.assert_array_equal(np.bincount(a.g_train, minlength=100), [2] * 100)
    np.testing.assert_array_equal(np.bincount(a.g_test, minlength=100), [3] * 100)
    assert a.info["n_train_per_class"] == [2] * 100
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.X_train, c.X_train)
    # each kept row is an original row of its class, no row twice
    rows = {bytes(r): lab for r, lab in zip(raw["train"][0], raw["train"][1], strict=True)}
    kept = np.rint(a.X_train * 255).astype(np.uint8)
    assert len({bytes(r) for r in kept}) == 200
    assert all(rows[bytes(r)] == lab for r, lab in zip(kept, a.y_train, strict=True))
    # the test subset does not depend on n_train (independent streams)
    other = load("cifar100", dict(p, n_train=5), seed=3)
    np.testing.assert_array_equal(a.X_test, other.X_test)
    # n_test 0: no test split
    assert load("cifar100", dict(p, n_test=0)).X_test is None


def test_cifar_missing_files_error_names_folder_files_and_fix(data_home, tmp_path):
    with pytest.raises(DrocliError) as err:
        load("cifar100")
    msg = str(err.value)
    assert str(data_home / "cifar100") in msg and "`train`, `test`" in msg
    assert "cifar-100-python.tar.gz" in msg and "data.params.path" in msg
    # the archive lying there unextracted: the fix says how to extract it
    (data_home / "cifar100").mkdir()
    (data_home / "cifar100" / "cifar-100-python.tar.gz").write_bytes(b"x")
    with pytest.raises(DrocliError, match="tar xzf"):
        load("cifar100")
    # an explicit path is the only folder searched; a half-filled folder says what it lacks
    half = tmp_path / "half"
    write_cifar(half)
    (half / "test").unlink()
    with pytest.raises(DrocliError) as err:
        load("cifar100", {"path": str(half)})
    assert str(half) in str(err.value) and "lacks `test`" in str(err.value)
    assert str(data_home) not in str(err.value)


def test_cifar_bad_pickles(tmp_path):
    folder = tmp_path / "c"
    write_cifar(folder)
    good_test = (folder / "test").read_bytes()
    (folder / "train").write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8)}))
    with pytest.raises(DrocliError, match="fine_labels"):
        load("cifar100", {"path": str(folder)})
    (folder / "train").write_bytes(pickle.dumps({b"data": np.zeros((2, 10), np.uint8),
                                                 b"fine_labels": [0, 1]}))
    with pytest.raises(DrocliError, match="3072"):
        load("cifar100", {"path": str(folder)})
    (folder / "train").write_bytes(pickle.dumps(os.getcwd))  # a global outside the allow-list
    with pytest.raises(DrocliError, match="refusing global"):
        load("cifar100", {"path": str(folder)})
    (folder / "train").write_bytes(good_test[:1000])  # truncated
    with pytest.raises(DrocliError, match="CIFAR-100"):
        load("cifar100", {"path": str(folder)})


def test_cifar_feeds_the_softmax_problem(tmp_path):
    from drocli.problems.gdro import GDROProblem

    write_cifar(tmp_path / "c", n_train=2, n_test=1)
    prob = GDROProblem(load("cifar100", {"path": str(tmp_path / "c")}), loss="softmax")
    assert (prob.m, prob.k, prob.d, prob.N) == (100, 100, 3072, 200)


# ---- IDX reader ------------------------------------------------------------------------------
@pytest.mark.parametrize("code", sorted(idx.DTYPES))
def test_idx_roundtrip_all_dtypes(tmp_path, code):
    arr = (np.arange(24).reshape(2, 3, 4) - 5).astype(np.dtype(idx.DTYPES[code]).newbyteorder("="))
    if code == 0x08:
        arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    (tmp_path / "a").write_bytes(idx_bytes(arr, code))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(arr, code)))
    for name in ("a", "a.gz"):
        out = idx.read_idx(tmp_path / name)
        assert out.shape == arr.shape and out.dtype == arr.dtype
        np.testing.assert_array_equal(out, arr)
    assert idx.idx_header((2, 3, 4), code) == idx_bytes(arr, code)[:16]


def test_idx_corrupt_and_truncated_files(tmp_path):
    blob = idx_bytes(np.zeros((3, 28, 28), np.uint8))
    cases = {"short": (blob[:-5], "truncated IDX file"), "header": (blob[:9], "truncated IDX "
             "header"), "magic": (b"\x01\x00" + blob[2:], "not an IDX file"),
             "code": (blob[:2] + b"\x07" + blob[3:], "not an IDX file"),
             "long": (blob + b"\0", "corrupt IDX file"), "empty": (b"", "truncated")}
    for name, (data, match) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DrocliError, match=match) as err:
            idx.read_idx(tmp_path / name)
        assert str(tmp_path / name) in str(err.value)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(blob)[:-20])
    with pytest.raises(DrocliError, match="gzip"):
        idx.read_idx(tmp_path / "bad.gz")


# ---- Fashion-MNIST ------------------------------------------------------------------------------
def test_fashion_from_path_gz_and_raw(tmp_path):
    raw = write_fashion(tmp_path / "f", gz=("train",))
    d = load("fashion_mnist", {"path": str(tmp_path / "f")})
    assert d.X_train.shape == (50, 784) and d.X_train.dtype == np.float32
    assert d.X_test.shape == (30, 784) and d.n_classes == 10 and d.groups == 10
    np.testing.assert_array_equal(d.y_train, raw["train"][1])
    np.testing.assert_array_equal(d.g_train, raw["train"][1])
    np.testing.assert_array_equal(d.g_test, raw["test"][1])
    x = d.X_train.astype(np.float64)
    assert abs(x.mean()) < 1e-5 and abs(x.std() - 1.0) < 1e-5
    px = raw["train"][0] / 255.0
    assert d.info["pixel_mean"] == pytest.approx(px.mean(), rel=1e-12)
    assert d.info["pixel_std"] == pytest.approx(px.std(), rel=1e-12)
    expect = (raw["test"][0] / 255.0 - px.mean()) / px.std()
    np.testing.assert_allclose(d.X_test, expect, atol=2e-6)


def test_fashion_from_drocli_data_subsample_bias_and_cache(data_home):
    folder = data_home / "fashion_mnist"
    raw = write_fashion(folder, n_train=8, n_test=4, gz=("test",))
    p = {"n_train": 3, "n_test": 2, "bias": True}
    a, b = load("fashion_mnist", p, seed=1), load("fashion_mnist", p, seed=1)
    assert a.info["path"] == str(folder)
    assert a.X_train.shape == (30, 785) and a.X_test.shape == (20, 785)
    np.testing.assert_array_equal(a.X_train[:, -1], 1.0)
    np.testing.assert_array_equal(np.bincount(a.g_train), [3] * 10)
    np.testing.assert_array_equal(np.bincount(a.g_test), [2] * 10)
    np.testing.assert_array_equal(a.X_train, b.X_train)  # second load: from the cache
    assert not np.array_equal(a.X_train, load("fashion_mnist", p, seed=2).X_train)
    # standardised with the FULL train set, whatever the subsample
    px = raw["train"][0] / 255.0
    assert a.info["pixel_mean"] == pytest.approx(px.mean(), rel=1e-12)
    entries = list((data_home / "cache" / "fashion_mnist").iterdir())
    assert len(entries) == 1 and (entries[0] / "MANIFEST").is_file()
    # new files (other size/mtime) invalidate the cache entry and replace it
    for f in folder.iterdir():
        f.unlink()
    raw2 = write_fashion(folder, n_train=9, n_test=4, seed=5, gz=())
    c = load("fashion_mnist", {"standardize": False})
    np.testing.assert_allclose(c.X_train, raw2["train"][0] / 255.0, atol=1e-7)
    assert len(list((data_home / "cache" / "fashion_mnist").iterdir())) == 1


def test_fashion_errors(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DrocliError) as err:
        load("fashion_mnist", {"path": str(empty)})
    msg = str(err.value)
    assert str(empty) in msg and all(f"`{n}`" in msg for n in IDX_NAMES)
    assert "data.params.path" in msg
    folder = tmp_path / "f"
    write_fashion(folder, gz=())
    blob = (folder / "train-images-idx3-ubyte").read_bytes()
    (folder / "train-images-idx3-ubyte").write_bytes(blob[:-100])
    with pytest.raises(DrocliError, match="truncated IDX file"):
        load("fashion_mnist", {"path": str(folder)})
    (folder / "train-images-idx3-ubyte").write_bytes(blob)
    (folder / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(7, np.uint8)))
    with pytest.raises(DrocliError, match="7 labels for 30 images"):
        load("fashion_mnist", {"path": str(folder)})
    with pytest.raises(DrocliError, match="n_train"):
        load("fashion_mnist", {"path": str(folder), "n_train": 0})
    monkeypatch.setenv("DROCLI_NO_CACHE", "1")  # the cache is optional
    (folder / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.arange(30, dtype=np.uint8)
                                                              % 10))
    assert load("fashion_mnist", {"path": str(folder)}).X_test.shape == (30, 784)


@pytest.mark.skipif(not FASHION_SYSTEM.is_dir(),
                    reason=f"{FASHION_SYSTEM} absent (Debian package dataset-fashion-mnist)")
def test_fashion_real_package_files(monkeypatch):
    monkeypatch.setenv("DROCLI_NO_CACHE", "1")
    folder = cache.find_files("fashion_mnist", [FASHION_SYSTEM], list(IDX_NAMES))
    assert folder == FASHION_SYSTEM
    # full size: 60000 / 10000 rows, balanced (label files are small to read)
    for name, n in (("train-labels-idx1-ubyte", 60000), ("t10k-labels-idx1-ubyte", 10000)):
        labels = idx.read_idx(cache.resolve(folder, name))
        assert labels.shape == (n,)
        np.testing.assert_array_equal(np.bincount(labels), [n // 10] * 10)
    d = load("fashion_mnist", {"n_train": 60, "n_test": 20}, seed=0)
    assert d.info["path"] == str(FASHION_SYSTEM)
    assert d.X_train.shape == (600, 784) and d.X_test.shape == (200, 784)
    np.testing.assert_array_equal(np.bincount(d.g_train), [60] * 10)
    np.testing.assert_array_equal(np.bincount(d.g_test), [20] * 10)
    assert d.info["pixel_mean"] == pytest.approx(0.2860, abs=1e-4)  # full train statistics
    assert d.info["pixel_std"] == pytest.approx(0.3530, abs=1e-4)


# ---- digits (bundled with scikit-learn) --------------------------------------------------------
def test_digits_real():
    a = load("digits", seed=0)
    assert a.X_train.dtype == np.float32 and a.X_train.shape[1] == 64
    assert a.X_train.shape[0] + a.X_test.shape[0] == 1797 and a.n_classes == 10
    n_c = np.bincount(a.g_train) + np.bincount(a.g_test)
    assert n_c.sum() == 1797 and n_c.min() >= 170
    np.testing.assert_array_equal(np.bincount(a.g_test), np.round(0.25 * n_c).astype(int))
    np.testing.assert_array_equal(a.g_train, a.y_train)
    x = a.X_train.astype(np.float64)
    mean, std = x.mean(axis=0), x.std(axis=0)
    assert np.all(np.abs(mean) < 1e-5)
    const = a.info["feature_std"] == 1.0  # zero-variance pixels: only centred, no NaN
    assert const.any() and np.all(np.isfinite(a.X_test))
    np.testing.assert_allclose(std[~const], 1.0, atol=1e-5)
    b, c = load("digits", seed=0), load("digits", seed=1)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.y_test, c.y_test)
    e = load("digits", {"test_fraction": 0, "bias": True, "standardize": False})
    assert e.X_test is None and e.X_train.shape == (1797, 65)
    np.testing.assert_array_equal(e.X_train[:, -1], 1.0)
    assert e.X_train[:, :-1].max() == 1.0 and e.X_train[:, :-1].min() == 0.0
    with pytest.raises(DrocliError, match="test_fraction"):
        load("digits", {"test_fraction": 1.0})
