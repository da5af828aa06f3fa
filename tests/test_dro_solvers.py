"""GDRO solvers: compiled step vs numpy reference, unbiasedness of the stochastic gradients,
convergence to the cvxpy optimum of a tiny GDRO problem, and the solver/monitor contract."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.run.monitor import Monitor
from drocli.solvers.dro.mirror_prox import VRState, group_rows, single_rows, vr_step_reference
from tests.conftest import plugin

make = plugin("problem", "gdro")

SOLVERS = ("smd", "mpvr", "aleg", "al_svre")


def tiny_data(seed=0, m=3, d=5, n=40, noise=0.1, classes=None):
    """Groups labelled by nearby directions w0 + noise: GDRO optimum well below ln 2."""
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(d)
    w0 /= np.linalg.norm(w0)
    sizes = np.full(m, n) if np.isscalar(n) else np.asarray(n)
    g = np.repeat(np.arange(m), sizes)
    X = rng.standard_normal((g.size, d)).astype(np.float32)
    if classes:
        C = rng.standard_normal((d, classes))
        y = np.argmax(X.astype(float) @ C + rng.standard_normal((g.size, classes)), 1)
        return GroupedData("tiny", X, y.astype(float), g, n_classes=classes)
    W = w0 + 0.7 * rng.standard_normal((m, d)) / np.sqrt(d)
    y = np.where(np.einsum("nd,nd->n", X.astype(float), W[g]) >= 0, 1.0, -1.0)
    y = np.where(rng.random(g.size) < noise, -y, y)
    return GroupedData("tiny", X, y, g)


def full_gradient(p, W, q):
    """(16) by direct float64 numpy: (sum_i q_i grad R_i(W), R)."""
    R = np.empty(p.m)
    G = np.zeros(p.shape)
    vals, ds = p.sample_oracle(W, np.arange(p.N))
    for i in range(p.m):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        R[i] = vals[lo:hi].mean()
        G += q[i] * p.X[lo:hi].astype(float).T @ ds[lo:hi] / (hi - lo)
    return G, R


def prepared_state(p, seed=0):
    """A VRState with a non-trivial snapshot (random w, non-uniform q) and iterate."""
    rng = np.random.default_rng(seed)
    st = VRState(p)
    D = p.d * p.k
    st.acc_w[:] = rng.standard_normal(D) * 0.3
    st.acc_q[:] = rng.dirichlet(np.ones(p.m))
    st.acc_L[:] = np.log(rng.dirichlet(np.ones(p.m)))
    st.take_snapshot()
    st.w[:] = rng.standard_normal(D) * 0.3
    st.lq[:] = np.log(rng.dirichlet(np.ones(p.m)))
    return st


def extract_g(st, p, rows, grps, scale, gamma_w=0.05, gamma_q=0.05):
    """Run one inner step with a = 0 and read the stochastic gradient off the update:
    w_new = w - gamma_w g_w (ball inactive) and lq_new = lq + gamma_q r - const."""
    w0, lq0 = st.w.copy(), st.lq.copy()
    st.run(rows, grps, scale, 0.0, gamma_w, gamma_q, 1.0)
    g = (w0 - st.w) / gamma_w
    r = (st.lq - lq0) / gamma_q
    wh, qh = st.wh.copy(), st.qh.copy()
    st.w[:], st.lq[:] = w0, lq0
    return g, r - r.mean(), wh, qh


# ---- the compiled step against the numpy reference ------------------------------------------
@pytest.mark.parametrize("mode,loss,radius", [("aleg", "logistic", 10.0),
                                              ("aleg", "logistic", 0.4),
                                              ("mpvr", "logistic", 10.0),
                                              ("aleg", "softmax", 10.0)])
def test_kernel_step_matches_numpy_reference(mode, loss, radius):
    data = tiny_data(classes=4 if loss == "softmax" else None)
    p = make(data, {"loss": loss, "radius": radius})
    st = prepared_state(p)
    rng = np.random.default_rng(1)
    if mode == "aleg":
        rows, grps, scale = group_rows(p, rng, 1), np.arange(p.m)[None, :], np.ones(p.m)
    else:
        rows, grps, scale = single_rows(p, rng, 1, "importance")
    a, gw, gq = 0.3, 0.2, 0.7
    shape = p.shape
    ref = vr_step_reference(p.X, p.y, loss, rows[0], grps[0], scale,
                            st.w.reshape(shape).copy(), st.lq.copy(), st.wbar.reshape(shape),
                            st.Lbar, st.w_s.reshape(shape), st.q_s,
                            st.gw_full.reshape(shape), st.r_full, a, gw, gq, radius)
    calls = p.oracle_calls
    st.run(np.ascontiguousarray(rows), np.ascontiguousarray(grps), scale, a, gw, gq, 1.0)
    assert p.oracle_calls - calls == 2 * rows.shape[1]
    np.testing.assert_allclose(st.wh.reshape(shape), ref[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(st.qh, ref[1], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(st.w.reshape(shape), ref[2], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(st.lq, ref[3], rtol=1e-6, atol=1e-7)
    if radius < 1:
        assert np.linalg.norm(st.w) == pytest.approx(radius)


# ---- unbiasedness --------------------------------------------------------------------------------
def test_group_sampling_gradient_19_is_unbiased_monte_carlo():
    """E over the group sampling (18) of grad F(z; xi), eq. (19), equals (16)."""
    p = make(tiny_data(n=(30, 40, 50)), {})
    rng = np.random.default_rng(2)
    W = rng.standard_normal((p.d, 1)) * 0.5
    q = rng.dirichlet(np.ones(p.m))
    G16, R16 = full_gradient(p, W, q)
    T = 40000
    rows = group_rows(p, rng, T)                     # (T, m)
    vals, ds = p.sample_oracle(W, rows.reshape(-1))
    vals, ds = vals.reshape(T, p.m), ds.reshape(T, p.m)
    Xr = p.X[rows].astype(float)                     # (T, m, d)
    gw = np.einsum("tm,tmd->td", q * ds, Xr)         # sum_i q_i grad l(w; xi_i)
    for est, truth in ((gw, G16[:, 0]), (vals, R16)):
        se = est.std(0) / math.sqrt(T)
        assert np.all(np.abs(est.mean(0) - truth) < 5 * se + 1e-12)


@pytest.mark.parametrize("sampling", ["importance", "uniform"])
def test_mpvr_oracles_89_93_are_unbiased_monte_carlo(sampling):
    """E of (m or N/n_i) (q_i grad l ; -l e_i) over Option II / Option I sampling equals (16)."""
    p = make(tiny_data(n=(30, 40, 50)), {})
    rng = np.random.default_rng(3)
    W = rng.standard_normal((p.d, 1)) * 0.5
    q = rng.dirichlet(np.ones(p.m))
    G16, R16 = full_gradient(p, W, q)
    T = 200000
    rows, grps, scale = single_rows(p, rng, T, sampling)
    rows, grps = rows[:, 0], grps[:, 0]
    assert np.all(p.g[rows] == grps)
    vals, ds = p.sample_oracle(W, rows)
    c = scale[grps]
    gw = (c * q[grps] * ds[:, 0])[:, None] * p.X[rows].astype(float)
    rq = np.zeros((T, p.m))
    rq[np.arange(T), grps] = c * vals
    for est, truth in ((gw, G16[:, 0]), (rq, R16)):
        se = est.std(0) / math.sqrt(T)
        assert np.all(np.abs(est.mean(0) - truth) < 5 * se + 1e-12)


def test_vr_estimator_20_is_exactly_unbiased_over_all_samples():
    """Enumerating every sample: the kernel's estimator (20) averages to grad F(z_{k+1/2})."""
    n = 12
    p = make(tiny_data(n=n), {})
    st = prepared_state(p, seed=4)
    # ALEG group sampling: draw t uses sample t of every group -> each group enumerated once
    gs, rs = [], []
    for t in range(n):
        rows = (p.offsets[:-1] + t)[None, :]
        g, r, wh, qh = extract_g(st, p, rows, np.arange(p.m)[None, :], np.ones(p.m))
        gs.append(g)
        rs.append(r)
    G, R = full_gradient(p, wh.reshape(p.shape), qh)
    np.testing.assert_allclose(np.mean(gs, 0), G[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.mean(rs, 0), R - R.mean(), rtol=1e-5, atol=1e-6)
    # MPVR importance sampling: every row with probability 1 / (m n_i)
    scale = np.full(p.m, float(p.m))
    acc_g, acc_r = 0.0, 0.0
    for row in range(p.N):
        i = int(p.g[row])
        g, r, wh, qh = extract_g(st, p, np.array([[row]]), np.array([[i]]), scale)
        acc_g = acc_g + g / (p.m * p.n_i[i])
        acc_r = acc_r + r / (p.m * p.n_i[i])
    np.testing.assert_allclose(acc_g, G[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acc_r, R - R.mean(), rtol=1e-5, atol=1e-6)


def test_vr_gradient_equals_full_gradient_at_the_snapshot():
    """g = grad F(z^s) when z_{k+1/2} = z^s, for any drawn samples."""
    p = make(tiny_data(), {})
    st = prepared_state(p, seed=5)
    gw, gq = 0.05, 0.05
    # choose the iterate so that the half point (a = 0) is exactly the snapshot
    st.w[:] = st.w_s + gw * st.gw_full
    lq = np.log(st.q_s) - gq * st.r_full
    st.lq[:] = lq - np.log(np.exp(lq).sum())
    rng = np.random.default_rng(6)
    for _ in range(3):
        g, r, wh, qh = extract_g(st, p, group_rows(p, rng, 1), np.arange(p.m)[None, :],
                                 np.ones(p.m), gw, gq)
        np.testing.assert_allclose(wh, st.w_s, atol=1e-12)
        np.testing.assert_allclose(qh, st.q_s, atol=1e-12)
        np.testing.assert_allclose(g, st.gw_full, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(r, st.r_full - st.r_full.mean(), atol=1e-7)


# ---- convergence to the GDRO optimum ------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_optimum():
    cp = pytest.importorskip("cvxpy")
    data = tiny_data()
    p = make(data, {"loss": "logistic", "radius": 10.0})
    X, y = p.X.astype(float), p.y
    w, t = cp.Variable(p.d), cp.Variable()
    cons = [cp.norm(w, 2) <= 10.0]
    for i in range(p.m):
        lo, hi = p.offsets[i], p.offsets[i + 1]
        cons.append(cp.sum(cp.logistic(-cp.multiply(y[lo:hi], X[lo:hi] @ w))) / (hi - lo) <= t)
    cp.Problem(cp.Minimize(t), cons).solve(solver=cp.CLARABEL)
    opt = float(p.risks(w.value).max())
    assert math.log(2) - opt > 0.1             # a meaningful gap to close
    return data, opt


TINY_PARAMS = {
    "smd": {"gamma_w": 0.03, "gamma_q": 0.1},
    "mpvr": {"gamma_w": 0.1, "gamma_q": 0.3},
    "aleg": {"gamma_w": 0.3, "gamma_q": 1.0},
    "al_svre": {"gamma_w": 0.1, "gamma_q": 0.3},
}


@pytest.mark.parametrize("name", SOLVERS)
def test_solver_reaches_cvxpy_gdro_optimum(name, tiny_optimum):
    data, opt = tiny_optimum
    p = make(data, {"loss": "logistic", "radius": 10.0})
    entry = registry.get("solver", name)
    params = registry.resolve_params(entry, TINY_PARAMS[name])
    mon = Monitor(p, budget=2000 * p.N, checkpoints=5)
    W, q = entry.func(p, params, np.random.default_rng(0), mon)
    final = float(p.risks(W).max())
    assert final - opt < 2e-3, (name, final, opt)
    assert final >= opt - 1e-6
    assert mon.status == "done"


# ---- contract ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("eval_point", ["output", "last"])
def test_solver_contract(name, eval_point):
    entry = registry.get("solver", name)
    assert entry.family == "gdro"
    assert entry.func.__doc__ and entry.defaults["eval_point"] == "output"
    p = make(tiny_data(n=(20, 30, 25)), {})
    params = registry.resolve_params(entry, {**TINY_PARAMS[name], "eval_point": eval_point})
    budget = 50 * p.N
    mon = Monitor(p, budget=budget, checkpoints=10)
    W, q = entry.func(p, params, np.random.default_rng(1), mon)
    assert W.shape == p.shape and q.shape == (p.m,)
    assert np.all(q >= 0) and q.sum() == pytest.approx(1.0)
    assert budget <= p.oracle_calls < budget + p.N + 2 * p.m
    assert mon.status == "done"
    vals = [r[4] for r in mon.rows if r[3] == "max_risk_train"]
    assert len(vals) >= 10 and np.all(np.isfinite(vals))
    assert vals[0] == pytest.approx(math.log(2))
    calls = [r[1] for r in mon.rows]
    assert calls == sorted(calls)


@pytest.mark.parametrize("name", SOLVERS)
def test_solver_deterministic_and_independent_of_checkpoints(name):
    entry = registry.get("solver", name)
    params = registry.resolve_params(entry, TINY_PARAMS[name])
    outs = []
    for seed, ckpt in ((7, 4), (7, 13), (8, 4)):
        p = make(tiny_data(), {})
        W, q = entry.func(p, params, np.random.default_rng(seed),
                          Monitor(p, budget=30 * p.N, checkpoints=ckpt))
        outs.append((W, q, p.oracle_calls))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]
    assert not np.array_equal(outs[0][0], outs[2][0])


def test_solvers_run_on_softmax_problem():
    data = tiny_data(classes=4, n=30)
    for name in SOLVERS:
        p = make(data, {"loss": "softmax", "radius": 10.0})
        entry = registry.get("solver", name)
        params = registry.resolve_params(entry, {"gamma_w": 0.05, "gamma_q": 0.3})
        W, q = entry.func(p, params, np.random.default_rng(0), Monitor(p, 100 * p.N, 2))
        assert W.shape == (5, 4)
        assert p.risks(W).max() < math.log(4) - 0.05, name


def test_bad_parameters_raise_drocli_error():
    """Bad values are refused by the solvers' models, with the parameter named."""
    for name, bad, word in (("mpvr", {"sampling": "x"}, "sampling"),
                            ("aleg", {"schedule": "x"}, "schedule"),
                            ("smd", {"gamma_w": -1.0}, "gamma_w"),
                            ("aleg", {"K": 2.5}, "K"),
                            ("al_svre", {"beta": -0.1}, "beta"),
                            ("smd", {"gamma_q": float("nan")}, "gamma_q"),
                            ("mpvr", {"alpha": 1.5}, "alpha")):
        with pytest.raises(DrocliError, match=word):
            registry.resolve_params(registry.get("solver", name), bad)

def test_coupled_theory_geometry_steps():
    """eta > 0: gamma_w = 2 D_w^2 eta = R^2 eta and gamma_q = 2 ln(m) eta (docs/papers/000.md
    §1.4)."""
    from drocli.solvers.dro.mirror_prox import effective_steps

    p = make(tiny_data(), {"radius": 3.0})
    gw, gq = effective_steps({"gamma_w": 1.0, "gamma_q": 1.0, "eta": 0.01}, p)
    assert gw == pytest.approx(0.09) and gq == pytest.approx(2 * math.log(3) * 0.01)
    assert effective_steps({"gamma_w": 0.2, "gamma_q": 0.5, "eta": 0.0}, p) == (0.2, 0.5)
