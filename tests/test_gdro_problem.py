"""The gdro problem: oracles vs direct float64 numpy, oracle counting, metrics, sanity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.losses import linear_loss_grad
from drocli.plugins import registry
from drocli.solvers.dro.mirror_prox import VRState
from tests.conftest import plugin

make = plugin("problem", "gdro")


def grouped(m=3, d=6, n=(20, 30, 25), seed=0, classes=None, shuffle=True, test=True):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(m), n)
    X = rng.standard_normal((g.size, d)).astype(np.float32)
    if classes:
        y = rng.integers(0, classes, g.size).astype(float)
    else:
        y = np.where(rng.random(g.size) < 0.5, -1.0, 1.0)
    if shuffle:
        p = rng.permutation(g.size)
        X, y, g = X[p], y[p], g[p]
    if not test:
        return GroupedData("toy", X, y, g, n_classes=classes)
    Xt = rng.standard_normal((m * 10, d)).astype(np.float32)
    yt = (rng.integers(0, classes, m * 10).astype(float) if classes
          else np.where(rng.random(m * 10) < 0.5, -1.0, 1.0))
    gt = np.repeat(np.arange(m), 10)
    return GroupedData("toy", X, y, g, Xt, yt, gt, n_classes=classes)


def direct_risks(data, W, loss, split="train"):
    X, y, g = ((data.X_train, data.y_train, data.g_train) if split == "train"
               else (data.X_test, data.y_test, data.g_test))
    m = int(g.max()) + 1
    out = [linear_loss_grad(W, X[g == i].astype(np.float64), y[g == i], loss) for i in range(m)]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


@pytest.mark.parametrize("loss,classes", [("logistic", None), ("softmax", 4)])
def test_full_oracle_matches_direct_float64(loss, classes):
    data = grouped(classes=classes)
    p = make(data, {"loss": loss, "radius": 10.0})
    k = classes or 1
    rng = np.random.default_rng(1)
    W = rng.standard_normal((6, k)) * 0.5
    q = rng.dirichlet(np.ones(3))
    R_ref, G_ref = direct_risks(data, W, loss)
    R, G = p.full_oracle(W, q)
    np.testing.assert_allclose(R, R_ref, rtol=2e-6)
    np.testing.assert_allclose(G, np.tensordot(q, G_ref, axes=1), rtol=2e-5, atol=1e-6)
    assert p.oracle_calls == p.N == 75
    # per-sample terms returned for the snapshot
    R2, G2, losses, ds = p.full_oracle(W, q, return_samples=True)
    assert p.oracle_calls == 2 * p.N
    np.testing.assert_allclose(R2, R)
    for i in range(3):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        assert losses[lo:hi].mean() == pytest.approx(R[i], rel=1e-12)
    assert ds.shape == (p.N, k)


def test_group_and_sample_oracles_and_counting():
    data = grouped()
    p = make(data, {"loss": "logistic", "radius": 10.0})
    W = np.random.default_rng(2).standard_normal((6, 1)) * 0.3
    R_ref, G_ref = direct_risks(data, W, "logistic")
    r1, g1 = p.group_oracle(W, 1)
    assert r1 == pytest.approx(R_ref[1], rel=2e-6)
    np.testing.assert_allclose(g1, G_ref[1], rtol=2e-5, atol=1e-6)
    assert p.oracle_calls == 30
    rows = np.array([0, 5, 70])
    vals, ds = p.sample_oracle(W[:, 0], rows)        # a 1-D w is accepted when k = 1
    assert p.oracle_calls == 33
    X64 = p.X[rows].astype(float)
    marg = p.y[rows] * (X64 @ W[:, 0])
    np.testing.assert_allclose(vals, np.log1p(np.exp(-marg)), rtol=1e-12)
    np.testing.assert_allclose(ds[:, 0], -p.y[rows] / (1 + np.exp(marg)), rtol=1e-12)
    # metrics are not counted
    p.evaluate(W, np.full(3, 1 / 3))
    p.risks(W, "test")
    assert p.oracle_calls == 33
    p.reset_counter()
    assert p.oracle_calls == 0


def test_rows_sorted_by_group_stably():
    data = grouped(shuffle=True)
    p = make(data, {})
    assert np.all(np.diff(p.g) >= 0)
    np.testing.assert_array_equal(p.offsets, [0, 20, 50, 75])
    np.testing.assert_array_equal(p.n_i, [20, 30, 25])
    assert p.X.dtype == np.float32 and p.X.flags.c_contiguous
    assert p.y.dtype == np.float64
    for i in range(3):   # stable: original within-group order kept
        np.testing.assert_array_equal(p.X[p.offsets[i]:p.offsets[i + 1]],
                                      data.X_train[data.g_train == i])
    assert (p.m, p.d, p.k, p.N) == (3, 6, 1, 75)


def test_risks_at_zero_are_ln2_and_lnC():
    p = make(grouped(), {"loss": "logistic", "radius": 10.0})
    assert p.risk_at_zero == pytest.approx(math.log(2), abs=1e-12)
    np.testing.assert_allclose(p.risks(np.zeros((6, 1)), "test"), math.log(2), atol=1e-12)
    ps = make(grouped(classes=5), {"loss": "softmax", "radius": 10.0})
    assert ps.risk_at_zero == pytest.approx(math.log(5), abs=1e-12)
    assert ps.expected_risk_at_zero == pytest.approx(math.log(5))


def test_evaluate_metrics():
    data = grouped()
    p = make(data, {})
    W = np.random.default_rng(3).standard_normal((6, 1))
    q = np.array([0.2, 0.5, 0.3])
    ev = p.evaluate(W, q)
    R, _ = direct_risks(data, W, "logistic")
    Rt, _ = direct_risks(data, W, "logistic", "test")
    assert ev["max_risk_train"] == pytest.approx(R.max(), rel=1e-6)
    assert ev["avg_risk_train"] == pytest.approx(R.mean(), rel=1e-6)
    assert ev["worst_group_train"] == float(np.argmax(R))
    assert ev["weighted_risk_train"] == pytest.approx(q @ R, rel=1e-6)
    assert ev["max_risk_test"] == pytest.approx(Rt.max(), rel=1e-6)
    assert ev["avg_risk_test"] == pytest.approx(Rt.mean(), rel=1e-6)
    no_test = make(grouped(test=False), {})
    assert "max_risk_test" not in no_test.evaluate(W)


def test_aleg_epoch_cost_is_N_plus_2mK():
    """Spec 000 §7: one ALEG epoch costs N (full gradient) + 2 m K (half point + snapshot)."""
    p = make(grouped(), {})
    st = VRState(p)
    st.take_snapshot()
    assert p.oracle_calls == p.N
    K = 7
    rows = p.offsets[:-1] + np.random.default_rng(0).integers(0, p.n_i, size=(K, p.m))
    grps = np.tile(np.arange(p.m), (K, 1))
    st.run(rows, grps, np.ones(p.m), 1 / K, 0.1, 0.1, 1.0)
    assert p.oracle_calls == p.N + 2 * p.m * K


def test_registry_entry_and_errors():
    e = registry.get("problem", "gdro")
    assert e.family == "gdro" and e.defaults == {"loss": "logistic", "radius": 10.0}
    with pytest.raises(DrocliError, match="loss"):
        make(grouped(classes=4), {"loss": "logistic"})
    with pytest.raises(DrocliError, match="logistic"):
        make(grouped(), {"loss": "hinge"})
    with pytest.raises(DrocliError, match="radius"):
        make(grouped(), {"radius": -1.0})
    bad = grouped()
    bad.g_train = np.where(bad.g_train == 1, 2, bad.g_train)   # group 1 empty
    with pytest.raises(DrocliError, match="no training samples"):
        make(bad, {})
