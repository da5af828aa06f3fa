"""Data sources of paper 002 (Zhao, Lyu & Kolar 2023): data model B (concept shift,
docs/papers/002.md §3.5),
the LIBSVM loader (w8a, §3.7) and the offline stand-in digits_bin (§6)."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from drocli.errors import DrocliError
from drocli.plugins import registry
from tests.conftest import load_source as load

pytestmark = pytest.mark.usefixtures("data_home")


# ---- concept_shift (data model B) ------------------------------------------------------------
def test_concept_shift_defaults_and_shapes():
    p = registry.get("data", "concept_shift").defaults
    assert p["n"] == 300 and p["d"] == 30 and p["noise_std"] == 0.5
    assert p["value_mean"] == 1.0 and p["value_std"] == 0.1
    d = load("concept_shift", {"nu": 1.0})
    assert d.X_train.shape == (300, 30) and d.X_train.dtype == np.float64
    assert d.y_train.shape == (300,) and np.all(d.g_train == 0)
    nz = np.count_nonzero(d.X_train, axis=1)
    np.testing.assert_array_equal(nz, 1)                      # exactly one nonzero per row
    np.testing.assert_array_equal(np.argmax(d.X_train != 0, axis=1), d.info["support"])


def test_concept_shift_moments():
    n, d, nu = 40000, 20, 0.7
    data = load("concept_shift", {"n": n, "d": d, "nu": nu}, seed=3)
    A, b = data.X_train, data.y_train
    supp = data.info["support"]
    vals = A[np.arange(n), supp]
    theta = data.info["theta_star"]
    # coordinate values ~ N(1, 0.1^2)
    assert abs(vals.mean() - 1.0) < 4 * 0.1 / math.sqrt(n)
    assert abs(vals.std() - 0.1) < 0.005
    # supports uniform on [d]
    counts = np.bincount(supp, minlength=d)
    assert np.all(np.abs(counts / n - 1 / d) < 4 * math.sqrt((1 / d) / n))
    # noise b - <theta*, a> ~ N(0, 0.5^2)
    zeta = b - A @ theta
    assert abs(zeta.mean()) < 4 * 0.5 / math.sqrt(n)
    assert abs(zeta.std() - 0.5) < 0.01
    # theta* = exp(N(0, nu^2)): positive, log-scale reproduced from the draw order
    rng = np.random.default_rng(3)
    np.testing.assert_allclose(theta, np.exp(nu * rng.standard_normal(d)))
    # L_i = a_i[supp]^2 ~ 1: importance sampling is nearly uniform
    L = vals ** 2
    assert data.info["L_max"] == L.max() and abs(data.info["L_bar"] - 1.01) < 0.005


def test_concept_shift_deterministic_and_common_random_numbers():
    a = load("concept_shift", {"nu": 0.5}, seed=7)
    b = load("concept_shift", {"nu": 0.5}, seed=7)
    c = load("concept_shift", {"nu": 0.5}, seed=8)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    assert not np.array_equal(a.X_train, c.X_train)
    # another nu reuses the seed's design and noise; only theta* changes
    e = load("concept_shift", {"nu": 2.0}, seed=7)
    np.testing.assert_array_equal(a.X_train, e.X_train)
    np.testing.assert_allclose(np.log(e.info["theta_star"]), 4 * np.log(a.info["theta_star"]))
    # nu = 0: no concept shift, theta* = 1
    z = load("concept_shift", {"nu": 0.0}, seed=7)
    np.testing.assert_array_equal(z.info["theta_star"], np.ones(30))


def test_concept_shift_feeds_the_finite_sum_problem():
    from drocli.problems.finite_sum import from_data

    data = load("concept_shift", {"nu": 1.0}, seed=0)
    prob = from_data(data)
    assert prob.n == 300 and prob.d == 30
    assert prob.gap(prob.x_star) == 0.0 and prob.sigma_star2 > 0
    assert 0.8 < prob.L_bar < 1.2


# ---- libsvm --------------------------------------------------------------------------------
ROWS = [(+1, {1: 1.0, 3: 1.0}), (-1, {2: 1.0}), (-1, {}), (+1, {5: 0.5, 1: 2.0}),
        (-1, {4: 1.0, 5: 1.0})]


def write_svmlight(path, rows=ROWS, gz=False):
    text = "".join(f"{lab:+d} " + " ".join(f"{j}:{v:g}" for j, v in sorted(feats.items()))
                   + "\n" for lab, feats in rows)
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def expected_dense(n_features=6, rows=ROWS):
    X = np.zeros((len(rows), n_features))
    for i, (_, feats) in enumerate(rows):
        for j, v in feats.items():
            X[i, j - 1] = v              # LIBSVM indices are 1-based
    y = np.array([1.0 if lab > 0 else 0.0 for lab, _ in rows])
    return X, y


def test_libsvm_registered_defaults():
    p = registry.get("data", "libsvm").defaults
    assert p["name"] == "w8a" and p["n_features"] == 300 and p["path"] is None
    assert registry.get("data", "libsvm").preflight is not None


def test_libsvm_from_path_labels_01_and_dense(tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    write_svmlight(folder / "tiny")
    d = load("libsvm", {"name": "tiny", "path": str(folder), "n_features": 6})
    X, y = expected_dense()
    np.testing.assert_array_equal(d.X_train, X)
    np.testing.assert_array_equal(d.y_train, y)
    assert d.X_train.dtype == np.float64 and d.X_train.flags.c_contiguous
    assert d.name == "tiny" and d.info["positives"] == 2 and np.all(d.g_train == 0)


def test_libsvm_from_drocli_data_gz_and_cache(data_home):
    (data_home / "libsvm").mkdir()
    write_svmlight(data_home / "libsvm" / "tiny.gz", gz=True)
    a = load("libsvm", {"name": "tiny", "n_features": 6})
    assert list((data_home / "cache" / "libsvm").iterdir())       # parsed arrays cached
    b = load("libsvm", {"name": "tiny", "n_features": 6})          # from the cache
    X, y = expected_dense()
    for d in (a, b):
        np.testing.assert_array_equal(d.X_train, X)
        np.testing.assert_array_equal(d.y_train, y)
    # a wider n_features is another cache entry with zero columns appended
    c = load("libsvm", {"name": "tiny", "n_features": 8})
    np.testing.assert_array_equal(c.X_train[:, :6], X)
    assert c.X_train.shape == (5, 8) and not c.X_train[:, 6:].any()


def test_libsvm_feeds_the_logistic_problem(tmp_path):
    from drocli.problems.finite_sum import from_data

    write_svmlight(tmp_path / "tiny")
    d = load("libsvm", {"name": "tiny", "path": str(tmp_path), "n_features": 6})
    prob = from_data(d, objective="logistic", mu=1e-3)
    X, _ = expected_dense()
    np.testing.assert_allclose(prob.L, (X ** 2).sum(1) / 4 + 1e-3)


def test_libsvm_errors(tmp_path, data_home):
    entry = registry.get("data", "libsvm")
    # missing file: the preflight names the folder, the file and the fix
    with pytest.raises(DrocliError) as e:
        entry.preflight(registry.resolve_params(entry, {"name": "w8a"}))
    msg = str(e.value)
    assert "w8a" in msg and str(data_home / "libsvm") in msg and "fix:" in msg
    with pytest.raises(DrocliError, match="name"):
        load("libsvm", {"name": "../w8a"})
    # more features than n_features
    write_svmlight(tmp_path / "tiny")
    with pytest.raises(DrocliError, match="n_features"):
        load("libsvm", {"name": "tiny", "path": str(tmp_path), "n_features": 3})
    # multiclass labels
    write_svmlight(tmp_path / "multi", rows=[(1, {1: 1.0}), (2, {2: 1.0}), (3, {1: 1.0})])
    with pytest.raises(DrocliError, match="binary labels"):
        load("libsvm", {"name": "multi", "path": str(tmp_path), "n_features": 6})


# ---- digits_bin (offline stand-in for w8a, docs/papers/002.md §6) ---------------------------
def test_digits_bin_standin():
    from sklearn.datasets import load_digits

    d = load("digits_bin")
    X, digit = load_digits(return_X_y=True)
    assert d.X_train.shape == (1797, 64) and d.X_train.dtype == np.float64
    np.testing.assert_array_equal(d.X_train, (X >= 8).astype(float))
    np.testing.assert_array_equal(d.y_train, (digit == 0).astype(float))
    assert set(np.unique(d.X_train)) == {0.0, 1.0}
    assert 0.08 < d.y_train.mean() < 0.12                         # about 10% positives
    row_sq = d.X_train.sum(1)
    assert row_sq.max() / row_sq.min() >= 2                        # heterogeneous L_i
    e = load("digits_bin", {"threshold": 1, "positive": 3}, seed=5)
    np.testing.assert_array_equal(e.y_train, (digit == 3).astype(float))
    with pytest.raises(DrocliError, match="positive"):
        load("digits_bin", {"positive": 10})
