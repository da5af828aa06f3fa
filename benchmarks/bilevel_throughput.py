"""Samples per second of paper 004's bilevel solvers on the specs' stand-in problems, and
what the Cholesky shortcut of the Hessian projection saves.

For each spec (Fig. 1: one lower problem; Fig. 2: 200) every solver runs with the spec's
tuned parameters on one core (BLAS threads = 1) for a fixed sample budget; the clock is the
solver's (checkpoint evaluation excluded, as on the figures' time axes). Then the projection
S^l_lam[H] (docs/papers/004.md pitfall 5) of a STORM Hessian estimate, as the solvers call it, is
timed against the plain `eigh` projection the spec describes, at D = 65 (digits) and D = 197
(fashion_bin). Last, the n-vector X~ q of the full hypergradient (SVRB, STABLE, RSVRB, every
iteration): numpy's dense product against the packed-bit table lookup the problem uses on
binary features (drocli.ops.bitpacked), timed in turns.

Run: python benchmarks/bilevel_throughput.py   (about two minutes; prints markdown tables)
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from drocli.ops.bitpacked import BitMatrix  # noqa: E402
from drocli.ops.psd import FlooredSPD  # noqa: E402
from drocli.plugins import registry  # noqa: E402
from drocli.run.monitor import Monitor  # noqa: E402
from drocli.run.runner import load_data  # noqa: E402
from drocli.spec import load_spec  # noqa: E402

FASHION = "experiments/tuning/svrb_fig1_fashion_grid.yaml"   # 004 Fig. 1 (b, d) stand-in
SPECS = {"Fig. 1 (m = 1)": ("experiments/svrb_fig1_digits.yaml", 200_000),
         "Fig. 2 (m = 200)": ("experiments/re_rsvrb_fig2_digits.yaml", 1_000_000)}


def build(spec):
    d = registry.get("data", spec.data.name)
    data = load_data(spec.data.name, registry.resolve_params(d, spec.data.params),
                     spec.data.seed)
    p = registry.get("problem", spec.problem.name)
    return lambda: p.func(data, registry.resolve_params(p, {**spec.problem.params,
                                                            "exact": False}))


def solver_table():
    print("| spec | solver | samples | solver time (s) | samples / s |")
    print("|---|---|---|---|---|")
    for name, (path, budget) in SPECS.items():
        spec = load_spec(path)
        make = build(spec)
        for s in spec.solvers:
            entry = registry.get("solver", s.name)
            pb = make()
            mon = Monitor(pb, budget, checkpoints=2)
            entry.func(pb, registry.resolve_params(entry, s.params), np.random.default_rng(0),
                       mon)
            t = mon.elapsed()
            print(f"| {name} | {s.display} | {pb.oracle_calls:.3g} | {t:.2f} | "
                  f"{pb.oracle_calls / t:.3g} |")


def projection_table(repeat: int = 200):
    print("\n| D | case | eigh projection (ms) | FlooredSPD (ms) | speed-up |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    lam = 0.01
    for D in (65, 197):
        A = (rng.random((32, D)) < 0.3).astype(float)
        H = A.T @ A / 32 * 0.2 + lam * np.eye(D)           # a minibatch Hessian >= lam I
        for case, M in (("inside {H >= lam I}", H),
                        ("indefinite (clipped)", H - 0.05 * np.eye(D))):
            v = rng.normal(size=D)

            def plain(M=M, v=v):
                e, Q = np.linalg.eigh(0.5 * (M + M.T))
                e = np.maximum(e, lam)
                return (Q * e) @ Q.T, Q @ ((Q.T @ v) / e)

            def ours(M=M, v=v):
                F = FlooredSPD(M, lam)
                return F.matrix, F.solve(v)

            ta = min(_time(plain) for _ in range(repeat))
            tb = min(_time(ours) for _ in range(repeat))
            print(f"| {D} | {case} | {1e3 * ta:.3f} | {1e3 * tb:.3f} | {ta / tb:.1f}x |")


def product_table(repeat: int = 50):
    print("\n| data | n x D | dense X~ q (ms) | packed bits (ms) | speed-up |")
    print("|---|---|---|---|---|")
    for name, spec in (("digits_split", load_spec(SPECS["Fig. 1 (m = 1)"][0])),
                       ("fashion_bin", load_spec(FASHION))):
        pb = build(spec)()
        bits = BitMatrix.of(pb.X)
        q = np.random.default_rng(0).standard_normal(pb.D)
        bits.dot(q)                                    # compile / load the kernel
        dense = packed = float("inf")
        for _ in range(repeat):
            dense = min(dense, _time(lambda pb=pb, q=q: pb.X @ q))
            packed = min(packed, _time(lambda b=bits, q=q: b.dot(q)))
        print(f"| {name} | {pb.n} x {pb.D} | {1e3 * dense:.3f} | {1e3 * packed:.3f} | "
              f"{dense / packed:.1f}x |")


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    solver_table()
    projection_table()
    product_table()
