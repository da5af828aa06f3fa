"""Paper 003 federated solvers (docs/papers/003.md §2.6) on a fake problem with quadratic clients.

FakeFL implements the `federated` problem interface the solvers program against: clients
f_i(θ) = ½||θ - c_i||², `steps` local GD steps of size lr, L_i = mean loss seen + 1e-10.
"""

import math

import numpy as np
import pytest

from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.run.monitor import Monitor
from drocli.solvers.fl import base
from drocli.solvers.fl.fedfv import FedFV
from drocli.solvers.fl.omd_tch_fl import OMDTchFL

FL_SOLVERS = {
    "fedavg": {},
    "qffl": {"q": 0.1},
    "propfair": {"M": 2.0, "eps0": 1.0},
    "fedmgda_plus": {"eps": 0.5},
    "fedfv": {"alpha": 0.2, "tau": 1},
    "tch_fl": {},
    "stch_fl": {"mu": 0.01},
    "omd_tch_fl": {"variant": "gd", "eta_lambda": 0.03, "output": "uniform",
                   "average_from": "post", "pref": None},
    "ada_omd_tch_fl": {"variant": "gd", "eta_lambda": 0.03, "output": "adaptive",
                       "average_from": "post", "pref": None},
}


class FakeFL:
    """m quadratic clients; `script(round, θ)` may replace the returned round losses."""

    N = 1

    def __init__(self, C, lr=0.5, steps=1, theta0=None, script=None):
        self.C = np.asarray(C, dtype=np.float64)
        self.m, self.P = self.C.shape
        self.lr, self.steps = lr, steps
        self.theta0 = None if theta0 is None else np.asarray(theta0, dtype=np.float64)
        self.script = script
        self.counter = np.zeros(1, dtype=np.int64)
        self.seen = []       # copies of the global models handed to local_round
        self.kwargs = []

    @property
    def oracle_calls(self):
        return int(self.counter[0])

    def initial(self, rng):
        return self.theta0.copy() if self.theta0 is not None else rng.normal(size=self.P)

    def losses(self, theta):
        return 0.5 * np.sum((np.atleast_2d(theta) - self.C) ** 2, axis=1)

    def local_round(self, theta, rng, loss="ce", M=None, eps0=1.0):
        self.seen.append(np.array(theta, copy=True))
        self.kwargs.append({"loss": loss, "M": M, "eps0": eps0})
        thetas = np.repeat(np.asarray(theta, dtype=np.float64)[None, :], self.m, axis=0)
        total = np.zeros(self.m)
        for _ in range(self.steps):
            ell = self.losses(thetas)
            total += ell
            scale = np.ones(self.m)
            if loss == "propfair":            # d ℓ_PF / d ℓ
                scale = np.where(M - ell < eps0, 1.0 / M, 1.0 / (M - ell))
            thetas = thetas - self.lr * scale[:, None] * (thetas - self.C)
        L = total / self.steps + 1e-10
        if self.script is not None:
            L = np.asarray(self.script(self.oracle_calls, theta), dtype=np.float64)
        self.counter[0] += 1
        return thetas, L

    def evaluate(self, theta, t=None):
        ell = self.losses(theta)
        return {"max_loss": float(ell.max()), "mean_loss": float(ell.mean())}


class Rounds:
    """Minimal monitor: stop after `budget` rounds, record the output points."""

    def __init__(self, problem, budget):
        self.problem, self.budget, self.points = problem, budget, []

    def __call__(self, point):
        self.points.append(np.array(point, copy=True))
        return self.problem.oracle_calls < self.budget

    def steps_until_due(self, cost):
        return 1


C2 = np.array([[1.0, 0.0], [0.0, 3.0]])
C3 = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 4.0], [-1.0, -1.0, 1.0]])


def _solve(name, problem, budget, **params):
    entry = registry.get("solver", name)
    mon = Rounds(problem, budget)
    out = entry.func(problem, registry.resolve_params(entry, params), np.random.default_rng(0),
                     mon)
    return out, mon


def _resolved(name: str, params: dict) -> dict:
    return registry.resolve_params(registry.get("solver", name), params)


# --- registry ---------------------------------------------------------------------------------

def test_registered_with_table1_defaults():
    for name, params in FL_SOLVERS.items():
        entry = registry.get("solver", name)
        assert entry.family == "federated"
        assert entry.defaults == params, name
        assert entry.func.__doc__ and len(entry.func.__doc__.strip()) > 20
    fed = {n for n, e in registry.entries("solver").items() if e.family == "federated"}
    assert fed == set(FL_SOLVERS)


@pytest.mark.parametrize("name, params, key", [
    ("qffl", {"q": 0.0}, "q"),
    ("propfair", {"M": -1.0}, "M"),
    ("fedmgda_plus", {"eps": -0.1}, "eps"),
    ("fedfv", {"alpha": 1.5}, "alpha"),
    ("fedfv", {"tau": 1.5}, "tau"),
    ("fedfv", {"tau": -1}, "tau"),
    ("stch_fl", {"mu": 0.0}, "mu"),
    ("omd_tch_fl", {"variant": "sgd"}, "variant"),
    ("omd_tch_fl", {"output": "average"}, "output"),
    ("omd_tch_fl", {"average_from": "all"}, "average_from"),
    ("omd_tch_fl", {"eta_lambda": -1.0}, "eta_lambda"),
    ("omd_tch_fl", {"pref": [1.0, 2.0, 3.0]}, "pref"),
    ("ada_omd_tch_fl", {"pref": [1.0, 0.0]}, "pref"),
    ("omd_tch_fl", {"pref": 0.5}, "pref"),
])
def test_bad_params_raise_drocli_error(name, params, key):
    with pytest.raises(DrocliError) as e:
        _solve(name, FakeFL(C2), 2, **params)
    assert e.value.key == f"params.{key}"


# --- the loop and the simple rules ------------------------------------------------------------

def test_fedavg_loop_by_hand():
    # one local step: θ_i = θ - lr(θ - c_i) -> mean = θ - lr(θ - c̄)
    p = FakeFL(C2, lr=0.5, theta0=[4.0, 4.0])
    out, mon = _solve("fedavg", p, 3)
    cbar = C2.mean(axis=0)
    theta = np.array([4.0, 4.0])
    expect = [theta.copy()]
    for _ in range(3):
        theta = theta - 0.5 * (theta - cbar)
        expect.append(theta.copy())
    np.testing.assert_allclose(mon.points, expect, rtol=1e-14)
    np.testing.assert_allclose(out, expect[-1])
    assert p.oracle_calls == 3
    assert all(k["loss"] == "ce" for k in p.kwargs)


def test_propfair_clients_use_the_propfair_loss():
    p = FakeFL(C2, theta0=[0.0, 0.0])
    _solve("propfair", p, 2, M=3.0)
    assert p.kwargs == [{"loss": "propfair", "M": 3.0, "eps0": 1.0}] * 2


def test_tch_and_qffl_use_round_losses_and_lr():
    p = FakeFL(C2, lr=0.5, theta0=[0.0, 0.0])     # L = (½, 9/2) + 1e-10: client 2 is worst
    out, _ = _solve("tch_fl", p, 1)
    np.testing.assert_allclose(out, [0.0, 1.5])
    p = FakeFL(C2, lr=0.5, theta0=[0.0, 0.0])
    out, _ = _solve("qffl", p, 1, q=1.0)
    # g = (θ - θ_i)/lr = θ - c_i = (-1, 0), (0, -3); Δ = ½(-1,0) + 9/2(0,-3); h = 1 + 1 + 9 + 9
    L = np.array([0.5, 4.5]) + 1e-10
    delta = L[0] * np.array([-1.0, 0.0]) + L[1] * np.array([0.0, -3.0])
    h = np.sum([1.0, 9.0]) + L.sum() / 0.5
    np.testing.assert_allclose(out, -delta / h, rtol=1e-12)


def test_fedfv_history_state():
    fv = FedFV(_resolved("fedfv", {"tau": 1}))
    p = FakeFL(C3)
    fv.start(p, np.zeros(3))
    assert fv.stored(0) == []
    thetas, _ = p.local_round(np.zeros(3), None)
    fv.aggregate(np.zeros(3), thetas, np.arange(4.0), 0)
    np.testing.assert_allclose(fv.last_dir, thetas)
    groups = fv.stored(1)
    assert len(groups) == 1 and groups[0].shape == (0, 3)     # round-0 directions are stale
    fv.aggregate(np.zeros(3), thetas, np.arange(4.0), 1)
    np.testing.assert_allclose(fv.stored(1)[0], thetas)        # this round's directions
    fv3 = FedFV(_resolved("fedfv", {"tau": 3}))
    fv3.start(p, np.zeros(3))
    for r in range(5):
        fv3.aggregate(np.zeros(3), thetas, np.arange(4.0), r)
    assert fv3.stored(2) == []
    assert [g.shape[0] for g in fv3.stored(4)] == [4, 0, 0]   # full participation


# --- (Ada)OMD-TCH -----------------------------------------------------------------------------

def _proj2(v):
    x = min(max((1.0 + v[0] - v[1]) / 2.0, 0.0), 1.0)
    return np.array([x, 1.0 - x])


def _omd_by_hand(variant, eta, rounds, theta0, lr=0.5, w=(1.0, 1.0)):
    """Independent two-client simulation: global models θ^(1..R+1) and the λs."""
    w = np.asarray(w)
    theta, lam = np.asarray(theta0, dtype=np.float64), np.array([0.5, 0.5])
    thetas_seq, lams = [theta.copy()], [lam.copy()]
    for _ in range(rounds):
        L = 0.5 * np.sum((theta - C2) ** 2, axis=1) + 1e-10
        local = theta - lr * (theta - C2)
        p = lam * w / np.sum(lam * w)
        theta = p[0] * local[0] + p[1] * local[1]
        if variant == "gd":
            lam = _proj2(lam + eta * w * L)
        else:
            lam = lam * np.exp(eta * w * L)
            lam = lam / lam.sum()
        thetas_seq.append(theta.copy())
        lams.append(lam.copy())
    return np.array(thetas_seq), np.array(lams)


@pytest.mark.parametrize("variant, eta", [("gd", 0.03), ("gd", 0.3), ("eg", 0.3), ("eg", 1.0)])
def test_omd_outputs_match_hand_simulation(variant, eta):
    R, theta0 = 4, [3.0, -1.0]
    seq, _ = _omd_by_hand(variant, eta, R, theta0)
    # uniform / post: mean of θ^(2..r+1); before any round θ^(1)
    out, mon = _solve("omd_tch_fl", FakeFL(C2, theta0=theta0), R, variant=variant,
                      eta_lambda=eta)
    expect = [seq[0]] + [seq[1:r + 1].mean(axis=0) for r in range(1, R + 1)]
    np.testing.assert_allclose(mon.points, expect, rtol=1e-12)
    np.testing.assert_allclose(out, expect[-1], rtol=1e-12)
    # uniform / pre: mean of θ^(1..r)
    _, mon = _solve("omd_tch_fl", FakeFL(C2, theta0=theta0), R, variant=variant,
                    eta_lambda=eta, average_from="pre")
    expect = [seq[0]] + [seq[:r].mean(axis=0) for r in range(1, R + 1)]
    np.testing.assert_allclose(mon.points, expect, rtol=1e-12)
    # last: the current global model; aliased: the one before the latest aggregation
    out, mon = _solve("omd_tch_fl", FakeFL(C2, theta0=theta0), R, variant=variant,
                      eta_lambda=eta, output="last")
    np.testing.assert_allclose(mon.points, seq, rtol=1e-12)
    np.testing.assert_allclose(out, seq[-1], rtol=1e-12)
    _, mon = _solve("omd_tch_fl", FakeFL(C2, theta0=theta0), R, variant=variant,
                    eta_lambda=eta, output="aliased")
    np.testing.assert_allclose(mon.points, [seq[0]] + list(seq[:-1]), rtol=1e-12)


def test_omd_lambda_moves_towards_the_worst_client_and_uses_old_lambda():
    # first round: λ^(1) = uniform, so θ^(2) is FedAvg's, whatever η_λ
    seq, lams = _omd_by_hand("gd", 1.0, 3, [0.0, 0.0])
    np.testing.assert_allclose(seq[1], (0.5 * C2).mean(axis=0))   # θ - ½(θ - c_i), mean
    # L^(1) = (½, 9/2): (½, ½) + (½, 9/2) = (1, 5) projects to (0, 1), the worse client 2
    np.testing.assert_allclose(lams[1], [0.0, 1.0])
    _, mon = _solve("omd_tch_fl", FakeFL(C2, theta0=[0.0, 0.0]), 3, eta_lambda=1.0,
                    output="last")
    np.testing.assert_allclose(mon.points, seq, rtol=1e-12)


def test_omd_pref_ones_equals_null_and_weights_aggregation():
    kw = {"variant": "eg", "eta_lambda": 0.3, "output": "last"}
    a, _ = _solve("omd_tch_fl", FakeFL(C2, theta0=[1.0, 1.0]), 3, **kw)
    b, _ = _solve("omd_tch_fl", FakeFL(C2, theta0=[1.0, 1.0]), 3, pref=[1.0, 1.0], **kw)
    np.testing.assert_array_equal(a, b)
    w = (0.25, 0.75)
    seq, _ = _omd_by_hand("eg", 0.3, 3, [1.0, 1.0], w=w)
    c, _ = _solve("omd_tch_fl", FakeFL(C2, theta0=[1.0, 1.0]), 3, pref=list(w), **kw)
    np.testing.assert_allclose(c, seq[-1], rtol=1e-12)


def _drive(method, problem, rounds, check=None):
    """Run `rounds` rounds of `method` by hand, calling check(r) after each."""
    rng = np.random.default_rng(0)
    theta = problem.initial(rng)
    method.start(problem, theta)
    for r in range(rounds):
        thetas, L = problem.local_round(theta, rng)
        theta = method.aggregate(theta, thetas, L, r)
        if check:
            check(r, theta)
    return theta


def test_adaptive_dominating_rounds_keep_a_copy_not_the_live_model():
    # every round's L dominates (is below) the previous one: P = {θ^(r)} with γ = r, so
    # θ̃ = θ^(r), the global BEFORE the last aggregation - never the live model (pitfall 7.1)
    p = FakeFL(C2, theta0=[3.0, -1.0], script=lambda r, th: np.array([10.0, 20.0]) - r)
    ada = OMDTchFL(_resolved("ada_omd_tch_fl", {}))

    def check(r, theta):
        assert ada.ada.total == r + 1 and len(ada.ada.gamma) == 1
        np.testing.assert_array_equal(ada.output(theta), p.seen[-1])
        assert not np.allclose(ada.output(theta), theta)

    last = _drive(ada, p, 5, check)
    snapshots = np.array(p.seen)
    assert len({tuple(s) for s in snapshots}) == 5, "the globals differ from round to round"
    np.testing.assert_array_equal(ada.ada.theta[0], snapshots[-1])
    assert not np.array_equal(ada.ada.theta[0], last)


def test_adaptive_non_dominated_rounds_store_distinct_snapshots():
    # L_r = (r, -r): mutually non-dominated -> every θ^(r) enters P with γ = 1, θ̃ = mean
    p = FakeFL(C2, theta0=[3.0, -1.0], script=lambda r, th: np.array([r, -r], dtype=float))
    ada = OMDTchFL(_resolved("ada_omd_tch_fl", {"eta_lambda": 0.0}))
    theta = _drive(ada, p, 4, lambda r, th: None)
    seen = np.array(p.seen)
    np.testing.assert_array_equal(ada.ada.theta, seen)
    assert np.all(np.ptp(ada.ada.theta, axis=0) > 0), "stored snapshots differ"
    assert ada.ada.gamma == [1.0] * 4
    np.testing.assert_allclose(ada.output(theta), seen.mean(axis=0), rtol=1e-14)


def test_adaptive_dominated_rounds_keep_the_first_iterate():
    p = FakeFL(C2, theta0=[3.0, -1.0], script=lambda r, th: np.array([1.0, 1.0]) * (r + 1))
    ada = OMDTchFL(_resolved("ada_omd_tch_fl", {}))
    theta = _drive(ada, p, 4)
    assert ada.ada.gamma == [4.0]
    np.testing.assert_array_equal(ada.output(theta), [3.0, -1.0])


def test_adaptive_invariant_sum_gamma_is_t_on_noisy_losses():
    rng = np.random.default_rng(5)
    p = FakeFL(C3, theta0=[0.5, 0.5, 0.5], script=lambda r, th: rng.uniform(0, 1, 4))
    ada = OMDTchFL(_resolved("ada_omd_tch_fl", {"variant": "eg", "eta_lambda": 0.3}))

    def check(r, theta):
        assert math.isclose(ada.ada.total, r + 1, rel_tol=1e-12)
        assert ada.ada.theta.shape[0] == len(ada.ada.gamma)

    _drive(ada, p, 30, check)


def test_adaptive_uses_the_round_losses_and_the_pre_aggregation_model():
    # without a script: F = L (mean local loss at θ^(r), + 1e-10) and θ^(r)
    p = FakeFL(C2, theta0=[3.0, -1.0])
    ada = OMDTchFL(_resolved("ada_omd_tch_fl", {}))
    _drive(ada, p, 1)
    np.testing.assert_allclose(ada.ada.F[0], p.losses(np.array([3.0, -1.0])) + 1e-10)
    np.testing.assert_array_equal(ada.ada.theta[0], [3.0, -1.0])
    assert registry.get("solver", "ada_omd_tch_fl").defaults["output"] == "adaptive"
    assert registry.get("solver", "omd_tch_fl").defaults["output"] == "uniform"


# --- end to end with the real monitor ---------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FL_SOLVERS))
def test_end_to_end_with_monitor(name):
    def run(seed):
        problem = FakeFL(C3, lr=0.3, steps=2)
        entry = registry.get("solver", name)
        mon = Monitor(problem, budget=5 * problem.N, checkpoints=5)
        out = entry.func(problem, registry.resolve_params(entry, {}),
                         np.random.default_rng(seed), mon)
        mon.finish(out)
        return problem, mon, out

    problem, mon, out = run(0)
    assert mon.status == "done" and problem.oracle_calls == 5
    assert sorted({r[1] for r in mon.rows}) == [0, 1, 2, 3, 4, 5]
    assert {r[3] for r in mon.rows} == {"max_loss", "mean_loss"}
    assert all(math.isfinite(r[4]) for r in mon.rows)
    assert out.shape == (3,) and np.all(np.isfinite(out))
    first = [r[4] for r in mon.rows if r[1] == 0]
    last = [r[4] for r in mon.rows if r[1] == 5]
    assert first != last, "the recorded model moved"
    _, again, _ = run(0)
    assert [r[4] for r in again.rows] == [r[4] for r in mon.rows]


def test_base_rejects_wrong_shapes():
    class Bad(FakeFL):
        def local_round(self, theta, rng, **kw):
            thetas, L = super().local_round(theta, rng, **kw)
            return thetas, L[:1]

    bad = Bad(C2)
    with pytest.raises(ValueError, match="local_round returned"):
        base.run(bad, np.random.default_rng(0), Rounds(bad, 1),
                 OMDTchFL(_resolved("omd_tch_fl", {})))
