"""Throughput of the finite-sum solvers' compiled loops (iterations / s), paper 002.

Settings (least squares on data model A, spec 002 §3.1, nu = 0.5):
  * n = 100, d = 10        (Figs. 1-3; AdaOSMD tuned for T = 5000),
  * n = 50000, d = 300     (w8a-like size, Figs. 6-7; AdaOSMD tuned for T = 1000).
For L-SVRG and L-Katyusha with uniform and AdaOSMD sampling (b = 1, rho = 1/n) we time
  * "kernel": the compiled chunk alone on pre-drawn uniforms and coins, and
  * "solve": a whole `solve(...)` run through the Monitor (20 checkpoints, metric evaluation
    excluded by Monitor.elapsed) of 25000 iterations (n = 100) or 1000 iterations
    (n = 50000: there the one full pass grad F(w^0) of n gradients dominates, spec P9), i.e.
    with chunking, the first full pass and refreshes,
next to a minimal compiled L-SVRG loop written here: uniform index, two dot products, one
axpy into x and the dense gw term, refresh with probability 1/n (the same arithmetic as
Algorithm 1 with b = 1, without the sampler interface or the feedback).

Run: python benchmarks/finite_sum_throughput.py   (about a minute; prints a markdown table)
"""

from __future__ import annotations

import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

from drocli import registry  # noqa: E402
from drocli.data.regression_synthetic import load  # noqa: E402
from drocli.monitor import Monitor  # noqa: E402
from drocli.ops.samplers import sampler_from_params  # noqa: E402
from drocli.problems.finite_sum import make  # noqa: E402
from drocli.solvers.finite_sum.l_katyusha import lkatyusha_chunk, theorem3  # noqa: E402
from drocli.solvers.finite_sum.l_svrg import lsvrg_chunk  # noqa: E402

CASES = [("n=100, d=10", 100, 10, 5000, 400_000), ("n=50000, d=300", 50_000, 300, 1000, 100_000)]


@numba.njit(cache=True)
def reference_lsvrg(A, y, idx, coins, rho, step, x, w, gw, counter):
    """Minimal L-SVRG (least squares, uniform, b = 1): x -= step (gw + (a.x - a.w) a)."""
    n, d = A.shape
    for t in range(idx.shape[0]):
        i = idx[t]
        sx = 0.0
        sw = 0.0
        for j in range(d):
            sx += A[i, j] * x[j]
            sw += A[i, j] * w[j]
        c = sx - sw
        counter[0] += 2
        if coins[t] < rho:
            for j in range(d):
                w[j] = x[j]
                gw[j] = 0.0
            for r in range(n):
                s = 0.0
                for j in range(d):
                    s += A[r, j] * w[j]
                s -= y[r]
                for j in range(d):
                    gw[j] += s * A[r, j]
            for j in range(d):
                gw[j] /= n
            counter[0] += n
        for j in range(d):
            x[j] -= step * (gw[j] + c * A[i, j])


def best_of(fn, reps=3):
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def kernel_rate(p, solver, sampler, T, steps, step):
    """Iterations / s of a solver's compiled chunk on pre-drawn uniforms (warm state)."""
    rng = np.random.default_rng(0)
    n, d = p.n, p.d
    rho = 1.0 / n
    params = {"sampler": sampler, "horizon": T}
    x0 = p.x_star + 0.1 * rng.standard_normal(d)
    w = x0.copy()
    snap_s, snap_c, gw = p.snapshot(w)
    s = sampler_from_params(params, p, batch=1, horizon=T,
                            abar=float(np.sqrt(p.row_sq.max()) * np.abs(p.y).max()))
    U = rng.random((steps, 1, s.uniforms_per_draw))
    coins = rng.random(steps)
    bufs = (np.zeros(1, np.int64), np.zeros(1), np.zeros(1), np.zeros(d))
    if solver == "l_svrg":
        x = x0 - 0.01

        def go(m=steps):
            lsvrg_chunk(p.A, p.y, p.obj, p.mu, p.row_sq, x, w, gw, snap_s, snap_c, U[:m],
                        coins[:m], rho, step, s.arrays, False, *bufs, p.counter)
    else:
        th = theorem3(p, params, 1)
        x, z, v = np.zeros(d), x0 - 0.01, x0 - 0.02

        def go(m=steps):
            lkatyusha_chunk(p.A, p.y, p.obj, p.mu, p.row_sq, x, z, v, w, gw, snap_s, snap_c,
                            U[:m], coins[:m], rho, th["theta1"], th["theta2"], th["eta"],
                            th["kappa"], th["L"], s.arrays, False, *bufs, p.counter)
    go(10)                      # compile / warm
    return steps / best_of(go), s.info.get("H", "")


def solve_rate(p, solver, sampler, T, step):
    """Iterations / s of a whole solve (metric evaluation excluded)."""
    entry = registry.get("solver", solver)
    prm = registry.resolve_params(entry, {"sampler": sampler, **(
        {"step": step} if solver == "l_svrg" else {})})
    budget = p.n + 3 * T
    p.reset_counter()
    mon = Monitor(p, budget, checkpoints=20)
    entry.func(p, prm, np.random.default_rng(0), mon)
    iters = max(r[4] for r in mon.rows if r[3] == "iteration")
    return iters / mon.elapsed()


def reference_rate(p, steps, step):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, p.n, steps)
    coins = rng.random(steps)
    x = p.x_star + 0.1 * rng.standard_normal(p.d)
    w = x.copy()
    gw = p.full_gradient(w)
    reference_lsvrg(p.A, p.y, idx[:10], coins[:10], 1.0 / p.n, step, x, w, gw, p.counter)
    return steps / best_of(lambda: reference_lsvrg(p.A, p.y, idx, coins, 1.0 / p.n, step, x, w,
                                                   gw, p.counter))


def main():
    rows = []
    for label, n, d, T, steps in CASES:
        t0 = time.perf_counter()
        p = make(load({"n": n, "d": d, "nu": 0.5, "sigma": 1.0}, 0), {})
        setup = time.perf_counter() - t0
        step = 1.0 / (4.0 * p.L_max)
        ref = reference_rate(p, steps, step)
        rows.append((label, "reference L-SVRG loop (uniform)", "", ref, None, 1.0))
        for solver in ("l_svrg", "l_katyusha"):
            for sampler in ("uniform", "adaosmd"):
                k, H = kernel_rate(p, solver, sampler, T, steps, step)
                s = solve_rate(p, solver, sampler, T if n > 1000 else 5 * T, step)
                rows.append((label, f"{solver} / {sampler}", H, k, s, ref / k))
        print(f"<!-- {label}: problem setup (data, lstsq x*, eigvalsh) {setup:.1f} s -->")
    print("| size | loop | AdaOSMD experts H | iterations/s (kernel) | ns/iteration | "
          "reference / kernel | iterations/s (whole solve) |")
    print("|---|---|---|---|---|---|---|")
    for label, name, H, k, s, ratio in rows:
        ss = f"{s:.3g}" if s else "-"
        print(f"| {label} | {name} | {H} | {k:.3g} | {1e9 / k:.0f} | {ratio:.2f} | {ss} |")


if __name__ == "__main__":
    main()
