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


def _files(home):
    return sorted((home / "cache" / solution_cache.SUB).glob("*.npz"))


def test_solution_is_solved_once_then_read(data_home, monkeypatch):
    A, y = _logistic()
    finite_sum._SOLVE_CACHE.clear()
    first = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert len(_files(data_home)) == 1
    # scipy's minimiser agrees with the stored x* (independent truth)
    ref = minimize(first.loss, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    assert np.allclose(first.x_star, ref.x, atol=1e-6)
    finite_sum._SOLVE_CACHE.clear()                 # a new process: only the disk is left

    def solve_again(self):
        raise AssertionError("solved again although x* was stored")

    monkeypatch.setattr(FiniteSumProblem, "_solve", solve_again)
    second = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert np.array_equal(second.x_star, first.x_star)
    assert second.f_star == first.f_star and second.info == first.info


def test_a_forged_or_stale_solution_is_not_used(data_home):
    A, y = _logistic(seed=1)
    finite_sum._SOLVE_CACHE.clear()
    good = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    (path,) = _files(data_home)
    np.savez(path, x=good.x_star + 1e-3, info=np.array('{"x_star_solver": "forged"}'))
    finite_sum._SOLVE_CACHE.clear()
    again = FiniteSumProblem(A, y, objective="logistic", mu=0.01)
    assert np.array_equal(again.x_star, good.x_star)            # solved afresh
    assert again.info["x_star_solver"] == "newton"
    path.write_bytes(b"not an npz")                               # unreadable: solved afresh
    finite_sum._SOLVE_CACHE.clear()
    assert FiniteSumProblem(A, y, objective="logistic", mu=0.01).f_star == good.f_star


def test_no_cache_writes_nothing(data_home, monkeypatch):
    monkeypatch.setenv("DROCLI_NO_CACHE", "1")
    A, y = _logistic(seed=2)
    finite_sum._SOLVE_CACHE.clear()
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
