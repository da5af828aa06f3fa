"""A measured roofline for one cell of each method of paper 004's example-weight folders
(issue 41): experiments/svrb_fig1_fashion.yaml (one lower problem, n = 20,000 training rows,
D = 197, 2e6 samples) and experiments/re_rsvrb_fig2_digits.yaml (case d1-200 unless --case:
m = 200 lower problems on n = 1000 rows, D = 65, 2e6 samples).

For each method, ONE cell (the spec's first seed) is counted, bounded and run:

  * counted: the floating-point work of the cell's dense kernels. The methods draw at random
    (Neumann lengths, task sets) and branch on the data (a Hessian estimate that fails the
    Cholesky test is projected by eigh), so the cell is run a second time (same seed, same
    draws) with every call of the problem's oracles and of the dense linear algebra
    tallied by shape; the flops are the tally times the count of each call:
      lower_terms on b rows   X_B w, X_B^T r: 2 x 2 b D; with the Hessian (X_B^T c) X_B: 2 b D^2
      hess_vec on b rows      3 x 2 b D        upper_grad on b rows   2 x 2 b D
      cross_apply on b rows   2 b D            X~ q (features_dot)    2 n D (done by table
                                               lookup on packed bits for 0/1 features)
      STABLE's X~^T (alpha dp), once per task and iteration: 2 n D
      the Hessian projection and solves (drocli.ops.psd.FlooredSPD): Cholesky D^3 / 3 per
        successful factorisation, 2 D^2 per solve; where a Cholesky fails, eigh (9 D^3, a
        convention) and Q diag(e) Q^T (2 D^3), solves Q (Q^T v / e) (2 x 2 D^2); RSVRB's lazy
        rescaling: eigh once, Q diag(e) Q^T per rescaling
      set-up: the power iteration of L_rule curvature, 2 x 2 n D per step
      evaluation, per checkpoint: the plotted objective (m products with the validation
        rows) and the validation error, and with `exact` the damped Newton solves of every
        lower problem (per step a full Hessian 2 n D^2 + 4 n D, a Cholesky and a solve, the
        line search's values 2 n D) and the hypergradient (a full Hessian, an LU solve
        2 D^3 / 3 + 2 D^2, 4 n_va D + 4 n D per task), eigvalsh 4 D^3 / 3 per check.
    Left out: dots of two vectors (at most 2 n flops each, beside the products with X),
    elementwise work, Cholesky attempts that fail (their time stays in the cell);
  * the rate: each distinct kernel (shapes, layout, float64) is timed here with one BLAS
    thread (threadpoolctl, as cells run with blas_threads 1), best of --repeat; the bound of
    a part is the sum over its kernels of calls x seconds per call (= flops / rate);
  * measured: the cell through drocli.run.worker.run_cell (kernels warmed up first, outside the
    clock; only problem.evaluate timed on the way): the solver's clock, the evaluation, and
    the rest of the wall time (building the problem, bookkeeping);
  * what is left between the cell and its bound:
      Python per iteration: the same method with the same parameters, tasks and batches on
        a tiny problem (n = 256 random 0/1 rows of D = 3, evaluation off) for
        --python-share of the budget, its solver clock per iteration, times the cell's
        iterations;
      memory traffic outside the products: the passes a solver iteration makes over its
        n-vectors (p, the hypergradient, alpha: read off the code, e.g. 15 for SVRB) and
        over the (m, n) and (m, D) task arrays of RSVRB, at the copy bandwidth measured here
        at each array's size (arrays below 1 MB at the rate of 1 MB);
      subnormal arithmetic: the STORM weights alpha decay by (1 - beta) every iteration and
        are refreshed only on the drawn rows, so some fall below the smallest normal float;
        every multiplication of such an entry takes a microcode assist on x86. The tallied
        run looks at alpha's entries every SAMPLE-th storm_lower call; their subnormal share
        and the entries an iteration multiplies (read off the code) give a multiplication
        pass over that many entries with that share subnormal at random places, timed here
        against the same pass over normal numbers; the difference times the iterations;
      unexplained: the cell's wall time minus all of the above (the evaluation's own Python,
        the failed Cholesky attempts, row gathers, the draws).

Timings are only meaningful on a quiet machine (load average well below one per core).

Run: python benchmarks/bilevel_roofline.py [--specs fashion,digits] [--case d1-200]
         [--methods SVRB,STABLE] [--scale 1.0] [--repeat 5] [--python-share 0.1] [--kernels]
     (the full folders: 10 cells at the paper's budgets, each run twice; --scale 0.005
     checks that the script works end to end)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import Counter

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _timing as T  # noqa: E402  (benchmarks/ is the script's folder)
import numpy as np  # noqa: E402

from drocli.data.base import GroupedData  # noqa: E402
from drocli.ops import psd  # noqa: E402
from drocli.plugins import registry  # noqa: E402
from drocli.problems import bilevel  # noqa: E402
from drocli.problems.bilevel import BilevelWeightsProblem  # noqa: E402
from drocli.run import worker
from drocli.run.cells import expand  # noqa: E402
from drocli.run.monitor import Monitor  # noqa: E402
from drocli.solvers.bilevel import rsvrb, stable, svrb  # noqa: E402
from drocli.spec import load_spec  # noqa: E402

SPECS = {"fashion": ("experiments/svrb_fig1_fashion.yaml", None),
         "digits": ("experiments/re_rsvrb_fig2_digits.yaml", "d1-200")}
K = T.Kernel
ORACLES, PROJ, NVEC, SETUP, EVAL = ("minibatch oracles", "Hessian projection and solves",
                                    "n-vector products X~ q, X~^T r", "set-up (curvature)",
                                    "evaluation")


# ---- counts per call ------------------------------------------------------------------------

def oracle_kernels(op: str, b: int, D: int, hessian: bool = True, bits: bool = False) -> Counter:
    """{kernel: calls} of one call of a problem method on b rows of width D (float64)."""
    Xw = K("matmul", (b, D), (D,))                      # X_B w
    XTr = K("matmul", (D, b), (b,), ta=True)            # X_B^T r
    if op == "lower_terms":
        c = Counter({Xw: 1, XTr: 1})
        if hessian:
            c[K("matmul", (D, b), (b, D), ta=True)] += 1    # (X_B^T c) X_B
        return c
    if op == "hess_vec":
        return Counter({Xw: 2, XTr: 1})
    if op == "upper_grad":
        return Counter({Xw: 1, XTr: 1})
    if op in ("cross_apply", "lower_value", "upper_value"):
        return Counter({Xw: 1})
    if op == "features_dot":
        return Counter({K("bitdot", (b, D)) if bits else Xw: 1})
    raise ValueError(op)


def eig_product(D: int) -> T.Kernel:        # Q diag(e) Q^T
    return K("matmul", (D, D), (D, D), tb=True)


def eig_solve(D: int) -> Counter:           # Q (Q^T v / e)
    return Counter({K("matmul", (D, D), (D,), ta=True): 1, K("matmul", (D, D), (D,)): 1})


# ---- the tally: every oracle and dense call of a run, by part and shape -------------------------

class Tally:
    """While active, counts {(part, kernel): calls} of the problem's oracles, the LAPACK
    calls (cho_factor / cho_solve as the problem and drocli.ops.psd use them,
    numpy's eigh / eigvalsh / solve), FlooredSPD's products, the power iteration, STABLE's
    X~^T (alpha dp), and the monitor's calls (iterations = calls - 1)."""

    def __init__(self, solver: str = ""):
        self.solver = solver
        self.counts: Counter = Counter()
        self.monitor_calls = 0
        self._in_eval = 0
        self._n = 0
        self._undo: list = []
        self.subnormal = [0, 0]      # subnormal entries of alpha met by storm_lower, calls seen
        self._storm_calls = 0

    def add(self, part: str, kernels: Counter, times: int = 1) -> None:
        part = EVAL if self._in_eval else part
        for k, v in kernels.items():
            self.counts[(part, k)] += v * times

    def _patch(self, owner, name, make):
        orig = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        self._undo.append((owner, name, orig))
        if isinstance(orig, classmethod):
            setattr(owner, name, classmethod(make(orig.__func__)))
        else:
            setattr(owner, name, make(orig))

    def __enter__(self):
        P = BilevelWeightsProblem
        tally = self

        def oracle(op, part, rows):
            def make(f):
                def wrapped(pb, *a, **kw):
                    b = rows(pb, a, kw)
                    hessian = kw.get("hessian", a[4] if op == "lower_terms" and len(a) > 4
                                     else True)
                    tally.add(part, oracle_kernels(op, b, pb.D, hessian,
                                                   op == "features_dot" and pb._bits is not None))
                    # STABLE's lower step does X~^T (alpha_i dp) once per task and iteration,
                    # as often as it asks for an upper gradient
                    if op == "upper_grad" and tally.solver == "stable" and not tally._in_eval:
                        tally.add(NVEC, Counter({K("matmul", (pb.D, pb.n), (pb.n,), ta=True): 1}))
                    return f(pb, *a, **kw)
                return wrapped
            return make

        def rows_of(batch, every):              # B None: every row (the full oracles)
            return every if batch is None else len(batch)

        self._patch(P, "lower_terms", oracle("lower_terms", ORACLES,
                                             lambda pb, a, kw: rows_of(a[2], pb.n)))
        self._patch(P, "hess_vec", oracle("hess_vec", ORACLES, lambda pb, a, kw: len(a[2])))
        self._patch(P, "upper_grad", oracle("upper_grad", ORACLES,
                                            lambda pb, a, kw: rows_of(a[1], pb.n_va)))
        self._patch(P, "cross_apply", oracle("cross_apply", ORACLES, lambda pb, a, kw: len(a[0])))
        self._patch(P, "features_dot", oracle("features_dot", NVEC, lambda pb, a, kw: pb.n))
        self._patch(P, "lower_value", oracle("lower_value", EVAL, lambda pb, a, kw: pb.n))
        self._patch(P, "upper_value", oracle("upper_value", EVAL, lambda pb, a, kw: pb.n_va))

        def evaluate(f):
            def wrapped(pb, *a, **kw):
                tally._in_eval += 1
                try:
                    tally.add(EVAL, Counter({K("matmul", (pb.n_va, pb.D), (pb.D,)): 1}))
                    return f(pb, *a, **kw)
                finally:
                    tally._in_eval -= 1
            return wrapped

        def hypergradient(f):
            def wrapped(pb, *a, **kw):                 # X @ w and X @ q, per task
                tally.add(EVAL, Counter({K("matmul", (pb.n, pb.D), (pb.D,)): 2 * pb.m}))
                return f(pb, *a, **kw)
            return wrapped

        self._patch(P, "evaluate", evaluate)
        self._patch(P, "hypergradient", hypergradient)

        def curvature(f):
            def wrapped(pb, *a, **kw):
                tally._n = pb.n                     # the rows of the power iteration below
                return f(pb, *a, **kw)
            return wrapped

        def power(f):
            def wrapped(matvec, dim, *a, **kw):
                def counted(v):                     # X^T (X v): both products with X (n, D)
                    tally.add(SETUP, Counter({K("matmul", (tally._n, dim), (dim,)): 1,
                                              K("matmul", (dim, tally._n), (tally._n,),
                                                ta=True): 1}))
                    return matvec(v)
                return f(counted, dim, *a, **kw)
            return wrapped

        self._patch(P, "curvature", curvature)
        self._patch(bilevel, "power_top_eigenvalue", power)

        def lapack(kind, part, dim):
            def make(f):
                def wrapped(*a, **kw):
                    out = f(*a, **kw)               # counted once it succeeded
                    tally.add(part, Counter({K(kind, (dim(a),) * 2): 1}))
                    return out
                return wrapped
            return make

        square = lambda a: np.shape(a[0])[0]                       # noqa: E731
        factor = lambda a: np.shape(a[0][0])[0]                    # noqa: E731  (c, lower)
        for mod in (bilevel, psd):
            self._patch(mod, "cho_factor", lapack("cholesky", PROJ, square))
            self._patch(mod, "cho_solve", lapack("cho_solve", PROJ, factor))
        self._patch(np.linalg, "eigh", lapack("eigh", PROJ, square))
        self._patch(np.linalg, "eigvalsh", lapack("eigvalsh", EVAL, square))
        self._patch(np.linalg, "solve", lapack("solve", EVAL, square))

        F = psd.FlooredSPD

        def init(f):
            def wrapped(self_, H, lam, **kw):
                f(self_, H, lam, **kw)
                if self_._eig is not None:
                    tally.add(PROJ, Counter({eig_product(np.shape(H)[0]): 1}))
            return wrapped

        def from_eig(f):
            def wrapped(cls, Q, e, lam, clipped):
                tally.add(PROJ, Counter({eig_product(Q.shape[0]): 1}))
                return f(cls, Q, e, lam, clipped)
            return wrapped

        def solve(f):
            def wrapped(self_, v):
                if self_._chol is None:
                    tally.add(PROJ, eig_solve(self_._eig[0].shape[0]))
                return f(self_, v)
            return wrapped

        def storm(f):        # alpha's subnormal share, sampled every SAMPLE-th call
            def wrapped(*a, **kw):
                tally._storm_calls += 1
                if tally._storm_calls % SAMPLE == 0:
                    alpha = np.abs(a[6])
                    tally.subnormal[0] += int(np.count_nonzero((alpha > 0) & (alpha < TINY)))
                    tally.subnormal[1] += alpha.size
                return f(*a, **kw)
            return wrapped

        for mod in (svrb, stable, rsvrb):
            self._patch(mod, "storm_lower", storm)
        self._patch(F, "__init__", init)
        self._patch(F, "_from_eig", from_eig)
        self._patch(F, "solve", solve)

        def call(f):
            def wrapped(mon, *a, **kw):
                tally.monitor_calls += 1
                return f(mon, *a, **kw)
            return wrapped

        self._patch(Monitor, "__call__", call)
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self._undo):
            setattr(owner, name, orig)
        self._undo.clear()

    @property
    def iterations(self) -> int:
        return max(0, self.monitor_calls - 1)

    def parts(self) -> dict:
        out: dict = {}
        for (part, k), v in self.counts.items():
            out.setdefault(part, Counter())[k] += v
        return out


# ---- memory traffic outside the products (per iteration, read off the code) -------------------

def memory_items(problem, solver: str, params: dict) -> list[tuple[str, int, float]]:
    """(what, bytes of the array, passes over it per iteration); a pass = one read or write."""
    n, m, D = problem.n, problem.m, problem.D
    vec = 8 * n
    if solver == "svrb":          # the weight step reads p, alpha, X~q, writes p 4, alpha *= 2
        return [("n-vectors", vec, 6)]
    if solver == "stable":        # h, p step, dp 11; per task: h -= alpha * X~q 7, alpha * dp,
        return [("n-vectors", vec, 11 + 12 * m)]              # alpha *= 5
    if solver in ("rsvrb", "re_rsvrb"):
        Sd = params.get("tasks_d") or params["tasks_per_iter"]
        # p step 7, d update 8; per task of J, twice: z 6, the mean of the z's 3
        return [("n-vectors", vec, 17 + 18 * Sd), ("alpha (m, n) *= (1 - beta)", 8 * m * n, 2),
                ("G, v (m, D) *= (1 - beta); W step", 8 * m * D, 9)]
    # ttsa, bsa, stocbio: h = 0, the p step 8; per task: the cross product's n-vector 3, h += 3
    return [("n-vectors", vec, 8 + 6 * m)]


# ---- subnormal arithmetic (per iteration, read off the code) ---------------------------------

SAMPLE = 16                       # storm_lower calls between two looks at alpha's entries
TINY = np.finfo(np.float64).tiny  # the smallest normal float64


def alpha_multiplies(problem, solver: str, params: dict) -> int:
    """Entries of the STORM weights alpha that a solver iteration multiplies (a subnormal
    one takes a microcode assist): SVRB alpha *= (1 - beta) (its weight step multiplies none,
    drocli.ops.weight_step); STABLE per task h -= alpha_i X~q, X~^T (alpha_i dp), alpha_i *=;
    RSVRB alpha (m, n) *= and, per task of J, z_i = -alpha_i X~q twice. 0 without alpha."""
    n, m = problem.n, problem.m
    if solver == "svrb":
        return n
    if solver == "stable":
        return 3 * m * n
    if solver in ("rsvrb", "re_rsvrb"):
        return m * n + 2 * (params.get("tasks_d") or params["tasks_per_iter"]) * n
    return 0


def subnormal_seconds(entries: int, share: float, repeat: int = 5) -> float:
    """Extra seconds of a multiplication pass over `entries` numbers when `share` of them,
    at random places, are subnormal, against the same pass over normal numbers (an assist
    is taken per vector instruction that meets one, so scattered ones cost more each)."""
    rng = np.random.default_rng(0)
    normal = np.full(entries, 1e-3)
    mixed = np.where(rng.random(entries) < share, 1e-310, normal)
    out = np.empty(entries)
    t_mixed = T.seconds_per_call(lambda: np.multiply(mixed, 0.999, out=out), repeat)
    t_normal = T.seconds_per_call(lambda: np.multiply(normal, 0.999, out=out), repeat)
    return max(0.0, t_mixed - t_normal)


# ---- the tiny problem: Python per iteration ---------------------------------------------------

def tiny_problem(problem, n: int = 256, n_va: int = 128, features: int = 2):
    """A problem of the same kind (tasks, temperatures, lam, bias) on `n` random 0/1 rows of
    `features` features (the packed-bit path, as the real data), n_va validation rows (no more
    than the real problem's)."""
    rng = np.random.default_rng(0)
    n_va = min(n_va, problem.n_va)
    X = (rng.random((n, features)) < 0.5).astype(np.float32)
    Xv = (rng.random((n_va, features)) < 0.5).astype(np.float32)
    y, yv = rng.integers(0, 2, n), rng.integers(0, 2, n_va)
    y[:2], yv[:2] = (0, 1), (0, 1)
    data = GroupedData("tiny", X, y, np.zeros(n, np.int64), Xv, yv, np.zeros(n_va, np.int64))
    info = problem.info
    sigma = np.asarray(info["sigma"])
    tiny = BilevelWeightsProblem(data, lam=info["lam"], tasks=problem.m, exact=False,
                                 sigma_range=(float(sigma.min()), float(sigma.max())))
    tiny.sigma = sigma.copy()
    return tiny


class CountingMonitor:
    """A monitor that counts its calls (the bilevel solvers call it once per iteration and
    once before the first)."""

    def __init__(self, mon):
        self._mon, self.calls = mon, 0

    def __call__(self, *a, **kw):
        self.calls += 1
        return self._mon(*a, **kw)

    def __getattr__(self, name):
        return getattr(self._mon, name)


def python_per_iteration(cell, problem, budget: int) -> float:
    """Solver seconds per iteration of the cell's method on the tiny problem (`budget`
    samples, evaluation off)."""
    tiny = tiny_problem(problem)
    entry = registry.get("solver", cell.solver)
    for b in (min(budget, 2000), budget):                   # a warm-up run, then the timed one
        tiny.reset_counter()
        mon = CountingMonitor(Monitor(tiny, b, checkpoints=1, evaluate=False))
        entry.func(tiny, dict(cell.solver_params), np.random.default_rng(0), mon)
    return mon.elapsed() / max(1, mon.calls - 1)


# ---- the real cell ----------------------------------------------------------------------------

class EvalTimer:
    """Seconds and calls of BilevelWeightsProblem.evaluate while active."""

    def __enter__(self):
        self.seconds, self.calls = 0.0, 0
        self._orig = BilevelWeightsProblem.evaluate

        def timed(pb, *a, **kw):
            t = time.perf_counter()
            try:
                return self._orig(pb, *a, **kw)
            finally:
                self.seconds += time.perf_counter() - t
                self.calls += 1

        BilevelWeightsProblem.evaluate = timed
        return self

    def __exit__(self, *exc):
        BilevelWeightsProblem.evaluate = self._orig


def cells_of(key: str, case: str | None, methods, scale: float) -> list:
    """One cell per method of a folder: its first seed, the budget and the checkpoints scaled
    by `scale` (the evaluation frequency kept)."""
    path, default_case = SPECS[key]
    case = (case or default_case) if default_case else None
    labels = {s.display for s in load_spec(path).solvers}
    pick = [m for m in methods if m in labels] if methods else []
    if methods and not pick:
        return []
    spec = load_spec(path, data=[case] if case else (), solvers=pick)
    out, seen = [], set()
    for c in expand(spec):
        if c.label in seen:
            continue
        seen.add(c.label)
        if scale != 1.0:
            b = dict(c.budget)
            b["oracle_calls"] = max(1, round(b["oracle_calls"] * scale))
            b["checkpoints"] = max(1, round(b["checkpoints"] * scale))
            c = dataclasses.replace(c, budget=b)
        out.append(c)
    return out


def flops(counter: Counter) -> float:
    return sum(k.flops * v for k, v in counter.items())


def bound_seconds(counter: Counter, secs: dict) -> float:
    return sum(secs[k] * v for k, v in counter.items())


def report(cell, run, secs, bandwidth, repeat: int) -> None:
    parts, it, status = run["parts"], run["iterations"], run["status"]
    print(f"\n### {cell.label} ({cell.solver}; {cell.experiment}"
          f"{' ' + cell.swept.get('setting', '') if cell.swept else ''}, seed {cell.seed}, "
          f"{status['oracle_calls']} samples, {it} iterations, {run['evals']} evaluations)\n")
    print("| part | GFLOP | GFLOP/s (its kernels here) | bound (s) | measured (s) | "
          "measured / bound |")
    print("|---|---|---|---|---|---|")
    bounds = {}
    for part in (SETUP, ORACLES, PROJ, NVEC, EVAL):
        c = parts.get(part, Counter())
        f, b = flops(c), bound_seconds(c, secs)
        bounds[part] = b
        rate = f"{f / b / 1e9:.1f}" if b > 0 else "-"
        meas = run["eval_s"] if part == EVAL else None
        m = "-" if meas is None else f"{meas:.3f}"
        ratio = f"{meas / b:.2f}" if meas is not None and b > 0 else "-"
        print(f"| {part} | {f / 1e9:.4f} | {rate} | {b:.3f} | {m} | {ratio} |")
    solver_b = sum(v for k, v in bounds.items() if k != EVAL)
    solver_s = status["solver_time_s"]
    print(f"| solver (the parts above evaluation) | | | {solver_b:.3f} | {solver_s:.3f} | "
          f"{solver_s / solver_b:.2f} |" if solver_b > 0 else "| solver | | | 0 | | |")
    total_b = solver_b + bounds[EVAL]
    wall = status["wall_s"]
    print(f"| **the cell** (wall, warm-up excluded) | {sum(map(flops, parts.values())) / 1e9:.4f}"
          f" | | {total_b:.3f} | {wall:.3f} | {wall / total_b:.2f} |")
    mem = run["memory"]
    mem_it = sum(nb * p for _, nb, p in mem)
    mem_s = sum(nb * p / bandwidth[nb] for _, nb, p in mem)
    left = [(f"Python per iteration (tiny shapes: {run['python'] * 1e6:.1f} us) x iterations",
             run["python"] * it),
            (f"memory traffic outside the products: {mem_it / 1e6:.2f} MB per iteration at "
             f"{mem_it / mem_s / 1e9:.1f} GB/s (copy rate at each array's size) x iterations",
             mem_s * it),
            ("evaluation: measured - its bound", run["eval_s"] - bounds[EVAL])]
    sub, seen = run["subnormal"]
    if run["alpha_multiplies"] and seen:
        share, entries = sub / seen, run["alpha_multiplies"]
        extra = subnormal_seconds(entries, share, repeat)
        left.append((f"subnormal arithmetic: {share:.1%} of alpha subnormal (mean over the "
                     f"run), {entries:,} entries multiplied per iteration, "
                     f"{extra * 1e6:.1f} us more than normal ones (timed here) x iterations",
                     extra * it))
    print("\nWhat is left (measured - bound of the cell), part by part:\n")
    print("| part | seconds |")
    print("|---|---|")
    for what, sec in left:
        print(f"| {what} | {sec:.3f} |")
    print(f"| unexplained: cell - bound - the above | "
          f"{wall - total_b - sum(x for _, x in left):.3f} |")


def run_one(cell, python_share: float) -> dict | None:
    """Warm the cell's kernels, run it clean (evaluation timed), run it again tallied (same
    seed, same draws), and time its method on the tiny problem."""
    data = worker.load_data(cell.data_name, cell.data_params, cell.data_seed)
    problem = registry.get("problem", cell.problem_name).func(data, cell.problem_params)
    warm = worker.warm_up(cell)
    with EvalTimer() as ev:
        _, status, _ = worker.run_cell(cell, blas_threads=1)
    if status["status"] != "done":
        print(f"\n{cell.label}: the cell ended {status['status']}: {status.get('error')}")
        return None
    with Tally(cell.solver) as tally:
        _, again, _ = worker.run_cell(cell, blas_threads=1)
    if again.get("oracle_calls") != status.get("oracle_calls"):
        print(f"\nnote: the tallied run of {cell.label} drew {again.get('oracle_calls')} "
              f"samples, the timed one {status.get('oracle_calls')}")
    budget = max(2000, round(status["oracle_calls"] * python_share))
    return {"status": status, "eval_s": ev.seconds, "evals": ev.calls, "warm": warm,
            "parts": tally.parts(), "iterations": tally.iterations,
            "python": python_per_iteration(cell, problem, budget),
            "memory": memory_items(problem, cell.solver, cell.solver_params),
            "subnormal": tuple(tally.subnormal),
            "alpha_multiplies": alpha_multiplies(problem, cell.solver, cell.solver_params)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", default="fashion,digits", help="of: " + ", ".join(SPECS))
    ap.add_argument("--case", default=None, help="the digits folder's case (default d1-200)")
    ap.add_argument("--methods", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--scale", type=float, default=1.0, help="budget and checkpoints x this")
    ap.add_argument("--repeat", type=int, default=5, help="best of this many timings")
    ap.add_argument("--python-share", type=float, default=0.1,
                    help="the tiny run's budget, as a share of the cell's")
    ap.add_argument("--kernels", action="store_true", help="print every kernel's rate")
    args = ap.parse_args(argv)

    limit = T.one_blas_thread()                             # noqa: F841  (kept alive)
    print(T.machine_info())
    methods = [x for x in args.methods.split(",") if x]
    runs = []
    for key in [x for x in args.specs.split(",") if x]:
        for cell in cells_of(key, args.case, methods, args.scale):
            r = run_one(cell, args.python_share)
            if r is not None:
                runs.append((cell, r))
    kernels = sorted({k for _, r in runs for c in r["parts"].values() for k in c}, key=repr)
    t0 = time.perf_counter()
    secs = T.kernel_seconds(kernels, args.repeat)
    sizes = sorted({nb for _, r in runs for _, nb, _ in r["memory"]})
    bandwidth = {nb: T.copy_bandwidth(nb, args.repeat) for nb in sizes}
    print(f"\n{len(secs)} kernels and {len(bandwidth)} array sizes timed in "
          f"{time.perf_counter() - t0:.1f} s (one BLAS thread, best of {args.repeat}); load "
          f"average now {os.getloadavg()[0]:.2f}")
    if args.kernels:
        print("\n| kernel | GFLOP/s |\n|---|---|")
        for k, sec in secs.items():
            print(f"| {k} | {k.flops / sec / 1e9:.2f} |")
    for cell, r in runs:
        report(cell, r, secs, bandwidth, args.repeat)
        print(f"\n(warm-up before the cell, not in it: {r['warm']:.2f} s)")


if __name__ == "__main__":
    main()
