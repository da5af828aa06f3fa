"""Paper 003 fair-FL aggregation rules (docs/papers/003.md §2.6) against hand-computed small
cases."""

import math

import numpy as np
import pytest

from drocli.ops import fl_aggregators as fa
from drocli.ops.simplex import project_simplex


def test_pseudo_gradients_and_updates():
    theta = np.array([1.0, 2.0])
    thetas = np.array([[0.5, 2.0], [1.0, 3.0]])
    np.testing.assert_allclose(fa.pseudo_gradients(theta, thetas, 0.5), [[1.0, 0.0], [0.0, -2.0]])
    np.testing.assert_allclose(fa.updates(theta, thetas), [[-0.5, 0.0], [0.0, 1.0]])


def test_fedavg_is_unweighted_mean():
    np.testing.assert_allclose(fa.fedavg_step([[1.0, 2.0], [3.0, 6.0], [2.0, 1.0]]), [2.0, 3.0])


def test_qffl_two_clients_by_hand():
    # θ = 0, lr = 0.5: g_1 = (1, 0), g_2 = (0, 2); L = (1, 4), q = 1/2
    # Δ = 1·(1,0) + 2·(0,2) = (1, 4); h_1 = ½·1·1 + 1/0.5 = 2.5, h_2 = ½·½·4 + 2/0.5 = 5
    new = fa.qffl_step([0.0, 0.0], [[-0.5, 0.0], [0.0, -1.0]], [1.0, 4.0], lr=0.5, q=0.5)
    np.testing.assert_allclose(new, [-1.0 / 7.5, -4.0 / 7.5], rtol=1e-14)


def test_qffl_equal_losses_is_a_damped_fedavg():
    # equal L: θ - L^q Σg / (q L^(q-1) Σ||g||² + m L^q/lr); with zero g for all but one client
    theta = np.array([1.0, 1.0])
    thetas = np.array([[1.0, 1.0], [0.0, 1.0]])         # g_2 = (1, 0)/0.1 = (10, 0)
    L, q, lr = 2.0, 1.0, 0.1
    h = q * 1.0 * 100.0 + 2 * L / lr                       # = 100 + 40
    expect = theta - L * np.array([10.0, 0.0]) / h
    np.testing.assert_allclose(fa.qffl_step(theta, thetas, [L, L], lr, q), expect, rtol=1e-14)


def test_tch_takes_worst_client_first_on_ties():
    thetas = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(fa.tch_step(thetas, [1.0, 3.0, 2.0]), [1.0, 1.0])
    np.testing.assert_array_equal(fa.tch_step(thetas, [3.0, 1.0, 3.0]), [0.0, 0.0])
    out = fa.tch_step(thetas, [1.0, 3.0, 2.0])
    out[0] = 99.0
    assert thetas[1, 0] == 1.0, "returns a copy"


def test_stch_softmax_by_hand():
    # m = 2, μ = 0.5: L/(mμ) = (1, 2) -> p = (1, e)/(1 + e)
    p = fa.stch_weights([1.0, 2.0], mu=0.5)
    np.testing.assert_allclose(p, [1 / (1 + math.e), math.e / (1 + math.e)], rtol=1e-14)
    new = fa.stch_step([[0.0, 0.0], [1.0, 2.0]], [1.0, 2.0], mu=0.5)
    np.testing.assert_allclose(new, p[1] * np.array([1.0, 2.0]), rtol=1e-14)
    big = fa.stch_weights([1000.0, 0.0], mu=0.01)        # no overflow
    np.testing.assert_allclose(big, [1.0, 0.0])


def _proj2(a, b):
    """Closed-form Euclidean projection of (a, b) onto the 2-simplex."""
    x = min(max((1.0 + a - b) / 2.0, 0.0), 1.0)
    return np.array([x, 1.0 - x])


def test_omd_gd_lambda_step_two_clients_closed_form():
    # (½, ½) + 0.3·(1, 3) = (0.8, 1.4) -> shift by 0.6/2 -> (0.2, 0.8)
    np.testing.assert_allclose(fa.omd_lambda_gd([0.5, 0.5], [1.0, 3.0], 0.3), [0.2, 0.8],
                               atol=1e-15)
    np.testing.assert_allclose(fa.omd_lambda_gd([0.5, 0.5], [1.0, 5.0], 1.0), [0.0, 1.0])
    rng = np.random.default_rng(0)
    for _ in range(200):
        lam = rng.dirichlet([1.0, 1.0])
        L, eta = rng.uniform(0, 3, 2), rng.choice([0.01, 0.3, 1.0, 5.0])
        w = rng.uniform(0.1, 1.0, 2)
        v = lam + eta * w * L
        np.testing.assert_allclose(fa.omd_lambda_gd(lam, L, eta, w), _proj2(*v), atol=1e-14)


def test_omd_gd_uses_the_exact_projection_not_clip_and_renormalise():
    lam, L = np.array([0.2, 0.3, 0.5]), np.array([0.1, 2.0, 3.0])
    out = fa.omd_lambda_gd(lam, L, 0.5)
    np.testing.assert_allclose(out, project_simplex(lam + 0.5 * L))
    v = lam + 0.5 * L
    assert not np.allclose(out, v / v.sum())


def test_omd_eg_lambda_step_closed_form():
    loglam = np.log([0.5, 0.5])
    out = np.exp(fa.omd_loglambda_eg(loglam, [1.0, 3.0], 0.3))
    np.testing.assert_allclose(out, [1 / (1 + math.exp(0.6)), 1 / (1 + math.exp(-0.6))],
                               rtol=1e-14)
    # with w: exponent η w∘L = (0.075, 0.225) from λ = (0.5, 0.5)
    out = np.exp(fa.omd_loglambda_eg(loglam, [1.0, 1.0], 0.3, w=[0.25, 0.75]))
    np.testing.assert_allclose(out[0], 1 / (1 + math.exp(0.15)), rtol=1e-14)
    # two steps = one step with the summed losses; λ ∝ λ_0 exp(η Σ L)
    two = fa.omd_loglambda_eg(fa.omd_loglambda_eg(np.log([0.2, 0.8]), [1.0, 2.0], 0.5),
                              [3.0, 0.5], 0.5)
    direct = np.array([0.2, 0.8]) * np.exp(0.5 * np.array([4.0, 2.5]))
    np.testing.assert_allclose(np.exp(two), direct / direct.sum(), rtol=1e-13)
    huge = fa.omd_loglambda_eg(np.log([0.5, 0.5]), [300.0, 0.0], 10.0)  # exp(3000) overflows
    assert np.all(np.isfinite(huge))
    np.testing.assert_allclose(np.exp(huge), [1.0, 0.0])


def test_omd_weights():
    np.testing.assert_allclose(fa.omd_weights([0.2, 0.8]), [0.2, 0.8])
    np.testing.assert_allclose(fa.omd_weights([0.2, 0.8], [3.0, 1.0]), [3 / 7, 4 / 7])


# --- FedMGDA+ ---------------------------------------------------------------------------------

def _box_simplex_cvxpy(v, lo, hi):
    cp = pytest.importorskip("cvxpy")
    x = cp.Variable(v.size)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [cp.sum(x) == 1, x >= lo, x <= hi]).solve()
    return np.asarray(x.value)


def test_box_simplex_projection():
    rng = np.random.default_rng(1)
    v = rng.normal(size=6)
    np.testing.assert_allclose(fa.project_box_simplex(v, 0.0, 1.0), project_simplex(v),
                               atol=1e-14)
    for m, eps in [(3, 0.1), (5, 0.05), (10, 0.5), (10, 0.02), (4, 1.0)]:
        lo, hi = fa.fedmgda_box(m, eps)
        for _ in range(5):
            v = rng.normal(scale=rng.choice([0.01, 1.0, 10.0]), size=m)
            x = fa.project_box_simplex(v, lo, hi)
            assert abs(x.sum() - 1) < 1e-12 and x.min() >= lo - 1e-15 and x.max() <= hi + 1e-15
            np.testing.assert_allclose(x, _box_simplex_cvxpy(v, lo, hi), atol=1e-6)
    # degenerate box ε = 0: only the uniform point
    np.testing.assert_allclose(fa.project_box_simplex(rng.normal(size=10), 0.1, 0.1),
                               np.full(10, 0.1))


def test_fedmgda_three_clients_by_hand():
    # û = (1,0), (0,1), (-1,0): ||Σλû||² = (λ1-λ3)² + λ2²  -> λ2 as small as allowed, λ1 = λ3
    theta = np.array([1.0, -1.0])
    U = np.array([[2.0, 0.0], [0.0, 0.5], [-3.0, 0.0]])       # norms do not matter
    new, lam = fa.fedmgda_step(theta, theta + U, eps=1.0)    # box [0, 1]: plain MGDA
    np.testing.assert_allclose(lam, [0.5, 0.0, 0.5], atol=1e-9)
    np.testing.assert_allclose(new, theta + [-0.5, 0.0], atol=1e-8)
    new, lam = fa.fedmgda_step(theta, theta + U, eps=0.1)    # box [0.2333, 0.4333] active
    l2 = 1 / 3 - 0.1
    np.testing.assert_allclose(lam, [(1 - l2) / 2, l2, (1 - l2) / 2], atol=1e-9)
    np.testing.assert_allclose(new, theta + [(1 - l2) / 2 * (2 - 3), 0.5 * l2], atol=1e-8)
    _, lam = fa.fedmgda_step(theta, theta + U, eps=0.0)      # ε = 0: FedAvg weights
    np.testing.assert_allclose(lam, np.full(3, 1 / 3))


def test_fedmgda_two_clients_is_uniform():
    # normalised directions: the objective is symmetric in λ1, λ2 -> (½, ½)
    _, lam = fa.fedmgda_step(np.zeros(3), [[1.0, 2.0, 0.0], [-5.0, 1.0, 1.0]], eps=1.0)
    np.testing.assert_allclose(lam, [0.5, 0.5], atol=1e-9)


def test_fedmgda_weights_match_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    box_active = 0
    for m, P in [(3, 5), (5, 20), (10, 50), (10, 4), (6, 6)]:
        for eps in [0.02, 0.05, 0.1, 0.5, 1.0]:
            U = rng.normal(size=(m, P)) + rng.normal(size=P)   # correlated, like FL updates
            lam = fa.fedmgda_weights(U, eps)
            Uh = U / np.linalg.norm(U, axis=1, keepdims=True)
            lo, hi = fa.fedmgda_box(m, eps)
            x = cp.Variable(m)
            prob = cp.Problem(cp.Minimize(cp.sum_squares(Uh.T @ x)),
                              [cp.sum(x) == 1, x >= lo, x <= hi])
            prob.solve()
            ref = np.asarray(x.value)
            assert abs(lam.sum() - 1) < 1e-12 and lam.min() >= lo - 1e-12
            assert lam.max() <= hi + 1e-12
            ours, theirs = np.sum((lam @ Uh) ** 2), np.sum((ref @ Uh) ** 2)
            assert ours <= theirs + 1e-8, (m, P, eps, ours, theirs)
            if P >= m:                                       # strictly convex: unique λ*
                np.testing.assert_allclose(lam, ref, atol=1e-5)
            if eps < 1 and np.any(np.isclose(lam, hi) | np.isclose(lam, lo) & (lo > 0)):
                box_active += 1
    assert box_active >= 5, "the ε box was active in some instances"


# --- FedFV ------------------------------------------------------------------------------------

def test_fedfv_keep_index():
    L = [0.5, 0.1, 0.9, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6, 1.0]   # ascending: 1 5 3 7 0 8 4 6 2 9
    assert sorted(fa.fedfv_keep(L, 0.1)) == [9]               # order[ceil(9·0.9) = 9:]
    assert sorted(fa.fedfv_keep(L, 0.2)) == [2, 9]            # order[ceil(7.2) = 8:]
    assert sorted(fa.fedfv_keep(L, 0.5)) == [2, 4, 6, 8, 9]   # order[ceil(4.5) = 5:]
    assert list(fa.fedfv_keep(L, 0.0)) == []


def test_fedfv_two_clients_by_hand():
    # u_1 = (1, 0) (loss 1), u_2 = (-1, 1) (loss 2). α = 0.2: keep order[ceil(0.8) = 1:] =
    # client 2. u_1 conflicts with u_2 (<u_2, u_1> = -1): u_1' = (1,0) - (-1,1)(-1)/2 = (½, ½).
    theta = np.array([0.5, 0.5])
    U = np.array([[1.0, 0.0], [-1.0, 1.0]])
    L = [1.0, 2.0]
    np.testing.assert_allclose(fa.fedfv_internal(U, L, 0.2), [[0.5, 0.5], [-1.0, 1.0]])
    # g = mean = (-¼, ¾), rescaled to ||mean u|| = ||(0, ½)|| = ½
    g = np.array([-0.25, 0.75]) * 0.5 / math.sqrt(0.625)
    np.testing.assert_allclose(fa.fedfv_step(theta, theta + U, L, 0.2), theta + g, rtol=1e-14)
    # external vs (u_1, u_2): <g, u_1> = -¼ < 0 only -> g_con = u_1, <g, g_con> < 0:
    # g = (-¼, ¾) - (1, 0)(-¼) = (0, ¾) -> rescaled (0, ½)
    np.testing.assert_allclose(fa.fedfv_step(theta, theta + U, L, 0.2, stored=[U]),
                               theta + [0.0, 0.5], atol=1e-15)
    # α = 0: nobody keeps; u_2' = (-1,1) - (1,0)(-1)/1 = (0, 1); g = (¼, ¾)
    np.testing.assert_allclose(fa.fedfv_internal(U, L, 0.0), [[0.5, 0.5], [0.0, 1.0]])
    g0 = np.array([0.25, 0.75]) * 0.5 / math.sqrt(0.625)
    np.testing.assert_allclose(fa.fedfv_direction(U, L, 0.0), g0, rtol=1e-14)
    # α = 1: everybody keeps: g = mean u, unchanged by the rescaling
    np.testing.assert_allclose(fa.fedfv_direction(U, L, 1.0), [0.0, 0.5], atol=1e-15)


def test_fedfv_three_clients_projection_order():
    # u = (1,0) loss 3, (-1,1) loss 1, (0,-2) loss 2; ascending order: clients 2, 3, 1.
    # α = 0.2: keep order[ceil(2·0.8) = 2:] = client 1.
    # client 2: vs u_3: <(0,-2),(-1,1)> = -2 -> (-1,1) - (0,-2)(-2)/4 = (-1, 0);
    #           vs u_1: <(1,0),(-1,0)> = -1 -> (0, 0)
    # client 3: vs u_2: <(-1,1),(0,-2)> = -2 -> (0,-2) - (-1,1)(-2)/2 = (-1,-1);
    #           vs u_1: -1 -> (0, -1)
    # (the reverse order would give (-½,-½) for client 3: the ascending order matters)
    U = np.array([[1.0, 0.0], [-1.0, 1.0], [0.0, -2.0]])
    L = [3.0, 1.0, 2.0]
    np.testing.assert_allclose(fa.fedfv_internal(U, L, 0.2),
                               [[1.0, 0.0], [0.0, 0.0], [0.0, -1.0]], atol=1e-15)
    # g = (⅓, -⅓), rescaled to ||mean u|| = ⅓
    np.testing.assert_allclose(fa.fedfv_direction(U, L, 0.2),
                               np.array([1.0, -1.0]) / (3 * math.sqrt(2)), rtol=1e-14)


def test_fedfv_external_no_conflict_is_identity():
    g = np.array([1.0, 1.0])
    np.testing.assert_array_equal(fa.fedfv_external(g, [np.array([[1.0, 0.0], [0.0, 2.0]])]), g)
    np.testing.assert_array_equal(fa.fedfv_external(g, [np.zeros((0, 2))]), g)


def _internal_by_new_arrays(U, L, alpha):
    """FedFV's internal projections written with a new array per projection (the plain form)."""
    order = np.argsort(L, kind="stable")
    keep = set(fa.fedfv_keep(L, alpha).tolist())
    sq = np.einsum("ij,ij->i", U, U)
    out = U.copy()
    for i in range(U.shape[0]):
        if i in keep:
            continue
        ui = out[i]
        for j in order:
            if j != i and float(U[j] @ ui) < 0:
                ui = ui - U[j] * (float(U[j] @ ui) / sq[j])
        out[i] = ui
    return out


def test_fedfv_in_place_projections_and_shared_history_change_no_bit():
    """The in-place projections equal the plain form to the bit, and FedFV's aggregate
    (updates computed once, this round's history passed without a copy) equals fedfv_step on
    fresh arrays with the history taken by its mask."""
    from drocli.solvers.fl.fedfv import FedFV

    rng = np.random.default_rng(4)
    m, P = 7, 40
    U = rng.standard_normal((m, P))
    U[1] = -U[0] + 0.1 * rng.standard_normal(P)          # conflicts to project away
    U[3] = -0.5 * U[2]
    L = rng.random(m)
    for alpha in (0.0, 0.2, 0.5):
        got = fa.fedfv_internal(U, L, alpha)
        want = _internal_by_new_arrays(U, L, alpha)
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
        assert not np.array_equal(got, U)
    theta = rng.standard_normal(P)
    method = FedFV({"alpha": 0.2, "tau": 1})
    method.m = m
    method.last_dir = None
    method.last_round = np.full(m, -1, dtype=np.int64)
    for r in range(3):
        thetas = theta[None, :] + rng.standard_normal((m, P))
        Lr = rng.random(m)
        want = fa.fedfv_step(theta, thetas, Lr, 0.2, [(thetas - theta)[np.full(m, True)]])
        got = method.aggregate(theta, thetas, Lr, r)
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
        theta = got
