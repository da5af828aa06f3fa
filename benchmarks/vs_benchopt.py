"""drocli against benchopt on the same L-SVRG curve: CPU, wall time and peak memory per run.

What is measured. One L-SVRG curve computed twice, once by `drocli run` and once by
`benchopt run` on a minimal benchopt benchmark written here, each as a fresh process:

  * problem: l2-regularised logistic regression, labels y_i in {0, 1} (stored as +-1),
    F(x) = (1/n) sum_i [log(1 + exp(a_i.x)) - y_i a_i.x] + (mu/2) ||x||^2 with mu = 1/n;
  * data: synthetic, d = 100, a_i ~ N(0, I/d), y_i = +-1 from a logistic model with
    x_true ~ N(0, 4 I); n = 1,000, 50,000 and 1,000,000 (choose on the command line),
    generated once per size with a fixed seed into a temporary .npz file (X_train float64,
    y_train +-1, g_train zeros: drocli's `npz` data source) that BOTH sides load;
  * algorithm: L-SVRG (loopless SVRG), uniform sampling, batch 1, refresh probability
    rho = 1/n, constant step 1/(4 L_max) with L_max = max_i ||a_i||^2 / 4 + mu, x0 = 0,
    22 epochs (an epoch = n iterations), F recorded once per epoch (23 points with x0).

drocli side: a spec (data `npz`, problem `finite_sum` logistic, solver `l_svrg`) run as
`python -m drocli run SPEC --out DIR -q` in the temporary folder (a cell's random stream does
not depend on where its data file is, so every invocation draws the same indices). drocli's budget
counts per-sample gradients (an iteration costs 2, a refresh n more, the first snapshot n):
the spec gives `budget.epochs: 67` (n + 22 n x 3 expected calls) and 22 checkpoints, so
drocli runs about 22 n iterations (the refresh count is random: the last table gives the
iterations it ran) and records at about 23 levels (two levels crossed by one chunk count
once).

benchopt side: objective.py, datasets/npzfile.py and solvers/lsvrg.py, a numba-compiled epoch
loop of the same update, g = grad f_i(x) - grad f_i(w) + grad F(w), x -= step g, with
probability 1/n w = x (the old iterate) and grad F(w) recomputed; like drocli it keeps the
scalars phi'(a_i.w) of the last full pass, so both compute one dot product per iteration.
`sampling_strategy = "callback"`, the callback once per epoch, `get_next` asking for an
evaluation at every call, a SufficientProgressCriterion that cannot stop early (patience
longer than the run); `-n 22` stops it at its 23rd evaluation (x0 and 22 epochs), with
`-r 1 --no-plot --no-display --no-timeout --no-cache` (no result cache: always a real run).

Fairness. Same file, same update, same step, mu and rho (computed once here and handed to both
sides as the same floats), same x0, same number of points (F evaluated in numpy on the same
arrays by both, outside both solver clocks but inside the process times), one BLAS thread for
both (OMP/OPENBLAS/MKL_NUM_THREADS=1; drocli also pins BLAS to 1 thread itself), numba's
cache on for both in a fresh NUMBA_CACHE_DIR per size. The first run of each side at a size is
cold (numba compiles; drocli also solves for F* by Newton and keeps x* under
$DROCLI_DATA/cache/solutions, DROCLI_DATA a fresh folder per size) and is reported apart; it
doubles as the warm-up. Then ROUNDS rounds alternate the two sides (drocli, benchopt,
drocli, ...) and the tables give medians. CPU time is the child's user + sys (RUSAGE_CHILDREN
deltas), peak RSS its own ru_maxrss (os.wait4 on that child). Both final F values must agree
to 1e-6 relative, else the script prints FAIL and exits 1.

Run (benchopt is optional, `pip install benchopt`; without it the script says so and exits 0;
drocli and its tests never need it):

    python benchmarks/vs_benchopt.py                  # n = 1e3, 5e4 and 1e6, 3 rounds
    python benchmarks/vs_benchopt.py 1000 50000 --rounds 5
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from _timing import ROOT, child_cpu  # (benchmarks/ is the script's folder)

from drocli.results.provenance import cpu_model

SIZES = (1_000, 50_000, 1_000_000)
D = 100
EPOCHS = 22
SEED = 20_240_601          # data seed (with n); the solvers' seed is 0 on both sides
REL_TOL = 1e-6
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

OBJECTIVE_PY = '''\
import numpy as np
from benchopt import BaseObjective


class Objective(BaseObjective):
    """(1/n) sum_i [log(1 + exp(a_i.x)) - y_i a_i.x] + (mu/2) ||x||^2, y in {0, 1}."""

    name = "logreg_l2"
    parameters = {}

    def set_data(self, X, y, mu, step, rho):
        self.X = X
        self.y = (y > 0).astype(np.float64)          # +-1 labels -> {0, 1}
        self.mu, self.step, self.rho = mu, step, rho

    def get_objective(self):
        return dict(X=self.X, y=self.y, mu=self.mu, step=self.step, rho=self.rho)

    def evaluate_result(self, x):
        s = self.X @ x
        value = np.mean(np.logaddexp(0.0, s) - self.y * s) + 0.5 * self.mu * (x @ x)
        return dict(value=float(value))

    def get_one_result(self):
        return dict(x=np.zeros(self.X.shape[1]))
'''

DATASET_PY = '''\
import numpy as np
from benchopt import BaseDataset

# n -> the .npz file and the constants the driver computed for it
CASES = {cases!r}


class Dataset(BaseDataset):
    name = "npzfile"
    parameters = {{"n": sorted(CASES)}}

    def get_data(self):
        case = CASES[self.n]
        with np.load(case["path"]) as z:
            X = np.ascontiguousarray(z["X_train"], dtype=np.float64)
            y = np.asarray(z["y_train"], dtype=np.float64)
        return dict(X=X, y=y, mu=case["mu"], step=case["step"], rho=case["rho"])
'''

SOLVER_PY = '''\
import math

import numpy as np
from numba import njit

from benchopt import BaseSolver
from benchopt.stopping_criterion import SufficientProgressCriterion

SEED = 0


@njit(cache=True)
def dphi(s, yv):
    """d/ds [log(1 + e^s) - y s] = sigmoid(s) - y."""
    if s >= 0.0:
        return 1.0 / (1.0 + math.exp(-s)) - yv
    e = math.exp(s)
    return e / (1.0 + e) - yv


@njit(cache=True)
def seed(value):
    np.random.seed(value)


@njit(cache=True)
def full_pass(X, y, mu, w, cw, gw):
    """cw[i] = dphi(a_i.w; y_i) and gw = grad F(w)."""
    n, d = X.shape
    for j in range(d):
        gw[j] = 0.0
    for i in range(n):
        s = 0.0
        for j in range(d):
            s += X[i, j] * w[j]
        c = dphi(s, y[i])
        cw[i] = c
        for j in range(d):
            gw[j] += c * X[i, j]
    for j in range(d):
        gw[j] = gw[j] / n + mu * w[j]


@njit(cache=True)
def epoch(X, y, mu, step, rho, x, w, cw, gw, g):
    """n iterations of L-SVRG in place: g = grad f_i(x) - grad f_i(w) + grad F(w),
    with probability rho w = x (the old iterate) and a full pass at w, then x -= step g."""
    n, d = X.shape
    for _ in range(n):
        i = np.random.randint(0, n)
        s = 0.0
        for j in range(d):
            s += X[i, j] * x[j]
        c = dphi(s, y[i]) - cw[i]
        for j in range(d):
            g[j] = gw[j] + c * X[i, j] + mu * (x[j] - w[j])
        if np.random.random() < rho:
            for j in range(d):
                w[j] = x[j]
            full_pass(X, y, mu, w, cw, gw)
        for j in range(d):
            x[j] -= step * g[j]


class Solver(BaseSolver):
    name = "lsvrg"
    parameters = {}
    sampling_strategy = "callback"
    # never stops on its own: the progress window (patience) keeps the first
    # evaluation's huge progress for longer than any run, so -n decides
    stopping_criterion = SufficientProgressCriterion(
        strategy="callback", patience=10**9)

    def set_objective(self, X, y, mu, step, rho):
        self.X, self.y, self.mu, self.step, self.rho = X, y, mu, step, rho

    def warm_up(self):
        # load (or compile) the kernels outside benchopt's clock, on a 1 x 1 problem
        X1, y1 = np.ones((1, 1)), np.zeros(1)
        z = [np.zeros(1) for _ in range(5)]
        full_pass(X1, y1, 0.0, z[0], z[1], z[2])
        epoch(X1, y1, 0.0, 0.0, 0.0, z[0], z[1], z[2], z[3], z[4])

    def get_next(self, stop_val):
        return stop_val + 1          # evaluate at every callback call: every epoch

    def run(self, callback):
        X, y, mu = self.X, self.y, self.mu
        n, d = X.shape
        seed(SEED)
        x, w = np.zeros(d), np.zeros(d)
        cw, gw, g = np.empty(n), np.empty(d), np.empty(d)
        self.x = x
        full_pass(X, y, mu, w, cw, gw)
        while callback():
            epoch(X, y, mu, self.step, self.rho, x, w, cw, gw, g)

    def get_result(self):
        return dict(x=self.x)
'''

SPEC_YAML = """\
name: vs_benchopt_n{n}
title: "L-SVRG, logistic + l2 (mu = 1/n), n = {n}, d = {d} (benchmarks/vs_benchopt.py)"
data:
  name: npz
  params: {{path: "{path}"}}
problem:
  name: finite_sum
  params: {{objective: logistic, mu: {mu!r}}}
solvers:
  - name: l_svrg
    label: L-SVRG
    params: {{sampler: uniform, batch: 1, step: {step!r}, rho: {rho!r}}}
seeds: [0]
budget:
  epochs: {budget}       # n (first snapshot) + {epochs} n iterations x 3 expected calls
  checkpoints: {epochs}
metrics: [loss, gap, iteration]
"""


# ------------------------------------------------------------------------------------------
# data and the two benchmark definitions
# ------------------------------------------------------------------------------------------
def make_data(path: Path, n: int) -> dict:
    """Write the .npz for size n; return the constants both sides use."""
    rng = np.random.default_rng([SEED, n])
    X = rng.standard_normal((n, D))
    X *= 1.0 / np.sqrt(D)
    x_true = 2.0 * rng.standard_normal(D)
    p = 1.0 / (1.0 + np.exp(-(X @ x_true)))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    np.savez(path, X_train=X, y_train=y, g_train=np.zeros(n))
    mu = 1.0 / n
    l_max = float(np.einsum("ij,ij->i", X, X).max()) / 4.0 + mu
    out = {"path": str(path), "mu": mu, "step": 1.0 / (4.0 * l_max), "rho": 1.0 / n,
           "x_bytes": int(X.nbytes)}
    del X
    return out


def write_benchopt(bench: Path, cases: dict) -> None:
    (bench / "datasets").mkdir(parents=True)
    (bench / "solvers").mkdir()
    (bench / "objective.py").write_text(OBJECTIVE_PY)
    keep = {n: {k: c[k] for k in ("path", "mu", "step", "rho")} for n, c in cases.items()}
    (bench / "datasets" / "npzfile.py").write_text(DATASET_PY.format(cases=keep))
    (bench / "solvers" / "lsvrg.py").write_text(SOLVER_PY)


def write_spec(path: Path, n: int, case: dict) -> None:
    """drocli's spec, the data path relative to the folder drocli runs in."""
    rel = os.path.relpath(case["path"], Path(case["path"]).parent)
    path.write_text(SPEC_YAML.format(n=n, d=D, path=rel, mu=case["mu"],
                                     step=case["step"], rho=case["rho"], epochs=EPOCHS,
                                     budget=3 * EPOCHS + 1))


# ------------------------------------------------------------------------------------------
# running and timing one child
# ------------------------------------------------------------------------------------------
TIME = Path("/usr/bin/time")


def timed(cmd: list[str], env: dict, log: Path, cwd: Path = ROOT) -> dict:
    """Run cmd as a fresh process: CPU (user + sys), wall, peak RSS (bytes) of that child.
    The peak comes from GNU time, which starts the command itself: a child forked from this
    script would count this script's own memory at the fork in its ru_maxrss."""
    peak_file = log.with_suffix(".rss")
    wrapped = [str(TIME), "-f", "%M", "-o", str(peak_file), *cmd] if TIME.exists() else cmd
    c0, t0 = child_cpu(), time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(wrapped, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    rss = usage.ru_maxrss * 1024
    if TIME.exists():
        rss = int(peak_file.read_text().split()[-1]) * 1024
    return {"cpu": child_cpu() - c0, "wall": wall, "rss": rss}


def run_drocli(spec: Path, out: Path, env: dict, cwd: Path) -> dict:
    res = timed([sys.executable, "-m", "drocli", "run", str(spec), "--out", str(out), "-q"],
                env, out.with_suffix(".log"), cwd)
    rows: dict[str, list] = {}
    with gzip.open(out / "records.csv.gz", "rt", newline="") as fh:
        for r in csv.DictReader(fh):
            rows.setdefault(r["metric"], []).append((int(r["step"]), float(r["value"]),
                                                     float(r["time_s"])))
    loss = sorted(rows["loss"])
    res.update(final=loss[-1][1], points=len(loss), solver_s=loss[-1][2],
               gap=sorted(rows["gap"])[-1][1], iters=int(sorted(rows["iteration"])[-1][1]))
    return res


def run_benchopt(bench: Path, n: int, out: Path, env: dict) -> dict:
    cmd = [sys.executable, "-m", "benchopt", "run", str(bench), "-s", "lsvrg",
           "-d", f"npzfile[n={n}]", "-n", str(EPOCHS), "-r", "1", "--no-plot",
           "--no-display", "--no-timeout", "--no-cache", "--output", str(out)]
    res = timed(cmd, env, out.with_suffix(".log"))
    import pandas as pd

    df = pd.read_parquet(out).sort_values("stop_val")
    res.update(final=float(df["objective_value"].iloc[-1]), points=len(df),
               solver_s=float(df["time"].iloc[-1]), iters=int(df["stop_val"].iloc[-1]) * n)
    return res


# ------------------------------------------------------------------------------------------
# reporting
# ------------------------------------------------------------------------------------------
def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _med(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _mb(b: float) -> str:
    return f"{b / 2**20:,.0f}" if b >= 2**20 else f"{b / 2**20:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", type=int, default=list(SIZES), help="values of n")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds after the cold run")
    args = ap.parse_args(argv)
    try:
        import benchopt
    except ImportError:
        print("benchopt is not installed (pip install benchopt): nothing to compare, skipped")
        return 0
    import numba

    import drocli

    start = (f"load average {_load()} (1, 5, 15 min) at start; "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; CPU {cpu_model() or 'unknown'}, "
             f"{os.cpu_count()} cores; python {platform.python_version()}, drocli "
             f"{drocli.__version__}, benchopt {benchopt.__version__}, numba {numba.__version__}")
    print(start, flush=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="vs_benchopt_") as tmp_name:
        tmp = Path(tmp_name)
        cases = {}
        for n in args.sizes:
            print(f"n = {n:,}: writing the data", file=sys.stderr, flush=True)
            cases[n] = make_data(tmp / f"logreg_n{n}.npz", n)
        bench = tmp / "bench_lsvrg"
        write_benchopt(bench, cases)
        for n in args.sizes:
            here = tmp / f"n{n}"
            here.mkdir()
            spec = here / "spec.yaml"
            write_spec(spec, n, cases[n])
            path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
            env = {**os.environ, **ONE_THREAD, "DROCLI_DATA": str(here / "drocli_data"),
                   "NUMBA_CACHE_DIR": str(here / "numba_cache"), "PYTHONPATH": path}
            env.pop("DROCLI_NO_CACHE", None)
            runs = {"drocli": [], "benchopt": []}
            for k in range(args.rounds + 1):
                tag = "cold" if k == 0 else f"round {k}"
                print(f"n = {n:,}: {tag}: drocli", file=sys.stderr, flush=True)
                runs["drocli"].append(run_drocli(spec, here / f"drocli_{k}", env, tmp))
                print(f"n = {n:,}: {tag}: benchopt", file=sys.stderr, flush=True)
                runs["benchopt"].append(run_benchopt(bench, n, here / f"bo_{k}.parquet", env))
            results[n] = runs
    end_load = _load()

    print(f"\nwarm runs: median of {args.rounds} interleaved rounds (drocli, benchopt, ...); "
          "CPU = user + sys of the child process, peak RSS = its ru_maxrss; data = X_train "
          "bytes\n")
    print("| n | data MB | drocli CPU s | benchopt CPU s | CPU ratio drocli / benchopt | "
          "drocli wall s | benchopt wall s | drocli peak RSS MB | benchopt peak RSS MB | "
          "drocli peak RSS / data | final F drocli | final F benchopt | rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    failed = []
    for n, runs in results.items():
        dro, bo = runs["drocli"][1:], runs["benchopt"][1:]
        fd, fb = dro[-1]["final"], bo[-1]["final"]
        rel = abs(fd - fb) / max(abs(fd), abs(fb))
        if not rel <= REL_TOL:
            failed.append(f"n = {n}: final F drocli {fd!r} vs benchopt {fb!r}, rel. {rel:.1e}")
        data = cases[n]["x_bytes"]
        cd, cb = _med(dro, "cpu"), _med(bo, "cpu")
        print(f"| {n:,} | {_mb(data)} | {cd:.2f} | {cb:.2f} | {cd / cb:.2f} | "
              f"{_med(dro, 'wall'):.2f} | {_med(bo, 'wall'):.2f} | {_mb(_med(dro, 'rss'))} | "
              f"{_mb(_med(bo, 'rss'))} | {_med(dro, 'rss') / data:.1f} | {fd:.15g} | "
              f"{fb:.15g} | {rel:.1e} |")

    print("\ncold first run (empty numba cache on both sides; drocli also solves for F*)\n")
    print("| n | drocli CPU s | benchopt CPU s | CPU ratio | drocli wall s | benchopt wall s | "
          "drocli peak RSS MB | benchopt peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for n, runs in results.items():
        d0, b0 = runs["drocli"][0], runs["benchopt"][0]
        print(f"| {n:,} | {d0['cpu']:.2f} | {b0['cpu']:.2f} | {d0['cpu'] / b0['cpu']:.2f} | "
              f"{d0['wall']:.2f} | {b0['wall']:.2f} | {_mb(d0['rss'])} | {_mb(b0['rss'])} |")

    print("\nthe curves (last warm run): points recorded, iterations run, each side's own solver "
          "clock (evaluations excluded), drocli's final gap F - F*\n")
    print("| n | points drocli | points benchopt | iterations drocli / n | "
          "iterations benchopt / n | drocli solver s | benchopt solver s | drocli F - F* |")
    print("|---|---|---|---|---|---|---|---|")
    for n, runs in results.items():
        d, b = runs["drocli"][-1], runs["benchopt"][-1]
        print(f"| {n:,} | {d['points']} | {b['points']} | {d['iters'] / n:.2f} | "
              f"{b['iters'] / n:.2f} | {d['solver_s']:.3f} | {b['solver_s']:.3f} | "
              f"{d['gap']:.1e} |")
    print(f"\nload average {end_load} (1, 5, 15 min) at end")
    for msg in failed:
        print(f"FAIL: {msg} (tolerance {REL_TOL:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
