"""Index samplers for finite-sum solvers (Zhao, Lyu & Kolar, TMLR 2023; docs/papers/002.md §2.4).

Five samplers share one compiled interface, so a solver's per-sample loop draws from any of
them without leaving numba:

- "uniform":    p_i = 1/n.
- "importance": p_i = L_i / sum_j L_j (Qian et al. 2021), fixed: Walker alias table, O(1).
- "optimal":    p_i proportional to ||grad f_i(x) - grad f_i(w)|| (oracle, eq. (3)), set by the
                solver every iteration from all n norms (uniform if they are all 0, P4);
                cumulative sums + binary search.
- "osmd":       Algorithm 3, online stochastic mirror descent on the floored simplex
                A = {p in simplex, p_i >= alpha/n} with the unnormalised negative entropy.
- "adaosmd":    Algorithm 4, H OSMD experts with learning rates eq. (7), H of eq. (8), mixed
                by exponential weights with meta rate gamma; p = sum_h theta_h p_h.

Mini-batches: b indices drawn i.i.d. from the same p (with replacement, docs/papers/002.md §2.0).
Feedback a_k = ||Delta_k||^2 for the drawn indices only (bandit feedback). Mini-batch
constants follow Zhao et al. 2021 (K = b): u_{i_k} = -a_k / (K^2 n^2 p_{i_k} p_{h,i_k}^2),
loss_h = sum_k a_k / (K^2 n^2 p_{i_k} p_{h,i_k}), eta_h and gamma as in §2.4. Duplicate
indices add their gradients ("add", docs/papers/002.md P8) or the last one wins ("overwrite", the
reference FL code).

The mirror step (Algorithm 5) has the closed form p_new = max(alpha/n, c p~), p~_i =
p_i exp(-eta u_i), with c > 0 such that sum p_new = 1. Only the sampled coordinates change
and they only grow (u <= 0), so c <= 1 and a floored coordinate stays floored until it is
sampled again. Each expert is therefore kept EXACTLY in O(b log n) per step as
  p_i = alpha/n            for i in the floored set (a swap-remove list),
  p_i = C w_i              for the active set,
with a sum-tree over the active w (draws and the normaliser), a min-heap over the active w
(which coordinates cross the floor as C shrinks) and the global scale C. A step multiplies
the sampled w_i by exp(-eta u_i) in the log domain (docs/papers/002.md P6), sets C = (1 - n_floored
alpha/n) / sum_active w and moves heap minima with C w_i <= alpha/n to the floored set. An
update that would overflow the weights falls back to an O(n log n) rebuild by the sort of
Algorithm 5 on log p~ with the maximum subtracted (exact too); C is folded into w when it gets
tiny. `project_floored` is the plain numpy Algorithm 5 used as the reference in tests.

State: a `SamplerState` named tuple (the same field types for every sampler, so that each
solver kernel compiles once).

Compilation: every function is `_nrt=False` (no allocation; numba's reference counting of
array arguments would cost ~20 ns per array per call) and the per-iteration entry points
`sampler_draw`, `sampler_draw_batch` and `sampler_update` are inlined into the solver kernels
(`inline="always"`), so the state tuple is not passed by value every iteration; so are the
per-expert `_expert_step` and `_expert_draw` (called H times per AdaOSMD iteration: passing
the 23-array tuple to a compiled call, about 160 scalar arguments, took half of AdaOSMD's time
at n = 100; inlining changes no arithmetic, the trajectories are bitwise the same). Numba's cache
does not notice when a callee in another module changes: after editing this module, delete
the solvers' `__pycache__/*.nbi|nbc` files (or set NUMBA_CACHE_DIR to a fresh folder).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from drocli.errors import DrocliError
from drocli.ops.jit import njit

UNIFORM, IMPORTANCE, OPTIMAL, OSMD, ADAOSMD = 0, 1, 2, 3, 4
KINDS = {"uniform": UNIFORM, "importance": IMPORTANCE, "optimal": OPTIMAL, "osmd": OSMD,
         "adaosmd": ADAOSMD}
UNIFORMS_PER_DRAW = {UNIFORM: 1, IMPORTANCE: 2, OPTIMAL: 1, OSMD: 1, ADAOSMD: 2}
ABAR_MODES = ("paper", "squared_over_n2")
DUPLICATES = ("add", "overwrite")

REBUILDS, RENORMS = 0, 1   # slots of SamplerState.counts
LOG_W_MAX = 700.0      # exp overflow guard for the expert weights (docs/papers/002.md P6)
W_MAX = 1e300          # larger weights: rebuild from log p~ instead
C_MIN = 1e-150         # fold C into w below this


class SamplerState(NamedTuple):
    """The compiled state of a sampler. Scalars are fixed at construction; arrays change in
    place. Expert arrays have one row per expert h (H rows; OSMD: 1)."""

    kind: int                  # UNIFORM .. ADAOSMD
    n: int                     # number of indices
    H: int                     # experts (0 for the fixed and oracle samplers)
    size: int                  # sum-tree leaves (power of 2 >= n)
    dup_add: bool              # repeated indices in a batch add their gains (else overwrite)
    floor: float               # alpha / n
    gamma: float               # AdaOSMD meta learning rate
    counts: np.ndarray         # [rebuilds, renorms] (int64)
    pfix: np.ndarray           # fixed p (importance) / oracle weights then p (optimal)
    cfix: np.ndarray           # alias keep-probabilities (importance) / cumulative p (optimal)
    alias: np.ndarray          # alias table (importance)
    ew: np.ndarray             # (H, n) active weights: p_{h,i} = eC[h] ew[h, i]
    eC: np.ndarray             # (H,) global scale C of each expert
    etree: np.ndarray          # (H, 2 size) sum-trees over the active weights
    eheap: np.ndarray          # (H, n) min-heaps over the active weights
    ehpos: np.ndarray          # (H, n) heap position of i, -1 when floored
    ehsize: np.ndarray         # (H,) heap sizes
    efl: np.ndarray            # (H, n) floored sets (swap-remove lists)
    eflpos: np.ndarray         # (H, n) position of i in the floored list, -1 when active
    enfl: np.ndarray           # (H,) floored set sizes
    eeta: np.ndarray           # (H,) expert learning rates eta_h
    ltheta: np.ndarray         # (H,) log mixture weights
    theta: np.ndarray          # (H,) mixture weights theta_h
    ph: np.ndarray             # (H, b) scratch: p_{h,i_k} of the last draws
    scb: np.ndarray            # (2, b) scratch: gains, new weights
    sch: np.ndarray            # (H,) scratch: expert losses
    scn: np.ndarray            # (n,) scratch: log p~ for a rebuild
    suffix: np.ndarray         # (n + 1,) scratch: suffix sums (rebuild)
    order: np.ndarray          # (n,) scratch: sort order (rebuild)


# ------------------------------------------------------------------------------------------
# sum-tree, heap and floored-set primitives (one expert = one row of the 2-D arrays)
# ------------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def _tree_set(tree, size, i, val):
    node = size + i
    tree[node] = val
    node >>= 1
    while node >= 1:
        tree[node] = tree[2 * node] + tree[2 * node + 1]
        node >>= 1


@njit(cache=True, _nrt=False)
def _tree_build(tree, size):
    for node in range(size - 1, 0, -1):
        tree[node] = tree[2 * node] + tree[2 * node + 1]


@njit(cache=True, _nrt=False)
def _tree_find(tree, size, u):
    """Leaf index of the mass point u in [0, tree[1]) (never a zero leaf)."""
    node = 1
    while node < size:
        left = 2 * node
        lv = tree[left]
        if (u < lv and lv > 0.0) or tree[left + 1] <= 0.0:
            node = left
        else:
            u -= lv
            node = left + 1
    return node - size


@njit(cache=True, _nrt=False)
def _sift_up(heap, hpos, key, pos):
    i = heap[pos]
    k = key[i]
    while pos > 0:
        parent = (pos - 1) >> 1
        j = heap[parent]
        if key[j] <= k:
            break
        heap[pos] = j
        hpos[j] = pos
        pos = parent
    heap[pos] = i
    hpos[i] = pos


@njit(cache=True, _nrt=False)
def _sift_down(heap, hpos, key, pos, size):
    i = heap[pos]
    k = key[i]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        j = heap[c]
        if key[j] >= k:
            break
        heap[pos] = j
        hpos[j] = pos
        pos = c
    heap[pos] = i
    hpos[i] = pos


@njit(cache=True, _nrt=False)
def expert_prob(ew, eC, ehpos, floor, h, i):
    """p_{h,i} of expert h."""
    if ehpos[h, i] < 0:
        return floor
    return eC[h] * ew[h, i]


@njit(cache=True, _nrt=False)
def _sift_max(keys, order, pos, size):
    i = order[pos]
    k = keys[i]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and keys[order[c + 1]] > keys[order[c]]:
            c += 1
        if keys[order[c]] <= k:
            break
        order[pos] = order[c]
        pos = c
    order[pos] = i


@njit(cache=True, _nrt=False)
def _argsort(keys, order):
    """order <- indices sorting keys ascending (in-place heapsort, no allocation)."""
    n = keys.shape[0]
    for i in range(n):
        order[i] = i
    for start in range(n // 2 - 1, -1, -1):
        _sift_max(keys, order, start, n)
    for end in range(n - 1, 0, -1):
        tmp = order[0]
        order[0] = order[end]
        order[end] = tmp
        _sift_max(keys, order, 0, end)


@njit(cache=True, _nrt=False)
def _expert_rebuild(ss, h):
    """Exact projection p = max(alpha/n, c p~) of log p~ (given in the scratch ss.scn, which
    it overwrites; Algorithm 5 by sorting, max subtracted) and a fresh tree / heap / floored
    set for expert h. O(n log n), no allocation."""
    ew, eC, etree, eheap, ehpos, ehsize = ss.ew, ss.eC, ss.etree, ss.eheap, ss.ehpos, ss.ehsize
    efl, eflpos, enfl = ss.efl, ss.eflpos, ss.enfl
    q, suffix, order = ss.scn, ss.suffix, ss.order
    n = ss.n
    size = ss.size
    floor = ss.floor
    m = q[0]
    for i in range(1, n):
        if q[i] > m:
            m = q[i]
    for i in range(n):
        q[i] = math.exp(q[i] - m)
    _argsort(q, order)
    suffix[n] = 0.0
    for j in range(n - 1, -1, -1):
        suffix[j] = suffix[j + 1] + q[order[j]]
    jstar = n
    for j in range(n):
        if q[order[j]] * (1.0 - j * floor) > floor * suffix[j]:
            jstar = j
            break
    nfl = 0
    hs = 0
    tree = etree[h]
    for i in range(size, 2 * size):
        tree[i] = 0.0
    if jstar < n:
        c = (1.0 - jstar * floor) / suffix[jstar]
    else:
        c = 0.0
    for j in range(n):
        i = order[j]
        if j < jstar:
            efl[h, nfl] = i
            eflpos[h, i] = nfl
            nfl += 1
            ehpos[h, i] = -1
            ew[h, i] = 0.0
        else:
            ew[h, i] = c * q[i]
            tree[size + i] = ew[h, i]
            eflpos[h, i] = -1
            eheap[h, hs] = i        # ascending order: already a valid min-heap
            ehpos[h, i] = hs
            hs += 1
    _tree_build(tree, size)
    enfl[h] = nfl
    ehsize[h] = hs
    eC[h] = 1.0
    ss.counts[REBUILDS] += 1


@njit(cache=True, _nrt=False, inline="always")
def _expert_step(ss, h, idx, gain, lw):
    """One mirror step of expert h: p~_i = p_i exp(gain_i) for the drawn i (gain = -eta u >= 0;
    entries with gain <= 0 are skipped), then the exact projection. lw: scratch (b,) for the
    new weights."""
    ew, eC, etree, eheap, ehpos, ehsize = ss.ew, ss.eC, ss.etree, ss.eheap, ss.ehpos, ss.ehsize
    efl, eflpos, enfl = ss.efl, ss.eflpos, ss.enfl
    n = ss.n
    size = ss.size
    floor = ss.floor
    b = idx.shape[0]
    C = eC[h]
    overflow = False
    for k in range(b):              # new weights w = p~ / C, one exp per drawn index
        if not gain[k] > 0.0:
            continue
        i = idx[k]
        f = math.exp(gain[k]) if gain[k] < LOG_W_MAX else np.inf
        if ehpos[h, i] < 0:
            lw[k] = floor / C * f
        else:
            lw[k] = ew[h, i] * f
        if not lw[k] < W_MAX:
            overflow = True
    if overflow:
        logpt = ss.scn
        for i in range(n):
            logpt[i] = math.log(expert_prob(ew, eC, ehpos, floor, h, i))
        for k in range(b):
            if gain[k] > 0.0:
                logpt[idx[k]] += gain[k]
        _expert_rebuild(ss, h)
        return
    tree = etree[h]
    heap = eheap[h]
    hpos = ehpos[h]
    key = ew[h]
    for k in range(b):
        if not gain[k] > 0.0:
            continue
        i = idx[k]
        key[i] = lw[k]
        _tree_set(tree, size, i, key[i])
        if hpos[i] < 0:     # floored -> active
            pos = eflpos[h, i]
            last = efl[h, enfl[h] - 1]
            efl[h, pos] = last
            eflpos[h, last] = pos
            eflpos[h, i] = -1
            enfl[h] -= 1
            hs = ehsize[h]
            heap[hs] = i
            hpos[i] = hs
            ehsize[h] = hs + 1
            _sift_up(heap, hpos, key, hs)
        else:               # key increased: sift down
            _sift_down(heap, hpos, key, hpos[i], ehsize[h])
    # normaliser; heap minima that fall to the floor move to the floored set
    while True:
        hs = ehsize[h]
        if hs == 0:
            C = 1.0
            break
        C = (1.0 - enfl[h] * floor) / tree[1]
        i0 = heap[0]
        if C * key[i0] > floor:
            break
        last = heap[hs - 1]
        hs -= 1
        ehsize[h] = hs
        if hs > 0:
            heap[0] = last
            hpos[last] = 0
            _sift_down(heap, hpos, key, 0, hs)
        hpos[i0] = -1
        key[i0] = 0.0
        _tree_set(tree, size, i0, 0.0)
        efl[h, enfl[h]] = i0
        eflpos[h, i0] = enfl[h]
        enfl[h] += 1
    eC[h] = C
    if C < C_MIN:           # fold C into w (order, hence the heap, unchanged)
        for i in range(n):
            if hpos[i] >= 0:
                key[i] *= C
            tree[size + i] = key[i] if hpos[i] >= 0 else 0.0
        _tree_build(tree, size)
        eC[h] = 1.0
        ss.counts[RENORMS] += 1


# ------------------------------------------------------------------------------------------
# the compiled interface used by the solver kernels
# ------------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False, inline="always")
def _expert_draw(ss, h, u):
    etree, ehsize, efl, enfl = ss.etree, ss.ehsize, ss.efl, ss.enfl
    floor = ss.floor
    nfl = enfl[h]
    mass_fl = nfl * floor
    if u < mass_fl or ehsize[h] == 0:
        j = int(u / floor)
        if j >= nfl:
            j = nfl - 1
        return efl[h, j]
    v = (u - mass_fl) / (1.0 - mass_fl) * etree[h, 1]
    return _tree_find(etree[h], ss.size, v)


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


@njit(cache=True, _nrt=False, inline="always")
def sampler_learns(ss):
    """Whether the sampler learns from feedback (OSMD / AdaOSMD): only then do the solvers
    compute ||Delta_k||^2 for `sampler_update`."""
    return ss.kind == OSMD or ss.kind == ADAOSMD


@njit(cache=True, _nrt=False, inline="always")
def sampler_update(ss, idx, ak, pk):
    """OSMD / AdaOSMD step after the draws idx with probabilities pk and feedback ak (a no-op
    for the fixed and oracle samplers). Algorithms 3-4 with the mini-batch constants of §2.4."""
    kind = ss.kind
    if kind != OSMD and kind != ADAOSMD:
        return
    n = ss.n
    H = ss.H
    dup_add = ss.dup_add
    eeta, ltheta, theta, ph, scb, sch = ss.eeta, ss.ltheta, ss.theta, ss.ph, ss.scb, ss.sch
    b = idx.shape[0]
    k2n2 = float(b) * b * n * n
    gain = scb[0]
    lw = scb[1]
    for h in range(H):
        ell = 0.0
        for k in range(b):
            q = ak[k] / (k2n2 * pk[k] * ph[h, k])          # eq. (5) term
            ell += q
            gain[k] = eeta[h] * q / ph[h, k]                # -eta_h * eq. (6)
        for k in range(1, b):                               # repeated indices
            for k0 in range(k):
                if idx[k0] == idx[k] and gain[k0] >= 0.0:
                    if dup_add:
                        gain[k0] += gain[k]
                    else:
                        gain[k0] = gain[k]
                    gain[k] = -1.0
                    break
        _expert_step(ss, h, idx, gain, lw)
        sch[h] = ell
    if kind == ADAOSMD:
        gamma = ss.gamma
        mx = -np.inf
        for h in range(H):
            ltheta[h] -= gamma * sch[h]
            if ltheta[h] > mx:
                mx = ltheta[h]
        tot = 0.0
        for h in range(H):
            tot += math.exp(ltheta[h] - mx)
        lse = mx + math.log(tot)
        for h in range(H):
            ltheta[h] -= lse
            theta[h] = math.exp(ltheta[h])


@njit(cache=True, _nrt=False)
def _init_experts(ss):
    n = ss.n
    logpt = ss.scn
    for h in range(ss.H):
        for i in range(n):
            logpt[i] = -math.log(n)
        _expert_rebuild(ss, h)
    ss.counts[REBUILDS] = 0


# ------------------------------------------------------------------------------------------
# Python side: construction, the full distribution, references
# ------------------------------------------------------------------------------------------
def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker/Vose alias table of p: draw j uniform, keep j with probability prob[j], else
    alias[j]."""
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    scaled = p * n / p.sum()
    prob = np.ones(n)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s = small.pop()
        g = large[-1]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            large.pop()
            small.append(g)
    return prob, alias


def project_floored(p_tilde: np.ndarray, alpha: float) -> np.ndarray:
    """Algorithm 5 in numpy (reference): argmin over {q in simplex, q_i >= alpha/n} of the
    Bregman projection of p~, by sorting (the [TYPO]-corrected rank rule, docs/papers/002.md P3)."""
    q = np.asarray(p_tilde, dtype=np.float64)
    n = q.size
    order = np.argsort(q, kind="mergesort")
    qs = q[order]
    j = np.arange(n)
    v = qs * (1.0 - j * alpha / n)
    z = alpha / n * np.cumsum(qs[::-1])[::-1]
    hit = np.flatnonzero(v > z)
    out = np.full(n, alpha / n)
    if hit.size:
        js = int(hit[0])
        out[order[js:]] = (1.0 - js * alpha / n) * qs[js:] / qs[js:].sum()
    return out


def adaosmd_constants(n: int, T: int, alpha: float, abar: float, batch: int = 1,
                      eta_scale: float = 1.0):
    """(H, eta_h (H,), gamma, theta_1 (H,)) of docs/papers/002.md §2.4: eqs. (7)-(8), gamma and the
    prior theta_h = (1 + 1/H)/(h(h+1)); mini-batch K = batch (Zhao et al. 2021)."""
    T = max(int(T), 2)
    K = int(batch)
    H = int(math.floor(0.5 * math.log2(1.0 + 4.0 * math.log(n / alpha) / math.log(n) * (T - 1))))
    H += 1
    h = np.arange(1, H + 1, dtype=np.float64)
    eta = eta_scale * 2.0 ** (h - 1) * K * K * alpha ** 3 / (n ** 3 * abar) * \
        math.sqrt(math.log(n) / (2.0 * T))
    gamma = alpha / n * math.sqrt(8.0 * K / (T * abar))
    theta = (1.0 + 1.0 / H) / (h * (h + 1.0))
    return H, eta, gamma, theta


@dataclass
class Sampler:
    """A sampler: its name and kind, and its compiled `state` (a SamplerState) that goes to
    the kernels."""

    name: str
    kind: int
    n: int
    state: SamplerState
    info: dict = field(default_factory=dict)

    @property
    def uniforms_per_draw(self) -> int:
        return UNIFORMS_PER_DRAW[self.kind]

    @property
    def adaptive(self) -> bool:
        return self.kind in (OSMD, ADAOSMD)

    def expert_distributions(self) -> np.ndarray:
        """p_h for every expert (H, n) (OSMD: one row)."""
        st = self.state
        H = st.H
        return np.where(st.ehpos[:H] < 0, st.floor, st.eC[:H, None] * st.ew[:H])

    def distribution(self) -> np.ndarray:
        """The current p (n,)."""
        if self.kind == UNIFORM:
            return np.full(self.n, 1.0 / self.n)
        if self.kind in (IMPORTANCE, OPTIMAL):
            return self.state.pfix[: self.n].copy()
        theta = self.state.theta[: self.state.H]
        return theta @ self.expert_distributions()

    def set_optimal(self, weights) -> None:
        """Optimal sampler: p proportional to `weights` (uniform if all 0)."""
        self.state.pfix[:] = weights
        sampler_set_weights(self.state)

    def draw(self, U: np.ndarray):
        """Draw len(U) indices i.i.d. from the current p (U: (m, uniforms_per_draw)); returns
        (idx, pk). The expert scratch keeps the p_{h,i} of the last `batch` draws."""
        U = np.ascontiguousarray(U, dtype=np.float64)
        m = U.shape[0]
        width = self.state.ph.shape[1]
        idx = np.zeros(m, dtype=np.int64)
        pk = np.zeros(m)
        for lo in range(0, m, width):
            hi = min(m, lo + width)
            sampler_draw_batch(self.state, U[lo:hi], idx[lo:hi], pk[lo:hi])
        return idx, pk

    def update(self, idx, ak, pk) -> None:
        sampler_update(self.state, np.asarray(idx, dtype=np.int64),
                       np.asarray(ak, dtype=np.float64), np.asarray(pk, dtype=np.float64))


def make_sampler(name: str, n: int, *, batch: int = 1, L=None, alpha: float = 0.4,
                 osmd_lr: float = 1e-6, horizon: int = 1000, abar: float = 1.0,
                 abar_mode: str = "paper", eta_scale: float = 1.0,
                 duplicates: str = "add") -> Sampler:
    """Build a sampler of n indices for mini-batches of `batch` draws.

    importance needs L (n,) (p_i = L_i / sum L). osmd uses `osmd_lr`. adaosmd needs the
    horizon T and abar = max_i ||grad f_i(x0)|| (turned into ā¹ by `abar_mode`).
    """
    key = "solver.params"
    if name not in KINDS:
        from drocli.errors import did_you_mean

        raise DrocliError(f"unknown sampler {name!r}", key=f"{key}.sampler",
                          fix=did_you_mean(name, KINDS))
    if duplicates not in DUPLICATES:
        raise DrocliError(f"unknown duplicates mode {duplicates!r}", key=f"{key}.duplicates",
                          fix="use add or overwrite")
    if abar_mode not in ABAR_MODES:
        raise DrocliError(f"unknown abar_mode {abar_mode!r}", key=f"{key}.abar_mode",
                          fix="use " + " or ".join(ABAR_MODES))
    kind = KINDS[name]
    n = int(n)
    b = max(1, int(batch))
    info: dict = {"sampler": name}
    H = 0
    size = 1
    nn = 1
    if kind in (OSMD, ADAOSMD):
        if n < 2:
            raise DrocliError(f"the {name} sampler needs n >= 2 samples", key=f"{key}.sampler",
                              fix="use sampler: uniform")
        if not 0.0 < alpha <= 1.0:
            raise DrocliError(f"alpha must lie in (0, 1], got {alpha}", key=f"{key}.alpha",
                              fix="alpha: 0.4 (the paper's value)")
        size = 1 << max(0, int(math.ceil(math.log2(n))))
        nn = n
    if kind == OSMD:
        H = 1
        eta = np.array([float(osmd_lr)])
        gamma = 0.0
        theta = np.ones(1)
        info.update(osmd_lr=float(osmd_lr))
    elif kind == ADAOSMD:
        a1 = float(abar) if abar_mode == "paper" else (float(abar) / n) ** 2
        if not a1 > 0.0 or not math.isfinite(a1):
            a1 = 1.0
        H, eta, gamma, theta = adaosmd_constants(n, horizon, alpha, a1, b, eta_scale)
        info.update(H=H, abar1=a1, gamma=gamma, expert_lrs=eta.tolist(), horizon=int(horizon))
    Hs = max(H, 1)
    pfix = np.zeros(n if kind in (IMPORTANCE, OPTIMAL) else 1)
    cfix = np.zeros(n if kind in (IMPORTANCE, OPTIMAL) else 1)
    alias = np.zeros(n if kind == IMPORTANCE else 1, dtype=np.int64)
    if kind == IMPORTANCE:
        if L is None:
            raise DrocliError("the importance sampler needs the per-sample smoothness L_i",
                              key=f"{key}.sampler", fix="use a finite_sum problem")
        Lv = np.asarray(L, dtype=np.float64)
        if Lv.shape != (n,) or not np.all(Lv >= 0) or not Lv.sum() > 0:
            raise DrocliError("importance weights L_i must be n values >= 0, not all 0",
                              key=f"{key}.sampler", fix="check the problem's L")
        pfix[:] = Lv / Lv.sum()
        cfix[:], alias[:] = alias_table(pfix)
    elif kind == OPTIMAL:
        pfix[:] = 1.0 / n
        cfix[:] = np.arange(1, n + 1) / n
    state = SamplerState(
        kind=kind, n=n, H=H, size=size, dup_add=duplicates == "add", floor=alpha / n,
        gamma=float(gamma) if H else 0.0, counts=np.zeros(2, dtype=np.int64),
        pfix=pfix, cfix=cfix, alias=alias,
        ew=np.zeros((Hs, nn)), eC=np.ones(Hs), etree=np.zeros((Hs, 2 * size)),
        eheap=np.zeros((Hs, nn), dtype=np.int64), ehpos=np.full((Hs, nn), -1, dtype=np.int64),
        ehsize=np.zeros(Hs, dtype=np.int64), efl=np.zeros((Hs, nn), dtype=np.int64),
        eflpos=np.full((Hs, nn), -1, dtype=np.int64), enfl=np.zeros(Hs, dtype=np.int64),
        eeta=np.asarray(eta if H else np.zeros(1), dtype=np.float64),
        ltheta=np.log(np.asarray(theta if H else np.ones(1), dtype=np.float64)),
        theta=np.asarray(theta if H else np.ones(1), dtype=np.float64).copy(),
        ph=np.zeros((Hs, b)), scb=np.zeros((2, b)), sch=np.zeros(Hs), scn=np.zeros(nn),
        suffix=np.zeros(nn + 1), order=np.zeros(nn, dtype=np.int64))
    if H:
        _init_experts(state)
    return Sampler(name, kind, n, state, info)


def sampler_from_params(params: dict, problem, *, batch: int, horizon: int,
                        abar: float) -> Sampler:
    """The sampler a finite-sum solver's params ask for (the fields of
    `drocli.solvers.finite_sum.SamplerParams`)."""
    return make_sampler(
        params["sampler"], problem.n, batch=batch, L=problem.L, alpha=float(params["alpha"]),
        osmd_lr=float(params["osmd_lr"]), horizon=horizon, abar=abar,
        abar_mode=params["abar_mode"], eta_scale=float(params["eta_scale"]),
        duplicates=params["duplicates"])


class UniformStream:
    """Blocks of uniforms for the index draws and, from an independent child stream, for the
    snapshot coins (docs/papers/002.md P15). Blocks have a fixed size, so a trajectory does not
    depend on where the monitor cuts the run into chunks."""

    def __init__(self, rng: np.random.Generator, batch: int, per_draw: int, block: int = 4096):
        self.g_idx, self.g_coin = rng.spawn(2)
        self.shape = (block, max(1, int(batch)), int(per_draw))
        self.block = block
        self.pos = block
        self.U = None
        self.coins = None

    def take(self, n: int):
        """(U (m, b, k), coins (m,)) with m = min(n, what is left of the block)."""
        if self.pos == self.block:
            self.U = self.g_idx.random(self.shape)
            self.coins = self.g_coin.random(self.block)
            self.pos = 0
        m = min(int(n), self.block - self.pos)
        sl = slice(self.pos, self.pos + m)
        self.pos += m
        return self.U[sl], self.coins[sl]
