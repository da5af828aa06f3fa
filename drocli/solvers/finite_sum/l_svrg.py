"""L-SVRG with any index sampler: Algorithm 1 (AS-LSVRG) of Zhao, Lyu & Kolar, "L-SVRG and
L-Katyusha with Adaptive Sampling" (TMLR 2023), generalised to the samplers of §2.4
(docs/papers/002.md §2.1):

  x = w = x0 = 0;  gw = grad F(w)                                   [n]
  for t = 0..T-1:
      draw i_1..i_b i.i.d. from p^t                  (p^t from the sampler; Optimal: eq. (3))
      g = (1/b) sum_k Delta_k / (n p_{i_k}) + gw,  Delta_k = grad f_{i_k}(x) - grad f_{i_k}(w)  [2b]
      x_new = x - eta g
      with probability rho: w = x (the OLD iterate), gw = grad F(w)                  [n]
      sampler update with a_k = ||Delta_k||^2 computed with the OLD w (OSMD / AdaOSMD)
      x = x_new

Labels of the paper: L-SVRG (uniform), IS-LSVRG (importance), Optimal-LSVRG (optimal),
AS-LSVRG (adaosmd; osmd in §4.4). rho = 0 means the paper's 1/n. `step` (and `osmd_lr`) is
a number; the spec may pair it with the data panel, e.g. {nu: {0.0: 0.1, 0.5: 0.05, 1.0:
0.005}} (Fig. 1-2 captions; `drocli.spec.paired`), resolved before the solver runs.

On the two-layer network of §4.4 (problem finite_sum_mlp, Fig. 5) the same algorithm runs in
`lsvrg_mlp_chunk`: the per-sample differences Delta_k come from `mlp_vr_estimate`, and the
chunk returns to Python after an iteration whose coin refreshed w, where grad F(w) and the
snapshot are recomputed vectorised in numpy (counted n) before the chunk resumes.
"""

from __future__ import annotations

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.prefetch import PREFETCH_FROM, prefetch_row
from drocli.ops.rows import dot_row, dot_row2
from drocli.ops.samplers import (
    UNIFORM,
    sampler_draw,
    sampler_draw_batch,
    sampler_learns,
    sampler_peekable,
    sampler_set_weights,
    sampler_update,
)
from drocli.plugins import registry
from drocli.plugins.registry import auto
from drocli.problems.finite_sum import dphi, full_pass
from drocli.problems.finite_sum_mlp import MLPSnapshot
from drocli.solvers.finite_sum import (
    StepParams,
    Workspace,
    grad_norm_max,
    horizon,
    snapshot_prob,
)
from drocli.solvers.finite_sum.estimators import (
    delta_norms,
    mlp_delta_norms,
    mlp_vr_estimate,
    step_along_row,
    vr_estimate,
    vr_step_single,
)

# phi'(a_i.w) read from the snapshot or computed again beside a_i.x (same bits): again when
# the row is short or the snapshot's n scalars outgrow the caches (a random read of them then
# misses). Interleaved timings, AMD EPYC, same bits: again is 7-10 % faster at d = 10 and at
# n = 1e6, d = 100, 8 % slower at n = 5000, d = 128 (benchmarks/step_overhead.py, scratch A/B).
RECOMPUTE_MAX_D = 32
RECOMPUTE_MIN_N = 1 << 17


@njit(cache=True, _nrt=False)
def lsvrg_uniform_chunk(data, x, snap, U, coins, rho, step, n, dr, counter, ahead,
                        recompute):
    """`lsvrg_chunk` for one index per step from the uniform sampler, the common case, with
    the same bits: the index int(u n), p_i = 1/n and the weight 1/(n p_i) are those of
    `sampler_draw_batch` and `vr_step_single`, computed once (the division by n p_i is
    skipped when n p_i is exactly 1, as dividing by 1 changes no bit), and the oracle count
    is added once at the end. An iteration whose coin refreshes w takes the general step.
    With `recompute`, phi'(a_i.w) is computed again in the same pass as a_i.x (`dot_row2`)
    instead of read from the snapshot: the same function of the same numbers, so the same
    bits. Each choice of the two flags gets its own loop (`_uniform_steps` inlined with
    constants), so that no iteration tests them."""
    u = U[:, 0, 0]          # a one-dimensional view: its reads are cheaper than U's
    if ahead and recompute:
        calls = _uniform_steps(data, x, snap, u, coins, rho, step, n, dr, counter, True, True)
    elif recompute:
        calls = _uniform_steps(data, x, snap, u, coins, rho, step, n, dr, counter, False, True)
    elif ahead:
        calls = _uniform_steps(data, x, snap, u, coins, rho, step, n, dr, counter, True, False)
    else:
        calls = _uniform_steps(data, x, snap, u, coins, rho, step, n, dr, counter, False, False)
    counter[0] += calls


@njit(cache=True, _nrt=False, inline="always")
def _uniform_steps(data, x, snap, u, coins, rho, step, n, dr, counter, ahead, recompute):
    """The iterations of `lsvrg_uniform_chunk` on the uniforms u; returns the oracle calls of
    the steps (a refresh's full pass counts itself)."""
    A, y, obj, mu = data.A, data.y, data.obj, data.mu
    w, gw, snap_c, g = snap.w, snap.gw, snap.c, dr.g
    d = x.shape[0]
    pk = 1.0 / n
    weight = n * pk
    mw = mu * (0.0 + 1.0 / weight)
    T = u.shape[0]
    calls = 0
    for t in range(T):
        i = int(u[t] * n)
        if i >= n:
            i = n - 1
        if ahead and t + 1 < T:
            nxt = int(u[t + 1] * n)
            prefetch_row(A, nxt if nxt < n else n - 1)
        calls += 2
        if coins[t] < rho:
            dr.idx[0] = i
            dr.pk[0] = pk
            vr_estimate(data, x, snap, dr, False)
            for j in range(d):
                w[j] = x[j]
            full_pass(data, snap, counter)
            for j in range(d):
                x[j] -= step * g[j]
            continue
        if recompute:
            sx, sw = dot_row2(A, i, x, w)
            coef = dphi(sx, y[i], obj) - dphi(sw, y[i], obj)
        else:
            coef = dphi(dot_row(A, i, x), y[i], obj) - snap_c[i]
        if weight != 1.0:
            coef = coef / weight
        step_along_row(A, i, x, w, gw, coef, mu, mw, step)
    return calls


@njit(cache=True, _nrt=False)
def lsvrg_chunk(data, x, snap, U, coins, rho, step, ss, optimal, dr, counter):
    """U.shape[0] iterations of Algorithm 1 in place (x, the snapshot at w, sampler state).
    With one index per step and a sampler that does not learn, an iteration whose coin keeps
    w takes the fused estimator-and-step (`vr_step_single`, same bits, one pass over x); with
    the uniform sampler the whole chunk is `lsvrg_uniform_chunk`."""
    w, g = snap.w, dr.g
    d = x.shape[0]
    b = dr.idx.shape[0]
    feedback = sampler_learns(ss)
    fused = b == 1 and not feedback
    # the next index is known a step early: prefetch its row when A outgrows the caches
    ahead = b == 1 and sampler_peekable(ss) and data.A.size > PREFETCH_FROM
    if fused and not optimal and ss.kind == UNIFORM:
        lsvrg_uniform_chunk(data, x, snap, U, coins, rho, step, ss.n, dr, counter, ahead,
                            d <= RECOMPUTE_MAX_D or ss.n >= RECOMPUTE_MIN_N)
        return
    T = U.shape[0]
    for t in range(T):
        if optimal:
            delta_norms(data, x, snap, ss.pfix)
            sampler_set_weights(ss)
        sampler_draw_batch(ss, U[t], dr.idx, dr.pk)
        if ahead and t + 1 < T:
            nxt = sampler_draw(ss, U[t + 1, 0])
            prefetch_row(data.A, nxt)
        if fused and not coins[t] < rho:
            vr_step_single(data, x, snap, dr, step)
            counter[0] += 2
            continue
        vr_estimate(data, x, snap, dr, feedback)
        counter[0] += 2 * b
        if coins[t] < rho:
            for j in range(d):
                w[j] = x[j]
            full_pass(data, snap, counter)
        for j in range(d):
            x[j] -= step * g[j]
        sampler_update(ss, dr.idx, dr.ak, dr.pk)


@njit(cache=True, _nrt=False)
def lsvrg_mlp_chunk(data, x, snap, U, coins, rho, step, ss, optimal, dr, zbuf, counter):
    """Iterations of Algorithm 1 on the two-layer network, in place, until U is used up or
    an iteration's coin refreshes w (w = the old x); returns the number of iterations run.
    After a refresh the caller recomputes the snapshot (snap.z, snap.r, snap.gw) at w before
    calling again. zbuf: scratch (3 H,)."""
    w, g = snap.w, dr.g
    D = x.shape[0]
    b = dr.idx.shape[0]
    for t in range(U.shape[0]):
        if optimal:
            mlp_delta_norms(data, x, snap, zbuf, ss.pfix)
            sampler_set_weights(ss)
        sampler_draw_batch(ss, U[t], dr.idx, dr.pk)
        mlp_vr_estimate(data, x, snap, dr, zbuf)
        counter[0] += 2 * b
        refresh = coins[t] < rho
        if refresh:
            for j in range(D):
                w[j] = x[j]
        for j in range(D):
            x[j] -= step * g[j]
        sampler_update(ss, dr.idx, dr.ak, dr.pk)
        if refresh:
            return t + 1
    return U.shape[0]


def _setup(params: dict, problem):
    """Batch b, step, refresh probability rho and the expected gradients per iteration."""
    b = params["batch"]
    rho = snapshot_prob(params, problem.n)
    return b, params["step"], rho, 2.0 * b + rho * problem.n


def solve_mlp(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Algorithm 1 on the two-layer network (finite_sum_mlp), x0 = the seeded init."""
    b, step, rho, cost = _setup(params, problem)
    x = problem.zero_point()
    w = x.copy()
    t = 0
    keep = monitor(x, iteration=t)
    snap_z, snap_r, gw = problem.snapshot(w)                   # grad F(w^0): n calls
    abar = float(problem.sample_grad_norms(snap_z, snap_r, w).max())
    ws = Workspace(problem, params, rng, batch=b, T=horizon(params, monitor, cost), abar=abar)
    snap = MLPSnapshot(w, gw, snap_z, snap_r)
    zbuf = np.zeros(3 * problem.H)
    while keep:
        U, coins = ws.stream.take(monitor.steps_until_due(cost))
        pos, m = 0, U.shape[0]
        while pos < m:
            done = lsvrg_mlp_chunk(problem.kdata, x, snap, U[pos:], coins[pos:], rho, step,
                                   ws.sampler.state, ws.optimal, ws.draws, zbuf,
                                   problem.counter)
            pos += done
            if coins[pos - 1] < rho:                            # w = old x: refresh [n]
                problem.snapshot_into(w, snap_z, snap_r, gw)
        t += m
        keep = monitor(x, iteration=t)
    return x


class LSVRGParams(StepParams):
    """L-SVRG's parameters (Algorithm 1; docs/papers/002.md §2.1, §2.5)."""

    rho: float | None = auto("snapshot refresh probability; auto: 1/n (the paper's, "
                             "docs/papers/002.md §2.5)", legacy=0.0, gt=0, le=1)


@registry.solver(
    "l_svrg",
    reference="Zhao, Lyu & Kolar (2023), Alg. 1 (docs/papers/002.md §2.1)",
    params=LSVRGParams,
    family="finite_sum",
    description="L-SVRG with uniform / importance / optimal / OSMD / AdaOSMD sampling "
                "(Zhao, Lyu & Kolar 2023, Algorithm 1); also on the two-layer network",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """L-SVRG / AS-LSVRG, Zhao, Lyu & Kolar (TMLR 2023), Algorithm 1 with any sampler of §2.4
    (docs/papers/002.md §2.1); constant step `step`, refresh probability rho (0: 1/n), mini-batch
    `batch` drawn i.i.d. from p^t. Returns the last iterate x. On the two-layer network
    (finite_sum_mlp, §4.4) it runs `solve_mlp`."""
    if getattr(problem, "objective", None) == "mlp":
        return solve_mlp(problem, params, rng, monitor)
    b, step, rho, cost = _setup(params, problem)
    x = problem.zero_point()
    w = x.copy()
    t = 0
    keep = monitor(x, iteration=t)
    snap = problem.snapshot_at(w)                               # grad F(w^0): n calls
    ws = Workspace(problem, params, rng, batch=b, T=horizon(params, monitor, cost),
                   abar=grad_norm_max(problem, w, snap.s, snap.c))
    while keep:
        U, coins = ws.stream.take(monitor.steps_until_due(cost))
        lsvrg_chunk(problem.kdata, x, snap, U, coins, rho, step, ws.sampler.state,
                    ws.optimal, ws.draws, problem.counter)
        t += U.shape[0]
        keep = monitor(x, iteration=t)
    return x
