"""RSVRB / RE-RSVRB (Guo, Hu, Zhang & Yang, Algorithms 2 and 3; docs/papers/004.md §2.3-2.4) against
independent truth: the S^l_lam composition identity behind the lazy Hessians, a dense
reference that follows the paper's steps 4-15 literally (every H_i projected every iteration)
on the same batches, the unbiasedness of the RC-STORM increment over all task subsets, the
documented sample cost, convergence of the exact hypergradient, and parameter errors."""

import copy
import itertools
import math

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.psd import FlooredSPD
from drocli.plugins import registry
from drocli.problems.bilevel import BilevelWeightsProblem
from drocli.run.monitor import Monitor
from drocli.solvers.bilevel import re_rsvrb, rsvrb

TOL = dict(rtol=1e-9, atol=1e-12)


def toy(m: int) -> BilevelWeightsProblem:
    rng = np.random.default_rng(0)
    X = (rng.random((40, 5)) < 0.4).astype(float)
    y = (rng.random(40) < 0.3).astype(float)
    Xt = (rng.random((30, 5)) < 0.4).astype(float)
    yt = (rng.random(30) < 0.3).astype(float)
    data = GroupedData("toy", X, y, np.zeros(40, dtype=np.int64), Xt, yt,
                       np.zeros(30, dtype=np.int64))
    return BilevelWeightsProblem(data, lam=0.1, tasks=m)


def floor_eigh(H: np.ndarray, lam: float) -> np.ndarray:
    """S^l_lam by eigh of the symmetrised matrix (§1.3), written here independently."""
    e, Q = np.linalg.eigh(0.5 * (H + H.T))
    return (Q * np.maximum(e, lam)) @ Q.T


def calls_monitor(k: int):
    """True for the first k calls, then False: k - 1 RC-STORM iterations (the first call is
    at the start point, every later one right after an x / y step)."""
    state = {"n": 0}

    def monitor(p, W):
        state["n"] += 1
        return state["n"] <= k
    return monitor


def recording_draws(pb: BilevelWeightsProblem, seed: int = 7):
    """Replace pb's draws by counted draws from a private generator, recorded in order."""
    gen = np.random.default_rng(seed)
    log = {"train": [], "val": []}

    def draw(kind, size):
        def f(_rng, b):
            pb.counter[0] += b
            B = gen.choice(size, size=min(b, size), replace=False)
            log[kind].append(B)
            return B
        return f
    pb.draw_train = draw("train", pb.n)
    pb.draw_val = draw("val", pb.n_va)
    return log


def dense_reference(pb, log, params, schedule, iters: int, seed: int):
    """Algorithm 2 with the mini-batch-of-tasks sampling, written from the paper's listing:
    every task's (G, v, alpha, H) updated densely each iteration, H_i <- S^l[(1 - b) H_i]
    when not sampled; I_t then J_t drawn from rng(seed); batches read from `log` in the
    order: start-up tasks 0..m-1, then the sampled tasks in increasing order."""
    m, lam, X = pb.m, pb.lam, pb.X
    S, Sd = params["tasks_per_iter"], params["tasks_d"] or params["tasks_per_iter"]
    gamma, tau = params["gamma"], params["tau"]
    rng = np.random.default_rng(seed)
    train, val = iter(log["train"]), iter(log["val"])
    p, W = np.ones(pb.n), np.zeros((m, pb.D))
    G, v, A, H = np.zeros((m, pb.D)), np.zeros((m, pb.D)), np.zeros((m, pb.n)), []
    for i in range(m):
        B, Bv = next(train), next(val)
        G[i], Hi, a = pb.lower_terms(p, W[i], B, i)
        A[i, B] = a
        v[i] = pb.upper_grad(W[i], Bv, i)
        H.append(floor_eigh(Hi, lam))

    def z(i):
        return -A[i] * (X @ np.linalg.solve(H[i], v[i]))
    d = np.mean([z(i) for i in range(m)], axis=0)
    for t in range(iters + 1):
        eta, tau_t, _ = schedule(t)
        p_prev, W_prev = p, W
        p = p - eta * gamma * d
        W = W - tau_t * tau * G
        if t == iters:
            return p, W
        c = 1.0 - schedule(t + 1)[2]
        I = set(rng.choice(m, size=S, replace=False).tolist())
        J = rng.choice(m, size=Sd, replace=False)
        z_old = np.mean([z(j) for j in J], axis=0)
        for i in range(m):
            if i not in I:
                G[i], v[i], A[i] = c * G[i], c * v[i], c * A[i]
                H[i] = floor_eigh(c * H[i], lam)
                continue
            B, Bv = next(train), next(val)
            g1, H1, a1 = pb.lower_terms(p, W[i], B, i)
            g0, H0, a0 = pb.lower_terms(p_prev, W_prev[i], B, i)
            w = m / S
            G[i] = c * (G[i] - w * g0) + w * g1
            v[i] = c * (v[i] - w * pb.upper_grad(W_prev[i], Bv, i)) + w * pb.upper_grad(W[i],
                                                                                         Bv, i)
            Ai = c * A[i]
            Ai[B] += w * (a1 - c * a0)
            A[i] = Ai
            H[i] = floor_eigh(c * (H[i] - w * H0) + w * H1, lam)
        d = c * (d - z_old) + np.mean([z(j) for j in J], axis=0)


def e1_schedule(c0, beta):
    def s(t):
        eta = (t + c0) ** (-1.0 / 3.0)
        return eta, eta, min(1.0, beta * eta * eta)
    return s


def stage_schedule_ref(eta1, T1, c_beta):
    lengths = [T1 * 2 ** k for k in range(30)]
    ends = np.cumsum(lengths)

    def s(t):
        k = int(np.searchsorted(ends, t, side="right"))
        eta = eta1 / math.sqrt(2.0) ** k
        return eta, eta, min(1.0, c_beta * eta * eta)
    return s


BASE = {"batch": 6, "batch_val": 5, "init_batch": 2, "nonneg": False}
CASES = {
    "rsvrb": (rsvrb.solve, {"c0": 100.0, "beta": 10.0, "gamma": 5.0, "tau": 1.0},
              lambda q: e1_schedule(q["c0"], q["beta"])),
    "re_rsvrb": (re_rsvrb.solve, {"eta1": 0.1, "stage_iters": 2, "c_beta": 30.0,
                                  "gamma": 5.0, "tau": 0.5},
                 lambda q: stage_schedule_ref(q["eta1"], q["stage_iters"], q["c_beta"])),
}


# ---- 1. lazy Hessians: the composition identity and its use --------------------------------
def test_floor_composition_identity_and_lazy_materialisation():
    rng = np.random.default_rng(3)
    lam, D = 0.5, 7
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    H = (Q * np.linspace(lam, 4 * lam, D)) @ Q.T          # H >= lam I, spread eigenvalues
    cs = [0.9, 0.6, 0.95, 0.7]
    stepwise = H
    for c in cs:
        stepwise = floor_eigh(c * stepwise, lam)
    at_once = floor_eigh(np.prod(cs) * H, lam)
    np.testing.assert_allclose(stepwise, at_once, rtol=1e-12, atol=1e-12)
    assert np.sum(np.linalg.eigvalsh(np.prod(cs) * H) < lam) >= 3, "the floor is active"
    # the solver's lazy state materialises the same matrix and solves with it
    pb = toy(2)
    est = rsvrb.TaskEstimators(pb, *pb.zero_point(),
                               lambda i: (np.arange(pb.n), np.arange(pb.n_va)))
    M = rng.normal(size=(pb.D, pb.D))
    Hb = floor_eigh(0.05 * M @ M.T, pb.lam)                   # >= lam I, several at lam
    est.F[1], est.scale[1] = FlooredSPD(Hb, pb.lam), 1.0
    for c in cs:
        est.scale *= c                                         # the dense decay of the solver
    F = est.hess(1)
    truth = Hb
    for c in cs:
        truth = floor_eigh(c * truth, pb.lam)
    np.testing.assert_allclose(F.matrix, truth, rtol=1e-10, atol=1e-13)
    q = rng.normal(size=pb.D)
    np.testing.assert_allclose(F.solve(q), np.linalg.solve(truth, q), rtol=1e-9)
    assert est.scale[1] == 1.0


# ---- 2. equality with the dense literal reference ---------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("m,S,Sd,iters", [(3, 3, 3, 1), (6, 2, 3, 5), (5, 1, 0, 6)])
def test_equals_dense_reference(name, m, S, Sd, iters):
    """S = S_d = m: one iteration is dense multi-task SVRB (pi_i = 1, d = mean z). S < m:
    several iterations with lazy H and dense decays equal the literal per-task recursion."""
    solve, extra, sched = CASES[name]
    params = {**BASE, **extra, "tasks_per_iter": S, "tasks_d": Sd}
    pb = toy(m)
    log = recording_draws(pb)
    p, W = solve(pb, params, np.random.default_rng(11), calls_monitor(iters + 1))
    pb_ref = toy(m)
    p_ref, W_ref = dense_reference(pb_ref, log, params, sched(params), iters, seed=11)
    assert len(log["train"]) == m + iters * S
    np.testing.assert_allclose(W, W_ref, **TOL)
    np.testing.assert_allclose(p, p_ref, **TOL)
    assert np.max(np.abs(p - 1.0)) > 1e-3, "p moved"


def test_one_task_reduces_to_svrb():
    """m = 1, S = 1 (pi = 1, d = z): RSVRB is the registered SVRB (Algorithm 1) step for step
    on the same batches."""
    params = {**BASE, **CASES["rsvrb"][1], "tasks_per_iter": 1, "tasks_d": 0}
    outs = []
    for name in ("rsvrb", "svrb"):
        pb = toy(1)
        recording_draws(pb)
        entry = registry.get("solver", name)
        q = {k: v for k, v in params.items() if k in entry.defaults}
        outs.append(entry.func(pb, registry.resolve_params(entry, q),
                               np.random.default_rng(0), calls_monitor(8)))
        outs.append(pb.counter[0])
    (p, W), n_r, (p_s, W_s), n_s = outs
    np.testing.assert_allclose(p, p_s, **TOL)
    np.testing.assert_allclose(W, W_s, **TOL)
    assert n_r == n_s


# ---- 3. RC-STORM increment is unbiased over the task subsets -------------------------------
def test_rc_storm_increment_unbiased_over_subsets():
    m, S, beta = 4, 2, 0.3
    pb = toy(m)
    rng = np.random.default_rng(5)
    p0, W0 = pb.zero_point()
    est = rsvrb.TaskEstimators(pb, p0, W0, lambda i: (rng.choice(pb.n, 12, replace=False),
                                                      rng.choice(pb.n_va, 9, replace=False)))
    p_prev, W_prev = 1.0 + 0.2 * rng.normal(size=pb.n), 0.3 * rng.normal(size=(m, pb.D))
    p, W = p_prev + 0.1 * rng.normal(size=pb.n), W_prev + 0.1 * rng.normal(size=(m, pb.D))
    batches = {i: (rng.choice(pb.n, 6, replace=False), rng.choice(pb.n_va, 5, replace=False))
               for i in range(m)}
    subsets = list(itertools.combinations(range(m), S))
    assert len(subsets) == math.comb(m, S) == 6
    mean = {k: 0.0 for k in ("G", "v", "alpha")}
    for I in subsets:
        e = copy.deepcopy(est)
        e.rc_storm(pb, p, W, p_prev, W_prev, list(I), beta, m / S, batches.__getitem__)
        for k in mean:
            mean[k] = mean[k] + getattr(e, k) / len(subsets)
        for i in set(range(m)) - set(I):           # untouched: only (1 - beta), H lazily
            np.testing.assert_allclose(e.G[i], (1 - beta) * est.G[i], rtol=1e-14)
            np.testing.assert_allclose(e.hess(i).matrix,
                                       floor_eigh((1 - beta) * est.F[i].matrix, pb.lam), **TOL)
    for i in range(m):                              # the full STORM update of every task
        B, Bv = batches[i]
        g1, _, a1 = pb.lower_terms(p, W[i], B, i)
        g0, _, a0 = pb.lower_terms(p_prev, W_prev[i], B, i)
        v1, v0 = pb.upper_grad(W[i], Bv, i), pb.upper_grad(W_prev[i], Bv, i)
        np.testing.assert_allclose(mean["G"][i], (1 - beta) * (est.G[i] - g0) + g1, **TOL)
        np.testing.assert_allclose(mean["v"][i], (1 - beta) * (est.v[i] - v0) + v1, **TOL)
        a_full = (1 - beta) * est.alpha[i]
        a_full[B] += a1 - (1 - beta) * a0
        np.testing.assert_allclose(mean["alpha"][i], a_full, **TOL)


# ---- 4. sample accounting ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_accounting(name):
    solve, extra, _ = CASES[name]
    m, S, b, bv, b0, k = 6, 3, 5, 3, 2, 9
    params = {**BASE, **extra, "batch": b, "batch_val": bv, "init_batch": b0,
              "tasks_per_iter": S, "tasks_d": 2}
    pb = toy(m)
    solve(pb, params, np.random.default_rng(0), calls_monitor(k))
    assert pb.counter[0] == m * b0 * (b + bv) + (k - 1) * S * (b + bv)
    pb = toy(m)
    mon = Monitor(pb, budget=2000, checkpoints=4)
    solve(pb, params, np.random.default_rng(0), mon)
    assert 2000 <= pb.counter[0] < 2000 + S * (b + bv)
    assert mon.status == "done" and len({r[0] for r in mon.rows}) >= 4


# ---- 5. convergence of the exact hypergradient ------------------------------------------------
@pytest.mark.parametrize("name,extra", [
    ("rsvrb", {"c0": 100.0, "beta": 10.0, "gamma": 10.0, "tau": 1.0}),
    ("re_rsvrb", {"eta1": 0.1, "stage_iters": 100, "c_beta": 10.0, "gamma": 10.0, "tau": 0.5}),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_hypergradient_shrinks(name, extra, seed):
    pb = toy(3)
    p0, _ = pb.zero_point()
    params = registry.resolve_params(registry.get("solver", name), {
        **extra, "batch": 8, "batch_val": 8, "tasks_per_iter": 2})
    p, W = registry.get("solver", name).func(pb, params, np.random.default_rng(seed),
                                             lambda p, W: pb.counter[0] < 10_000)
    g0, g1 = (np.linalg.norm(pb.hypergradient(q)) for q in (p0, p))
    assert np.all(np.isfinite(W))
    assert g1 < 0.5 * g0, (g0, g1)
    F = [sum(pb.upper_value(pb.solve_lower(q, i), i) for i in range(pb.m)) for q in (p0, p)]
    assert F[1] < F[0]


# ---- 6. registration and parameter errors -----------------------------------------------------
def test_registered_defaults():
    r, e = registry.get("solver", "rsvrb"), registry.get("solver", "re_rsvrb")
    assert r.family == e.family == "bilevel"
    assert r.defaults["tasks_per_iter"] == e.defaults["tasks_per_iter"] == 10
    assert (r.defaults["c0"], r.defaults["beta"], r.defaults["tau"]) == (100.0, 10.0, 1.0)
    assert (e.defaults["eta1"], e.defaults["stage_iters"], e.defaults["tau"]) == (0.01, 500, 0.5)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("bad", [{"batch": 0}, {"tasks_per_iter": 4}, {"tasks_d": 5},
                                 {"init_batch": 1.5}, {"gamma": -1.0}])
def test_bad_params_raise(name, bad):
    """Type and range errors are refused by the model; task counts above the problem's m
    (known only with the problem) by the solver before any sample is drawn."""
    entry = registry.get("solver", name)
    pb = toy(3)
    with pytest.raises(DrocliError) as err:
        params = registry.resolve_params(entry, {"tasks_per_iter": 2, **bad}, key="params")
        entry.func(pb, params, np.random.default_rng(0), lambda p, W: True)
    assert err.value.key.startswith("params.") and next(iter(bad)) in err.value.key
    assert pb.counter[0] == 0, "checked before any sample is drawn"


def test_re_rsvrb_stage_schedule():
    s = re_rsvrb.stage_schedule(0.08, 3, 20.0)
    ref = stage_schedule_ref(0.08, 3, 20.0)
    for t in range(60):
        np.testing.assert_allclose(s(t), ref(t), rtol=1e-15)
    assert s(2)[0] == 0.08 and s(3)[0] == pytest.approx(0.08 / math.sqrt(2))
    assert s(9)[0] == pytest.approx(0.04) and s(8)[0] == pytest.approx(0.08 / math.sqrt(2))
