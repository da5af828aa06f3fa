"""State and helpers shared by the variance-reduced mirror-prox GDRO solvers (ALEG, MPVR,
AL-SVRE's inner solver), plus a pure-numpy reference of one ALEG inner step for tests.

Coordinates (docs/papers/000.md §2.4): W (d, k) float64 kept FLAT for the kernels, q kept as
normalised log-probabilities lq. The prox anchors are the mirror snapshot (wbar, Lbar) with weight a
and the current iterate with weight 1 - a. Two q snapshots are kept apart (pitfall 2): q_s, the
arithmetic mean of the q_k (used in the full gradient and the control variate), and Lbar, the
mean of the log q_k (the mirror snapshot, used as the prox anchor).
"""

from __future__ import annotations

import math

import numpy as np

from drocli.ops.losses import loss_dscore
from drocli.ops.projections import project_ball
from drocli.ops.simplex import entropic_step, uniform_log
from drocli.solvers.dro.kernels import (
    VRIterate,
    VRScratch,
    VRSnapshot,
    VRSteps,
    group_data,
    vr_prox_chunk,
)


def effective_steps(params: dict, problem) -> tuple[float, float]:
    """(gamma_w, gamma_q): the decoupled effective steps of docs/papers/000.md §2.5.

    If params["eta"] is set (> 0, checked by the solver's model), use the coupled theory
    geometry instead:
    gamma_w = 2 D_w^2 eta = R^2 eta and gamma_q = 2 ln(m) eta (docs/papers/000.md §1.4).
    """
    eta = float(params.get("eta") or 0.0)
    if eta > 0:
        return problem.radius ** 2 * eta, 2.0 * math.log(max(problem.m, 1)) * eta
    return float(params["gamma_w"]), float(params["gamma_q"])


def group_rows(problem, rng: np.random.Generator, count: int) -> np.ndarray:
    """Group sampling, eq. (18): (count, m) global rows, one uniform row per group per step."""
    local = rng.integers(0, problem.n_i, size=(count, problem.m))
    return local + problem.offsets[:-1]


def single_rows(problem, rng: np.random.Generator, count: int, sampling: str):
    """MPVR oracles (Appendix C): (rows (count,1), groups (count,1), scale_g (m,)).

    importance (Option II, eqs. 92-93): i ~ U[m], j ~ U[n_i], scale m.
    uniform (Option I, eqs. 88-89): l ~ U[N], scale N / n_{g(l)}.
    """
    if sampling == "importance":
        grp = rng.integers(0, problem.m, size=count)
        rows = problem.offsets[grp] + rng.integers(0, problem.n_i[grp])
        scale = np.full(problem.m, float(problem.m))
    else:
        rows = rng.integers(0, problem.N, size=count)
        grp = problem.g[rows]
        scale = problem.N / problem.n_i.astype(np.float64)
    return rows.reshape(count, 1), grp.reshape(count, 1), scale


class VRState:
    """Iterate, snapshots, output accumulators and scratch buffers of a VR mirror-prox solver.

    Initial state: z_0 = (0, uniform); the snapshot accumulators start as the fake epoch -1
    of Algorithm 1 line 2 (acc = z_0 with total weight 1), so epoch 0's snapshot is z_0.
    """

    def __init__(self, problem):
        self.problem = problem
        d, k = problem.shape
        m = problem.m
        D = d * k
        self.shape = (d, k)
        self.w = np.zeros(D)
        self.lq = uniform_log(m)
        self.acc_w = np.zeros(D)
        self.acc_q = np.exp(self.lq)
        self.acc_L = self.lq.copy()
        self.sums = np.array([0.0, 1.0])  # [sum of output weights h, sum of anchor weights a]
        self.out_w = np.zeros(D)
        self.out_q = np.zeros(m)
        # snapshot (filled by take_snapshot / set_snapshot)
        self.w_s = np.zeros(D)
        self.wbar = np.zeros(D)
        self.q_s = np.exp(self.lq)
        self.Lbar = self.lq.copy()
        self.gw_full = np.zeros(D)
        self.r_full = np.zeros(m)
        self.snap_loss = np.zeros(problem.N)
        self.snap_ds = np.zeros((problem.N, k))
        # scratch
        self.wh = np.zeros(D)
        self.qn = np.zeros(m)
        self.lqh = np.zeros(m)
        self.qh = np.zeros(m)
        self.r = np.zeros(m)
        self.s = np.zeros(k)
        self.ds = np.zeros(k)
        self.v = np.zeros(D)
        self.data = group_data(problem)
        self.scratch = VRScratch(self.wh, self.qn, self.lqh, self.qh, self.r, self.s, self.ds)

    # ---- snapshots ------------------------------------------------------------------------
    def _full_pass(self):
        p = self.problem
        R, G, loss, ds = p.full_oracle(self.w_s.reshape(self.shape), self.q_s,
                                       return_samples=True)
        self.r_full[:] = R
        self.gw_full[:] = G.reshape(-1)
        self.snap_loss = loss
        self.snap_ds = np.ascontiguousarray(ds)

    def take_snapshot(self):
        """Snapshot (14) and mirror snapshot (15) from the accumulators, then the full
        gradient (16) at the snapshot (counted N). Resets the accumulators."""
        a = self.sums[1]
        self.w_s = self.acc_w / a
        self.wbar = self.w_s.copy()          # Euclidean psi_w: mirror snapshot = snapshot
        self.q_s = self.acc_q / a            # arithmetic mean of the q_k
        self.Lbar = self.acc_L / a           # mean of the log q_k (mirror snapshot)
        self._full_pass()
        self.acc_w[:] = 0.0
        self.acc_q[:] = 0.0
        self.acc_L[:] = 0.0
        self.sums[1] = 0.0

    def set_snapshot_at_iterate(self):
        """Loopless variant: snapshot and anchor := the current iterate (counted N)."""
        self.w_s = self.w.copy()
        self.wbar = self.w_s.copy()
        self.q_s = np.exp(self.lq)
        self.Lbar = self.lq.copy()
        self._full_pass()

    # ---- running ----------------------------------------------------------------------------
    def run(self, rows, grps, scale_g, a, gamma_w, gamma_q, h, gw_half=None, beta=0.0,
            lam=0.0):
        p = self.problem
        gw_half = self.gw_full if gw_half is None else gw_half
        snap = VRSnapshot(self.wbar, self.Lbar, self.q_s, self.gw_full, self.r_full,
                          self.snap_loss, self.snap_ds)
        it = VRIterate(self.w, self.lq, self.v, self.out_w, self.out_q, self.acc_w,
                       self.acc_q, self.acc_L, self.sums)
        steps = VRSteps(float(a), float(gamma_w), float(gamma_q), float(h), float(beta),
                        float(lam))
        vr_prox_chunk(self.data, rows, grps, scale_g, snap, gw_half, it, steps, p.counter,
                      self.scratch)

    # ---- points -------------------------------------------------------------------------------
    def last(self):
        return self.w.reshape(self.shape).copy(), np.exp(self.lq)

    def output(self):
        """Weighted average of the half points (22); z_0 before the first step."""
        den = self.sums[0]
        if den <= 0:
            return self.last()
        return (self.out_w / den).reshape(self.shape), self.out_q / den

    def point(self, eval_point: str):
        return self.output() if eval_point == "output" else self.last()


def vr_step_reference(X, y, loss, rows, grps, scale_g, w, lq, wbar, Lbar, w_s, q_s, gw_full,
                      r_full, a, gamma_w, gamma_q, radius):
    """Pure-numpy reference of ONE inner iteration of ALEG / MPVR (docs/papers/000.md §2.4).

    Evaluates the snapshot terms directly at w_s (no cached snapshot arrays), so it also
    checks the kernel's caching. w, wbar, w_s, gw_full are (d, k); rows/grps are the drawn
    (row, group) pairs of this step. Returns (w_h, q_h, w_new, lq_new).
    """
    X64 = np.asarray(X, dtype=np.float64)
    w_h = project_ball(a * wbar + (1 - a) * w - gamma_w * gw_full, radius)
    lq_h = entropic_step(Lbar, lq, a, gamma_q, -r_full)
    q_h = np.exp(lq_h)
    g_w = gw_full.copy()
    r = r_full.copy()
    for row, gi in zip(rows, grps, strict=True):
        x = X64[row]
        lh, dh = loss_dscore((x @ w_h)[None, :], y[row:row + 1], loss)
        ls, dsn = loss_dscore((x @ w_s)[None, :], y[row:row + 1], loss)
        c = scale_g[gi]
        g_w += c * np.outer(x, q_h[gi] * dh[0] - q_s[gi] * dsn[0])
        r[gi] += c * (lh[0] - ls[0])
    w_new = project_ball(a * wbar + (1 - a) * w - gamma_w * g_w, radius)
    lq_new = entropic_step(Lbar, lq, a, gamma_q, -r)
    return w_h, q_h, w_new, lq_new
