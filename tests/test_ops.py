"""drocli.ops: losses vs finite differences, prox steps vs brute-force minimisation,
projections vs convex solvers, compiled helpers vs numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from drocli.ops import rows as kernels
from drocli.ops.losses import linear_loss_grad, logistic_loss, loss_dscore, per_sample_grads
from drocli.ops.projections import project_ball
from drocli.ops.simplex import (
    entropic_step,
    kl,
    log_normalize,
    probs_from_log,
    project_simplex,
    uniform_log,
)


def central_diff(f, W, h=1e-6):
    G = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        G[idx] = (f(Wp) - f(Wm)) / (2 * h)
    return G


# ---- losses -------------------------------------------------------------------------------
def test_logistic_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    W = rng.standard_normal((4, 1))
    val, grad = linear_loss_grad(W, X, y, "logistic")
    fd = central_diff(lambda V: linear_loss_grad(V, X, y, "logistic")[0], W)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)
    direct = np.mean(np.log1p(np.exp(-y * (X @ W[:, 0]))))
    assert val == pytest.approx(direct, rel=1e-12)


def test_softmax_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((25, 3))
    y = rng.integers(0, 4, 25)
    W = rng.standard_normal((3, 4))
    val, grad = linear_loss_grad(W, X, y, "softmax")
    fd = central_diff(lambda V: linear_loss_grad(V, X, y, "softmax")[0], W)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9)
    S = X @ W
    direct = np.mean(np.log(np.exp(S).sum(1)) - S[np.arange(25), y])
    assert val == pytest.approx(direct, rel=1e-12)


def test_per_sample_grads_average_to_full_gradient():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((10, 3))
    y = np.where(rng.random(10) < 0.5, -1.0, 1.0)
    W = rng.standard_normal((3, 1))
    vals, grads = per_sample_grads(W, X, y, "logistic")
    val, grad = linear_loss_grad(W, X, y, "logistic")
    np.testing.assert_allclose(grads.mean(0), grad, rtol=1e-12)
    assert vals.mean() == pytest.approx(val)


def test_losses_are_stable_at_extreme_margins():
    m = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    val = logistic_loss(m)
    assert np.all(np.isfinite(val))
    np.testing.assert_allclose(val[[0, 2, 4]], [800.0, math.log(2), 0.0], atol=1e-12)
    val, ds = loss_dscore(np.array([[1e4, -1e4, 0.0]]), np.array([1]), "softmax")
    assert np.all(np.isfinite(val)) and np.all(np.isfinite(ds))
    assert val[0] == pytest.approx(2e4)


@pytest.mark.parametrize("loss_id,k", [(0, 1), (1, 4)])
def test_compiled_loss_matches_numpy(loss_id, k):
    rng = np.random.default_rng(3)
    for scale in (0.1, 10.0, 500.0):
        s = rng.standard_normal(k) * scale
        yv = float(rng.choice([-1.0, 1.0])) if loss_id == 0 else float(rng.integers(0, k))
        ds = np.zeros(k)
        val = kernels.loss_dscore(s, yv, loss_id, ds)
        ref_val, ref_ds = loss_dscore(s[None, :], np.array([yv]),
                                      "logistic" if loss_id == 0 else "softmax")
        assert val == pytest.approx(ref_val[0], rel=1e-12, abs=1e-300)
        np.testing.assert_allclose(ds, ref_ds[0], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 50.0, 700.0, 1e4])
def test_compiled_logsumexp_matches_scipy(scale):
    """The kernels' one logsumexp loop (rows.logsumexp_parts), on entries up to 1e4 (exp
    overflows past ~709 without the max shift) and with an entry of probability 0."""
    rng = np.random.default_rng(5)
    for size in (1, 2, 7, 64):
        v = rng.standard_normal(size) * scale + scale
        if size > 2:
            v[1] = -np.inf
        assert kernels.logsumexp(v) == pytest.approx(logsumexp(v), rel=1e-13)
        out = np.full(size + 2, 7.0)
        mx, tot = kernels.logsumexp_parts(v, out)
        assert mx == v.max()
        np.testing.assert_allclose(out[:size], np.exp(v - mx), rtol=1e-14)
        assert tot == pytest.approx(np.exp(v - mx).sum(), rel=1e-13)
        assert np.all(out[size:] == 7.0)                   # only out[:len(v)] is written
        kept = v.copy()
        assert kernels.logsumexp_parts(kept, kept[:0]) == (mx, tot)   # keep none
        np.testing.assert_array_equal(kept, v)
        ds = np.zeros(size)
        val = kernels.loss_dscore(v, 0.0, kernels.SOFTMAX, ds)
        assert val == pytest.approx(logsumexp(v) - v[0], rel=1e-12, abs=1e-12)


def test_compiled_helpers_match_numpy():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((5, 13)).astype(np.float32)
    w = rng.standard_normal(13)
    assert kernels.dot_row(X, 2, w) == pytest.approx(float(X[2].astype(float) @ w), rel=1e-12)
    assert kernels.sqnorm(w) == pytest.approx(float(w @ w), rel=1e-12)
    lq = rng.standard_normal(7) * 50
    ref = lq - logsumexp(lq)
    q = np.zeros(7)
    l2 = lq.copy()
    kernels.log_normalize_probs(l2, q)
    np.testing.assert_allclose(l2, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(q, np.exp(ref), rtol=1e-12)
    l3 = lq.copy()
    kernels.log_normalize_inplace(l3)
    np.testing.assert_allclose(l3, ref, rtol=1e-12, atol=1e-12)
    v = w * 3
    kernels.project_ball_flat(v, 1.5)
    np.testing.assert_allclose(v, project_ball(w * 3, 1.5), rtol=1e-12)
    # softmax scores / axpy on a flat (d, k) parameter
    W = rng.standard_normal((13, 3))
    s = np.zeros(3)
    kernels.scores_row(X, 1, W.reshape(-1), 3, s)
    np.testing.assert_allclose(s, X[1].astype(float) @ W, rtol=1e-12)
    G = np.zeros(39)
    kernels.axpy_row(X, 1, np.array([1.0, -2.0, 0.5]), 3, G)
    np.testing.assert_allclose(G.reshape(13, 3), np.outer(X[1], [1.0, -2.0, 0.5]), rtol=1e-6)


# ---- simplex and mirror steps ----------------------------------------------------------------
def test_log_normalize_handles_huge_and_tiny_logits():
    lq = np.array([-2000.0, 0.0, 1000.0, 1000.0])
    out = log_normalize(lq)
    assert np.all(np.isfinite(out))
    assert logsumexp(out) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(probs_from_log(lq), [0, 0, 0.5, 0.5], atol=1e-300)
    np.testing.assert_allclose(uniform_log(4), np.log(0.25))


def test_entropic_step_matches_bruteforce_minimisation():
    """q-block prox: argmin gamma<g,q> + a KL(q, qbar) + (1-a) KL(q, q_k) over the simplex."""
    rng = np.random.default_rng(5)
    m = 3
    qbar = rng.dirichlet(np.ones(m))
    qk = rng.dirichlet(np.ones(m))
    g = rng.standard_normal(m)
    for a, gamma in ((0.3, 0.7), (0.0, 2.0), (1.0, 0.1)):
        closed = np.exp(entropic_step(np.log(qbar) + 5.0, np.log(qk), a, gamma, g))

        def obj(u, a=a, gamma=gamma):
            q = np.exp(u - logsumexp(u))  # parametrise the simplex interior
            return gamma * g @ q + a * kl(q, qbar) + (1 - a) * kl(q, qk)

        res = minimize(obj, np.zeros(m), method="BFGS", options={"gtol": 1e-12})
        brute = np.exp(res.x - logsumexp(res.x))
        np.testing.assert_allclose(closed, brute, atol=1e-6)


def test_joint_prox_step_matches_bruteforce_on_tiny_instance():
    """Spec 000 §7: the closed-form prox step of §1.4 on z = (w, q), m = 3, d = 2, against a
    numerical minimisation of eta<g, z> + a B(z, zbar) + (1 - a) B(z, z_k) over ball x simplex,
    with psi(z) = ||w||^2 / (4 D_w^2) + sum q log q / (2 ln m) and D_w^2 = R^2 / 2."""
    rng = np.random.default_rng(6)
    m, d, R = 3, 2, 1.0
    Dw2 = R * R / 2
    lnm = math.log(m)
    wbar, wk = rng.standard_normal(d) * 0.3, rng.standard_normal(d) * 0.3
    qbar, qk = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    gw, gq = rng.standard_normal(d) * 3, rng.standard_normal(m)
    for a, eta in ((0.25, 0.05), (0.6, 0.4)):   # second case: the ball constraint is active
        w_cf = project_ball(a * wbar + (1 - a) * wk - 2 * Dw2 * eta * gw, R)
        q_cf = np.exp(entropic_step(np.log(qbar), np.log(qk), a, 2 * lnm * eta, gq))

        def obj(x, a=a, eta=eta):
            w, q = x[:d], x[d:]
            Bw = (a * np.sum((w - wbar) ** 2) + (1 - a) * np.sum((w - wk) ** 2)) / (4 * Dw2)
            qq = np.clip(q, 1e-300, None)
            Bq = (a * kl(qq, qbar) + (1 - a) * kl(qq, qk)) / (2 * lnm)
            return eta * (gw @ w + gq @ q) + Bw + Bq

        cons = [{"type": "eq", "fun": lambda x: np.sum(x[d:]) - 1.0},
                {"type": "ineq", "fun": lambda x: R * R - np.sum(x[:d] ** 2)}]
        x0 = np.concatenate([np.zeros(d), np.full(m, 1.0 / m)])
        res = minimize(obj, x0, method="SLSQP", constraints=cons,
                       bounds=[(None, None)] * d + [(1e-12, 1.0)] * m,
                       options={"ftol": 1e-14, "maxiter": 500})
        assert res.success
        np.testing.assert_allclose(w_cf, res.x[:d], atol=2e-5)
        np.testing.assert_allclose(q_cf, res.x[d:], atol=2e-5)
        if a == 0.6:
            assert np.linalg.norm(w_cf) == pytest.approx(R)


def test_simplex_projection_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(7)
    for m in (1, 3, 8):
        v = rng.standard_normal(m) * 2
        x = cp.Variable(m)
        cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, cp.sum(x) == 1]).solve(
            solver=cp.CLARABEL)
        np.testing.assert_allclose(project_simplex(v), x.value, atol=1e-7)
    np.testing.assert_allclose(project_simplex(np.array([0.2, 0.3, 0.5])), [0.2, 0.3, 0.5])


def test_ball_projection_matches_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(8)
    for V, R in ((rng.standard_normal((4, 1)) * 5, 2.0), (rng.standard_normal((3, 2)), 10.0),
                 (rng.standard_normal((3, 2)) * 4, 1.0)):
        x = cp.Variable(V.shape)
        cp.Problem(cp.Minimize(cp.sum_squares(x - V)), [cp.norm(cp.vec(x, order="C"), 2) <= R]
                   ).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(project_ball(V, R), x.value, atol=1e-6)
