"""Where L-SVRG's per-step gap at n = 100, d = 10 goes (issue 29: within 1.1x of a minimal
loop of the same update). Times, interleaved over 5 rounds (medians), drocli's compiled chunk
(uniform sampler), the minimal reference loop of benchmarks/finite_sum_throughput.py, and the
reference plus what drocli's general update does that it does not: the index drawn from a
uniform (int(u n)) and the importance weight 1 / (n p_i) by division.

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


@numba.njit(cache=True)
def ref_plus(A, y, U, coins, rho, step, x, w, gw, counter, weight, draw):
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
        pk[0] = 1.0 / n
        sx = 0.0
        sw = 0.0
        for j in range(d):
            sx += A[i, j] * x[j]
            sw += A[i, j] * w[j]
        c = sx - sw
        if weight:
            c = c / (n * pk[0])
        for j in range(d):
            g[j] = gw[j] + c * A[i, j]
        counter[0] += 2
        if coins[t] < rho:
            b.reference_refresh(A, y, x, w, gw)
            counter[0] += n
        for j in range(d):
            x[j] -= step * g[j]


def main():
    p = b.problem(100, 10)
    step = 1.0 / (4.0 * p.L_max)
    steps = 400_000
    rng = np.random.default_rng(0)
    u = rng.random(steps)
    idxf = np.floor(u * p.n)
    coins = rng.random(steps)


    def rate_plus(weight, draw):
        x = p.x_star + 0.1
        w = x.copy()
        gw = p.full_gradient(w)
        arr = u if draw else idxf
        ref_plus(p.A, p.y, arr[:10], coins[:10], 1.0 / p.n, step, x, w, gw, p.counter, weight, draw)
        return steps / b.best_of(lambda: ref_plus(p.A, p.y, arr, coins, 1.0 / p.n, step, x, w, gw,
                                                  p.counter, weight, draw))


    res = {k: [] for k in ("kernel", "reference", "ref+draw", "ref+weight", "ref+draw+weight")}
    for _ in range(5):
        res["kernel"].append(b.kernel_rate(p, "l_svrg", "uniform", 5000, steps, step)[0])
        res["reference"].append(b.reference_rate(p, steps, step))
        res["ref+draw"].append(rate_plus(False, True))
        res["ref+weight"].append(rate_plus(True, False))
        res["ref+draw+weight"].append(rate_plus(True, True))
    base = st.median(res["reference"])
    for k, v in res.items():
        m = st.median(v)
        print(f"{k:16s} {1e9 / m:6.1f} ns  {base / m:.2f}x the reference")


if __name__ == "__main__":
    main()
