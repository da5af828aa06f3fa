"""MERO (Yu et al. 2024 §5): the FISTA ERM oracle against cvxpy, the on-disk R_i^* cache, the
shifted oracle of problem (24), convergence of ALEM / ERMEG / TSA to the cvxpy MERO optimum of
a tiny problem, ALEM's stage-1 estimates, and the oracle counts (stage 1 counted, ERMEG's
E N + N per round, TSA's 2m per round)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.errors import DrocliError
from drocli.ops.erm import erm_group, erm_groups, fista, smoothness
from drocli.plugins import registry
from drocli.problems import mero
from drocli.problems.gdro import GDROProblem
from drocli.problems.mero import group_view, split_key
from drocli.run.monitor import Monitor
from drocli.solvers.dro import alem, ermeg, tsa
from tests.conftest import plugin

cp = pytest.importorskip("cvxpy")
make = plugin("problem", "mero")
load_synthetic = plugin("data", "gdro_synthetic")

TINY = {"groups": 3, "dim": 5, "n_train": 40, "n_test": 40, "label_noise": [0.05, 0.15, 0.25]}


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    """Every test gets its own empty R_i^* cache folder."""
    monkeypatch.setenv("DROCLI_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("DROCLI_NO_CACHE", raising=False)


def tiny_data(seed=0, **kw):
    return load_synthetic({**TINY, **kw}, seed)


def cvx_erm(X, y, radius):
    w = cp.Variable(X.shape[1])
    obj = cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / X.shape[0]
    prob = cp.Problem(cp.Minimize(obj), [cp.norm(w, 2) <= radius])
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def logistic_risk(X, y, w):
    return float(np.mean(np.logaddexp(0.0, -y * (X @ w))))


# ---- the ERM oracle ------------------------------------------------------------------------
@pytest.mark.parametrize("n,radius", [(40, 10.0), (8, 1.0)])
def test_fista_rstar_matches_cvxpy(n, radius):
    """Interior optimum (noisy group) and ball-active optimum (separable group, small ball)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    y = np.where(X.astype(float) @ rng.standard_normal(5) >= 0, 1.0, -1.0)
    if n > 10:
        y = np.where(rng.random(n) < 0.2, -y, y)
    res = erm_group(X, y, "logistic", 1, radius, tol=1e-9, max_iter=20000)
    ref = cvx_erm(X.astype(float), y, radius)
    assert res.reached
    assert np.linalg.norm(res.w) <= radius + 1e-9
    assert abs(res.rstar - ref) < 1e-6, (res.rstar, ref)
    assert res.rstar == pytest.approx(logistic_risk(X.astype(float), y, res.w[:, 0]))
    if n == 8:
        assert np.linalg.norm(res.w) == pytest.approx(radius, rel=1e-6)
    assert res.lipschitz == pytest.approx(
        np.linalg.eigvalsh(X.astype(float).T @ X.astype(float))[-1] / (4 * n))


def test_fista_softmax_matches_cvxpy():
    rng = np.random.default_rng(2)
    n, d, C = 30, 4, 3
    X = rng.standard_normal((n, d)).astype(np.float32)
    lab = np.argmax(X.astype(float) @ rng.standard_normal((d, C))
                    + rng.standard_normal((n, C)), 1)
    res = erm_group(X, lab.astype(float), "softmax", C, 5.0, tol=1e-9, max_iter=20000)
    W = cp.Variable((d, C))
    S = X.astype(float) @ W
    obj = (cp.sum(cp.log_sum_exp(S, axis=1))
           - cp.sum(cp.multiply(np.eye(C)[lab], S))) / n
    prob = cp.Problem(cp.Minimize(obj), [cp.norm(W, "fro") <= 5.0])
    prob.solve(solver=cp.CLARABEL)
    assert res.reached and abs(res.rstar - prob.value) < 1e-6


def test_fista_counts_one_call_per_iteration_and_stops_on_callback():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20, 3))
    y = np.sign(rng.standard_normal(20))
    calls = []

    def vg(w):
        calls.append(1)
        m = y * (X @ w[:, 0])
        return 0.0, (X.T @ (-y / (1 + np.exp(m))))[:, None] / 20

    res = fista(vg, np.zeros((3, 1)), smoothness(X, "logistic"), 10.0, tol=0.0, max_iter=7)
    assert res.iterations == len(calls) == 7 and not res.reached
    calls.clear()
    res = fista(vg, np.zeros((3, 1)), 1.0, 10.0, tol=0.0, max_iter=50,
                callback=lambda x: len(calls) < 4)
    assert res.iterations == len(calls) == 4


# ---- problem, shift hook and cache -------------------------------------------------------------
def test_mero_problem_rstar_metrics_and_shift():
    data = tiny_data()
    p = make(data, {})
    assert p.rstar_train.shape == p.rstar_test.shape == (3,)
    assert np.all(p.erm_train["reached"]) and np.all(p.erm_test["reached"])
    X = p.X.astype(float)
    for i in range(p.m):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        assert abs(p.rstar_train[i] - cvx_erm(X[lo:hi], p.y[lo:hi], 10.0)) < 1e-6
    assert np.ptp(p.rstar_train) > 0.1                     # heterogeneous noise
    ev = p.evaluate(np.zeros(p.shape), np.full(3, 1 / 3))
    assert ev["max_risk_train"] == pytest.approx(math.log(2))
    assert ev["max_excess_risk_train"] == pytest.approx(math.log(2) - p.rstar_train.min())
    assert ev["avg_excess_risk_train"] == pytest.approx(math.log(2) - p.rstar_train.mean())
    assert ev["max_excess_risk_test"] == pytest.approx(math.log(2) - p.rstar_test.min())
    assert p.oracle_calls == 0, "ground truth and metrics are not counted"
    # test_rstar: train subtracts the train R_i^* on the test split
    pt = make(data, {"test_rstar": "train"})
    assert pt.erm_test is None
    np.testing.assert_array_equal(pt.rstar_test, pt.rstar_train)
    # the counted full oracle of problem (24): risks shifted, gradients not
    w = np.random.default_rng(0).standard_normal(p.shape) * 0.3
    q = np.array([0.2, 0.3, 0.5])
    R0, G0, l0, d0 = p.full_oracle(w, q, return_samples=True)
    shift = np.array([0.1, -0.2, 0.3])
    with p.shifted(shift):
        R1, G1, l1, d1 = p.full_oracle(w, q, return_samples=True)
    np.testing.assert_allclose(R1, R0 - shift)
    np.testing.assert_array_equal(G1, G0)
    np.testing.assert_array_equal(l1, l0)
    np.testing.assert_array_equal(p.shift, 0.0)
    assert p.oracle_calls == 2 * p.N


def test_group_view_shares_rows_and_counter():
    p = make(tiny_data(n_train=30), {})
    v = group_view(p, 2)
    assert v.m == 1 and v.N == 30 and v.counter is p.counter
    w = np.random.default_rng(0).standard_normal(p.shape)
    R, _ = v.full_oracle(w, np.ones(1))
    assert R[0] == pytest.approx(p.risks(w)[2])
    assert p.oracle_calls == 30


def test_rstar_cache_hit_and_distinct_keys(tmp_path, monkeypatch):
    data = tiny_data()
    p1 = make(data, {})
    files = sorted((tmp_path / "data").rglob("*.npz"))
    assert len(files) == 2                                   # train and test splits

    def boom(*a, **k):
        raise AssertionError("recomputed despite the cache")

    monkeypatch.setattr(mero, "erm_groups", boom)
    p2 = make(data, {})
    np.testing.assert_array_equal(p2.rstar_train, p1.rstar_train)
    np.testing.assert_array_equal(p2.rstar_test, p1.rstar_test)
    np.testing.assert_array_equal(p2.erm_train["iterations"], p1.erm_train["iterations"])
    # different data, or different ERM parameters: different keys
    other = tiny_data(seed=1)
    po = GDROProblem(other)
    key = split_key(p1.X, p1.y, p1.offsets, "logistic", 1, 10.0, 1e-7, 5000)
    assert split_key(po.X, po.y, po.offsets, "logistic", 1, 10.0, 1e-7, 5000) != key
    assert split_key(po.X, p1.y, p1.offsets, "logistic", 1, 10.0, 1e-7, 5000) != key
    assert split_key(p1.X, p1.y, p1.offsets, "logistic", 1, 5.0, 1e-7, 5000) != key
    y2 = p1.y.copy()
    y2[7] *= -1
    assert split_key(p1.X, y2, p1.offsets, "logistic", 1, 10.0, 1e-7, 5000) != key
    with pytest.raises(AssertionError, match="recomputed"):
        make(other, {})                                      # a miss, not a collision
    monkeypatch.setattr(mero, "erm_groups", erm_groups)
    p4 = make(other, {})
    assert len(sorted((tmp_path / "data").rglob("*.npz"))) == 4
    assert not np.allclose(p4.rstar_train, p1.rstar_train)


def test_bad_problem_params():
    with pytest.raises(DrocliError, match="test_rstar"):
        make(tiny_data(), {"test_rstar": "both"})
    with pytest.raises(DrocliError, match="radius"):
        make(tiny_data(), {"radius": 0.0})


# ---- convergence to the cvxpy MERO optimum -------------------------------------------------------
@pytest.fixture(scope="module")
def mero_optimum(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DROCLI_DATA", str(tmp_path_factory.mktemp("cache")))
    data = tiny_data()
    p = make(data, {})
    X, y = p.X.astype(float), p.y
    w, t = cp.Variable(p.d), cp.Variable()
    cons = [cp.norm(w, 2) <= 10.0]
    for i in range(p.m):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        risk = cp.sum(cp.logistic(-cp.multiply(y[lo:hi], X[lo:hi] @ w))) / (hi - lo)
        cons.append(risk - p.rstar_train[i] <= t)
    cp.Problem(cp.Minimize(t), cons).solve(solver=cp.CLARABEL)
    opt = p.evaluate(w.value)["max_excess_risk_train"]
    start = p.evaluate(np.zeros(p.shape))["max_excess_risk_train"]
    assert start - opt > 0.1                                  # a meaningful gap to close
    mp.undo()
    return data, opt


TINY_PARAMS = {   # budgets in epochs of N; generous stage 1 so that Rhat^* is accurate
    "alem": ({"gamma_w": 0.3, "gamma_q": 1.0, "gamma_1": 1.0, "schedule": "constant",
              "stage1_epochs": 200.0}, 600),
    "ermeg": ({"gamma_q": 3.0, "E": 2, "stage1_epochs": 100.0}, 400),
    "tsa": ({"gamma_w": 0.03, "gamma_q": 0.1, "gamma_1": 0.1, "stage1_epochs": 500.0}, 2000),
}


@pytest.mark.parametrize("name", sorted(TINY_PARAMS))
def test_solver_reaches_cvxpy_mero_optimum(name, mero_optimum):
    data, opt = mero_optimum
    p = make(data, {})
    entry = registry.get("solver", name)
    assert entry.family == "mero"
    params, epochs = TINY_PARAMS[name]
    mon = Monitor(p, budget=epochs * p.N, checkpoints=5)
    W, q = entry.func(p, registry.resolve_params(entry, params), np.random.default_rng(0), mon)
    final = p.evaluate(W)["max_excess_risk_train"]
    assert final >= opt - 1e-6
    assert final - opt < 5e-3, (name, final, opt)
    assert mon.status == "done"
    assert np.all(q >= 0) and q.sum() == pytest.approx(1.0)


def test_alem_stage1_estimates_rstar():
    p = make(tiny_data(n_train=50), {})
    rhat, wbars = alem.stage1(p, np.random.default_rng(0), 200 * p.n_i, 1.0, "constant")
    assert p.oracle_calls <= 200 * p.N
    assert np.all(rhat >= p.rstar_train - 1e-9)             # R_i at a feasible point
    np.testing.assert_allclose(rhat, p.rstar_train, atol=2e-3)
    for i, w in enumerate(wbars):
        assert np.linalg.norm(w) <= 10.0 + 1e-9
        assert p.risks(w)[i] == pytest.approx(rhat[i])


# ---- oracle counts ----------------------------------------------------------------------------
class SpyMonitor(Monitor):
    """Monitor that also remembers the counter and the point at every call."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.seen = []

    def __call__(self, *point, **kw):
        self.seen.append((self.calls, np.array(point[0], copy=True)))
        return super().__call__(*point, **kw)


def test_alem_stage1_cost_counted_before_first_monitor_call():
    p = make(tiny_data(n_train=30, n_train_max=50), {})     # n_i = 30, 40, 50
    entry = registry.get("solver", "alem")
    mon = SpyMonitor(p, budget=40 * p.N, checkpoints=10)
    entry.func(p, registry.resolve_params(entry, {}), np.random.default_rng(0), mon)
    # K_i = n_i: S_1 = 3 epochs of (n_i + 2 n_i) plus the final pass n_i = exactly 10 n_i
    assert mon.seen[0][0] == 10 * p.N
    assert mon.rows[0][1] == 10 * p.N                        # curves start after stage 1
    calls = [c for c, _ in mon.seen]
    assert calls == sorted(calls) and calls[-1] >= 40 * p.N
    # stage1_K: nbar (the paper's K = n_bar for every group)
    p2 = make(tiny_data(n_train=30, n_train_max=50), {})
    mon2 = SpyMonitor(p2, budget=40 * p2.N, checkpoints=10)
    entry.func(p2, registry.resolve_params(entry, {"stage1_K": "nbar"}),
               np.random.default_rng(0), mon2)
    want = 0
    for n in p2.n_i:
        S, K = alem.stage1_plan(int(n), 40, 10 * int(n))
        want += S * (n + 2 * K) + n
    assert mon2.seen[0][0] == want


def test_stage1_budget_is_at_most_half_the_run():
    p = make(tiny_data(), {})
    b = alem.stage1_budgets(p, Monitor(p, budget=6 * p.N), 10.0)
    np.testing.assert_array_equal(b, 3 * p.n_i)
    b = alem.stage1_budgets(p, Monitor(p, budget=70 * p.N), 10.0)
    np.testing.assert_array_equal(b, 10 * p.n_i)
    assert alem.stage1_plan(40, 40, 120) == (1, 20)         # one shortened epoch
    assert alem.stage1_plan(40, 40, 400) == (3, 40)


@pytest.mark.parametrize("E", [1, 3])
def test_ermeg_counts_E_plus_one_passes_per_round(E):
    p = make(tiny_data(), {})
    entry = registry.get("solver", "ermeg")
    mon = SpyMonitor(p, budget=40 * p.N, checkpoints=40)
    entry.func(p, registry.resolve_params(entry, {"E": E}), np.random.default_rng(0), mon)
    calls = np.array([c for c, _ in mon.seen])
    s1 = 10 * p.N                        # stage 1: (10 - 1) FISTA steps + 1 pass per group
    assert calls[0] == s1
    # every counted step is one full pass of N; the output changes once per round
    assert np.all(np.diff(calls[:-1]) == p.N)
    changes = [c for (c, w), (_, w0) in zip(mon.seen[1:], mon.seen[:-1], strict=True)
               if not np.array_equal(w, w0)]
    assert changes[0] == s1 + (E + 1) * p.N
    assert np.all(np.diff(changes) == (E + 1) * p.N)
    assert len(changes) == (40 - 10) // (E + 1)
    rhat = ermeg.stage1(make(tiny_data(), {}), 10 * p.n_i, p.lhat_train)
    assert np.all(rhat >= p.rstar_train - 1e-9)


@pytest.mark.parametrize("shift,per_round", [("sample", 2), ("full", 1)])
def test_tsa_counts(shift, per_round):
    p = make(tiny_data(), {})
    entry = registry.get("solver", "tsa")
    mon = SpyMonitor(p, budget=30 * p.N, checkpoints=7)
    entry.func(p, registry.resolve_params(entry, {"shift": shift}), np.random.default_rng(0),
               mon)
    calls = np.array([c for c, _ in mon.seen])
    assert calls[0] == 10 * p.N          # T_1 = 10 n_i (sample) or 9 n_i SGD steps + 1 pass
    assert np.all((calls - calls[0]) % (per_round * p.m) == 0)
    assert calls[-1] >= 30 * p.N
    wbars, rhat = tsa.stage1(make(tiny_data(), {}), np.random.default_rng(0), 10 * p.n_i,
                             0.05, use_sample=False)
    assert np.all(rhat >= p.rstar_train - 1e-9) and np.all(rhat < math.log(2))


def test_solvers_restore_shift_and_reject_bad_params():
    p = make(tiny_data(), {})
    for name, bad in (("alem", {"stage1_K": "x"}), ("alem", {"gamma_1": 0.0}),
                      ("tsa", {"shift": "x"}), ("ermeg", {"E": 0}),
                      ("ermeg", {"gamma_q": -1.0})):
        entry = registry.get("solver", name)
        with pytest.raises(DrocliError):
            entry.func(p, registry.resolve_params(entry, bad), np.random.default_rng(0),
                       Monitor(p, budget=30 * p.N))
    entry = registry.get("solver", "alem")
    entry.func(p, registry.resolve_params(entry, {}), np.random.default_rng(0),
               Monitor(p, budget=30 * p.N))
    np.testing.assert_array_equal(p.shift, 0.0)
