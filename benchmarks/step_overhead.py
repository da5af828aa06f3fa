"""Where L-SVRG's per-step gap at n = 100, d = 10 goes (issue 29: within 1.1x of a minimal
loop of the same update).

Times, interleaved over 5 rounds (medians; every loop is run once untimed first, and each
round starts with another loop: the first timing in a fresh process ran up to 1.7x slow),
drocli's compiled chunk (uniform sampler) and four
minimal loops of the same update (least squares, b = 1, refresh with probability 1/n): the
reference of benchmarks/finite_sum_throughput.py (pre-drawn integer indices), and the same
loop plus what drocli's general update does and the reference does not: the index drawn from
a uniform (int(u n)), the importance weight 1 / (n p_i) applied by division, and both. Each
variant is its own compiled function (the flags are compile-time constants of a closure), so
a branch on a runtime flag cannot change the code being compared.

Run: python benchmarks/step_overhead.py   (about 30 s)
"""
import os
import statistics as st
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import finite_sum_throughput as b  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

from drocli.ops.rows import dot_row, dot_row2  # noqa: E402

# (draw, weight, stored, dot4, fused, again): the minimal loop, then drocli's differences one
# at a time. The next rows walk from the minimal loop to drocli's arithmetic at n = 100 (where
# n (1/n) = 1, so drocli skips the division): the index drawn from a uniform; the stored
# derivative at w, phi'(a_i.w) = a_i.w - y_i kept from the last full pass (one dot product a
# step instead of two, and two loads); drocli's 4-accumulator dot product (`dot_row`); one
# fused update pass instead of the buffer g. The last row computes phi'(a_i.w) again beside
# a_i.x in one pass (`dot_row2`, 4 accumulators each), as drocli's uniform chunk does for
# d <= 32: drocli's arithmetic in drocli's order, without the solver's state bundles.
VARIANTS = {"minimal loop": (False, False, False, False, False),
            "+ draw from a uniform": (True, False, False, False, False),
            "+ weight by division": (False, True, False, False, False),
            "+ draw + weight": (True, True, False, False, False),
            "+ draw, stored derivative at w": (True, False, True, False, False),
            "+ draw, stored, 4-accumulator dot": (True, False, True, True, False),
            "+ draw, stored, 4-acc dot, fused update": (True, False, True, True, True),
            "+ draw, a_i.w again (4-acc, one pass), fused update":
                (True, False, False, True, True, True)}


def make_loop(draw: bool, weight: bool, stored: bool = False, dot4: bool = False,
              fused: bool = False, again: bool = False):
    """The minimal L-SVRG loop, with drocli's differences compiled in or out."""
    @numba.njit
    def loop(A, y, U, coins, rho, step, x, w, gw, cw, counter):
        n, d = A.shape
        g = np.empty(d)
        pk = np.empty(1)
        for t in range(U.shape[0]):
            if draw:
                i = int(U[t] * n)
                if i >= n:
                    i = n - 1
            else:
                i = int(U[t])
            if stored:
                if dot4:
                    s = dot_row(A, i, x)
                else:
                    s = 0.0
                    for j in range(d):
                        s += A[i, j] * x[j]
                c = (s - y[i]) - cw[i]
            elif again:
                sx, sw = dot_row2(A, i, x, w)
                c = (sx - y[i]) - (sw - y[i])
            else:
                c = b.reference_difference(A, i, x, w)
            if weight:
                pk[0] = 1.0 / n
                c = c / (n * pk[0])
            counter[0] += 2
            refresh = coins[t] < rho
            if fused and not refresh:
                for j in range(d):
                    x[j] -= step * (gw[j] + c * A[i, j])
                continue
            for j in range(d):
                g[j] = gw[j] + c * A[i, j]
            if refresh:
                b.reference_refresh(A, y, x, w, gw)
                if stored:
                    for r in range(n):
                        cw[r] = dot_row(A, r, w) - y[r]
                counter[0] += n
            for j in range(d):
                x[j] -= step * g[j]
    return loop


def main():
    p = b.problem(100, 10)
    step = 1.0 / (4.0 * p.L_max)
    steps = 400_000
    rng = np.random.default_rng(0)
    u = rng.random(steps)
    idx = np.minimum((u * p.n).astype(np.int64), p.n - 1)
    coins = rng.random(steps)
    loops = {name: make_loop(*flags) for name, flags in VARIANTS.items()}

    def rate(name):
        draw = VARIANTS[name][0]
        x = p.x_star + 0.1
        w = x.copy()
        gw = p.full_gradient(w)
        U = u if draw else idx
        cw = p.A @ w - p.y
        f = loops[name]
        f(p.A, p.y, U[:10], coins[:10], 1.0 / p.n, step, x, w, gw, cw, p.counter)
        return steps / b.best_of(lambda: f(p.A, p.y, U, coins, 1.0 / p.n, step, x, w, gw, cw,
                                           p.counter))

    timers = {"drocli chunk": lambda: b.kernel_rate(p, "l_svrg", "uniform", 5000, steps,
                                                     step)[0],
              **{name: (lambda name=name: rate(name)) for name in VARIANTS}}
    for timer in timers.values():      # untimed pass: compiled, caches and clocks warm
        timer()
    res = {name: [] for name in timers}
    order = list(timers)
    for r in range(5):                 # each round starts with another loop
        for name in order[r % len(order):] + order[:r % len(order)]:
            res[name].append(timers[name]())
    base = st.median(res["minimal loop"])
    print(f"<!-- n = 100, d = 10, {steps} iterations, best of 5 per round, medians of 5 "
          f"interleaved rounds; load average {os.getloadavg()[0]:.1f} -->")
    print("| loop | ns / iteration | over the minimal loop |")
    print("|---|---|---|")
    for name, v in res.items():
        m = st.median(v)
        print(f"| {name} | {1e9 / m:.1f} | {base / m:.2f}x |")


if __name__ == "__main__":
    main()
