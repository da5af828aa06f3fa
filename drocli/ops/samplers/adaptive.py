"""The adaptive samplers OSMD and AdaOSMD (Algorithms 3-5 of docs/papers/002.md §2.4).

"osmd" is online stochastic mirror descent on the floored simplex A = {p in simplex,
p_i >= alpha/n} with the unnormalised negative entropy; "adaosmd" runs H OSMD experts with
learning rates eq. (7), H of eq. (8), mixed by exponential weights with meta rate gamma:
p = sum_h theta_h p_h.

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
"""

from __future__ import annotations

import math

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.samplers.state import (
    ADAOSMD,
    C_MIN,
    LOG_W_MAX,
    OSMD,
    REBUILDS,
    RENORMS,
    W_MAX,
)
from drocli.ops.samplers.trees import (
    _argsort,
    _sift_down,
    _sift_up,
    _tree_build,
    _tree_find,
    _tree_set,
)


@njit(cache=True, _nrt=False)
def expert_prob(ew, eC, ehpos, floor, h, i):
    """p_{h,i} of expert h."""
    if ehpos[h, i] < 0:
        return floor
    return eC[h] * ew[h, i]


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
