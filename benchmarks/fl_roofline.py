"""A measured roofline for one cell of each method of paper 003's fair-FL folder
(experiments/omd_tch_fl_mnist.yaml: m = 10 clients, MLP 784-200-10 in float32, tau = 10
full-batch local steps, 300 rounds, evaluation every 2nd round), issue 41.

For each method, ONE cell (the spec's first seed, case `rotation` unless --case says
otherwise) is counted, bounded and run:

  * counted: the floating-point work of the cell's matrix products, part by part, from the
    problem the cell builds (each client's rows n_i and used input columns d_i, its form):
      local training, per round and client (Gram form, drocli.ops.mlp_gram, as it does them):
          Z1 = X W1^T once                 2 n d_i h
          per step: A W2^T, G W2, G^T A    3 x 2 n h k
                    K D                    2 n^2 h
          W1 -= S^T X once                 2 n d_i h
        (direct form, drocli.ops.mlp.loss_grad, per step and minibatch of b rows:
         X W1^T and D^T X 2 x 2 b d_i h, A W2^T, G^T A and G W2 3 x 2 b h k)
      aggregation, per round: the products of the method's server step on the (m, P)
        float64 client models (a weight vector times them: 2 m P; FedMGDA+'s Gram matrix
        of the normalised updates: 2 m^2 P; FedFV's pairwise dots, 2 P each, and its
        external product 2 m P from round tau on; none for FedAvg, PropFair, TCH),
        plus AdaOMD's output model gamma @ snapshots at every output (counted with one
        snapshot: 2 P, a lower bound);
      evaluation, per checkpoint (drocli.problems.federated.evaluate on every client's
        train and test rows, N = 4000 + 1000, full width d = 784): 2 N (d h + h k);
      problem build: each Gram client's kernel K = X X^T (2 n^2 d_i; numpy calls syrk).
    Not counted: FedMGDA+'s QP iterations on the m x m Gram matrix, FedFV's projections
    taken only on conflict (at most 2 dots of 2 P per round), elementwise work;
  * the rate: every distinct product above (shapes, layout, float32 / float64) is timed
    here with one BLAS thread (threadpoolctl, as cells run with blas_threads 1), best of
    --repeat, and the bound of a part is the sum over its products of count x seconds per
    call (= its flops / the measured rate);
  * measured: the cell itself through drocli.run.worker.run_cell (the path every cell takes;
    its kernels warmed up first, outside the clock), with problem.local_round and
    problem.evaluate timed on the way (two perf_counter calls per call): local training,
    the rest of the solver's clock (aggregation, output models, the round loop),
    evaluation, and the rest of the cell's wall time (building the problem, K included, and
    the cell's bookkeeping);
  * what is left between the cell and its bound, part by part:
      Python per round: the same method on a tiny problem of the same kind (m clients,
        tau steps, 4 x 4 images, 20 rows per client, 2 hidden units), its solver clock per
        round (evaluation off), times the rounds; Python per evaluation likewise;
      memory traffic outside the products: the bytes a round streams through arrays that
        the products do not cover (the implementation's passes, read off the code: each
        client's parameters gathered, cast and written back, theta read and the client's
        row of the (m, P) models written, the Gram form's elementwise passes over its
        n x h float32 arrays, the server step's passes over the (m, P) float64 models),
        each at the copy bandwidth measured here for an array of that size;
      unexplained: the cell's wall time minus all of the above.

Timings are only meaningful on a quiet machine (load average well below one per core).

Run: python benchmarks/fl_roofline.py [--rounds 300] [--methods FedAvg,TCH] [--case rotation]
         [--repeat 5] [--kernels]
     (the full folder settings: 12 cells of 300 rounds; --rounds 4 checks that the script
     works end to end)
"""

from __future__ import annotations

import argparse
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
from drocli.ops.fl_aggregators import fedfv_keep  # noqa: E402
from drocli.plugins import registry  # noqa: E402
from drocli.problems.federated import FederatedProblem  # noqa: E402
from drocli.run import worker
from drocli.run.cells import expand  # noqa: E402
from drocli.run.monitor import Monitor, checkpoint_grid  # noqa: E402
from drocli.spec import load_spec  # noqa: E402

SPEC = "experiments/omd_tch_fl_mnist.yaml"
K = T.Kernel
BUILD = "problem build (K), and the cell's rest"


# ---- counts ---------------------------------------------------------------------------------

def _batches(n: int, batch: int) -> list[int]:
    """Row counts of one local epoch's minibatches (all n rows when batch <= 0)."""
    if batch <= 0:
        return [n]
    return [min(batch, n - j) for j in range(0, n, batch)]


def local_products(problem) -> Counter:
    """{kernel: calls} of one `local_round` (every client), as the problem does it."""
    c = Counter()
    h, k, dt, tau = problem.dims.h, problem.dims.k, problem.dtype.name, problem.local_steps
    for X, Kmat in zip(problem._Xloc, problem._K, strict=True):
        n, d = X.shape
        if Kmat is not None:                                 # Gram form (mlp_gram.gd_steps)
            c[K("matmul", (n, d), (d, h), dt, tb=True)] += 1          # Z1 = X W1^T
            c[K("matmul", (n, h), (h, k), dt, tb=True)] += tau        # A W2^T
            c[K("matmul", (n, k), (k, h), dt)] += tau                 # G W2
            c[K("matmul", (k, n), (n, h), dt, ta=True)] += tau        # G^T A
            c[K("matmul", (n, n), (n, h), dt)] += tau                 # K D
            c[K("matmul", (h, n), (n, d), dt, ta=True)] += 1          # S^T X
            continue
        for b in _batches(n, problem.batch):                  # direct form (mlp.loss_grad)
            c[K("matmul", (b, d), (d, h), dt, tb=True)] += tau        # X W1^T
            c[K("matmul", (b, h), (h, k), dt, tb=True)] += tau        # A W2^T
            c[K("matmul", (k, b), (b, h), dt, ta=True)] += tau        # G^T A
            c[K("matmul", (b, k), (k, h), dt)] += tau                 # G W2
            c[K("matmul", (h, b), (b, d), dt, ta=True)] += tau        # D^T X
    return c


def evaluate_products(problem) -> Counter:
    """{kernel: calls} of one `evaluate` (forward pass of the train and the test rows)."""
    d, h, k = problem.dims
    dt = problem.dtype.name
    c = Counter()
    for X in (problem.Xtr_all, problem.Xte_all):
        N = X.shape[0]
        c[K("matmul", (N, d), (d, h), dt, tb=True)] += 1              # X W1^T
        c[K("matmul", (N, h), (h, k), dt, tb=True)] += 1              # A W2^T
    return c


def setup_products(problem) -> Counter:
    """{kernel: calls} of building the problem: the Gram clients' K = X X^T."""
    dt = problem.dtype.name
    return Counter(K("matmul", X.shape, X.shape[::-1], dt, same=True)
                   for X, Km in zip(problem._Xloc, problem._K, strict=True) if Km is not None)


def aggregate_products(solver: str, params: dict, m: int, P: int, r: int) -> Counter:
    """{kernel: calls} of the server step of round r (0, 1, ...) on m models of P float64."""
    weights = K("matmul", (m,), (m, P))                              # w @ thetas (m, P)
    if solver in ("qffl", "stch_fl", "omd_tch_fl", "ada_omd_tch_fl"):
        return Counter({weights: 1})
    if solver == "fedmgda_plus":                                     # Uh Uh^T, then lam @ thetas
        return Counter({K("matmul", (m, P), (P, m), same=True): 1, weights: 1})
    if solver == "fedfv":
        kept = fedfv_keep(np.zeros(m), float(params["alpha"])).size
        c = Counter({K("matmul", (P,), (P,)): (m - kept) * (m - 1)})  # internal: U_j . u_i'
        if r >= int(params["tau"]):
            c[K("matmul", (m, P), (P,))] += 1                         # external: group @ g
        return c
    return Counter()                                                 # fedavg, propfair, tch_fl


def output_products(solver: str, params: dict, P: int) -> Counter:
    """{kernel: calls} of one output() after the first round: AdaOMD's gamma @ snapshots,
    counted with a single snapshot (the fewest it can hold)."""
    if solver in ("omd_tch_fl", "ada_omd_tch_fl") and params.get("output") == "adaptive":
        return Counter({K("matmul", (1,), (1, P)): 1})
    return Counter()


def evaluations(budget: int, checkpoints: int, spacing: str = "linear") -> int:
    """Evaluations of a cell: one per checkpoint of the grid (round 0 and the last included)."""
    return len(checkpoint_grid(budget, checkpoints, spacing))


def cell_products(problem, solver: str, params: dict, rounds: int, evals: int) -> dict:
    """{part: Counter of kernel calls} of a whole cell of `rounds` rounds and `evals`
    evaluations. Outputs: run() asks for one at every evaluation and one to return; the
    first (before any round) has no product."""
    agg = Counter()
    for r in range(rounds):
        agg.update(aggregate_products(solver, params, problem.m, problem.P, r))
    out = output_products(solver, params, problem.P)
    agg.update({k: v * evals for k, v in out.items()})
    return {"local training": Counter({k: v * rounds
                                       for k, v in local_products(problem).items()}),
            "aggregation and output": agg,
            "evaluation": Counter({k: v * evals for k, v in evaluate_products(problem).items()}),
            BUILD: setup_products(problem)}


def flops(counter: Counter) -> float:
    return sum(k.flops * v for k, v in counter.items())


def bound_seconds(counter: Counter, secs: dict) -> float:
    return sum(secs[k] * v for k, v in counter.items())


# ---- memory traffic outside the products (bytes per round, read off the code) ----------------

AGG_PASSES = {       # passes over the (m, P) float64 client models per round, products aside
    "fedavg": 1, "propfair": 1,            # mean
    "qffl": 5,                             # theta - thetas, / lr, the row norms (einsum)
    "fedmgda_plus": 8,                     # updates, row norms (square, sum), normalise
    "fedfv": 13,                           # updates twice, history copy, einsum, copy, means
}


def memory_items(problem, solver: str, params: dict) -> list[tuple[str, int, float]]:
    """(what, bytes of the array, passes over it per round): the arrays a round streams
    outside the counted products (a pass = one read or one write of the whole array)."""
    m, P, h = problem.m, problem.P, problem.dims.h
    isz = problem.dtype.itemsize
    items = []
    for i, X in enumerate(problem._Xloc):
        n, d = X.shape
        Pi = problem._dims_loc[i].size
        tag = f"client {i}"
        items.append((f"{tag}: theta read, its row of the (m, P) models written", 8 * P, 2))
        gathered = problem._cols[i] is not None
        # gathered (drocli.ops.client_columns): read 8 Pi, write 4 Pi; back: read 4 Pi, write
        # 8 Pi (the copy of theta is the item above)
        items.append((f"{tag}: parameters gathered, cast to {problem.dtype.name}, written back",
                      8 * Pi, 3.0 if gathered else 3.5))
        if problem._K[i] is not None:
            # per step (drocli.ops.mlp_gram_kernels): scale_masked reads D, Z1, S and writes
            # D, S 5; move_relu reads Z1, T and writes Z1, A 4; once: Z1 += b1 2, S = 0 1,
            # relu 2
            items.append((f"{tag}: Gram form, elementwise over n x h", n * h * isz,
                          9 * problem.local_steps + 5))
        else:
            # per step and batch: Z1 += b1 2, relu 2, D *= mask 3.5; the step: g * lr 2, phi -= 3
            for b in _batches(n, problem.batch):
                items.append((f"{tag}: direct form, elementwise over b x h", b * h * isz,
                              7.5 * problem.local_steps))
            items.append((f"{tag}: direct form, the parameter step", Pi * isz,
                          5 * problem.local_steps * len(_batches(n, problem.batch))))
    if solver in AGG_PASSES:
        items.append(("server step over the (m, P) models", 8 * m * P, AGG_PASSES[solver]))
    if solver == "tch_fl":
        items.append(("server step: the worst client's row copied", 8 * P, 2))
    if solver in ("omd_tch_fl", "ada_omd_tch_fl"):
        # theta copied (prev), the running mean (x - avg, / k, +=); adaptive: the snapshot copy
        passes = 2 + (8 if params.get("average_from", "post") == "post" else 0) \
            + (2 if params.get("output") == "adaptive" else 0)
        items.append(("server step: theta-sized copies and the running mean", 8 * P, passes))
    return items


def memory_seconds(items, bandwidth: dict) -> float:
    return sum(nbytes * passes / bandwidth[nbytes] for _, nbytes, passes in items)


# ---- the tiny problem: Python per round ------------------------------------------------------

def tiny_problem(cell, problem, rows_per_class: int = 20, side: int = 4, hidden: int = 2):
    """The cell's problem on side x side images (every k-th pixel), `rows_per_class` train and
    half as many test rows per class, `hidden` units, the same clients, steps and form."""
    data = worker.load_data(cell.data_name, cell.data_params, cell.data_seed)
    shape = tuple(problem.shape)
    step = max(1, shape[-1] // side)

    def shrink(X, y, k):
        idx = np.concatenate([np.flatnonzero(y == c)[:k] for c in np.unique(y)])
        img = np.asarray(X[idx]).reshape((-1,) + shape)[..., ::step, ::step]
        return np.ascontiguousarray(img.reshape(idx.size, -1)), np.asarray(y)[idx], img.shape[1:]

    Xtr, ytr, new_shape = shrink(data.X_train, data.y_train, rows_per_class)
    Xte, yte, _ = shrink(data.X_test, data.y_test, max(rows_per_class // 2, problem.m))
    small = GroupedData(data.name, Xtr, ytr, np.zeros(ytr.size, np.int64), Xte, yte,
                        np.zeros(yte.size, np.int64), n_classes=data.n_classes,
                        info={**data.info, "shape": new_shape})
    forms = set(problem.info["local_form"])
    form = forms.pop() if len(forms) == 1 else "auto"
    entry = registry.get("problem", cell.problem_name)
    return entry.func(small, {**cell.problem_params, "hidden": hidden, "local_form": form})


def python_per_round(cell, problem, rounds: int) -> tuple[float, float]:
    """(solver seconds per round, seconds per evaluation) of the cell's method on the tiny
    problem: what the interpreter and numpy's call overheads cost where the arrays are tiny."""
    tiny = tiny_problem(cell, problem)
    entry = registry.get("solver", cell.solver)
    for r in (2, rounds):                                   # a warm-up run, then the timed one
        tiny.reset_counter()
        mon = Monitor(tiny, r, checkpoints=1, evaluate=False)
        entry.func(tiny, dict(cell.solver_params), np.random.default_rng(0), mon)
    theta = tiny.initial(np.random.default_rng(0))
    return mon.elapsed() / rounds, T.seconds_per_call(lambda: tiny.evaluate(theta), 3)


# ---- the real cell -----------------------------------------------------------------------------

class Timed:
    """Times (seconds, calls) of FederatedProblem.local_round and .evaluate while active."""

    NAMES = ("local_round", "evaluate")

    def __enter__(self):
        self.seconds = dict.fromkeys(self.NAMES, 0.0)
        self.calls = dict.fromkeys(self.NAMES, 0)
        self._orig = {n: getattr(FederatedProblem, n) for n in self.NAMES}
        for n, f in self._orig.items():
            setattr(FederatedProblem, n, self._wrap(n, f))
        return self

    def _wrap(self, name, f):
        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return f(*a, **kw)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1
        return timed

    def __exit__(self, *exc):
        for n, f in self._orig.items():
            setattr(FederatedProblem, n, f)


def cells_of(spec_path: str, case: str, rounds: int | None, methods, seed: int | None):
    """One cell per method: the spec's case, first seed (or `seed`), `rounds` rounds with the
    spec's evaluation frequency kept."""
    base = load_spec(spec_path, data=[case])
    overrides = []
    if rounds is not None:
        every = float(base.budget.epochs) / int(base.budget.checkpoints)
        overrides = [("budget.epochs", rounds),
                     ("budget.checkpoints", max(1, round(rounds / every)))]
    if seed is not None:
        overrides.append(("seeds", [seed]))
    spec = load_spec(spec_path, data=[case], overrides=overrides, solvers=methods or ())
    out, seen = [], set()
    for c in expand(spec):
        if c.label not in seen:
            seen.add(c.label)
            out.append(c)
    return out


def report(cell, problem, parts, secs, measured, python, mem_items, bandwidth, evals, rounds):
    print(f"\n### {cell.label} ({cell.solver}; {cell.dataset}, seed {cell.seed}, {rounds} "
          f"rounds, {evals} evaluations)\n")
    print("| part | GFLOP | GFLOP/s (its products here) | bound (s) | measured (s) | "
          "measured / bound |")
    print("|---|---|---|---|---|---|")
    total_b = 0.0
    for part, counter in parts.items():
        f, b = flops(counter), bound_seconds(counter, secs)
        total_b += b
        rate = f"{f / b / 1e9:.1f}" if b > 0 else "-"
        meas = measured.get(part)
        ratio = f"{meas / b:.2f}" if meas is not None and b > 0 else "-"
        print(f"| {part} | {f / 1e9:.3f} | {rate} | {b:.3f} | "
              f"{'-' if meas is None else f'{meas:.3f}'} | {ratio} |")
    wall = measured["cell"]
    print(f"| **the cell** (wall, warm-up excluded) | {sum(map(flops, parts.values())) / 1e9:.3f} "
          f"| | {total_b:.3f} | {wall:.3f} | {wall / total_b:.2f} |")
    per_round, per_eval = python
    mem_round = sum(nb * p for _, nb, p in mem_items)
    mem_s = memory_seconds(mem_items, bandwidth)
    left = [("Python per round (tiny shapes) x rounds", per_round * rounds),
            ("Python per evaluation (tiny shapes) x evaluations", per_eval * evals),
            (f"memory traffic outside the products: {mem_round / 1e6:.1f} MB per round at "
             f"{mem_round / mem_s / 1e9:.1f} GB/s (copy rate at each array's size) x rounds",
             mem_s * rounds)]
    print("\nWhat is left (measured - bound of the cell), part by part:\n")
    print("| part | seconds |")
    print("|---|---|")
    for what, s in left:
        print(f"| {what} | {s:.3f} |")
    rest = wall - total_b - sum(s for _, s in left)
    print(f"| unexplained: cell - bound - the above | {rest:.3f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=SPEC)
    ap.add_argument("--case", default="rotation")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default: the spec's)")
    ap.add_argument("--methods", default="", help="comma-separated labels (default: all)")
    ap.add_argument("--seed", type=int, default=None, help="default: the spec's first seed")
    ap.add_argument("--repeat", type=int, default=5, help="best of this many timings")
    ap.add_argument("--kernels", action="store_true", help="print every product's rate")
    args = ap.parse_args(argv)

    limit = T.one_blas_thread()                             # noqa: F841  (kept alive)
    print(T.machine_info())
    methods = [s for s in args.methods.split(",") if s]
    cells = cells_of(args.spec, args.case, args.rounds, methods, args.seed)
    plans = []
    for cell in cells:
        data = worker.load_data(cell.data_name, cell.data_params, cell.data_seed)
        problem = registry.get("problem", cell.problem_name).func(data, cell.problem_params)
        rounds = worker.budget_calls(cell.budget, problem)
        evals = evaluations(rounds, cell.budget.get("checkpoints", 50),
                            cell.budget.get("spacing", "linear"))
        parts = cell_products(problem, cell.solver, cell.solver_params, rounds, evals)
        plans.append((cell, problem, rounds, evals, parts,
                      memory_items(problem, cell.solver, cell.solver_params)))
    kernels = {k for p in plans for c in p[4].values() for k in c}
    t0 = time.perf_counter()
    secs = T.kernel_seconds(sorted(kernels, key=repr), args.repeat)
    sizes = {nb for p in plans for _, nb, _ in p[5]}
    bandwidth = {nb: T.copy_bandwidth(nb, args.repeat) for nb in sorted(sizes)}
    print(f"\n{len(secs)} products and {len(bandwidth)} array sizes timed in "
          f"{time.perf_counter() - t0:.1f} s (one BLAS thread, best of {args.repeat})")
    if args.kernels:
        print("\n| product | GFLOP/s |\n|---|---|")
        for k, s in secs.items():
            print(f"| {k} | {k.flops / s / 1e9:.2f} |")
    for cell, problem, rounds, evals, parts, mem in plans:
        warm = worker.warm_up(cell)                      # kernels compiled off the clock
        with Timed() as tm:
            _, status, _ = worker.run_cell(cell, blas_threads=1)
        if status["status"] != "done":
            print(f"\n{cell.label}: the cell ended {status['status']}: {status.get('error')}")
            continue
        if tm.calls["evaluate"] != evals or tm.calls["local_round"] != rounds:
            print(f"\nnote: {tm.calls['local_round']} rounds and {tm.calls['evaluate']} "
                  f"evaluations ran, {rounds} and {evals} counted")
        solver_s = status["solver_time_s"]
        measured = {"local training": tm.seconds["local_round"],
                    "aggregation and output": solver_s - tm.seconds["local_round"],
                    "evaluation": tm.seconds["evaluate"],
                    BUILD: status["wall_s"] - solver_s - tm.seconds["evaluate"],
                    "cell": status["wall_s"]}
        python = python_per_round(cell, problem, min(rounds, 20))
        report(cell, problem, parts, secs, measured, python, mem, bandwidth, evals, rounds)
        print(f"\n(warm-up before the cell, not in it: {warm:.2f} s; load average now "
              f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
