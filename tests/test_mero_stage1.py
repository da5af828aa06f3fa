"""ALEM's stage 1 under the paper's rule (issue 26; docs/papers/000.md §2.8): Algorithm 2 runs
both stages with the same S, K, alpha and learning rates, so stage 1 gets half the run's
budget (`stage1_share: 0.5`) and the stage-2 w-step (`gamma_1 = gamma_w`). Checked against
an independent truth: R_i^* by scipy's SLSQP on the ball, not drocli's FISTA. Also ERMEG's
counted smoothness constant (`smoothness: counted`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

from drocli.plugins import registry
from drocli.run.monitor import Monitor
from drocli.solvers.dro import alem, ermeg
from tests.conftest import plugin

make = plugin("problem", "mero")
load_synthetic = plugin("data", "gdro_synthetic")

SMALL = {"groups": 3, "dim": 10, "n_train": 200, "n_test": 50,
         "label_noise": [0.05, 0.15, 0.25]}
GAMMA_W = 0.3        # the stage-2 w-step of the tiny MERO problem (tests/test_mero.py)
TOL = 2e-3           # |Rhat_i^* - R_i^*| at a 200 N run (stage 1 = 100 N)


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("DROCLI_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("DROCLI_NO_CACHE", raising=False)


def scipy_rstar(p, radius=10.0) -> np.ndarray:
    """min over the ball of each group's mean logistic loss, by SLSQP (float64)."""
    X = p.X.astype(np.float64)
    out = []
    for i in range(p.m):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        Xi, yi = X[lo:hi], p.y[lo:hi]

        def f(w, Xi=Xi, yi=yi):
            return float(np.mean(np.logaddexp(0.0, -yi * (Xi @ w))))

        def g(w, Xi=Xi, yi=yi):
            return -(Xi.T @ (yi / (1.0 + np.exp(yi * (Xi @ w))))) / len(yi)

        ball = {"type": "ineq", "fun": lambda w: radius ** 2 - w @ w, "jac": lambda w: -2 * w}
        r = so.minimize(f, np.zeros(X.shape[1]), jac=g, method="SLSQP", constraints=[ball],
                        options={"ftol": 1e-14, "maxiter": 1000})
        assert r.success
        out.append(r.fun)
    return np.array(out)


def test_stage1_with_the_papers_rule_finds_rstar():
    p = make(load_synthetic(SMALL, 0), {})
    truth = scipy_rstar(p)
    np.testing.assert_allclose(p.rstar_train, truth, atol=1e-8)   # the metric's R_i^*
    worst = []
    for epochs in (20, 60, 200):
        mon = Monitor(p, budget=epochs * p.N)
        b = alem.stage1_budgets(p, mon, 10.0, share=0.5)
        assert b.sum() <= 0.5 * epochs * p.N and b.sum() > 0.5 * epochs * p.N - p.m
        rhat, _ = alem.stage1(p, np.random.default_rng(0), b, GAMMA_W)
        assert np.all(rhat >= truth - 1e-9)                   # R_i at a feasible point
        worst.append(float(np.max(rhat - truth)))
    assert worst[-1] < TOL, worst
    assert worst[0] > worst[1] > worst[2]                     # more budget, closer (Thm 5.2)


def test_alem_stage1_share_starts_the_curve_at_half_the_budget():
    p = make(load_synthetic(SMALL, 0), {})
    entry = registry.get("solver", "alem")
    mon = Monitor(p, budget=40 * p.N, checkpoints=10)
    params = registry.resolve_params(entry, {"gamma_w": GAMMA_W, "gamma_1": GAMMA_W,
                                             "stage1_share": 0.5})
    entry.func(p, params, np.random.default_rng(0), mon)
    first = mon.rows[0][1]
    assert 19 * p.N <= first <= 20 * p.N                      # S_1 (n_i + 2 K_i) + n_i
    assert mon.status == "done"


def test_stage1_share_for_every_mero_method():
    p = make(load_synthetic(SMALL, 0), {})
    for name in ("alem", "ermeg", "tsa"):
        q = make(load_synthetic(SMALL, 0), {})
        entry = registry.get("solver", name)
        mon = Monitor(q, budget=30 * q.N, checkpoints=5)
        entry.func(q, registry.resolve_params(entry, {"stage1_share": 0.5}),
                   np.random.default_rng(0), mon)
        assert 13 * p.N <= mon.rows[0][1] <= 15 * p.N, name


def test_ermeg_counted_smoothness_matches_and_is_counted():
    p = make(load_synthetic(SMALL, 0), {})
    c0 = p.oracle_calls
    L = ermeg.counted_smoothness(p)
    assert p.oracle_calls - c0 >= p.N                         # at least one product per group
    assert np.all(L >= p.lhat_train * (1 - 1e-9))             # safe: never below L-hat
    assert np.all(L <= p.lhat_train * (1 + 2 * ermeg.TOL))
    entry = registry.get("solver", "ermeg")
    q = make(load_synthetic(SMALL, 0), {})
    mon = Monitor(q, budget=30 * q.N, checkpoints=5)
    entry.func(q, registry.resolve_params(entry, {"smoothness": "counted"}),
               np.random.default_rng(0), mon)
    assert mon.rows[0][1] == 10 * q.N + (p.oracle_calls - c0)  # stage 1 + the counted L
