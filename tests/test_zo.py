"""Paper 001 (ZO-SMD for MERO): zeroth-order estimators (unbiasedness for the smoothed function
against analytic gradients, tolerances from the sample count), direction laws, schedules, suffix
averaging; the closed-form regression problem (risks vs Monte Carlo, exact inner minimum vs
scipy, OPT by duality); the solvers (oracle counts, convergence, prefix-sum averages)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from drocli.ops import zo_estimators as zo
from drocli.run.monitor import Monitor
from drocli.solvers.zo import fo_smd, zo_smd
from tests.conftest import plugin

load_regression = plugin("data", "mero_regression")
make_regression = plugin("problem", "mero_regression")
ZO_DEFAULTS = zo_smd.ZOSMDParams().model_dump()
FO_DEFAULTS = fo_smd.FOSMDParams().model_dump()

N = 40000   # estimates averaged per check
Z = 5.0     # tolerance in standard errors (per coordinate, family-wise over d coordinates)


def _quadratic(d, seed=0):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, d))
    A = B @ B.T / d + np.eye(d)
    b = rng.standard_normal(d)
    w = rng.standard_normal(d)

    def loss(P):
        return 0.5 * np.einsum("ij,jk,ik->i", P, A, P) + P @ b

    return A, b, w, loss


def _check_mean(G, truth, extra=0.0):
    mean = G.mean(axis=0)
    se = G.std(axis=0, ddof=1) / math.sqrt(G.shape[0])
    assert np.all(np.abs(mean - truth) <= Z * se + extra), (mean - truth, se)


def test_unit_sphere_and_ball_laws():
    rng = np.random.default_rng(1)
    d = 7
    U = zo.unit_sphere(rng, (20000,), d)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0)
    np.testing.assert_allclose(U.T @ U / len(U), np.eye(d) / d, atol=6e-3)  # E uu^T = I/d
    Bl = zo.uniform_ball(rng, (20000,), d, 2.0)
    r = np.linalg.norm(Bl, axis=1)
    assert r.max() <= 2.0 + 1e-12
    # radius law of the uniform ball: P(r <= s) = (s/R)^d
    assert abs(np.mean(r <= 2.0 * 0.5 ** (1 / d)) - 0.5) < 0.02
    for pair in zo.PAIRS:
        u, v = zo.direction_pair(rng, (40000,), d, pair)
        c = zo.pair_second_moment(pair, d)
        np.testing.assert_allclose(v.T @ v / len(v), c * np.eye(d), atol=0.05)
        np.testing.assert_allclose(u.T @ u / len(u), np.eye(d), atol=0.05)
    with pytest.raises(ValueError):
        zo.direction_pair(rng, (2,), d, "sphere")


def test_two_point_smooth_is_unbiased_for_the_smoothed_quadratic():
    d = 6
    A, b, w, loss = _quadratic(d)
    rng = np.random.default_rng(2)
    mu = 0.3
    U = zo.unit_sphere(rng, (N,), d)
    # one estimate per direction (r = 1), N of them
    f0 = loss(np.broadcast_to(w, U.shape))
    f1 = loss(w + mu * U)
    G = ((f1 - f0) * (d / mu))[:, None] * U
    _check_mean(G, zo.smoothed_quadratic_grad(A, b, w))
    # the batched reference is the mean of those single estimates
    np.testing.assert_allclose(zo.two_point_smooth(loss, w, mu, U[:50]), G[:50].mean(0))


def test_ball_directions_would_bias_the_smooth_estimator():
    """Pitfall P1: unit-ball directions shrink the gradient by d/(d+2)."""
    d = 4
    A, b, w, loss = _quadratic(d, seed=3)
    rng = np.random.default_rng(3)
    U = zo.uniform_ball(rng, (N,), d, 1.0)
    mu = 0.2
    G = ((loss(w + mu * U) - loss(np.broadcast_to(w, U.shape))) * (d / mu))[:, None] * U
    truth = zo.smoothed_quadratic_grad(A, b, w)
    _check_mean(G, truth * d / (d + 2))


@pytest.mark.parametrize("pair", zo.PAIRS)
def test_double_smoothing_is_unbiased_for_quadratics(pair):
    d = 5
    A, b, w, loss = _quadratic(d, seed=4)
    rng = np.random.default_rng(5)
    U, V = zo.direction_pair(rng, (N,), d, pair)
    mu1, mu2 = 0.5, 0.01
    base = w + mu1 * U
    G = ((loss(base + mu2 * V) - loss(base)) / mu2)[:, None] * V
    _check_mean(G, zo.smoothed_quadratic_grad(A, b, w))
    np.testing.assert_allclose(zo.double_smoothing(loss, w, mu1, mu2, U[:30], V[:30]),
                               G[:30].mean(0))


def test_double_smoothing_matches_the_gaussian_smoothed_absolute_value():
    """f(w) = |<a, w>| (non-smooth): E g = grad f_mu1 + O(mu2/mu1) (Lemma 5)."""
    d = 5
    rng = np.random.default_rng(6)
    a = rng.standard_normal(d)
    w = 0.1 * rng.standard_normal(d)
    mu1, mu2 = 0.4, 1e-7

    def loss(P):
        return np.abs(P @ a)

    U, V = zo.direction_pair(rng, (N,), d, "gauss")
    base = w + mu1 * U
    G = ((loss(base + mu2 * V) - loss(base)) / mu2)[:, None] * V
    truth = zo.smoothed_abs_grad(a, w, mu1, d)
    # bias bound (mu2/mu1) L* E||v||^3 / 2 with L* = ||a||, E||v||^3 <= sqrt3 d^1.5
    bias = mu2 / mu1 * np.linalg.norm(a) * math.sqrt(3) * d ** 1.5 / 2
    _check_mean(G, truth, extra=bias)
    # and the smoothed gradient differs from the plain subgradient here (the test has power)
    assert np.linalg.norm(truth - a * np.sign(a @ w)) > 0.1


def test_schedules_match_the_theorems():
    d, m, D2 = 20, 10, 2.0
    s = zo.smooth_schedule(np.array([1, 3]), d, L=2 * d, D2=D2, m=m)
    np.testing.assert_allclose(s["eta"], 1 / (math.sqrt(2) * d * np.sqrt([2, 4])))
    np.testing.assert_allclose(s["eta_w"], 2 * D2 * s["eta"])
    np.testing.assert_allclose(s["eta_q"], 2 * math.log(m) * s["eta"])
    # docs/papers/001.md §3.3: mu_t = 1/(d sqrt(t+1))
    np.testing.assert_allclose(s["mu"], 1 / (d * np.sqrt([2, 4])))
    ns = zo.nonsmooth_schedule(3, d, Lstar=math.sqrt(d), D2=D2, m=m)
    assert ns["mu1"] == pytest.approx(0.25) and ns["mu2"] == pytest.approx(1 / (d * 16))
    assert ns["eta_i"] == pytest.approx(2 * ns["eta"])    # 2 tau1 times the base step (P7)
    fo = zo.smooth_schedule(1, d, L=2 * d, D2=D2, m=m, zeroth_order=False)
    assert fo["eta"] == pytest.approx(d * s["eta"][0])


def test_suffix_average_window():
    X = np.arange(1.0, 8.0)[:, None] * np.ones((1, 2))
    eta = np.ones(7)
    np.testing.assert_allclose(zo.suffix_average(X, eta, 1), [1.0, 1.0])
    np.testing.assert_allclose(zo.suffix_average(X, eta, 4), [3.0, 3.0])   # j = 2..4
    np.testing.assert_allclose(zo.suffix_average(X, eta, 5), [4.0, 4.0])   # j = 3..5


# ---- problem: heterogeneous-noise regression with closed-form risks (§3.1) ---------------


@pytest.fixture(scope="module")
def regression_data():
    return load_regression({"groups": 4, "dim": 5}, 0)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_closed_form_risks_match_monte_carlo(regression_data, loss):
    p = make_regression(regression_data, {"loss": loss, "radius": 2.0})
    rng = np.random.default_rng(7)
    w = 0.5 * rng.standard_normal(p.d)
    n = 200000
    X, Y = p.sample(rng, n, 1)                     # (n, m, 1, d), (n, m, 1)
    L = p.sample_loss(w, X[:, :, 0], Y[:, :, 0])   # (n, m)
    mean, se = L.mean(0), L.std(0, ddof=1) / math.sqrt(n)
    assert np.all(np.abs(mean - p.risks(w)) <= 5 * se), (mean, p.risks(w), se)
    assert p.oracle_calls == n * p.m
    # R_i^* closed forms when ||w*_i|| <= R
    expect = p.sigma ** 2 if loss == "squared" else math.sqrt(2 / math.pi) * p.sigma
    np.testing.assert_allclose(p.rstar, expect)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_exact_inner_minimum_matches_a_numerical_solve(regression_data, loss):
    p = make_regression(regression_data, {"loss": loss, "radius": 0.6})   # ball is active
    rng = np.random.default_rng(8)
    for _ in range(3):
        q = rng.dirichlet(np.ones(p.m))

        def f(w, q=q):
            return float(q @ (p.risks(w) - p.rstar))

        best = min(minimize(f, x0, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
                            constraints=[{"type": "ineq",
                                          "fun": lambda w: p.radius ** 2 - w @ w}]).fun
                   for x0 in (np.zeros(p.d), 0.3 * rng.standard_normal(p.d)))
        assert p.inner_min(q) == pytest.approx(best, abs=1e-7)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_opt_by_weak_duality_and_gap_nonnegative(regression_data, loss):
    """OPT = min_w max_i excess_i = max_q min_w sum_i q_i excess_i (convex-concave)."""
    p = make_regression(regression_data, {"loss": loss, "radius": 2.0})
    rng = np.random.default_rng(9)
    for _ in range(20):
        w = project_ball(rng.standard_normal(p.d), p.radius)
        assert p.excess(w).max() >= p.opt - 1e-9
    # dual: maximise the exact inner minimum over the simplex (softmax parametrisation)
    res = minimize(lambda z: -p.inner_min(np.exp(z - z.max()) / np.exp(z - z.max()).sum()),
                   np.zeros(p.m), method="Nelder-Mead",
                   options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 4000})
    assert -res.fun <= p.opt + 1e-7
    assert -res.fun == pytest.approx(p.opt, abs=2e-4)
    ev = p.evaluate(p.w_opt, np.full(p.m, 1.0 / p.m))
    assert ev["gap"] >= 0 and ev["mer_minus_opt"] == pytest.approx(0.0, abs=1e-8)


def project_ball(v, radius):
    n = np.linalg.norm(v)
    return v * min(1.0, radius / n)


def test_spec_instance_opt_values():
    """docs/papers/001.md §3.1 prototype: OPT ~ 0.950 (E1) and ~ 0.560 (E2) on data_seed 0."""
    data = load_regression({}, 0)
    assert make_regression(data, {"loss": "squared"}).opt == pytest.approx(0.950, abs=3e-3)
    assert make_regression(data, {"loss": "absolute"}).opt == pytest.approx(0.560, abs=3e-3)


# ---- solvers ----------------------------------------------------------------------------------
def _run(solver, problem, params, rounds, seed=0):
    cost = zo_smd.round_cost(
        zo_smd.MODE_FO if solver is fo_smd.solve else
        (zo_smd.MODE_SMOOTH if problem.smooth else zo_smd.MODE_NONSMOOTH),
        params.get("gdro", False), problem.m, params.get("r", 10))
    mon = Monitor(problem, rounds * cost, checkpoints=5)
    out = solver(problem, params, np.random.default_rng(seed), mon)
    mon.finish(*out)
    last = {}
    for row in mon.rows:
        last[row[3]] = row[4]
    return mon, last, cost


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_zo_smd_counts_its_oracle_calls_and_converges(regression_data, loss):
    p = make_regression(regression_data, {"loss": loss})
    mon, last, cost = _run(zo_smd.solve, p, dict(ZO_DEFAULTS), 3000)
    assert p.oracle_calls == 3000 * cost
    assert cost == (5 if loss == "squared" else 6) * p.m * 10
    assert last["iteration"] == 3000
    assert last["est_err"] < 0.05 and last["gap"] < 0.2
    first = {r[3]: r[4] for r in mon.rows if r[0] == 0}
    assert last["est_err"] < first["est_err"] / 5


def test_fo_smd_beats_zo_per_iteration_and_gdro_trades_excess_for_risk(regression_data):
    p = make_regression(regression_data, {"loss": "squared"})
    _, fo, cost_fo = _run(fo_smd.solve, p, dict(FO_DEFAULTS), 2000)
    assert cost_fo == 3 * p.m * 10
    p = make_regression(regression_data, {"loss": "squared"})
    _, zo_, _ = _run(zo_smd.solve, p, dict(ZO_DEFAULTS), 2000)
    assert fo["est_err"] < zo_["est_err"]
    p = make_regression(regression_data, {"loss": "squared"})
    _, gd, cost_gd = _run(zo_smd.solve, p, {**ZO_DEFAULTS, "gdro": True}, 2000)
    assert cost_gd == 2 * p.m * 10 and "est_err" not in gd
    assert gd["mer"] > zo_["mer"] and gd["max_risk"] < zo_["max_risk"]


def test_suffix_averages_of_the_solver_match_the_direct_formula(regression_data):
    """The kernel's prefix-sum averages equal sum_{j=ceil(t/2)}^t eta_j w_j / sum eta_j,
    recomputed from iterates recorded one round at a time."""
    p = make_regression(regression_data, {"loss": "squared"})
    m, d, r = p.m, p.d, 2
    rng = np.random.default_rng(3)
    T = 9
    X, Y = p.sample(rng, T, r)
    Uc = zo.unit_sphere(rng, (T, m, r), d)
    Us = zo.unit_sphere(rng, (T, m, r), d)
    ts = np.arange(1, T + 1, dtype=np.float64)
    s = zo.smooth_schedule(ts, d, p.L, p.D2, m)
    Wc, w, lq = np.zeros((m, d)), np.zeros(d), np.full(m, -math.log(m))
    PC, HC = np.zeros((T + 1, m, d)), np.zeros(T + 1)
    PW, HW, PQ, HQ = np.zeros((T + 1, d)), np.zeros(T + 1), np.zeros((T + 1, m)), np.zeros(T + 1)
    cfg = zo_smd.Config(0, False, int(p.loss_id), float(p.radius))
    ws = []
    for k in range(T):
        ws.append(w.copy())
        sl = slice(k, k + 1)
        zo_smd.zo_smd_chunk(
            zo_smd.Samples(X[sl], Y[sl], Uc[sl], Uc[sl], Us[sl], Us[sl]),
            zo_smd.Schedule(s["eta_i"][sl], s["eta_w"][sl], s["eta_q"][sl], s["mu"][sl],
                            np.zeros(1)),
            cfg, zo_smd.Chains(Wc, w, lq, PC, HC, PW, HW, PQ, HQ), k, 1, p.counter)
    for t in (1, 4, 9):
        a = (t + 1) // 2
        direct = zo.suffix_average(np.array(ws), s["eta_w"], t)
        np.testing.assert_allclose((PW[t] - PW[a - 1]) / (HW[t] - HW[a - 1]), direct)
    # one-round chunks and one 9-round chunk give the same trajectory
    w2, lq2, Wc2 = np.zeros(d), np.full(m, -math.log(m)), np.zeros((m, d))
    z = [np.zeros_like(a) for a in (PC, HC, PW, HW, PQ, HQ)]
    zo_smd.zo_smd_chunk(zo_smd.Samples(X, Y, Uc, Uc, Us, Us),
                        zo_smd.Schedule(s["eta_i"], s["eta_w"], s["eta_q"], s["mu"],
                                        np.zeros(T)),
                        cfg, zo_smd.Chains(Wc2, w2, lq2, *z), 0, T, p.counter)
    np.testing.assert_allclose(w2, w)
    np.testing.assert_allclose(Wc2, Wc)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_compiled_estimates_match_the_numpy_references(regression_data, mode):
    p = make_regression(regression_data, {"loss": "squared" if mode == 0 else "absolute"})
    rng = np.random.default_rng(11)
    r, d = 6, p.d
    X, Y = p.sample(rng, 1, r)
    X, Y = X[0, 2], Y[0, 2]
    w = 0.3 * rng.standard_normal(d)
    U, V = zo.direction_pair(rng, (r,), d, "gauss")
    if mode == 0:
        U = zo.unit_sphere(rng, (r,), d)
    out, fw = np.zeros(d), np.zeros(r)

    def loss(P):
        res = Y - np.sum(X * P, axis=1)
        return res ** 2 if mode == 0 else np.abs(res)

    calls = zo_smd._estimate(w, X, Y, U, V, 0.05, 1e-4, mode, p.loss_id, out, fw)
    if mode == 0:
        ref = zo.two_point_smooth(loss, w, 0.05, U)
        np.testing.assert_allclose(fw, loss(np.broadcast_to(w, U.shape)))
    elif mode == 1:
        ref = zo.double_smoothing(loss, w, 0.05, 1e-4, U, V)
        assert np.all(np.isnan(fw))
    else:
        ref = -(np.sign(Y - X @ w)) @ X / r
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-9)
    assert calls == (r if mode == 2 else 2 * r)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_shared_directions_variant_runs_and_converges(regression_data, loss):
    p = make_regression(regression_data, {"loss": loss})
    _, last, cost = _run(zo_smd.solve, p, {**ZO_DEFAULTS, "share_directions": True}, 2000)
    assert p.oracle_calls == 2000 * cost
    assert np.isfinite(last["gap"]) and last["est_err"] < 0.2
    p2 = make_regression(regression_data, {"loss": loss})
    _, other, _ = _run(zo_smd.solve, p2, dict(ZO_DEFAULTS), 2000)
    assert other["gap"] != last["gap"]      # the flag changes the algorithm
