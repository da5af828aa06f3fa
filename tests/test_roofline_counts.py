"""The flop counts of benchmarks/fl_roofline.py and benchmarks/bilevel_roofline.py (issue 41)
against an independent count: the matrix products the code actually calls, on tiny problems.

Truth: an ndarray subclass (`Counting`) that logs every np.matmul (every `@`) it takes part
in, with its operand shapes and dtype, and the multiply-adds it did (inner dimension x
entries of the result, read off the call's actual result). The problems' data arrays are
swapped for Counting views, so every product that descends from the data is logged; the
modules that call np.asarray / np.array / np.vstack on the client models see a numpy whose
versions of those keep subclasses (the values are the same). Nothing is timed.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.ops import mlp_gram
from drocli.plugins import registry
from drocli.run.monitor import Monitor
from drocli.spec import load_spec

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _timing as T  # noqa: E402
import fl_roofline as fl  # noqa: E402


class Counting(np.ndarray):
    """Logs (a shape, b shape, dtype, multiply-adds) of every matmul with a Counting operand
    to `Counting.log[part]`, `part` being `Counting.part` at the time."""

    log: dict = {}
    part = "other"

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kw):
        args = [x.view(np.ndarray) if isinstance(x, Counting) else x for x in inputs]
        if out is not None:
            kw["out"] = tuple(o.view(np.ndarray) if isinstance(o, Counting) else o for o in out)
        res = getattr(ufunc, method)(*args, **kw)
        if ufunc is np.matmul and method == "__call__":
            a, b = np.asarray(args[0]), np.asarray(args[1])
            r = np.asarray(kw["out"][0] if out is not None else res)
            Counting.log.setdefault(Counting.part, []).append(
                (a.shape, b.shape, str(a.dtype), a.shape[-1] * math.prod(r.shape)))
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(res, tuple):
            return tuple(x.view(Counting) if isinstance(x, np.ndarray) else x for x in res)
        return res.view(Counting) if isinstance(res, np.ndarray) else res


class _KeepSubclasses:
    """numpy, except that asarray, array and vstack keep ndarray subclasses (same values)."""

    def __getattr__(self, name):
        return getattr(np, name)

    asarray = staticmethod(np.asanyarray)

    @staticmethod
    def array(obj, *a, **kw):
        kw.setdefault("subok", True)
        return np.array(obj, *a, **kw)

    @staticmethod
    def vstack(arrays, *a, **kw):
        out = np.vstack(arrays, *a, **kw)
        return out.view(Counting) if any(isinstance(x, Counting) for x in arrays) else out


@pytest.fixture
def counting(monkeypatch):
    Counting.log, Counting.part = {}, "other"
    from drocli.ops import adaptive_conversion, fl_aggregators
    from drocli.solvers.fl import base, fedfv, omd_tch_fl
    for mod in (fl_aggregators, adaptive_conversion, base, fedfv, omd_tch_fl):
        monkeypatch.setattr(mod, "np", _KeepSubclasses())
    yield Counting.log


def in_part(part, f):
    def wrapped(*a, **kw):
        before, Counting.part = Counting.part, part
        try:
            return f(*a, **kw)
        finally:
            Counting.part = before
    return wrapped


def shapes(entries) -> Counter:
    return Counter((a, b, dt) for a, b, dt, _ in entries)


def madds(entries) -> int:
    return sum(x for *_, x in entries)


def as_shapes(counter: Counter) -> Counter:
    out = Counter()
    for k, v in counter.items():
        out[(k.a, k.b, k.dtype)] += v
    return out


# ---- the kernels' own counts -------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [((2, 3), (3, 4), 2 * 3 * 8), ((5,), (5,), 10),
                                            ((3,), (3, 4), 24), ((4, 3), (3,), 24),
                                            ((6, 2), (2, 6), 2 * 2 * 36)])
def test_matmul_flops_are_twice_the_multiply_adds_of_the_call(counting, a, b, expected):
    k = T.Kernel("matmul", a, b)
    rng = np.random.default_rng(0)
    np.ones(a).view(Counting) @ np.ones(b)
    assert k.flops == expected == 2 * madds(counting["other"])
    k.make(rng)()                                   # the timed call runs on those shapes


def test_the_timed_operands_have_the_counted_shapes_and_layouts():
    rng = np.random.default_rng(0)
    for k in (T.Kernel("matmul", (4, 3), (3, 5), "float32", tb=True),
              T.Kernel("matmul", (3, 4), (4, 5), ta=True),
              T.Kernel("matmul", (4, 3), (3, 4), same=True)):
        fn = k.make(rng)
        a, b = fn.__closure__[0].cell_contents, fn.__closure__[1].cell_contents
        assert a.shape == k.a and b.shape == k.b and a.dtype == np.dtype(k.dtype)
        assert a.flags.f_contiguous == k.ta and (k.same or b.flags.f_contiguous == k.tb)
        if k.same:
            assert b.base is a or np.shares_memory(a, b)


# ---- FL (paper 003) -------------------------------------------------------------------------

def fl_data(side=6, n_tr=12, n_te=4, seed=0) -> GroupedData:
    """10-class side x side images with an all-zero border (so clients gather columns)."""
    rng = np.random.default_rng(seed)

    def split(n):
        y = rng.permutation(np.repeat(np.arange(10), n))
        X = np.zeros((y.size, side, side), np.float32)
        X[:, 1:-1, 1:-1] = rng.random((y.size, side - 2, side - 2))
        return X.reshape(y.size, -1), y

    Xtr, ytr = split(n_tr)
    Xte, yte = split(n_te)
    return GroupedData("synthetic", Xtr, ytr, np.zeros(ytr.size, np.int64), Xte, yte,
                       np.zeros(yte.size, np.int64), n_classes=10,
                       info={"shape": (side, side), "seed": 3})


FORMS = {"gram": {"local_form": "gram"}, "direct": {"local_form": "direct"},
         "minibatches": {"batch": 7}}


def fl_problem(form: str):
    entry = registry.get("problem", "federated")
    params = {"clients": 4, "angles": [0, 0, 90, 180], "hidden": 5, "local_steps": 3,
              **FORMS[form]}
    return entry.func(fl_data(), registry.resolve_params(entry, params))


class _CountingWorkspaces(dict):
    """The problem's mlp_gram workspaces, their arrays as Counting views (the Gram step's
    products take them as operands and outputs)."""

    def __setitem__(self, key, work):
        for name, value in vars(work).items():
            if isinstance(value, np.ndarray):
                setattr(work, name, value.view(Counting))
        super().__setitem__(key, work)


def instrument_fl(problem):
    """Data as Counting views; local_round / evaluate log under their own part and hand out
    the client models as Counting (so the server step's products are seen)."""
    problem._Xloc = [X.view(Counting) for X in problem._Xloc]
    problem._K = [None if Km is None else Km.view(Counting) for Km in problem._K]
    problem._work = _CountingWorkspaces()
    problem.Xtr_all = problem.Xtr_all.view(Counting)
    problem.Xte_all = problem.Xte_all.view(Counting)
    local, evaluate = problem.local_round, problem.evaluate

    def local_round(*a, **kw):
        thetas, L = in_part("local training", local)(*a, **kw)
        return thetas.view(Counting), L

    problem.local_round = local_round
    problem.evaluate = in_part("evaluation", evaluate)
    initial = problem.initial
    problem.initial = lambda *a, **kw: initial(*a, **kw).view(Counting)


SOLVERS = [(s.display, s.name, s.params) for s in load_spec(fl.SPEC).solvers]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("label, name, params", SOLVERS, ids=[s[0] for s in SOLVERS])
def test_fl_cell_counts_are_the_products_the_cell_calls(counting, monkeypatch, form, label,
                                                        name, params):
    from drocli.ops.adaptive_conversion import AdaptiveConversion
    monkeypatch.setattr(AdaptiveConversion, "output",
                        in_part("output", AdaptiveConversion.output))
    rounds, checkpoints = 5, 2
    problem = fl_problem(form)
    assert set(problem.info["local_form"]) == {"gram" if form == "gram" else "direct"}
    entry = registry.get("solver", name)
    resolved = registry.resolve_params(entry, params)
    evals = fl.evaluations(rounds, checkpoints)
    ours = fl.cell_products(problem, name, resolved, rounds, evals)
    instrument_fl(problem)
    mon = Monitor(problem, rounds, checkpoints=checkpoints)
    entry.func(problem, resolved, np.random.default_rng(0), mon)
    assert len({r[0] for r in mon.rows}) == evals
    for part in ("local training", "evaluation"):
        assert shapes(counting[part]) == as_shapes(ours[part])
        assert 2 * madds(counting[part]) == fl.flops(ours[part])
    # the output models: as many products as counted, each at least the one-snapshot count
    out = Counter({k: v * evals for k, v in
                   fl.output_products(name, resolved, problem.P).items()})
    got_out = counting.get("output", [])
    assert len(got_out) == sum(out.values())
    assert 2 * madds(got_out) >= fl.flops(out)
    # the server step: the products on the (m, P) client models
    agg = ours["aggregation and output"] - out
    seen = [e for e in counting.get("other", []) if problem.P in e[0] + e[1]]
    got, expected = shapes(seen), as_shapes(agg)
    if name == "fedfv":          # the projections taken on conflict only: at most 2 dots a round
        extra = got - expected
        assert not expected - got
        assert set(extra) <= {((problem.P,), (problem.P,), "float64")}
        assert sum(extra.values()) <= 2 * rounds
    else:
        assert got == expected
        assert 2 * madds(seen) == fl.flops(agg)
    assert name != "fedmgda_plus" or agg, "FedMGDA+ has a Gram matrix to count"


def test_fl_build_counts_the_gram_kernels(counting):
    problem = fl_problem("gram")
    for X in problem._Xloc:
        mlp_gram.kernel(X.view(Counting))
    ours = fl.setup_products(problem)
    assert shapes(counting["other"]) == as_shapes(ours)
    assert 2 * madds(counting["other"]) == fl.flops(ours)
    assert all(k.same for k in ours)


def test_fl_gram_round_by_the_closed_form():
    """mlp_gram's docstring: 4 n d h once plus tau (2 n^2 h + 6 n h k) per client and round."""
    problem = fl_problem("gram")
    h, k, tau = problem.dims.h, problem.dims.k, problem.local_steps
    total = sum(4 * n * d * h + tau * (2 * n * n * h + 6 * n * h * k)
                for n, d in (X.shape for X in problem._Xloc))
    assert fl.flops(fl.local_products(problem)) == total


# ---- bilevel (paper 004) --------------------------------------------------------------------

import bilevel_roofline as bl  # noqa: E402

from drocli.problems.bilevel import BilevelWeightsProblem  # noqa: E402


def bl_problem(tasks: int = 1, n: int = 60, n_va: int = 24, d: int = 40, seed: int = 0):
    """Real-valued features (so X~ q is a dense product the instrumentation sees), a bias."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)

    def split(k):
        X = rng.standard_normal((k, d)).astype(np.float32)
        return X, (X @ w + 0.5 * rng.standard_normal(k) > 0).astype(np.int64)

    X, y = split(n)
    Xv, yv = split(n_va)
    data = GroupedData("synthetic", X, y, np.zeros(n, np.int64), Xv, yv,
                       np.zeros(n_va, np.int64))
    return BilevelWeightsProblem(data, lam=0.05, tasks=tasks)


def matmuls(part_counter: Counter) -> Counter:
    """The products with a matrix operand, as (a shape, b shape, dtype)."""
    return as_shapes(Counter({k: v for k, v in part_counter.items()
                              if k.kind == "matmul" and (len(k.a) == 2 or len(k.b) == 2)}))


def with_matrix(entries) -> list:
    return [e for e in entries if len(e[0]) == 2 or len(e[1]) == 2]


@pytest.mark.parametrize("op, args, b", [
    ("lower_terms", lambda pb, B: (np.ones(pb.n), np.full(pb.D, 0.1), B), 7),
    ("lower_terms", lambda pb, B: (np.ones(pb.n), np.full(pb.D, 0.1), B, 0, False), 7),
    ("hess_vec", lambda pb, B: (np.ones(pb.n), np.full(pb.D, 0.1), B, np.ones(pb.D)), 9),
    ("upper_grad", lambda pb, B: (np.full(pb.D, 0.1), B), 8),
    ("cross_apply", lambda pb, B: (B, np.ones(B.size), np.ones(pb.D)), 6),
    ("features_dot", lambda pb, B: (np.ones(pb.D),), None),
    ("lower_value", lambda pb, B: (np.ones(pb.n), np.full(pb.D, 0.1)), None),
    ("upper_value", lambda pb, B: (np.full(pb.D, 0.1),), None)])
def test_bilevel_oracle_counts_are_the_products_of_one_call(counting, op, args, b):
    pb = bl_problem()
    pb.X, pb.Xv = pb.X.view(Counting), pb.Xv.view(Counting)
    assert pb._bits is None
    B = np.arange(b) if b else None
    a = args(pb, B)
    getattr(pb, op)(*a)
    rows = {"features_dot": pb.n, "lower_value": pb.n, "upper_value": pb.n_va}.get(op, b)
    hessian = not (op == "lower_terms" and len(a) > 4 and not a[4])
    ours = bl.oracle_kernels(op, rows, pb.D, hessian)
    got = with_matrix(counting["other"])
    assert shapes(got) == as_shapes(ours)
    assert 2 * madds(got) == sum(k.flops * v for k, v in ours.items())


BL_SOLVERS = [(1, s.display, s.name, s.params)
              for s in load_spec(bl.SPECS["fashion"][0]).solvers] + \
             [(20, s.display, s.name, s.params)
              for s in load_spec(bl.SPECS["digits"][0]).solvers]


def bl_run(name, params, tasks, instrument: bool):
    pb = bl_problem(tasks)
    if instrument:
        pb.X, pb.Xv = pb.X.view(Counting), pb.Xv.view(Counting)
        pb.evaluate = in_part("evaluation", pb.evaluate)
    entry = registry.get("solver", name)
    mon = bl.CountingMonitor(Monitor(pb, 2500, checkpoints=3))
    with np.errstate(all="ignore"):
        entry.func(pb, registry.resolve_params(entry, params), np.random.default_rng(0), mon)
    return pb, mon


@pytest.mark.parametrize("tasks, label, name, params", BL_SOLVERS,
                         ids=[f"{s[1]}-m{s[0]}" for s in BL_SOLVERS])
def test_bilevel_tally_counts_the_products_the_cell_calls(counting, tasks, label, name, params):
    """The tally of a run (plain arrays) against the products of the same run (same seed,
    same draws) with the data as Counting arrays, evaluation apart from the rest."""
    with bl.Tally(name) as tally:
        _, mon = bl_run(name, params, tasks, instrument=False)
    assert tally.iterations == mon.calls - 1 > 0
    _, mon2 = bl_run(name, params, tasks, instrument=True)
    assert mon2.calls == mon.calls
    parts = tally.parts()
    ev = matmuls(parts.get(bl.EVAL, Counter()))
    rest = sum((matmuls(c) for p, c in parts.items() if p != bl.EVAL), Counter())
    assert shapes(with_matrix(counting["evaluation"])) == ev
    assert shapes(with_matrix(counting.get("other", []))) == rest
    lapack = {k.kind for c in parts.values() for k in c if k.kind != "matmul"}
    assert "cholesky" in lapack and "cho_solve" in lapack    # the Newton solves at least


def test_bilevel_tally_counts_the_projection_where_cholesky_fails(counting):
    """An indefinite estimate: eigh, Q diag(e) Q^T, the eig solves, a lazy rescaling."""
    from drocli.ops.psd import FlooredSPD
    rng = np.random.default_rng(1)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    H = (Q * np.array([-1.0, 0.5, 1, 2, 3, 4])) @ Q.T
    v = rng.standard_normal(6)

    def use(M):
        F = FlooredSPD(M, 0.1)
        F.solve(v)
        F.scaled(0.5).solve(v)

    with bl.Tally() as tally:
        use(H)
    use(H.view(Counting))
    parts = tally.parts()
    assert set(parts) == {bl.PROJ}
    kinds = Counter({k.kind: v for k, v in parts[bl.PROJ].items() if k.kind != "matmul"})
    assert kinds == {"eigh": 1}
    assert shapes(with_matrix(counting["other"])) == matmuls(parts[bl.PROJ])
