"""Paper 003 (OMD-TCH): VLMOP2 against independent truth, and the (Ada)OMD-TCH updates."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from drocli.ops.simplex import project_simplex
from drocli.plugins import registry
from drocli.problems.multiobjective import (
    VLMOP2Problem,
    front,
    front_distance,
    front_point,
    hypervolume_2d,
    preference_grid,
    tch_optimum_u,
)
from drocli.solvers.moo.omd_tch import AdaptiveConversion
from drocli.solvers.moo.omd_tch import run as _run
from tests.conftest import StepMonitor


def run(problem, params, rng, monitor, adaptive):
    """Algorithm 1 (+2) with params resolved by the omd_tch model, as the runner does."""
    entry = registry.get("solver", "omd_tch")
    return _run(problem, registry.resolve_params(entry, params), rng, monitor, adaptive)


def test_registered():
    assert registry.get("problem", "vlmop2").family == "moo"
    assert registry.get("solver", "omd_tch").family == "moo"
    assert registry.get("solver", "ada_omd_tch").family == "moo"
    assert registry.get("data", "moo_none")


def test_gradients_match_finite_differences():
    p = VLMOP2Problem(dim=10, pref=0.4)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.uniform(-0.5, 0.5, 10)
        F, J = p.oracle(x)
        np.testing.assert_allclose(F, p.values(x), rtol=0, atol=1e-15)
        h = 1e-6
        fd = np.stack([(p.values(x + h * e) - p.values(x - h * e)) / (2 * h)
                       for e in np.eye(10)], axis=1)
        np.testing.assert_allclose(J, fd, atol=1e-8)
    assert p.oracle_calls == 10  # m = 2 per oracle call, 5 calls; values() is not counted


def test_front_is_image_of_pareto_set_and_nondominated():
    p = VLMOP2Problem(dim=10, pref=0.5)
    for u in np.linspace(-1, 1, 7):
        np.testing.assert_allclose(p.values(np.full(10, u * p.c)), front_point(u), atol=1e-14)
    P = front(200)
    # concave front: f1 increasing, f2 decreasing along u, endpoints 1 - e^-4
    assert np.all(np.diff(P[:, 0]) < 0) and np.all(np.diff(P[:, 1]) > 0)
    assert P[0, 1] == pytest.approx(0.0) and P[0, 0] == pytest.approx(1 - math.exp(-4))
    # random feasible points are never below the front
    rng = np.random.default_rng(1)
    for x in rng.uniform(-1, 1, (200, 10)):
        F = p.values(x)
        assert not np.any(np.all(F[None, :] < P - 1e-9, axis=1))


@pytest.mark.parametrize("w1", [0.01, 0.2278, 0.5, 0.7722, 0.99])
def test_analytic_tch_optimum_matches_scipy(w1):
    """min_θ max_i w_i f_i(θ) over the box by SLSQP on the epigraph form, several starts."""
    p = VLMOP2Problem(dim=10, pref=w1)
    w = p.w
    best = np.inf
    rng = np.random.default_rng(0)
    for _ in range(4):
        x0 = rng.uniform(-p.c, p.c, 10)
        z0 = np.concatenate([x0, [np.max(w * p.values(x0))]])
        cons = [{"type": "ineq", "fun": lambda z: z[-1] - w * p.values(z[:-1]),
                 "jac": lambda z: np.hstack([-(w[:, None] * p.oracle(z[:-1])[1]),
                                             np.ones((2, 1))])}]
        res = minimize(lambda z: z[-1], z0, jac=lambda z: np.eye(11)[-1], method="SLSQP",
                       bounds=[(-1, 1)] * 10 + [(None, None)], constraints=cons,
                       options={"ftol": 1e-14, "maxiter": 500})
        val = float(np.max(w * p.values(res.x[:-1])))
        if val < best:
            best, xbest = val, res.x[:-1]
    assert best == pytest.approx(p.tch_opt, abs=1e-7)
    assert p.tch_opt <= best + 1e-12
    np.testing.assert_allclose(p.values(xbest), p.f_opt, atol=1e-4)
    # the solution equalises w_i f_i (docs/papers/003.md §1.4 Thm 1) and lies on the ray 1/w
    assert w[0] * p.f_opt[0] == pytest.approx(w[1] * p.f_opt[1], abs=1e-12)
    assert -1 <= tch_optimum_u(w) <= 1


def test_metrics_at_known_points():
    p = VLMOP2Problem(dim=10, pref=0.3)
    e = p.evaluate(p.theta_opt)
    assert e["tch_gap"] == pytest.approx(0.0, abs=1e-12)
    assert e["ray_dist"] == pytest.approx(0.0, abs=1e-12)
    assert e["front_dist"] < 1e-9
    assert e["hv"] == pytest.approx((1 - p.f_opt[0]) * (1 - p.f_opt[1]))
    x = np.zeros(10) + 0.9
    e = p.evaluate(x)
    assert e["tch_gap"] > 0 and e["front_dist"] > 0.01
    assert front_distance(front_point(0.3)) < 1e-9
    assert hypervolume_2d([[0.5, 0.5], [0.25, 0.75], [0.6, 0.6]]) == pytest.approx(
        0.25 + 0.25 * 0.25)
    assert p.oracle_calls == 0


def test_preference_grid():
    g = preference_grid()
    assert g.shape == (10, 2) and g[0, 0] == pytest.approx(0.01) and g[-1, 0] == pytest.approx(0.99)
    np.testing.assert_allclose(g.sum(axis=1), 1.0)


def test_adaptive_conversion_figure1_example():
    """docs/papers/003.md §2.4 worked example (paper Fig. 1): output (3 θ3 + 1 θ4) / 4."""
    ada = AdaptiveConversion()
    th = [np.full(2, float(k)) for k in range(1, 5)]
    assert ada.update([0.5, 0.5], th[0])             # (a) θ1 enters, γ = 1
    assert not ada.update([0.6, 0.7], th[1])         # (b) dominated by θ1: γ1 = 2
    assert ada.gamma == [2.0]
    assert ada.update([0.4, 0.3], th[2])             # (c) θ3 dominates θ1: γ3 = 3
    assert ada.gamma == [3.0] and ada.total == 3.0
    assert ada.update([0.2, 0.9], th[3])             # (d) non-dominated: γ4 = 1
    assert ada.gamma == [3.0, 1.0] and ada.total == 4.0
    np.testing.assert_allclose(ada.output(), (3 * th[2] + th[3]) / 4)


def test_adaptive_conversion_ties_copies_and_split():
    ada = AdaptiveConversion()
    x = np.zeros(2)
    ada.update([0.5, 0.5], x)
    x[:] = 7.0                                        # the stored snapshot is a copy
    assert not ada.update([0.5, 0.5], x)              # exact tie: discarded, weight to the old
    np.testing.assert_allclose(ada.output(), 0.0)
    ada.update([0.2, 0.8], np.ones(2))
    assert not ada.update([0.6, 0.9], np.ones(2))     # dominated by both: 1/2 each
    assert ada.gamma == [2.5, 1.5] and ada.total == ada.t == 4


def test_lambda_steps_closed_form():
    """One OMD-TCH iteration by hand: gd (eq. 10), eg (eq. 11), θ step with the old λ (eq. 9)."""
    for variant in ("gd", "eg"):
        p = VLMOP2Problem(dim=10, pref=0.3)
        theta1 = p.initial(np.random.default_rng(5))
        F, J = p.values(theta1), p.oracle(theta1)[1]
        p.reset_counter()
        theta2 = p.project(theta1 - 0.02 * (0.5 * p.w) @ J)
        if variant == "gd":
            lam2 = project_simplex(0.5 + 1.0 * p.w * F)
        else:
            e = np.exp(p.w * F)
            lam2 = e / e.sum()
        out = run(p, {"variant": variant, "output": "last"}, np.random.default_rng(5),
                  StepMonitor(p, 4), adaptive=False)
        # after 2 iterations: θ3 = Π(θ2 - η λ2∘w J(θ2))
        expect = p.project(theta2 - 0.02 * (lam2 * p.w) @ p.oracle(theta2)[1])
        np.testing.assert_allclose(out, expect, atol=1e-14)


@pytest.mark.parametrize("adaptive", [False, True])
def test_omd_tch_gd_converges_near_tch_optimum(adaptive):
    """T = 1000 at the paper's steps: gd variants within 0.05 of equalisation (§3.1.7)."""
    for w1 in (0.2278, 0.5, 0.8822):
        p = VLMOP2Problem(dim=10, pref=w1)
        x = run(p, {"variant": "gd"}, np.random.default_rng(0), StepMonitor(p, 2000), adaptive)
        e = p.evaluate(x)
        assert p.oracle_calls == 2000
        assert e["eq_err"] < 0.05 and e["tch_gap"] < 0.03 and e["ray_dist"] < 0.1
        assert e["front_dist"] < 0.02


def test_eg_visibly_further_than_gd():
    errs = {}
    for v in ("gd", "eg"):
        errs[v] = max(p.evaluate(run(p, {"variant": v}, np.random.default_rng(0),
                                     StepMonitor(p, 2000), False))["eq_err"]
                      for p in (VLMOP2Problem(pref=list(w)) for w in preference_grid()))
    assert errs["gd"] < 0.05 < 0.08 < errs["eg"]


def test_bad_params_raise():
    from drocli.errors import DrocliError
    with pytest.raises(DrocliError):
        VLMOP2Problem(pref=1.5)
    p = VLMOP2Problem()
    with pytest.raises(DrocliError):
        run(p, {"variant": "xx"}, np.random.default_rng(0), StepMonitor(p, 4), False)
