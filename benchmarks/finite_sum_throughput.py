"""Throughput of the finite-sum solvers' compiled loops (iterations / s), paper 002.

Settings (least squares on data model A, docs/papers/002.md §3.1, nu = 0.5):
  * n = 100, d = 10        (Figs. 1-3; AdaOSMD tuned for T = 5000),
  * n = 50000, d = 300     (w8a-like size, Figs. 6-7; AdaOSMD tuned for T = 1000).
For L-SVRG and L-Katyusha with uniform and AdaOSMD sampling (b = 1, rho = 1/n) we time
  * "kernel": the compiled chunk alone on pre-drawn uniforms and coins, and
  * "solve": a whole `solve(...)` run through the Monitor (20 checkpoints, metric evaluation
    excluded by Monitor.elapsed) of 25000 iterations (n = 100) or 1000 iterations
    (n = 50000: there the one full pass grad F(w^0) of n gradients dominates, P9), i.e.
    with chunking, the first full pass and refreshes,
next to a minimal compiled L-SVRG loop written here: uniform index, two dot products, one
axpy into x and the dense gw term, refresh with probability 1/n (the same arithmetic as
Algorithm 1 with b = 1, without the sampler interface or the feedback), and a minimal compiled
L-Katyusha loop (`reference_lkatyusha`, Algorithm 2 with b = 1 and Theorem 3's constants), so
each solver is compared with a loop of its own update; an agreement check runs the latter next
to `lkatyusha_chunk` first.

That reference is unfair to AdaOSMD, whose own update costs H mirror steps per iteration, so
the AdaOSMD kernels are also compared with a second reference written here: the same L-SVRG
step with AdaOSMD written naively and densely (`reference_lsvrg_adaosmd`: H dense (n,)
expert vectors, the draw by a linear inverse-CDF scan of the mixture, every expert's mirror
step followed by an O(n) exact projection onto the floored simplex, exponential weights over
the experts), compiled, no trees or heaps. Before timing, an agreement check runs it next to
`lsvrg_chunk` with the AdaOSMD sampler (n = 100, d = 10, same data and constants, 5000
iterations; once more with abar / 1e10, so that p moves and hits the floor) and prints the
maximum relative differences of the x trajectory, the expert weights, the experts and the
mixture distribution.

Run: python benchmarks/finite_sum_throughput.py   (under a minute; prints a markdown table)
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

from drocli.ops.samplers import adaosmd_constants, sampler_from_params  # noqa: E402
from drocli.plugins import registry  # noqa: E402
from drocli.run.monitor import Monitor  # noqa: E402
from drocli.solvers.finite_sum.estimators import Draws  # noqa: E402
from drocli.solvers.finite_sum.l_katyusha import (  # noqa: E402
    Iterates,
    Steps,
    lkatyusha_chunk,
    theorem3,
)
from drocli.solvers.finite_sum.l_svrg import lsvrg_chunk  # noqa: E402

# (label, n, d, AdaOSMD horizon T, kernel iterations, naive AdaOSMD reference iterations)
CASES = [("n=100, d=10", 100, 10, 5000, 400_000, 100_000),
         ("n=50000, d=300", 50_000, 300, 1000, 100_000, 1000)]
ALPHA = 0.4


@numba.njit(cache=True, inline="always")
def reference_difference(A, i, x, w):
    """a_i.x - a_i.w (least squares), two dot products in one loop."""
    sx = 0.0
    sw = 0.0
    for j in range(x.shape[0]):
        sx += A[i, j] * x[j]
        sw += A[i, j] * w[j]
    return sx - sw


@numba.njit(cache=True, inline="always")
def reference_estimate(A, i, x, w, gw, g):
    """g = gw + (a_i.x - a_i.w) a_i (least squares, uniform, b = 1)."""
    c = reference_difference(A, i, x, w)
    for j in range(x.shape[0]):
        g[j] = gw[j] + c * A[i, j]


@numba.njit(cache=True, inline="always")
def reference_refresh(A, y, src, w, gw):
    """w = src, gw = grad F(w) = A^T (A w - y) / n, row by row."""
    n, d = A.shape
    for j in range(d):
        w[j] = src[j]
        gw[j] = 0.0
    for r in range(n):
        s = -y[r]
        for j in range(d):
            s += A[r, j] * w[j]
        for j in range(d):
            gw[j] += s * A[r, j]
    for j in range(d):
        gw[j] /= n


@numba.njit(cache=True)
def reference_lsvrg(A, y, idx, coins, rho, step, x, w, gw, counter):
    """Minimal L-SVRG (least squares, uniform, b = 1): g = gw + (a.x - a.w) a (old w, old gw),
    refresh w = x with probability rho, x -= step g."""
    n, d = A.shape
    g = np.empty(d)
    for t in range(idx.shape[0]):
        reference_estimate(A, idx[t], x, w, gw, g)
        counter[0] += 2
        if coins[t] < rho:
            reference_refresh(A, y, x, w, gw)
            counter[0] += n
        for j in range(d):
            x[j] -= step * g[j]


@numba.njit(cache=True)
def reference_lkatyusha(A, y, idx, coins, rho, theta1, theta2, eta, kappa, L, x, z, v, w, gw,
                        counter):
    """Minimal L-Katyusha (least squares, uniform, b = 1): x = theta1 z + theta2 w + theta3 v,
    g = gw + (a.x - a.w) a (old w, old gw), refresh w = v with probability rho,
    z = (eta kappa x + z - eta/L g) / (1 + eta kappa), v = x + theta1 (z_new - z)."""
    n, d = A.shape
    th3 = 1.0 - theta1 - theta2
    ek = eta * kappa
    inv = 1.0 / (1.0 + ek)
    eL = eta / L
    g = np.empty(d)
    for t in range(idx.shape[0]):
        i = idx[t]
        for j in range(d):
            x[j] = theta1 * z[j] + theta2 * w[j] + th3 * v[j]
        reference_estimate(A, i, x, w, gw, g)
        counter[0] += 2
        if coins[t] < rho:
            reference_refresh(A, y, v, w, gw)
            counter[0] += n
        for j in range(d):
            zn = (ek * x[j] + z[j] - eL * g[j]) * inv
            v[j] = x[j] + theta1 * (zn - z[j])
            z[j] = zn


@numba.njit(cache=True)
def reference_lsvrg_adaosmd(A, y, U, coins, rho, step, eta, gamma, floor, x, w, gw, P, theta,
                            forced, counter):
    """Minimal L-SVRG (least squares, b = 1) with AdaOSMD sampling written naively and densely.

    P (H, n): the experts' distributions p_h, theta (H,): their weights; p = sum_h theta_h p_h.
    Per iteration: i from p by a linear inverse-CDF scan of U[t] (or i = forced[t] when
    forced is not empty: the agreement check replays drocli's draws); the estimate
    g = gw + (a.x - a.w) a / (n p_i) (old w, old gw); with probability rho w = x (old x) and
    gw = grad F(w); x -= step g;
    feedback a = ||Delta||^2 = (a.x - a.w)^2 ||a||^2 (old w); then for every expert h
    loss_h = a / (n^2 p_i p_{h,i}) (eq. 5), the mirror step p_{h,i} *= exp(eta_h loss_h /
    p_{h,i}) (eq. 6) and the exact projection onto {p >= floor, sum p = 1}, p = max(floor, c p)
    with c found by flooring until nothing changes (O(n) per pass); finally
    theta_h *= exp(-gamma loss_h), normalised. No trees or heaps. No overflow guard
    (docs/papers/002.md P6):
    valid while eta_h loss_h / p_{h,i} < ~700, true by far at the benchmark's constants.
    """
    n, d = A.shape
    H = P.shape[0]
    g = np.zeros(d)
    loss = np.zeros(H)
    floored = np.zeros(n, dtype=np.bool_)
    for t in range(coins.shape[0]):
        if forced.shape[0] > 0:
            i = forced[t]
        else:
            u = U[t]
            acc = 0.0
            i = n - 1
            for r in range(n):
                for h in range(H):
                    acc += theta[h] * P[h, r]
                if u < acc:
                    i = r
                    break
        pi = 0.0
        for h in range(H):
            pi += theta[h] * P[h, i]
        sx = 0.0
        sw = 0.0
        asq = 0.0
        for j in range(d):
            sx += A[i, j] * x[j]
            sw += A[i, j] * w[j]
            asq += A[i, j] * A[i, j]
        c = sx - sw
        fb = c * c * asq
        for j in range(d):
            g[j] = gw[j] + c / (n * pi) * A[i, j]
        counter[0] += 2
        if coins[t] < rho:
            reference_refresh(A, y, x, w, gw)
            counter[0] += n
        for j in range(d):
            x[j] -= step * g[j]
        for h in range(H):
            loss[h] = fb / (n * n * pi * P[h, i])
            if loss[h] <= 0.0:
                continue
            P[h, i] *= math.exp(eta[h] * loss[h] / P[h, i])
            floored[:] = False
            while True:
                mass = 0.0
                nfl = 0
                for r in range(n):
                    if floored[r]:
                        nfl += 1
                    else:
                        mass += P[h, r]
                scale = (1.0 - nfl * floor) / mass
                changed = False
                for r in range(n):
                    if not floored[r] and scale * P[h, r] <= floor:
                        floored[r] = True
                        changed = True
                if not changed:
                    break
            for r in range(n):
                P[h, r] = floor if floored[r] else scale * P[h, r]
        lmin = loss.min()
        tot = 0.0
        for h in range(H):
            theta[h] *= math.exp(-gamma * (loss[h] - lmin))
            tot += theta[h]
        for h in range(H):
            theta[h] /= tot


def best_of(fn, reps=5):
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def problem(n: int, d: int):
    """Least squares on data model A (nu = 0.5, sigma = 1), through the registry."""
    data = registry.get("data", "regression_synthetic")
    prob = registry.get("problem", "finite_sum")
    dp = registry.resolve_params(data, {"n": n, "d": d, "nu": 0.5, "sigma": 1.0})
    return prob.func(data.func(dp, 0), registry.resolve_params(prob, {}))


def solver_params(params: dict) -> dict:
    """A solver's params resolved against its model (defaults filled in)."""
    return registry.resolve_params(registry.get("solver", "l_katyusha"), params)


def abar_of(p):
    """The abar given to AdaOSMD here (a bound on max_i ||grad f_i||), kernels and references."""
    return float(np.sqrt(p.row_sq.max()) * np.abs(p.y).max())


def start_point(p, rng):
    """(x, w, snapshot) of the kernel timings: x near x*, w = x + 0.01."""
    x0 = p.x_star + 0.1 * rng.standard_normal(p.d)
    w = x0.copy()
    return x0 - 0.01, w, p.snapshot_at(w)


def naive_adaosmd_state(p, T, abar):
    """Constants (eta (H,), gamma, floor) and the initial dense state (P (H, n), theta (H,)) of
    the naive AdaOSMD reference: docs/papers/002.md §2.4 with alpha = 0.4, paper abar mode."""
    H, eta, gamma, theta = adaosmd_constants(p.n, T, ALPHA, abar)
    return eta, gamma, ALPHA / p.n, np.full((H, p.n), 1.0 / p.n), theta.copy()


def kernel_rate(p, solver, sampler, T, steps, step):
    """Iterations / s of a solver's compiled chunk on pre-drawn uniforms (warm state)."""
    rng = np.random.default_rng(0)
    n, d = p.n, p.d
    rho = 1.0 / n
    params = {"sampler": sampler, "horizon": T}
    x1, w, snap = start_point(p, rng)
    x0 = x1 + 0.01
    s = sampler_from_params(solver_params(params), p, batch=1, horizon=T, abar=abar_of(p))
    U = rng.random((steps, 1, s.uniforms_per_draw))
    coins = rng.random(steps)
    dr = Draws(np.zeros(1, np.int64), np.zeros(1), np.zeros(1), np.zeros(d))
    if solver == "l_svrg":
        x = x1

        def go(m=steps):
            lsvrg_chunk(p.kdata, x, snap, U[:m], coins[:m], rho, step, s.state, False, dr,
                        p.counter)
    else:
        th = theorem3(p, solver_params(params), 1)
        it = Iterates(np.zeros(d), x0 - 0.01, x0 - 0.02)
        steps_k = Steps(*(float(th[k]) for k in Steps._fields))

        def go(m=steps):
            lkatyusha_chunk(p.kdata, it, snap, U[:m], coins[:m], rho, steps_k, s.state, False,
                            dr, p.counter)
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


def reference_katyusha_rate(p, steps):
    """Iterations / s of `reference_lkatyusha` with the uniform sampler's Theorem 3 constants."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, p.n, steps)
    coins = rng.random(steps)
    th = theorem3(p, solver_params({"sampler": "uniform"}), 1)
    x0 = p.x_star + 0.1 * rng.standard_normal(p.d)
    x, z, v, w = np.zeros(p.d), x0 - 0.01, x0 - 0.02, x0.copy()
    gw = p.full_gradient(w)

    def go(m=steps):
        reference_lkatyusha(p.A, p.y, idx[:m], coins[:m], 1.0 / p.n, th["theta1"], th["theta2"],
                            th["eta"], th["kappa"], th["L"], x, z, v, w, gw, p.counter)
    go(10)                      # compile / warm
    return steps / best_of(go)


def naive_adaosmd_rate(p, T, steps, step):
    """Iterations / s of `reference_lsvrg_adaosmd` (its own inverse-CDF draws, warm state)."""
    rng = np.random.default_rng(0)
    x, w, snap = start_point(p, rng)
    gw = snap.gw
    eta, gamma, floor, P, theta = naive_adaosmd_state(p, T, abar_of(p))
    u = rng.random(steps)
    coins = rng.random(steps)
    none = np.zeros(0, np.int64)

    def go(m=steps):
        reference_lsvrg_adaosmd(p.A, p.y, u[:m], coins[:m], 1.0 / p.n, step, eta, gamma, floor,
                                x, w, gw, P, theta, none, p.counter)
    go(10)                      # compile / warm
    return steps / best_of(go)


def agreement_check(p, T, steps, step, abar):
    """Run `lsvrg_chunk` with the AdaOSMD sampler and `reference_lsvrg_adaosmd` side by side
    from the same start, uniforms and coins (the reference replays drocli's drawn index each
    iteration; its own draw is the inverse CDF of the same mixture). Returns the maximum
    relative differences (x trajectory over all iterations, theta, experts, mixture; "experts
    / move": expert difference over the largest |p_{h,i} - 1/n|) and how far p moved."""
    rng = np.random.default_rng(0)
    x, w, snap = start_point(p, rng)
    xr, wr, gwr = x.copy(), w.copy(), snap.gw.copy()
    s = sampler_from_params(solver_params({"sampler": "adaosmd", "horizon": T}), p, batch=1,
                            horizon=T,
                            abar=abar)
    eta, gamma, floor, P, theta = naive_adaosmd_state(p, T, abar)
    assert np.array_equal(eta, s.info["expert_lrs"]) and gamma == s.info["gamma"]
    theta0 = theta.copy()
    U = rng.random((steps, 1, s.uniforms_per_draw))
    coins = rng.random(steps)
    dr = Draws(np.zeros(1, np.int64), np.zeros(1), np.zeros(1), np.zeros(p.d))
    idx = dr.idx
    dx = 0.0
    for t in range(steps):
        lsvrg_chunk(p.kdata, x, snap, U[t:t + 1], coins[t:t + 1], 1.0 / p.n, step, s.state,
                    False, dr, p.counter)
        reference_lsvrg_adaosmd(p.A, p.y, U[t:t + 1, 0, 0], coins[t:t + 1], 1.0 / p.n, step, eta,
                                gamma, floor, xr, wr, gwr, P, theta, idx.copy(), p.counter)
        dx = max(dx, np.abs(xr - x).max() / np.abs(x).max())
    Pd = s.expert_distributions()
    thd = s.state.theta[: len(theta)]
    pd = s.distribution()

    def rel(a, b):
        return float(np.abs(a - b).max() / np.abs(b).max())
    return {"x": dx, "theta": rel(theta, thd), "experts": rel(P, Pd), "mixture": rel(theta @ P, pd),
            "experts / move": float(np.abs(P - Pd).max() / np.abs(Pd - 1.0 / p.n).max()),
            "n max|p_i - 1/n|": float(p.n * np.abs(pd - 1.0 / p.n).max()),
            "max|theta_h / theta_h^1 - 1|": float(np.abs(thd / theta0 - 1.0).max()),
            "floored p_{h,i}": int((Pd <= floor).sum())}


def katyusha_agreement(p, steps):
    """Max relative difference of the v trajectory of `lkatyusha_chunk` (uniform sampler) and
    `reference_lkatyusha` run side by side on drocli's drawn indices."""
    rng = np.random.default_rng(1)
    params = {"sampler": "uniform"}
    th = theorem3(p, solver_params(params), 1)
    s = sampler_from_params(solver_params(params), p, batch=1, horizon=steps,
                            abar=abar_of(p))
    x0 = p.x_star + 0.1 * rng.standard_normal(p.d)
    x, z, v, w = np.zeros(p.d), x0 - 0.01, x0 - 0.02, x0.copy()
    snap = p.snapshot_at(w)
    xr, zr, vr, wr, gwr = x.copy(), z.copy(), v.copy(), w.copy(), snap.gw.copy()
    U = rng.random((steps, 1, s.uniforms_per_draw))
    coins = rng.random(steps)
    dr = Draws(np.zeros(1, np.int64), np.zeros(1), np.zeros(1), np.zeros(p.d))
    idx = dr.idx
    it = Iterates(x, z, v)
    steps_k = Steps(*(float(th[k]) for k in Steps._fields))
    dv = 0.0
    for t in range(steps):
        lkatyusha_chunk(p.kdata, it, snap, U[t:t + 1], coins[t:t + 1], 1.0 / p.n, steps_k,
                        s.state, False, dr, p.counter)
        reference_lkatyusha(p.A, p.y, idx.copy(), coins[t:t + 1], 1.0 / p.n, th["theta1"],
                            th["theta2"], th["eta"], th["kappa"], th["L"], xr, zr, vr, wr, gwr,
                            p.counter)
        dv = max(dv, np.abs(vr - v).max() / np.abs(v).max())
    return dv


def main():
    n, d, T = CASES[0][1:4]
    p = problem(n, d)
    for what, scale in (("benchmark constants", 1.0), ("stress: abar x 1e-10", 1e-10)):
        chk = agreement_check(p, T, 5000, 1.0 / (4.0 * p.L_max), scale * abar_of(p))
        print(f"<!-- agreement of the naive AdaOSMD reference with lsvrg_chunk/adaosmd, {what} "
              f"(n={n}, d={d}, T={T}, 5000 iterations); max relative difference: "
              + ", ".join(f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in chk.items()) + " -->")
        assert max(chk[k] for k in ("x", "theta", "experts", "mixture")) < 1e-8, chk
    dv = katyusha_agreement(p, 5000)
    print(f"<!-- agreement of the minimal L-Katyusha reference with lkatyusha_chunk/uniform "
          f"(n={n}, d={d}, 5000 iterations): max relative difference of v {dv:.1e} -->")
    assert dv < 1e-8, dv
    rows = []
    for label, n, d, T, steps, naive_steps in CASES:
        t0 = time.perf_counter()
        p = problem(n, d)
        setup = time.perf_counter() - t0
        step = 1.0 / (4.0 * p.L_max)
        ref = reference_rate(p, steps, step)
        naive = naive_adaosmd_rate(p, T, naive_steps, step)
        H = len(naive_adaosmd_state(p, T, abar_of(p))[4])
        ref_k = reference_katyusha_rate(p, steps)
        rows.append((label, "reference L-SVRG loop (uniform)", "", ref, None, 1.0, None))
        rows.append((label, "reference L-Katyusha loop (uniform)", "", ref_k, None, 1.0, None))
        rows.append((label, "reference L-SVRG + naive AdaOSMD loop", H, naive, None, ref / naive,
                     1.0))
        for solver in ("l_svrg", "l_katyusha"):
            for sampler in ("uniform", "adaosmd"):
                k, H = kernel_rate(p, solver, sampler, T, steps, step)
                s = solve_rate(p, solver, sampler, T if n > 1000 else 5 * T, step)
                same = ref if solver == "l_svrg" else ref_k
                rows.append((label, f"{solver} / {sampler}", H, k, s, same / k,
                             naive / k if sampler == "adaosmd" else None))
        print(f"<!-- {label}: problem setup (data, lstsq x*, eigvalsh) {setup:.1f} s; naive "
              f"AdaOSMD reference timed on {naive_steps} iterations -->")
    print("| size | loop | AdaOSMD experts H | iterations/s (kernel) | ns/iteration | "
          "same-solver reference / kernel | naive AdaOSMD reference / kernel | "
          "iterations/s (whole solve) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, name, H, k, s, ratio, ratio_naive in rows:
        ss = f"{s:.3g}" if s else "-"
        rn = f"{ratio_naive:.3g}" if ratio_naive is not None else "-"
        print(f"| {label} | {name} | {H} | {k:.3g} | {1e9 / k:.0f} | {ratio:.2f} | {rn} | {ss} |")


if __name__ == "__main__":
    main()
