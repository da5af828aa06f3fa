"""The exact solution x* kept on disk per data set (drocli.problems.solution_cache): a second
problem on the same data reads it instead of solving again, and a stored x* is used only
when it passes the convergence test, checked here against scipy's own minimiser."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from drocli.problems import finite_sum, solution_cache
from drocli.problems.finite_sum import FiniteSumProblem


def _logistic(seed=0, n=60, d=5):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-A @ rng.standard_normal(d)))).astype(float)
    return A, y


def _new_process():
    """Forget what this process derived (as a new process would)."""
    finite_sum._SOLVE_CACHE.clear()
    finite_sum._DERIVED.clear()


def _files(home):
    return sorted((home / "cache" / solution_cache.SUB).glob("*.npz"))


def test_solution_is_solved_once_then_read(data_home, monkeypatch):
    A, y = _logistic()
    _new_process()
    first = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert len(_files(data_home)) == 1
    # scipy's minimiser agrees with the stored x* (independent truth)
    ref = minimize(first.loss, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    assert np.allclose(first.x_star, ref.x, atol=1e-6)
    _new_process()                 # a new process: only the disk is left

    def solve_again(self):
        raise AssertionError("solved again although x* was stored")

    monkeypatch.setattr(FiniteSumProblem, "_solve", solve_again)
    second = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert np.array_equal(second.x_star, first.x_star)
    assert second.f_star == first.f_star and second.info == first.info


def test_a_forged_or_stale_solution_is_not_used(data_home):
    A, y = _logistic(seed=1)
    _new_process()
    good = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    (path,) = _files(data_home)
    np.savez(path, x=good.x_star + 1e-3, info=np.array('{"x_star_solver": "forged"}'))
    _new_process()
    again = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert np.array_equal(again.x_star, good.x_star)            # solved afresh
    assert again.info["x_star_solver"] == "newton"
    path.write_bytes(b"not an npz")                               # unreadable: solved afresh
    _new_process()
    assert FiniteSumProblem(A, y, objective="logistic", mu=0.01).f_star == good.f_star


def test_no_cache_writes_nothing(data_home, monkeypatch):
    monkeypatch.setenv("DROCLI_NO_CACHE", "1")
    A, y = _logistic(seed=2)
    _new_process()
    FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert _files(data_home) == []


@pytest.mark.parametrize("obj", ["least_squares", "logistic"])
def test_block_sums_equal_the_dense_formulas(obj, monkeypatch):
    """sigma*^2 and the Newton Hessian computed in row blocks equal the dense formulas."""
    monkeypatch.setattr(finite_sum, "BLOCK_BYTES", 8 * 5 * 7)      # blocks of 7 rows
    A, y = _logistic(seed=3)
    if obj == "least_squares":
        y = A @ np.arange(5.0) + 0.1
    p = FiniteSumProblem(A, y, objective=obj, mu=0.05)
    G = (finite_sum._dphi_np(A @ p.x_star, p.y, p.obj)[:, None] * A) + 0.05 * p.x_star
    assert p.sigma_star2 == pytest.approx(np.mean((G * G).sum(axis=1)), rel=1e-12)
    w = np.random.default_rng(0).random(A.shape[0])
    assert np.allclose(finite_sum._weighted_gram(A, w), (A.T * w) @ A, rtol=1e-12, atol=1e-14)


def test_same_arrays_derive_once_other_arrays_again(data_home, monkeypatch):
    """The warm-up and the cell build the problem on the same data arrays: the second build
    reuses x*, F*, sigma*^2 and the Gram eigenvalues; other arrays (even equal ones after
    a change) derive their own."""
    A, y = _logistic(seed=4)
    _new_process()
    first = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    calls = []
    real = FiniteSumProblem._derive

    def counting(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(FiniteSumProblem, "_derive", counting)
    again = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert not calls and again.f_star == first.f_star and again.L_F == first.L_F
    B = A.copy()
    B[0, 0] += 1.0
    other = FiniteSumProblem(B, y, objective="logistic", mu=0.01)
    assert calls == [1] and other.f_star != first.f_star
    FiniteSumProblem(A, y, objective="logistic", mu=0.02)          # another mu
    assert calls == [1, 1]
    ref = minimize(other.loss, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    assert other.f_star == pytest.approx(ref.fun, abs=1e-12)


def test_constants_are_derived_when_first_asked_for(data_home):
    """The Gram eigenvalues and sigma*^2 (a pass of n d^2 and one of n d at n = 1e6) are
    computed only when something reads them, once per data arrays; F* comes from the
    scores of x*'s convergence test and equals F(x*) to the last bit."""
    A, y = _logistic(seed=5, n=80, d=6)
    _new_process()
    p = FiniteSumProblem(A, y, objective="least_squares", mu=0.02)
    assert "lmax" not in p._derived and "sigma_star2" not in p._derived
    assert p.f_star == p.loss(p.x_star)
    ev = np.linalg.eigvalsh(A.T @ A / 80)                     # independent truth
    assert p.L_F == pytest.approx(ev[-1] + 0.02, rel=1e-12)
    assert p.strong_convexity == pytest.approx(ev[0] + 0.02, rel=1e-12)
    again = FiniteSumProblem(A, y, objective="least_squares", mu=0.02)
    assert "lmax" in again._derived and "sigma_star2" not in again._derived
    G = (A @ p.x_star - y)[:, None] * A + 0.02 * p.x_star
    assert again.sigma_star2 == pytest.approx(np.mean((G * G).sum(axis=1)), rel=1e-12)
    assert "sigma_star2" in p._derived


def test_check_solution_matches_the_gradient_test(data_home):
    """`check_solution` (two passes) decides as ||grad F(x)|| <= 1e-12 max(1, ||grad F(0)||)
    computed densely, and hands back the scores A x."""
    A, y = _logistic(seed=6)
    _new_process()
    p = FiniteSumProblem(A, y, objective="logistic", mu=0.01)

    def grad(x):
        return A.T @ (1 / (1 + np.exp(-(A @ x))) - p.y) / A.shape[0] + 0.01 * x

    g0 = max(1.0, float(np.linalg.norm(grad(np.zeros(5)))))
    for x in (p.x_star, p.x_star + 1e-9, np.zeros(5)):
        ok, s = p.check_solution(x)
        assert ok == (np.linalg.norm(grad(x)) <= 1e-12 * g0)
        assert np.array_equal(s, A @ x)
    assert p.check_solution(p.x_star)[0] and not p.check_solution(p.x_star + 1e-6)[0]
    assert p.check_solution(np.full(5, np.nan)) == (False, None)
