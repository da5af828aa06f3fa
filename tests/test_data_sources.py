"""Data sources: the gdro_synthetic generator (docs/papers/000.md §4.2) and the npz loader."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.errors import DrocliError
from drocli.plugins import registry

SMALL = {"groups": 4, "dim": 16, "n_train": 3000, "n_test": 500, "label_noise": 0.1}


def load(params, seed=0):
    entry = registry.get("data", params.pop("_name", "gdro_synthetic"))
    return entry.func(registry.resolve_params(entry, params), seed)


# ---- gdro_synthetic -----------------------------------------------------------------------------
def test_registry_defaults_match_spec():
    e = registry.get("data", "gdro_synthetic")
    assert e.defaults["groups"] == 25 and e.defaults["dim"] == 1024
    assert e.defaults["n_train"] == 5000 and e.defaults["n_test"] == 5000
    assert e.defaults["label_noise"] == 0.1


def test_shapes_dtypes_and_groups():
    d = load(dict(SMALL))
    assert d.X_train.shape == (12000, 16) and d.X_train.dtype == np.float32
    assert d.X_test.shape == (2000, 16) and d.X_test.dtype == np.float32
    assert d.y_train.dtype == np.float64 and set(np.unique(d.y_train)) == {-1.0, 1.0}
    np.testing.assert_array_equal(np.bincount(d.g_train), [3000] * 4)
    np.testing.assert_array_equal(np.bincount(d.g_test), [500] * 4)
    assert d.groups == 4 and d.dim == 16 and d.n_classes is None
    np.testing.assert_allclose(np.linalg.norm(d.info["w_star"], axis=1), 1.0)


def test_draw_order_reproduced_independently():
    """All w_i* first, then per group: train X, train flips, test X, test flips (§4.2)."""
    p = {"groups": 3, "dim": 5, "n_train": 7, "n_test": 4, "label_noise": 0.3}
    d = load(dict(p), seed=11)
    rng = np.random.default_rng(11)
    W = rng.standard_normal((3, 5))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    Xs, ys, Xt, yt = [], [], [], []
    for i in range(3):
        for n, XX, yy in ((7, Xs, ys), (4, Xt, yt)):
            X = rng.standard_normal((n, 5), dtype=np.float32)
            clean = np.where(X.astype(float) @ W[i] >= 0, 1.0, -1.0)
            flip = rng.random(n) < 0.3
            XX.append(X)
            yy.append(np.where(flip, -clean, clean))
    np.testing.assert_array_equal(d.X_train, np.concatenate(Xs))
    np.testing.assert_array_equal(d.y_train, np.concatenate(ys))
    np.testing.assert_array_equal(d.X_test, np.concatenate(Xt))
    np.testing.assert_array_equal(d.y_test, np.concatenate(yt))


def test_noise_rate_and_group_statistics():
    d = load(dict(SMALL))
    W = d.info["w_star"]
    n = 3000
    for i in range(4):
        X = d.X_train[d.g_train == i].astype(float)
        y = d.y_train[d.g_train == i]
        clean = np.where(X @ W[i] >= 0, 1.0, -1.0)
        rate = np.mean(y != clean)
        assert abs(rate - 0.1) < 4 * math.sqrt(0.1 * 0.9 / n)
        # x ~ N(0, I): group means ~ 0; E[y x] = (1 - 2p) sqrt(2/pi) w_i*
        assert np.all(np.abs(X.mean(0)) < 4 / math.sqrt(n))
        assert np.all(np.abs(X.var(0) - 1) < 0.15)
        expect = (1 - 0.2) * math.sqrt(2 / math.pi) * W[i]
        assert np.all(np.abs((y[:, None] * X).mean(0) - expect) < 4 / math.sqrt(n))


def test_deterministic_in_seed():
    a, b, c = load(dict(SMALL), 3), load(dict(SMALL), 3), load(dict(SMALL), 4)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.X_train, c.X_train)


def test_heterogeneous_noise_and_sizes():
    p = {**SMALL, "groups": 5, "label_noise": 0.05, "noise_step": 0.1, "n_train": 2000,
         "n_train_max": 4000, "n_test": 0}
    d = load(dict(p))
    np.testing.assert_allclose(d.info["label_noise"], [0.05, 0.15, 0.25, 0.35, 0.45])
    np.testing.assert_array_equal(np.bincount(d.g_train), [2000, 2500, 3000, 3500, 4000])
    assert d.X_test is None
    for i, noise in enumerate(d.info["label_noise"]):
        assert abs(d.info["flip_rate_train"][i] - noise) < 0.05
    # a list of per-group noise values (MERO: p_i = 0.95 - i/160)
    entry = registry.get("data", "gdro_synthetic")
    params = dict(entry.defaults, groups=3, dim=4, n_train=10, n_test=5,
                  label_noise=[0.05, 0.05 + 1 / 160, 0.05 + 2 / 160])
    d = entry.func(params, 0)
    np.testing.assert_allclose(d.info["label_noise"], params["label_noise"])
    with pytest.raises(DrocliError, match="label_noise"):
        registry.resolve_params(entry, dict(params, label_noise=[0.1, 0.2]))
    with pytest.raises(DrocliError, match="noise"):
        registry.resolve_params(entry, dict(params, label_noise=1.5))


# ---- npz ----------------------------------------------------------------------------------------
def write_npz(path, test=True, **override):
    rng = np.random.default_rng(0)
    arrs = {"X_train": rng.standard_normal((30, 4)),
            "y_train": np.where(rng.random(30) < 0.5, -1, 1),
            "g_train": np.repeat([0, 1, 2], 10)}
    if test:
        arrs.update(X_test=rng.standard_normal((9, 4)), y_test=np.ones(9),
                    g_test=np.repeat([0, 1, 2], 3))
    arrs.update(override)
    arrs = {k: v for k, v in arrs.items() if v is not None}
    np.savez(path, **arrs)
    return arrs


def test_npz_roundtrip(tmp_path):
    f = tmp_path / "toy.npz"
    arrs = write_npz(f)
    d = load({"_name": "npz", "path": str(f)})
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.float64   # as stored
    np.testing.assert_array_equal(d.X_train, arrs["X_train"])
    np.testing.assert_array_equal(d.g_test, arrs["g_test"])
    assert d.n_classes is None and d.name == "toy"
    f2 = tmp_path / "multi.npz"
    write_npz(f2, test=False, y_train=np.arange(30) % 5)
    d2 = load({"_name": "npz", "path": str(f2)})
    assert d2.n_classes == 5 and d2.X_test is None


def test_npz_keeps_the_stored_type_unless_the_spec_names_one(tmp_path):
    """No silent cast (issue 29): float32 and float64 features come back as stored, integer
    features as float64 (exact), and `dtype` casts to the type the spec names; at its default
    the field stays out of the cell key, so recorded ids are kept."""
    rng = np.random.default_rng(1)
    X64 = rng.standard_normal((30, 4)) * 1e-3 + 1.0      # needs float64 to round-trip
    for X in (X64, X64.astype(np.float32), np.arange(120).reshape(30, 4)):
        f = tmp_path / f"x_{X.dtype}.npz"
        write_npz(f, test=False, X_train=X)
        d = load({"_name": "npz", "path": str(f)})
        assert d.X_train.dtype == (X.dtype if X.dtype.kind == "f" else np.float64)
        np.testing.assert_array_equal(d.X_train, X)
    f = tmp_path / "x_float64.npz"
    d32 = load({"_name": "npz", "path": str(f), "dtype": "float32"})
    assert d32.X_train.dtype == np.float32
    np.testing.assert_array_equal(d32.X_train, X64.astype(np.float32))
    assert not np.array_equal(d32.X_train.astype(np.float64), X64)   # the cast loses digits
    entry = registry.get("data", "npz")
    assert entry.params.model_json_schema()["properties"]["dtype"].get("added") is True
    with pytest.raises(DrocliError, match="dtype"):
        registry.resolve_params(entry, {"path": str(f), "dtype": "int8"})


def test_npz_errors_name_path_key_and_fix(tmp_path):
    missing = tmp_path / "nope.npz"
    with pytest.raises(DrocliError) as err:
        load({"_name": "npz", "path": str(missing)})
    assert str(missing) in str(err.value) and "fix" in str(err.value)
    f = tmp_path / "partial.npz"
    write_npz(f, test=False, g_train=None)
    with pytest.raises(DrocliError) as err:
        load({"_name": "npz", "path": str(f)})
    msg = str(err.value)
    assert "g_train" in msg and str(f) in msg and "fix" in msg
    f3 = tmp_path / "halftest.npz"
    write_npz(f3, g_test=None)
    with pytest.raises(DrocliError, match="g_test"):
        load({"_name": "npz", "path": str(f3)})
    f4 = tmp_path / "badshape.npz"
    write_npz(f4, test=False, y_train=np.ones(29))
    with pytest.raises(DrocliError, match="y_train"):
        load({"_name": "npz", "path": str(f4)})
    with pytest.raises(DrocliError, match="path"):
        load({"_name": "npz"})
