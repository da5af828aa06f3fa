"""The compiled draws the solver kernels call, for every kind of sampler.

"uniform": p_i = 1/n. "importance": p_i = L_i / sum_j L_j (Qian et al. 2021), fixed: Walker
alias table, O(1). "optimal": p_i proportional to ||grad f_i(x) - grad f_i(w)|| (oracle,
eq. (3)), set by the solver every iteration from all n norms (uniform if they are all 0, P4):
cumulative sums + binary search. "osmd" / "adaosmd": the experts (drocli.ops.samplers.adaptive).

Compilation: every function is `_nrt=False` (no allocation; numba's reference counting of
array arguments would cost ~20 ns per array per call) and the per-iteration entry points
`sampler_draw`, `sampler_draw_batch` and `sampler_update` are inlined into the solver kernels
(`inline="always"`), so the state tuple is not passed by value every iteration; so are the
per-expert `_expert_step` and `_expert_draw` (called H times per AdaOSMD iteration: passing
the 23-array tuple to a compiled call, about 160 scalar arguments, took half of AdaOSMD's time
at n = 100; inlining changes no arithmetic, the trajectories are bitwise the same). Numba's cache
does not notice when a callee in another module changes: after editing a module of this
package, delete the solvers' `__pycache__/*.nbi|nbc` files (or set NUMBA_CACHE_DIR to a fresh
folder).
"""

from __future__ import annotations

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.samplers.adaptive import _expert_draw, expert_prob
from drocli.ops.samplers.state import IMPORTANCE, OPTIMAL, OSMD, UNIFORM


@njit(cache=True, _nrt=False, inline="always")
def sampler_draw(ss, u):
    """One index from the current p, from the uniforms u (UNIFORMS_PER_DRAW[kind] of them)."""
    kind = ss.kind
    n = ss.n
    if kind == UNIFORM:
        i = int(u[0] * n)
        return i if i < n else n - 1
    if kind == IMPORTANCE:
        j = int(u[0] * n)
        if j >= n:
            j = n - 1
        return j if u[1] < ss.cfix[j] else ss.alias[j]
    if kind == OPTIMAL:
        cum = ss.cfix
        target = u[0] * cum[n - 1]
        lo = 0
        hi = n - 1
        while lo < hi:          # first i with cum[i] > target
            mid = (lo + hi) >> 1
            if cum[mid] > target:
                hi = mid
            else:
                lo = mid + 1
        return lo
    if kind == OSMD:
        return _expert_draw(ss, 0, u[0])
    theta = ss.theta
    H = ss.H
    acc = 0.0
    h = H - 1
    for hh in range(H):
        acc += theta[hh]
        if u[0] < acc:
            h = hh
            break
    return _expert_draw(ss, h, u[1])


@njit(cache=True, _nrt=False, inline="always")
def sampler_draw_batch(ss, U, idx, pk):
    """idx[k] ~ p i.i.d. from the uniform rows U[k]; pk[k] = p_{idx[k]} (the experts'
    p_{h,idx[k]} are kept in the scratch for the update)."""
    kind = ss.kind
    n = ss.n
    b = idx.shape[0]
    for k in range(b):
        idx[k] = sampler_draw(ss, U[k])
    if kind == UNIFORM:
        for k in range(b):
            pk[k] = 1.0 / n
    elif kind == IMPORTANCE or kind == OPTIMAL:
        pfix = ss.pfix
        for k in range(b):
            pk[k] = pfix[idx[k]]
    else:
        ew, eC, ehpos, theta, ph = ss.ew, ss.eC, ss.ehpos, ss.theta, ss.ph
        floor = ss.floor
        H = ss.H
        for k in range(b):
            tot = 0.0
            for h in range(H):
                q = expert_prob(ew, eC, ehpos, floor, h, idx[k])
                ph[h, k] = q
                tot += theta[h] * q
            pk[k] = tot


@njit(cache=True, _nrt=False)
def sampler_set_weights(ss):
    """Optimal sampler: p proportional to the raw weights the solver wrote into ss.pfix (all n
    norms); uniform when they are all 0 or not finite (docs/papers/002.md P4). Cumulative sums in
    ss.cfix."""
    n = ss.n
    p, cum = ss.pfix, ss.cfix
    tot = 0.0
    for i in range(n):
        tot += p[i]
    if not (tot > 0.0 and tot < np.inf):
        for i in range(n):
            p[i] = 1.0 / n
    else:
        inv = 1.0 / tot
        for i in range(n):
            p[i] *= inv
    acc = 0.0
    for i in range(n):
        acc += p[i]
        cum[i] = acc


@njit(cache=True, _nrt=False, inline="always")
def sampler_peekable(ss):
    """Whether `sampler_draw` is O(1) and leaves the state alone (uniform, importance by
    alias), so a loop may compute the next index a step early to prefetch its row."""
    return ss.kind == UNIFORM or ss.kind == IMPORTANCE
