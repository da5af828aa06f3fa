"""The nonconvex objective of paper 002, Fig. 5 (Zhao, Lyu & Kolar 2023, §4.4): a two-layer
ReLU network with squared error (problem finite_sum_mlp) and L-SVRG on it. Independent truth
only: central finite differences, a plain numpy forward/backward pass, exact expectations over
the sampling distribution and a numpy per-step replay of Algorithm 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops import samplers as S
from drocli.plugins import registry
from drocli.problems.finite_sum_mlp import (
    MLPFiniteSumProblem,
    MLPSnapshot,
    mlp_sample_grad,
    pytorch_init,
)
from drocli.run.cells import Cell
from drocli.run.monitor import Monitor
from drocli.run.runner import execute
from drocli.solvers.finite_sum.estimators import Draws, mlp_delta_norms, mlp_vr_estimate
from tests.conftest import plugin

load_regression = plugin("data", "regression_synthetic")
make_mlp = plugin("problem", "finite_sum_mlp")

SAMPLERS = ("uniform", "importance", "optimal", "osmd", "adaosmd")


# ---- independent numpy truth ----------------------------------------------------------------
def unpack(x, d, H):
    return (x[:H * d].reshape(H, d), x[H * d:H * d + H], x[H * d + H:H * d + 2 * H],
            x[H * d + 2 * H])


def np_losses(p, x):
    """Per-sample losses (n,) by a plain forward pass."""
    W1, c1, w2, c2 = unpack(x, p.d_in, p.H)
    out = np.maximum(p.A @ W1.T + c1, 0.0) @ w2 + c2
    return 0.5 * (out - p.y) ** 2


def np_grads(p, x, rows=None):
    """Per-sample gradients (len(rows), D) by backpropagation written out in numpy."""
    rows = np.arange(p.n) if rows is None else np.asarray(rows)
    A, yv = p.A[rows], p.y[rows]
    W1, c1, w2, c2 = unpack(x, p.d_in, p.H)
    Z = A @ W1.T + c1
    Hh = np.maximum(Z, 0.0)
    r = Hh @ w2 + c2 - yv
    dZ = r[:, None] * w2[None, :] * (Z > 0)
    dW1 = dZ[:, :, None] * A[:, None, :]
    return np.concatenate([dW1.reshape(len(rows), -1), dZ, r[:, None] * Hh, r[:, None]], axis=1)


def tiny(n=9, d=5, H=3, seed=0, standardize_y=False):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d)) * np.exp(0.5 * rng.standard_normal(n))[:, None]
    y = A @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    return MLPFiniteSumProblem(A, y, hidden=H, standardize_y=standardize_y, init_seed=seed)


def away_from_kinks(p, rng, scale=0.7):
    """A random x whose pre-activations stay >= 0.05 away from 0 (finite differences of a
    piecewise-smooth function)."""
    for _ in range(1000):
        x = scale * rng.standard_normal(p.d)
        W1, c1, _, _ = unpack(x, p.d_in, p.H)
        Z = p.A @ W1.T + c1
        if np.abs(Z).min() > 0.05 and (Z > 0).any():
            return x
    raise AssertionError("no kink-free point found")


def central_fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        g[j] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def rel_err(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


# ---- the problem ----------------------------------------------------------------------------
def test_per_sample_and_full_gradients_vs_central_differences():
    p = tiny()
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = away_from_kinks(p, rng)
        z = np.zeros(p.H)
        out = np.zeros(p.d)
        for i in range(p.n):
            fi = mlp_sample_grad(p.A, p.y, p.H, x, i, z, out)
            assert fi == pytest.approx(np_losses(p, x)[i], rel=1e-12)
            fd = central_fd(lambda v, i=i: np_losses(p, v)[i], x)
            assert rel_err(out, fd) < 1e-6
            assert np.allclose(out, np_grads(p, x, [i])[0], rtol=1e-12, atol=1e-13)
        c0 = p.oracle_calls
        gF = p.full_gradient(x)
        assert p.oracle_calls - c0 == p.n                        # a full pass costs n
        assert rel_err(gF, central_fd(lambda v: p.loss(v), x)) < 1e-6
        assert np.allclose(gF, np_grads(p, x).mean(0), rtol=1e-12, atol=1e-13)
        G = p.sample_gradients(x, [4, 0, 4])
        assert p.oracle_calls - c0 == p.n + 3
        assert np.allclose(G, np_grads(p, x, [4, 0, 4]), rtol=1e-12, atol=1e-13)
        snap_z, snap_r, _ = p.snapshot(x)
        assert np.allclose(p.sample_grad_norms(snap_z, snap_r, x),
                           np.linalg.norm(np_grads(p, x), axis=1), rtol=1e-12)
        ev = p.evaluate(x, iteration=7)
        assert ev["loss"] == pytest.approx(np_losses(p, x).mean(), rel=1e-13)
        assert ev["log10_loss"] == pytest.approx(math.log10(ev["loss"]), rel=1e-13)
        assert ev["grad_norm2"] == pytest.approx(gF @ gF, rel=1e-12)
        assert ev["iteration"] == 7.0


def test_pytorch_init_seeding_and_targets():
    x = pytorch_init(100, 10, 3)
    W1, c1, w2, c2 = unpack(x, 100, 10)
    assert x.size == 10 * 100 + 2 * 10 + 1
    assert np.abs(W1).max() <= 0.1 and np.abs(c1).max() <= 0.1
    assert np.abs(W1).max() > 0.09 and W1.std() == pytest.approx(0.1 / np.sqrt(3), rel=0.05)
    assert np.abs(np.r_[w2, c2]).max() <= 1 / np.sqrt(10)
    assert np.array_equal(x, pytorch_init(100, 10, 3)) and not np.array_equal(
        x, pytorch_init(100, 10, 4))
    # the run's data seed seeds the init (every method of a run starts at the same x0)
    data = load_regression({"n": 40, "d": 6}, 5)
    p = make_mlp(data, {"hidden": 4})
    assert p.init_seed == 5 and np.array_equal(p.zero_point(), pytorch_init(6, 4, 5))
    assert p.d == 4 * 6 + 9 and p.L_max == pytest.approx((data.X_train ** 2).sum(1).max())
    assert make_mlp(data, {"hidden": 4, "init_seed": 11}).init_seed == 11
    assert np.array_equal(p.y, data.y_train)                       # raw targets by default
    ps = make_mlp(data, {"hidden": 4, "standardize_y": True})
    assert ps.y.mean() == pytest.approx(0.0, abs=1e-12) and ps.y.std() == pytest.approx(1.0)
    assert ps.info["y_std"] == pytest.approx(data.y_train.std())
    with pytest.raises(DrocliError, match="hidden"):
        make_mlp(data, {"hidden": 0})


# ---- the estimator --------------------------------------------------------------------------
def adapted_sampler(name, p, b=1, seed=0):
    rng = np.random.default_rng(seed)
    kw = {"osmd_lr": 3e-4} if name == "osmd" else {}
    if name == "adaosmd":
        kw = {"horizon": 200, "abar": 1.0, "eta_scale": 1e6}
    s = S.make_sampler(name, p.n, batch=b, L=p.L, **kw)
    if name == "optimal":
        s.set_optimal(rng.random(p.n) ** 2)
    for _ in range(40 if s.adaptive else 0):
        idx, pk = s.draw(rng.random((b, s.uniforms_per_draw)))
        s.update(idx, rng.exponential(1.0, b) * (1 + idx), pk)
    return s


@pytest.mark.parametrize("name", SAMPLERS)
def test_lsvrg_estimator_is_exactly_unbiased(name):
    """sum_i p_i g(i) = grad F(x) (b = 1) and sum_{i,j} p_i p_j g(i, j) = grad F(x) (b = 2)
    for the sampler's current p; the feedback is ||Delta_i||^2; the Optimal sampler's input
    is ||Delta_i||."""
    p = tiny(n=7, d=4, H=3, seed=2)
    rng = np.random.default_rng(3)
    x, w = away_from_kinks(p, rng), away_from_kinks(p, rng)
    snap_z, snap_r, gw = p.snapshot(w)
    snap = MLPSnapshot(w, gw, snap_z, snap_r)
    dist = adapted_sampler(name, p).distribution()
    assert dist.min() > 0 and dist.sum() == pytest.approx(1.0, abs=1e-14)
    truth = np_grads(p, x).mean(0)
    Dl = np_grads(p, x) - np_grads(p, w)
    z, g, ak = np.zeros(3 * p.H), np.zeros(p.d), np.zeros(1)
    acc = np.zeros(p.d)
    for i in range(p.n):
        mlp_vr_estimate(p.kdata, x, snap, Draws(np.array([i]), dist[i:i + 1], ak, g), z)
        acc += dist[i] * g
        assert ak[0] == pytest.approx((Dl[i] ** 2).sum(), rel=1e-10)
        assert np.allclose(g, gw + Dl[i] / (p.n * dist[i]), rtol=1e-11, atol=1e-12)
    assert np.allclose(acc, truth, rtol=1e-11, atol=1e-12)
    norms = np.zeros(p.n)
    mlp_delta_norms(p.kdata, x, snap, z, norms)
    assert np.allclose(norms, np.linalg.norm(Dl, axis=1), rtol=1e-10)
    acc[:] = 0.0
    ak2 = np.zeros(2)
    for i in range(p.n):
        for j in range(p.n):
            mlp_vr_estimate(p.kdata, x, snap, Draws(np.array([i, j]), dist[[i, j]], ak2, g), z)
            acc += dist[i] * dist[j] * g
    assert np.allclose(acc, truth, rtol=1e-11, atol=1e-12)


# ---- the compiled L-SVRG step ---------------------------------------------------------------
def np_lsvrg_replay(p, sampler, U, coins, step, rho, x, w):
    """Numpy Algorithm 1 with the samplers' Python API: draw, Delta_k from np_grads, the
    estimator, refresh w = old x with probability rho, x -= step g, sampler feedback."""
    gw = np_grads(p, w).mean(0)
    b = U.shape[1]
    for t in range(U.shape[0]):
        idx, pk = sampler.draw(U[t])
        Dl = np_grads(p, x, idx) - np_grads(p, w, idx)
        g = gw + (Dl / (b * p.n * pk[:, None])).sum(0)
        if coins[t] < rho:
            w = x.copy()
            gw = np_grads(p, w).mean(0)
        x = x - step * g
        sampler.update(idx, (Dl ** 2).sum(1), pk)
    return x, w


@pytest.mark.parametrize("name,b", [("uniform", 2), ("importance", 1), ("osmd", 2)])
def test_compiled_chunk_matches_numpy_replay(name, b):
    from drocli.solvers.finite_sum.l_svrg import lsvrg_mlp_chunk

    p = tiny(n=8, d=5, H=3, seed=4)
    rng = np.random.default_rng(5)
    T, rho, step = 40, 0.1, 0.02
    kw = {"osmd_lr": 1e-3} if name == "osmd" else {}
    s = S.make_sampler(name, p.n, batch=b, L=p.L, **kw)
    s_ref = S.make_sampler(name, p.n, batch=b, L=p.L, **kw)
    U = rng.random((T, b, s.uniforms_per_draw))
    coins = rng.random(T)
    assert (coins < rho).sum() >= 2
    x0 = p.zero_point()
    x, w = x0.copy(), x0.copy()
    snap_z, snap_r, gw = p.snapshot(w)
    snap = MLPSnapshot(w, gw, snap_z, snap_r)
    c0 = p.oracle_calls
    dr = Draws(np.zeros(b, np.int64), np.zeros(b), np.zeros(b), np.zeros(p.d))
    pos = 0
    while pos < T:                      # as solve_mlp: resume after every refresh
        pos += lsvrg_mlp_chunk(p.kdata, x, snap, U[pos:], coins[pos:], rho, step, s.state,
                               False, dr, np.zeros(3 * p.H), p.counter)
        if coins[pos - 1] < rho:
            p.snapshot_into(w, snap_z, snap_r, gw)
    assert p.oracle_calls - c0 == 2 * b * T + p.n * int((coins < rho).sum())
    xr, wr = np_lsvrg_replay(p, s_ref, U, coins, step, rho, x0.copy(), x0.copy())
    assert np.linalg.norm(x - x0) > 0.05                                 # it moved
    assert np.allclose(x, xr, rtol=1e-10, atol=1e-12) and np.allclose(w, wr, rtol=1e-10)
    assert np.allclose(s.distribution(), s_ref.distribution(), rtol=1e-10)


# ---- the solver -----------------------------------------------------------------------------
def run(problem, budget, seed=0, checkpoints=10, **params):
    entry = registry.get("solver", "l_svrg")
    problem.reset_counter()
    mon = Monitor(problem, budget, checkpoints=checkpoints)
    x = entry.func(problem, registry.resolve_params(entry, params), np.random.default_rng(seed),
                   mon)
    return x, mon


@pytest.mark.parametrize("name", SAMPLERS)
def test_lsvrg_trains_the_network(name):
    data = load_regression({"n": 60, "d": 6, "nu": 0.5, "sigma": 0.1}, 0)
    p = make_mlp(data, {"hidden": 5, "standardize_y": True})
    f0 = p.loss(p.zero_point())
    x, mon = run(p, 20_000, step=0.02, sampler=name, osmd_lr=1e-5, rho=0.0)
    assert mon.status == "done"
    assert p.loss(x) < 0.05 * f0, (p.loss(x), f0)
    iters = [r[4] for r in mon.rows if r[3] == "iteration"]
    assert iters[0] == 0.0 and iters == sorted(iters) and iters[-1] > 5000


def test_trajectory_does_not_depend_on_checkpoints():
    p = make_mlp(load_regression({"n": 50, "d": 4, "nu": 1.0}, 1), {"hidden": 3})
    a, _ = run(p, 6000, checkpoints=3, step=1e-3, sampler="osmd", osmd_lr=1e-6, rho=0.05)
    b, _ = run(p, 6000, checkpoints=17, step=1e-3, sampler="osmd", osmd_lr=1e-6, rho=0.05)
    assert np.array_equal(a, b)


def test_nested_paired_tables_and_linear_only_solvers():
    """step / osmd_lr tables nest by data values ({nu: {..: {sigma: {..}}}}, Fig. 5) and
    resolve to the panel's value before the solver runs; a panel without an entry is named;
    SGD and L-Katyusha refuse the network."""
    from drocli.spec import paired

    table = {"nu": {0.0: {"sigma": {1.0: 2e-3, 10.0: 1.0}}, 1.0: {"sigma": {1.0: 5.0}}}}
    lr = {"nu": {0.0: {"sigma": {1.0: 1e-6}}}}
    given = {"step": table, "sampler": "osmd", "osmd_lr": lr, "pref": [0.5, 0.5]}
    got, tables = paired.resolve(given, {"nu": 0.0, "sigma": 1.0, "n": 40})
    assert got == {"step": 2e-3, "sampler": "osmd", "osmd_lr": 1e-6, "pref": [0.5, 0.5]}
    assert tables == ["step", "osmd_lr"]
    assert paired.resolve({"step": table}, {"nu": 1.0, "sigma": 1.0})[0]["step"] == 5.0
    with pytest.raises(paired.PairingError, match="no entry for nu = 0.5") as ei:
        paired.resolve(given, {"nu": 0.5, "sigma": 1.0})
    assert ei.value.path == "nu"
    with pytest.raises(paired.PairingError) as ei:
        paired.resolve({"step": table}, {"nu": 1.0, "sigma": 10.0})
    assert ei.value.path == "nu.sigma" and "add 10.0" in ei.value.fix
    p = make_mlp(load_regression({"n": 40, "d": 4, "nu": 0.0, "sigma": 1.0}, 0), {"hidden": 3})
    with pytest.raises(DrocliError, match="linear finite-sum"):
        plugin("solver", "sgd")(p, {"step": 0.1}, np.random.default_rng(0), Monitor(p, 100))
    with pytest.raises(DrocliError, match="linear finite-sum"):
        plugin("solver", "l_katyusha")(p, {}, np.random.default_rng(0), Monitor(p, 100))


def test_runner_contract_on_the_network(tmp_path, monkeypatch, capsys):
    """The solver contract of tests/test_solver_contract.py on a finite_sum_mlp cell."""
    monkeypatch.chdir(tmp_path)
    dparams = registry.resolve_params(registry.get("data", "regression_synthetic"),
                                      {"n": 30, "d": 4, "nu": 0.5})
    pparams = registry.resolve_params(registry.get("problem", "finite_sum_mlp"), {"hidden": 3})

    def cell(seed):
        return Cell(experiment="contract", solver="l_svrg", label="l_svrg", dataset="d",
                    seed=seed, data_name="regression_synthetic", data_params=dparams,
                    data_seed=seed, problem_name="finite_sum_mlp", problem_params=pparams,
                    solver_params=registry.resolve_params(
                        registry.get("solver", "l_svrg"),
                        {"step": 1e-3, "sampler": "osmd", "osmd_lr": 1e-6}),
                    budget={"epochs": 6.0, "checkpoints": 6, "spacing": "linear"},
                    metrics=("loss", "log10_loss", "iteration"))

    rows, status = execute(cell(0))
    assert status["status"] == "done", status
    assert capsys.readouterr() == ("", "") and list(tmp_path.iterdir()) == []
    calls = np.array([r[1] for r in rows])
    assert calls[-1] >= status["budget"] > 0 and np.all(np.diff(calls) >= 0)
    assert all(math.isfinite(r[4]) for r in rows)
    again, _ = execute(cell(0))
    assert [r[4] for r in rows] == [r[4] for r in again]
    other, _ = execute(cell(1))
    assert [r[4] for r in other] != [r[4] for r in rows]
    losses = [r[4] for r in rows if r[3] == "loss"]
    assert losses[-1] < losses[0]


def test_problem_checks_input():
    with pytest.raises(DrocliError, match="do not match"):
        MLPFiniteSumProblem(np.zeros((3, 2)), np.zeros(4))
    data = GroupedData("t", np.ones((3, 2)), np.arange(3.0), np.zeros(3, int))
    assert make_mlp(data, {}).init_seed == 0                     # no data seed recorded: 0
