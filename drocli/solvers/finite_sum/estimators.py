"""The compiled steps the finite-sum solvers share (docs/papers/002.md §2.0): the variance-reduced
estimator with its sampler feedback, and the per-sample gradient differences the oracle
"Optimal" sampler needs, for the linear objectives and for the two-layer network.

    g = gw + (1/b) sum_k Delta_k / (n p_k),  Delta_k = grad f_{i_k}(x) - grad f_{i_k}(w)

Inputs are the problem's named bundle (`LinearData` / `MLPData`, `problem.kdata`), the
snapshot at the control point w (`Snapshot` / `MLPSnapshot`) and the mini-batch `Draws`.
Built with `_nrt=False` (no allocation) like the samplers; `vr_estimate` is inlined into the
solver loops.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from drocli.ops.jit import njit
from drocli.ops.rows import dot_row
from drocli.problems.finite_sum import dphi
from drocli.problems.finite_sum_mlp import delta_parts


class Draws(NamedTuple):
    """One mini-batch: indices, their probabilities, the sampler feedback and the estimate."""

    idx: np.ndarray        # (b,) int64 drawn indices
    pk: np.ndarray         # (b,) p_{i_k}
    ak: np.ndarray         # (b,) feedback ||Delta_k||^2
    g: np.ndarray          # (d,) the estimate


@njit(cache=True, _nrt=False)
def diff_sqnorm(x, w):
    """||x - w||^2."""
    s = 0.0
    for j in range(x.shape[0]):
        t = x[j] - w[j]
        s += t * t
    return s


@njit(cache=True, _nrt=False, inline="always")
def vr_estimate(data, x, snap, dr, feedback):
    """The estimator above at x with control variate snap.w (not counted here), with
    grad f_i(w) = snap.c[i] a_i + mu w read from the snapshot. With `feedback` (a sampler
    that learns, OSMD / AdaOSMD) it writes dr.ak[k] = ||Delta_k||^2 (squared norm, no 1/n^2)
    with the pre-refresh w; without it ||x - w||^2 is not computed. SGD uses it with an
    all-zero snapshot: g = (1/b) sum_k grad f_{i_k}(x) / (n p_k).
    """
    A, y, obj, mu, row_sq = data.A, data.y, data.obj, data.mu, data.row_sq
    w, gw, snap_s, snap_c = snap.w, snap.gw, snap.s, snap.c
    idx, pk, ak, g = dr.idx, dr.pk, dr.ak, dr.g
    n, d = A.shape
    b = idx.shape[0]
    for j in range(d):
        g[j] = gw[j]
    dxw2 = 0.0
    if mu != 0.0:
        if feedback:
            dxw2 = diff_sqnorm(x, w)
        wsum = 0.0
        for k in range(b):
            wsum += 1.0 / (b * n * pk[k])
        for j in range(d):
            g[j] += mu * wsum * (x[j] - w[j])
    for k in range(b):
        i = idx[k]
        s = dot_row(A, i, x)
        c = dphi(s, y[i], obj) - snap_c[i]
        coef = c / (b * n * pk[k])
        for j in range(d):
            g[j] += coef * A[i, j]
        if feedback:
            a = c * c * row_sq[i]
            if mu != 0.0:
                a += 2.0 * c * mu * (s - snap_s[i]) + mu * mu * dxw2
            ak[k] = a if a > 0.0 else 0.0


@njit(cache=True, _nrt=False, inline="always")
def vr_step_single(data, x, snap, dr, step):
    """x -= step g for a batch of one index dr.idx[0], the estimator above fused with the step
    in one pass over x (an iteration whose coin keeps w and whose sampler does not learn).
    The same arithmetic in the same order as `vr_estimate` then x[j] -= step g[j], so the same
    bits, without writing g."""
    A, y, obj, mu = data.A, data.y, data.obj, data.mu
    i = dr.idx[0]
    n = A.shape[0]
    c = dphi(dot_row(A, i, x), y[i], obj) - snap.c[i]
    coef = c / (n * dr.pk[0])
    mw = mu * (0.0 + 1.0 / (n * dr.pk[0])) if mu != 0.0 else 0.0
    step_along_row(A, i, x, snap.w, snap.gw, coef, mu, mw, step)


@njit(cache=True, _nrt=False, inline="always")
def step_along_row(A, i, x, w, gw, coef, mu, mw, step):
    """x -= step ((gw + mw (x - w)) + coef a_i) in one pass over x, the ridge term only when
    mu != 0: the step of `vr_step_single`, shared with L-SVRG's uniform chunk so that both
    keep the estimator's order of operations (and its bits)."""
    d = x.shape[0]
    if mu != 0.0:
        for j in range(d):
            x[j] -= step * ((gw[j] + mw * (x[j] - w[j])) + coef * A[i, j])
    else:
        for j in range(d):
            x[j] -= step * (gw[j] + coef * A[i, j])


@njit(cache=True, _nrt=False)
def delta_norms(data, x, snap, out):
    """out[i] = ||grad f_i(x) - grad f_i(w)|| for every i (oracle Optimal sampler,
    docs/papers/002.md §2.4 and P13; NOT counted)."""
    A, y, obj, mu, row_sq = data.A, data.y, data.obj, data.mu, data.row_sq
    n = A.shape[0]
    dxw2 = diff_sqnorm(x, snap.w) if mu != 0.0 else 0.0
    for i in range(n):
        s = dot_row(A, i, x)
        c = dphi(s, y[i], obj) - snap.c[i]
        a = c * c * row_sq[i]
        if mu != 0.0:
            a += 2.0 * c * mu * (s - snap.s[i]) + mu * mu * dxw2
        out[i] = math.sqrt(a) if a > 0.0 else 0.0


@njit(cache=True, _nrt=False)
def mlp_vr_estimate(data, x, snap, dr, z):
    """The estimator above for the network (not counted here), with grad f_i(w) rebuilt from
    the snapshot; dr.ak[k] = ||Delta_k||^2 (pre-refresh w). z: scratch (3 H,)."""
    A, H = data.A, data.H
    idx, pk, ak, g = dr.idx, dr.pk, dr.ak, dr.g
    n, d = A.shape
    b = idx.shape[0]
    oc1 = H * d
    ow2 = oc1 + H
    for j in range(g.shape[0]):
        g[j] = snap.gw[j]
    for k in range(b):
        i = idx[k]
        eps, a = delta_parts(data, x, snap, i, z)
        ak[k] = a
        coef = 1.0 / (b * n * pk[k])
        for j in range(H):
            c = coef * z[H + j]
            if c != 0.0:
                base = j * d
                for l in range(d):
                    g[base + l] += c * A[i, l]
                g[oc1 + j] += c
            g[ow2 + j] += coef * z[2 * H + j]
        g[ow2 + H] += coef * eps


@njit(cache=True, _nrt=False)
def mlp_delta_norms(data, x, snap, z, out):
    """out[i] = ||grad f_i(x) - grad f_i(w)|| for every i (oracle Optimal sampler; NOT
    counted)."""
    for i in range(data.A.shape[0]):
        _, a = delta_parts(data, x, snap, i, z)
        out[i] = math.sqrt(a) if a > 0.0 else 0.0
