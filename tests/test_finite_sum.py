"""Finite-sum core of paper 002 (Zhao, Lyu & Kolar 2023): data model A, the problem (gradients,
x*, F*), the samplers (exact unbiasedness, draw frequencies, floored simplex, OSMD/AdaOSMD
steps against a direct numpy recursion) and the solvers (convergence to the lstsq solution,
compiled step against a numpy reference, oracle counts). Independent truth only: finite
differences, scipy.optimize, normal equations, bisection."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from drocli.data.base import GroupedData
from drocli.data.regression_synthetic import load as load_regression
from drocli.errors import DrocliError
from drocli.ops import samplers as S
from drocli.plugins import registry
from drocli.problems.finite_sum import FiniteSumProblem, Snapshot
from drocli.run.cells import expand
from drocli.run.monitor import Monitor
from drocli.solvers.finite_sum.estimators import Draws, delta_norms, vr_estimate, vr_step_single
from drocli.spec import load_spec, parse_set
from tests.conftest import plugin

ROOT = Path(__file__).resolve().parents[1]

SAMPLERS = ("uniform", "importance", "optimal", "osmd", "adaosmd")


# ---- helpers: independent numpy truth -------------------------------------------------------
def np_grads(A, y, obj, mu, x):
    """Per-sample gradients (n, d) by the textbook formulas."""
    s = A @ x
    c = s - y if obj == "least_squares" else 1.0 / (1.0 + np.exp(-s)) - y
    return c[:, None] * A + mu * x[None, :]


def np_f(A, y, obj, mu, x):
    """Per-sample losses (n,)."""
    s = A @ x
    if obj == "least_squares":
        v = 0.5 * (s - y) ** 2
    else:
        v = np.log1p(np.exp(s)) - y * s
    return v + 0.5 * mu * (x @ x)


def tiny(obj="least_squares", n=9, d=4, mu=0.0, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) * np.exp(0.5 * rng.standard_normal(n))[:, None]
    if obj == "least_squares":
        y = A @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-A @ rng.standard_normal(d)))).astype(float)
        y[:2] = [0.0, 1.0]
    return FiniteSumProblem(A, y, objective=obj, mu=mu)


def bisect_projection(pt, alpha):
    """max(alpha/n, c pt) with sum 1, c by root finding (independent of Algorithm 5)."""
    n = pt.size
    f = lambda c: np.maximum(alpha / n, c * pt).sum() - 1.0  # noqa: E731
    hi = 1.0 / pt.max()                      # c pt_max = 1: the sum is >= 1
    c = brentq(f, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    return np.maximum(alpha / n, c * pt)


def adapted_sampler(name, n, b=1, seed=0, steps=40, lr=None, L=None, horizon=200):
    """A sampler moved away from uniform by `steps` random feedback rounds."""
    rng = np.random.default_rng(seed)
    kw = {}
    if name == "osmd":
        kw["osmd_lr"] = lr if lr is not None else 3e-4
    if name == "adaosmd":
        kw.update(horizon=horizon, abar=1.0, eta_scale=lr if lr is not None else 1e6)
    s = S.make_sampler(name, n, batch=b, L=L if L is not None else rng.random(n) + 0.1, **kw)
    if name == "optimal":
        s.set_optimal(rng.random(n) ** 2)
    for _ in range(steps if s.adaptive else 0):
        idx, pk = s.draw(rng.random((b, s.uniforms_per_draw)))
        s.update(idx, rng.exponential(1.0, b) * (1 + idx), pk)
    return s


# ---- data model A -------------------------------------------------------------------------
def test_regression_data_moments_and_determinism():
    nu, sigma, d = 0.5, 2.0, 6
    D = load_regression({"n": 40000, "d": d, "nu": nu, "sigma": sigma}, seed=3)
    A, b, info = D.X_train, D.y_train, D.info
    assert A.dtype == np.float64 and A.shape == (40000, d) and np.all(D.g_train == 0)
    sd = 25.0 ** (np.arange(d) / (d - 1) - 1)
    assert np.allclose(info["Sigma_diag"], sd) and sd[0] == pytest.approx(0.04)
    # E a_ij^2 = E[s] Sigma_jj = exp(nu^2/2) Sigma_jj (s_i Sigma is the covariance)
    m2 = (A ** 2).mean(axis=0) / (math.exp(nu ** 2 / 2) * sd)
    assert np.all(np.abs(m2 - 1) < 0.05), m2
    assert np.abs(A.mean(axis=0) / np.sqrt(sd)).max() < 0.03
    ls = np.log(info["scales"])
    assert abs(ls.std() - nu) < 0.01 and abs(ls.mean()) < 0.01
    resid = b - A @ info["theta_star"]
    assert abs(resid.std() - sigma) < 0.03 and abs(resid.mean()) < 0.03
    # whitened rows are standard normal and uncorrelated
    U = A / np.sqrt(info["scales"])[:, None] / np.sqrt(sd)[None, :]
    assert np.abs(np.cov(U.T) - np.eye(d)).max() < 0.03
    big = load_regression({"n": 10, "d": 2000}, seed=1).info["theta_star"]
    assert abs(big.mean() - 10.0) < 0.25 and abs(big.std() - 3.0) < 0.2
    again = load_regression({"n": 40000, "d": d, "nu": nu, "sigma": sigma}, seed=3)
    assert np.array_equal(again.X_train, A) and np.array_equal(again.y_train, b)
    other = load_regression({"n": 40000, "d": d, "nu": nu, "sigma": sigma}, seed=4)
    assert not np.array_equal(other.X_train, A)


def test_regression_zhao_std_mode_and_errors():
    D = load_regression({"n": 20000, "d": 5, "nu": 1.0, "cov_mode": "zhao2021_std"}, seed=0)
    s, sd = D.info["scales"], D.info["Sigma_diag"]
    assert s.max() == pytest.approx(10.0)
    U = D.X_train / (s[:, None] * sd[None, :])   # s_i Sigma_jj is the standard deviation
    assert np.all(np.abs(U.std(axis=0) - 1) < 0.02)
    for bad in ({"cov_mode": "x"}, {"nu": -1.0}, {"n": 0}, {"cond": 0.5}):
        with pytest.raises(DrocliError):
            load_regression(bad, seed=0)


# ---- problem: gradients, x*, F* -------------------------------------------------------------
@pytest.mark.parametrize("obj,mu", [("logistic", 0.0), ("logistic", 0.1),
                                    ("least_squares", 0.05)])
def test_gradients_vs_finite_differences(obj, mu):
    p = tiny(obj, mu=mu)
    x = np.random.default_rng(1).standard_normal(p.d)
    h = 1e-6
    E = np.eye(p.d)
    fd_F = np.array([(p.loss(x + h * e) - p.loss(x - h * e)) / (2 * h) for e in E])
    assert np.allclose(p.full_gradient(x), fd_F, atol=1e-8)
    fd_i = np.stack([(np_f(p.A, p.y, obj, mu, x + h * e) - np_f(p.A, p.y, obj, mu, x - h * e))
                     / (2 * h) for e in E], axis=1)
    G = p.sample_gradients(x, np.arange(p.n))
    assert np.allclose(G, fd_i, atol=1e-7)
    assert p.loss(x) == pytest.approx(np_f(p.A, p.y, obj, mu, x).mean(), rel=1e-13)
    # L_i bounds the curvature of f_i along random directions
    for i in range(p.n):
        for e in np.random.default_rng(i).standard_normal((5, p.d)):
            e /= np.linalg.norm(e)
            g1, g2 = p.sample_gradients(x, [i])[0], p.sample_gradients(x + e, [i])[0]
            assert np.linalg.norm(g1 - g2) <= p.L[i] * (1 + 1e-12)


def test_logistic_f_star_vs_scipy_and_label_mapping():
    for mu in (0.0, 0.01):
        p = tiny("logistic", n=30, d=3, mu=mu, seed=2)
        r = minimize(lambda x, p=p, mu=mu: np_f(p.A, p.y, "logistic", mu, x).mean(),
                     np.zeros(p.d), method="BFGS", options={"gtol": 1e-13},
                     jac=lambda x, p=p, mu=mu: np_grads(p.A, p.y, "logistic", mu, x).mean(0))
        assert p.info["x_star_converged"] and p.info["x_star_grad_norm"] < 1e-11
        assert p.f_star == pytest.approx(r.fun, abs=1e-12)
        assert np.allclose(p.x_star, r.x, atol=1e-5)
        assert p.gap(r.x) >= -1e-14
    q = tiny("logistic", n=30, d=3, seed=2)
    pm = FiniteSumProblem(q.A, 2 * q.y - 1, objective="logistic")   # +-1 labels -> {0, 1}
    assert np.array_equal(pm.y, q.y) and pm.f_star == pytest.approx(q.f_star, rel=1e-14)
    with pytest.raises(DrocliError):
        FiniteSumProblem(q.A, q.y + 0.5, objective="logistic")


def test_least_squares_solution_constants_and_gap_identity():
    for mu in (0.0, 0.3):
        p = tiny("least_squares", n=12, d=4, mu=mu)
        H = p.A.T @ p.A / p.n + mu * np.eye(p.d)
        x_ne = np.linalg.solve(H, p.A.T @ p.y / p.n)          # normal equations
        assert np.allclose(p.x_star, x_ne, rtol=1e-10, atol=1e-12)
        ev = np.linalg.eigvalsh(H)
        assert p.strong_convexity == pytest.approx(ev[0], rel=1e-10)
        assert p.L_F == pytest.approx(ev[-1], rel=1e-10)
        assert p.L_F <= p.L_bar * (1 + 1e-12)                  # Lemma 1
        assert np.allclose(p.L, (p.A ** 2).sum(1) + mu)
        x = np.random.default_rng(0).standard_normal(p.d)
        assert p.gap(x) == pytest.approx(p.loss(x) - p.f_star, rel=1e-9)
        G = np_grads(p.A, p.y, "least_squares", mu, p.x_star)
        assert p.sigma_star2 == pytest.approx((G ** 2).sum(1).mean(), rel=1e-9)
        ev_m = p.evaluate(x, iteration=7)
        assert set(ev_m) == {"gap", "log10_gap", "loss", "dist2", "iteration"}
        assert ev_m["log10_gap"] == pytest.approx(math.log10(ev_m["gap"]))
        assert p.evaluate(p.x_star)["log10_gap"] == pytest.approx(
            math.log10(1e-16 * max(1, abs(p.f_star))))        # floor (P14)
    calls = p.oracle_calls
    p.sample_gradients(x, [0, 3, 3])
    p.full_gradient(x)
    assert p.oracle_calls == calls + 3 + p.n
    p.evaluate(x)
    p.loss(x)
    assert p.oracle_calls == calls + 3 + p.n                   # metrics are not counted


# ---- samplers -------------------------------------------------------------------------------
def test_alias_table_is_exact():
    p = np.random.default_rng(0).random(37) ** 3
    p /= p.sum()
    prob, alias = S.alias_table(p)
    implied = prob.copy()
    np.add.at(implied, alias, 1.0 - prob)
    assert np.allclose(implied / p.size, p, rtol=0, atol=1e-15)


@pytest.mark.parametrize("obj,mu", [("least_squares", 0.0), ("logistic", 0.2)])
@pytest.mark.parametrize("name", SAMPLERS)
def test_estimator_is_exactly_unbiased(name, obj, mu):
    """sum_i p_i g(i) = grad F(x) for the sampler's current p (b = 1), and
    sum_{i,j} p_i p_j g(i, j) = grad F(x) for b = 2; the feedback is ||Delta_i||^2."""
    p = tiny(obj, n=7, d=3, mu=mu, seed=5)
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(p.d), rng.standard_normal(p.d)
    snap = p.snapshot_at(w.copy())
    s = adapted_sampler(name, p.n, L=p.L)
    dist = s.distribution()
    assert dist.min() > 0 and dist.sum() == pytest.approx(1.0, abs=1e-14)
    truth = np_grads(p.A, p.y, obj, mu, x).mean(axis=0)
    D = np_grads(p.A, p.y, obj, mu, x) - np_grads(p.A, p.y, obj, mu, w)
    g, ak = np.zeros(p.d), np.zeros(1)
    acc = np.zeros(p.d)
    for i in range(p.n):
        vr_estimate(p.kdata, x, snap, Draws(np.array([i]), dist[i:i + 1], ak, g), True)
        acc += dist[i] * g
        assert ak[0] == pytest.approx((D[i] ** 2).sum(), rel=1e-10, abs=1e-14)
    assert np.allclose(acc, truth, rtol=1e-12, atol=1e-13)
    norms = np.zeros(p.n)                                       # the Optimal sampler's input
    delta_norms(p.kdata, x, snap, norms)
    assert np.allclose(norms, np.linalg.norm(D, axis=1), rtol=1e-10, atol=1e-14)
    acc2 = np.zeros(p.d)
    ak2 = np.zeros(2)
    for i in range(p.n):
        for j in range(p.n):
            vr_estimate(p.kdata, x, snap, Draws(np.array([i, j]), dist[[i, j]], ak2, g), True)
            acc2 += dist[i] * dist[j] * g
    assert np.allclose(acc2, truth, rtol=1e-12, atol=1e-13)
    # zero control variate (SGD): sum_i p_i grad f_i(x) / (n p_i) = grad F(x)
    z_d, z_n = np.zeros(p.d), np.zeros(p.n)
    zero = Snapshot(z_d, z_d, z_n, z_n)
    acc[:] = 0.0
    for i in range(p.n):
        vr_estimate(p.kdata, x, zero, Draws(np.array([i]), dist[i:i + 1], ak, g), True)
        acc += dist[i] * g
    assert np.allclose(acc, truth, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("obj,mu", [("least_squares", 0.0), ("logistic", 0.2)])
def test_fused_step_is_the_estimator_then_the_step_bit_for_bit(obj, mu):
    """vr_step_single (L-SVRG's iterations that keep w) = vr_estimate, then x -= step g, to
    the last bit, for every index; without feedback the estimate itself is unchanged."""
    p = tiny(obj, n=7, d=5, mu=mu, seed=11)
    rng = np.random.default_rng(4)
    x0, w = rng.standard_normal(p.d), rng.standard_normal(p.d)
    snap = p.snapshot_at(w.copy())
    dist = rng.dirichlet(np.ones(p.n))
    step = 0.37
    for i in range(p.n):
        g, g2, ak = np.zeros(p.d), np.zeros(p.d), np.zeros(1)
        vr_estimate(p.kdata, x0, snap, Draws(np.array([i]), dist[i:i + 1], ak, g), True)
        vr_estimate(p.kdata, x0, snap, Draws(np.array([i]), dist[i:i + 1], ak, g2), False)
        assert np.array_equal(g, g2)
        x = x0.copy()
        vr_step_single(p.kdata, x, snap, Draws(np.array([i]), dist[i:i + 1], ak, g), step)
        assert np.array_equal(x, x0 - step * g)


@pytest.mark.parametrize("name", SAMPLERS)
def test_draws_follow_the_distribution(name):
    n, N = 9, 200_000
    s = adapted_sampler(name, n, seed=1)
    dist = s.distribution()
    U = np.random.default_rng(7).random((N, s.uniforms_per_draw))
    idx, pk = s.draw(U)
    assert np.allclose(pk, dist[idx], rtol=1e-13)
    freq = np.bincount(idx, minlength=n) / N
    tol = 5 * np.sqrt(dist * (1 - dist) / N)
    assert np.all(np.abs(freq - dist) < tol), (freq, dist)


def _check_expert_structures(s):
    """Internal invariants: floor, sum, tree sums, heap order, floored list."""
    st = s.state
    ew, eC, etree, eheap, ehpos, ehsize = st.ew, st.eC, st.etree, st.eheap, st.ehpos, st.ehsize
    efl, enfl, floor = st.efl, st.enfl, st.floor
    P = s.expert_distributions()
    assert np.all(P >= floor * (1 - 1e-12)) and np.allclose(P.sum(1), 1.0, atol=1e-12)
    for h in range(P.shape[0]):
        active = ehpos[h] >= 0
        assert active.sum() == ehsize[h] and (~active).sum() == enfl[h]
        assert set(efl[h, :enfl[h]].tolist()) == set(np.flatnonzero(~active).tolist())
        assert np.all(eC[h] * ew[h, active] > floor)
        leaves = np.where(active, ew[h], 0.0)
        assert etree[h, 1] == pytest.approx(leaves.sum(), rel=1e-12)
        heap = eheap[h, :ehsize[h]]
        assert np.array_equal(ehpos[h, heap], np.arange(ehsize[h]))
        keys = ew[h, heap]
        kids = np.arange(1, ehsize[h])
        assert np.all(keys[(kids - 1) // 2] <= keys[kids])
    assert s.distribution().min() >= floor * (1 - 1e-12)


@pytest.mark.parametrize("name,lr", [("osmd", 1e-3), ("osmd", 1e3), ("adaosmd", 1e4),
                                     ("adaosmd", 1e12)])
def test_adaptive_samplers_stay_on_the_floored_simplex(name, lr):
    """Thousands of heavy-tailed feedback rounds with small and huge rates (floors, overflow
    rebuilds, rescaling of C) keep every expert and the mixture on {p >= alpha/n, sum 1}."""
    n, b = 40, 3
    s = S.make_sampler(name, n, batch=b, alpha=0.4, osmd_lr=lr, horizon=3000, abar=1.0,
                       eta_scale=lr)
    rng = np.random.default_rng(0)
    for t in range(3000):
        idx, pk = s.draw(rng.random((b, s.uniforms_per_draw)))
        a = rng.pareto(1.5, b) * (1.0 + (idx % 7 == 0) * 50.0)
        s.update(idx, a, pk)
        if t % 500 == 0:
            _check_expert_structures(s)
    _check_expert_structures(s)
    P = s.expert_distributions()
    assert P.max() > 2.0 / n                                   # it did adapt
    if lr > 1e6:
        assert s.state.counts[S.REBUILDS] + s.state.counts[S.RENORMS] > 0


def test_projection_reference_vs_bisection():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(2, 30))
        pt = np.exp(3 * rng.standard_normal(n))
        alpha = float(rng.uniform(0.05, 0.99))
        ref = S.project_floored(pt, alpha)
        assert np.allclose(ref, bisect_projection(pt, alpha), rtol=1e-12, atol=1e-15)
        assert ref.sum() == pytest.approx(1.0) and ref.min() >= alpha / n * (1 - 1e-14)


@pytest.mark.parametrize("name,b,dup", [("osmd", 1, "add"), ("osmd", 4, "add"),
                                        ("adaosmd", 1, "add"), ("adaosmd", 4, "add"),
                                        ("adaosmd", 4, "overwrite")])
def test_osmd_and_adaosmd_steps_match_a_direct_numpy_recursion(name, b, dup):
    """Algorithms 3-5 written out in numpy (eqs. (4)-(6), exponential weights, projection by
    bisection) follow the compiled sampler step by step on a tiny case, duplicates included."""
    n, alpha, T = 6, 0.4, 50
    lr = 5e-2 * b * b
    s = S.make_sampler(name, n, batch=b, alpha=alpha, osmd_lr=lr, horizon=T, abar=0.5,
                       eta_scale=3e3, duplicates=dup)
    if name == "osmd":
        etas, gamma, theta = np.array([lr]), 0.0, np.ones(1)
    else:
        H, etas, gamma, theta = S.adaosmd_constants(n, T, alpha, 0.5, b, 3e3)
        assert H == int(np.floor(0.5 * np.log2(1 + 4 * np.log(n / alpha) / np.log(n) * (T - 1))))\
            + 1
        assert np.allclose(etas[1:] / etas[:-1], 2.0) and theta.sum() == pytest.approx(1.0)
        assert gamma == pytest.approx(alpha / n * np.sqrt(8 * b / (T * 0.5)))
    P = np.full((len(etas), n), 1.0 / n)
    rng = np.random.default_rng(4)
    floored = 0
    for _ in range(T):
        U = rng.random((b, s.uniforms_per_draw))
        if b > 1:
            U[1] = U[0]                                         # force a duplicate index
        idx, pk = s.draw(U)
        p = theta @ P
        assert np.allclose(pk, p[idx], rtol=1e-10)
        a = rng.exponential(2.0, b)
        s.update(idx, a, pk)
        losses = np.zeros(len(etas))
        for h in range(len(etas)):
            u = np.zeros(n)
            for k in range(b):
                val = -a[k] / (b * b * n * n * p[idx[k]] * P[h, idx[k]] ** 2)
                u[idx[k]] = u[idx[k]] + val if dup == "add" else val
                losses[h] += a[k] / (b * b * n * n * p[idx[k]] * P[h, idx[k]])
            lp = np.log(P[h]) - etas[h] * u                      # log domain (P6)
            P[h] = bisect_projection(np.exp(lp - lp.max()), alpha)
        if name == "adaosmd":
            theta = theta * np.exp(-gamma * losses)
            theta /= theta.sum()
        assert np.allclose(s.expert_distributions(), P, rtol=1e-9, atol=1e-15)
        assert np.allclose(s.state.theta[:len(theta)], theta, rtol=1e-10)
        floored += int(np.any(np.isclose(P, alpha / n, rtol=1e-12)))
    assert P.max() > 1.5 / n and floored > 0                    # the steps were not trivial


def test_sampler_errors():
    with pytest.raises(DrocliError, match="unknown sampler"):
        S.make_sampler("uniformm", 5)
    with pytest.raises(DrocliError):
        S.make_sampler("importance", 5)
    with pytest.raises(DrocliError):
        S.make_sampler("osmd", 5, alpha=1.5)
    with pytest.raises(DrocliError):
        S.make_sampler("adaosmd", 5, abar_mode="x")


def test_uniform_stream_does_not_depend_on_chunking():
    a = S.UniformStream(np.random.default_rng(1), 2, 2, block=64)
    b = S.UniformStream(np.random.default_rng(1), 2, 2, block=64)
    ua = np.concatenate([a.take(50)[0], a.take(14)[0], a.take(30)[0]])
    parts, left = [], 94
    while left:
        u, _ = b.take(min(7, left))
        parts.append(u)
        left -= u.shape[0]
    assert np.array_equal(ua, np.concatenate(parts))


# ---- solvers --------------------------------------------------------------------------------
def run(solver, problem, budget, seed=0, checkpoints=10, **params):
    entry = registry.get("solver", solver)
    problem.reset_counter()
    mon = Monitor(problem, budget, checkpoints=checkpoints)
    x = entry.func(problem, registry.resolve_params(entry, params), np.random.default_rng(seed),
                   mon)
    return x, mon


def ls_problem(n=20, d=3, sigma=0.5, nu=0.5, seed=0):
    data = load_regression({"n": n, "d": d, "nu": nu, "sigma": sigma}, seed)
    return make_problem(data, {"objective": "least_squares", "mu": 0.0})


@pytest.mark.parametrize("name", SAMPLERS)
def test_lsvrg_and_lkatyusha_converge_to_lstsq(name):
    p = ls_problem()
    x_ls = np.linalg.lstsq(p.A, p.y, rcond=None)[0]
    step = 1.0 / (6 * p.L_bar + p.L_F) if name != "uniform" else 1.0 / (4 * p.L_max)
    x, mon = run("l_svrg", p, 60_000, sampler=name, step=step, osmd_lr=1e-4)
    assert mon.status == "done" and p.gap(x) < 1e-8, p.gap(x)
    assert np.linalg.norm(x - x_ls) < 1e-3
    x, mon = run("l_katyusha", p, 30_000, sampler=name, osmd_lr=1e-4)
    assert mon.status == "done" and p.gap(x) < 1e-8, p.gap(x)


@pytest.mark.parametrize("name", ("uniform", "optimal", "adaosmd"))
def test_sgd_converges_on_consistent_least_squares(name):
    p = ls_problem(sigma=0.0)                  # b = A theta*: every f_i is minimised at x*
    x, mon = run("sgd", p, 40_000, sampler=name, step=0.5 / p.L_max)
    assert mon.status == "done" and p.gap(x) < 1e-8, p.gap(x)


def test_logistic_lsvrg_reaches_newton_optimum():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((40, 3))
    y = (rng.random(40) < 1 / (1 + np.exp(-A @ np.ones(3)))).astype(float)
    p = make_problem(GroupedData("t", A, y, np.zeros(40, int)),
                     {"objective": "logistic", "mu": 0.01})
    x, _ = run("l_svrg", p, 40_000, sampler="adaosmd", step=1.0 / (4 * p.L_max))
    assert p.gap(x) < 1e-9
    x, _ = run("l_katyusha", p, 30_000, sampler="importance")
    assert p.gap(x) < 1e-9


def np_lsvrg(p, U, coins, step, rho, x, w):
    """Numpy reference of Algorithm 1 with the uniform sampler and b = U.shape[1]."""
    gw = np_grads(p.A, p.y, p.objective, p.mu, w).mean(0)
    for t in range(U.shape[0]):
        idx = np.minimum((U[t, :, 0] * p.n).astype(int), p.n - 1)
        D = (np_grads(p.A[idx], p.y[idx], p.objective, p.mu, x)
             - np_grads(p.A[idx], p.y[idx], p.objective, p.mu, w))
        g = gw + D.sum(0) / (idx.size * p.n * (1.0 / p.n))
        if coins[t] < rho:
            w = x.copy()
            gw = np_grads(p.A, p.y, p.objective, p.mu, w).mean(0)
        x = x - step * g
    return x, w


def np_lkatyusha(p, U, coins, rho, th, v, w, z):
    gw = np_grads(p.A, p.y, p.objective, p.mu, w).mean(0)
    t1, t2, eta, kappa, L = th["theta1"], th["theta2"], th["eta"], th["kappa"], th["L"]
    for t in range(U.shape[0]):
        x = t1 * z + t2 * w + (1 - t1 - t2) * v
        idx = np.minimum((U[t, :, 0] * p.n).astype(int), p.n - 1)
        D = (np_grads(p.A[idx], p.y[idx], p.objective, p.mu, x)
             - np_grads(p.A[idx], p.y[idx], p.objective, p.mu, w))
        g = gw + D.sum(0) / idx.size
        zn = (eta * kappa * x + z - eta / L * g) / (1 + eta * kappa)
        if coins[t] < rho:
            w = v.copy()
            gw = np_grads(p.A, p.y, p.objective, p.mu, w).mean(0)
        v = x + t1 * (zn - z)
        z = zn
    return v, w, z


@pytest.mark.parametrize("obj,mu", [("least_squares", 0.0), ("logistic", 0.1)])
def test_compiled_steps_match_numpy_reference(obj, mu):
    from drocli.solvers.finite_sum.l_katyusha import Iterates, Steps, lkatyusha_chunk, theorem3
    from drocli.solvers.finite_sum.l_svrg import lsvrg_chunk

    p = tiny(obj, n=8, d=3, mu=mu, seed=1)
    rng = np.random.default_rng(2)
    T, b, rho = 60, 2, 0.1
    U = rng.random((T, b, 1))
    coins = rng.random(T)
    assert (coins < rho).sum() >= 2
    s = S.make_sampler("uniform", p.n, batch=b)
    x0 = rng.standard_normal(p.d)
    x, w = x0.copy(), x0 * 0.5
    snap = p.snapshot_at(w)
    c0 = p.oracle_calls
    dr = Draws(np.zeros(b, np.int64), np.zeros(b), np.zeros(b), np.zeros(p.d))
    lsvrg_chunk(p.kdata, x, snap, U, coins, rho, 0.05, s.state, False, dr, p.counter)
    assert p.oracle_calls - c0 == 2 * b * T + p.n * int((coins < rho).sum())
    xr, wr = np_lsvrg(p, U, coins, 0.05, rho, x0.copy(), x0 * 0.5)
    assert np.allclose(x, xr, rtol=1e-11, atol=1e-12) and np.allclose(w, wr)
    th = theorem3(p, _lk({"sampler": "uniform", "mu": 0.05}), b)
    v, z, w = x0.copy(), -x0, x0 * 0.5
    snap = p.snapshot_at(w)
    steps = Steps(*(float(th[k]) for k in Steps._fields))
    lkatyusha_chunk(p.kdata, Iterates(np.zeros(p.d), z, v), snap, U, coins, rho, steps,
                    s.state, False, dr, p.counter)
    vr, wr, zr = np_lkatyusha(p, U, coins, rho, th, x0.copy(), x0 * 0.5, -x0)
    assert np.allclose(v, vr, rtol=1e-11, atol=1e-12) and np.allclose(z, zr, rtol=1e-11)


@pytest.mark.parametrize("obj,mu,n,d", [("least_squares", 0.0, 8, 3), ("logistic", 0.1, 49, 3),
                                        ("least_squares", 0.3, 49, 3),
                                        ("logistic", 0.1, 49, 40)])
def test_uniform_single_index_chunk_is_the_general_iteration(obj, mu, n, d):
    """L-SVRG's chunk with one uniform index per step (`lsvrg_uniform_chunk`) against the
    numpy reference, and bit for bit against the general iteration run step by step: the
    sampler's draw, then `vr_step_single`, or on a refresh `vr_estimate`, w = x, the full
    pass and the step. n = 49 makes n (1/n) differ from 1, so the weight's division runs;
    d = 3 computes phi'(a_i.w) again, d = 40 reads it from the snapshot."""
    from drocli.problems.finite_sum import full_pass
    from drocli.solvers.finite_sum.l_svrg import RECOMPUTE_MAX_D, lsvrg_chunk

    assert (n * (1.0 / n) == 1.0) == (n == 8) and (d <= RECOMPUTE_MAX_D) == (d == 3)
    p = tiny(obj, n=n, d=d, mu=mu, seed=3)
    rng = np.random.default_rng(5)
    T, rho, step = 400, 0.03, 0.02
    U, coins = rng.random((T, 1, 1)), rng.random(T)
    assert (coins < rho).sum() >= 3
    s = S.make_sampler("uniform", p.n, batch=1)
    x0 = rng.standard_normal(p.d)
    x, w = x0.copy(), x0 * 0.5
    snap = p.snapshot_at(w)
    c0 = p.oracle_calls
    dr = Draws(np.zeros(1, np.int64), np.zeros(1), np.zeros(1), np.zeros(p.d))
    lsvrg_chunk(p.kdata, x, snap, U, coins, rho, step, s.state, False, dr, p.counter)
    assert p.oracle_calls - c0 == 2 * T + p.n * int((coins < rho).sum())
    xr, wr = np_lsvrg(p, U, coins, step, rho, x0.copy(), x0 * 0.5)
    assert np.allclose(x, xr, rtol=1e-11, atol=1e-12) and np.allclose(w, wr)
    xg, wg = x0.copy(), x0 * 0.5
    sg = p.snapshot_at(wg)
    g, ak = np.zeros(p.d), np.zeros(1)
    for t in range(T):
        i = min(int(U[t, 0, 0] * p.n), p.n - 1)
        d = Draws(np.array([i]), np.array([1.0 / p.n]), ak, g)
        if coins[t] < rho:
            vr_estimate(p.kdata, xg, sg, d, False)
            wg[:] = xg
            full_pass(p.kdata, sg, p.counter)
            xg -= step * g
        else:
            vr_step_single(p.kdata, xg, sg, d, step)
    assert np.array_equal(x, xg) and np.array_equal(w, wg)


def test_theorem3_parameters_and_L_rules():
    from drocli.solvers.finite_sum.l_katyusha import theorem3

    p = ls_problem(n=50, d=4, nu=1.0)
    for sampler, L in [("uniform", p.L_max), ("importance", p.L_bar), ("optimal", p.L_bar),
                       ("adaosmd", 0.4 * p.L_max + 0.6 * p.L_bar)]:
        th = theorem3(p, _lk({"sampler": sampler}), 1)
        kappa = p.strong_convexity / L
        assert th["L"] == pytest.approx(L) and th["kappa"] == pytest.approx(kappa)
        assert th["theta1"] == pytest.approx(min(np.sqrt(2 * kappa * p.n / 3), 0.5))
        assert th["eta"] == pytest.approx(1 / (3 * th["theta1"])) and th["theta2"] == 0.5
    th = theorem3(p, _lk({"sampler": "uniform", "L_rule": "expected_smoothness"}), 5)
    assert th["L"] == pytest.approx(p.L_F + (p.L_max - p.L_F) / 5)
    wide = make_problem(load_regression({"n": 3, "d": 5}, 0), {})
    with pytest.raises(DrocliError, match="mu > 0"):
        run("l_katyusha", wide, 100)


def test_katyusha_with_L_bar_beats_L_max():
    """docs/papers/002.md §8 robust fact: with Theorem 3 parameters, importance sampling with L-bar
    beats uniform sampling with L_max by orders of magnitude (data model A, nu = 1)."""
    p = ls_problem(n=100, d=10, nu=1.0, sigma=1.0)
    xu, _ = run("l_katyusha", p, 15_100, sampler="uniform")
    xi, _ = run("l_katyusha", p, 15_100, sampler="importance")
    assert p.gap(xi) < 1e-3 * p.gap(xu)


def test_paired_step_resolved_into_the_cells():
    """step: {nu: {...}} pairs the caption's step with each data panel (Figs. 1-2): the
    cells carry plain numbers, the id hashes the table as written, and a panel without an
    entry is refused at load with the key path (docs/papers/002.md §4.1)."""
    path = ROOT / "experiments" / "as_lsvrg_fig1.yaml"
    cells = expand(load_spec(path, profile="smoke"))
    want = {0.0: 0.1, 0.5: 0.05, 1.0: 0.005}
    assert cells and all(c.solver_params["step"] == want[c.data_params["nu"]] for c in cells)
    assert all(c.key()["solver"][1]["step"] == {"nu": want} for c in cells)
    with pytest.raises(DrocliError) as ei:
        load_spec(path, profile="smoke", overrides=parse_set(["data.grid.nu=[0.0, 0.7]"]))
    msg = str(ei.value)
    assert "solvers[0].params.step.nu" in msg and "nu = 0.7" in msg and "add 0.7" in msg
    with pytest.raises(DrocliError) as ei:           # the failing table is named, not the first
        load_spec(path, profile="smoke", overrides=parse_set(
            ["solvers.L-SVRG.params.osmd_lr={nu: {0.0: 1.0e-6}}"]))
    assert "params.osmd_lr.nu" in str(ei.value) and "nu = 0.5" in str(ei.value)
    with pytest.raises(DrocliError, match="solvers.0..params.step"):
        load_spec(path, profile="smoke", overrides=parse_set(
            ["solvers.SGD.params.step={nu: {0.0: -1, 0.5: 0.05, 1.0: 0.005}}"]))


def test_oracle_counts_and_status():
    p = ls_problem(n=10)
    _, mon = run("l_svrg", p, 500, rho=1.0, step=0.01)
    # n for grad F(w0), then 2 + n per iteration (refresh every step)
    assert (mon.calls - p.n) % (2 + p.n) == 0 and mon.calls >= 500
    _, mon = run("sgd", p, 500, batch=3, step=0.01)
    assert mon.calls % 3 == 0 and 500 <= mon.calls < 503
    _, mon = run("sgd", p, 500, sampler="adaosmd", step=0.01)
    assert mon.calls == 500                                     # n for abar, then 1 per step
    with np.errstate(over="ignore", invalid="ignore"):          # as the runner does
        _, mon = run("sgd", p, 2000, step=10.0)                  # diverges: recorded, no raise
    assert mon.status == "diverged"
    rows = [r for r in mon.rows if r[3] == "iteration"]
    assert rows and rows[0][4] == 0.0
    with pytest.raises(DrocliError):
        run("l_svrg", p, 100, batch=0)
    with pytest.raises(DrocliError):
        run("l_svrg", p, 100, rho=2.0)


make_problem = plugin("problem", "finite_sum")


def _lk(params: dict) -> dict:
    """L-Katyusha params resolved by its model, as the runner passes them."""
    return registry.resolve_params(registry.get("solver", "l_katyusha"), params)
