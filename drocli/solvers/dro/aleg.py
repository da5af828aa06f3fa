"""ALEG: Yu, Cai, Jiang & Zhang (ICML 2024), "Efficient Algorithms for Empirical Group
Distributionally Robust Optimization and Beyond", Algorithm 1 ("Variance-Reduced Stochastic
Mirror Prox for Empirical GDRO"), eqs. (14)-(22), in the implementable coordinates of
docs/papers/000.md §2.4:

  z_0 = (0, uniform); epoch -1 trajectory = z_0 (so the epoch-0 snapshot is z_0)
  for s = 0, 1, ...:
      snapshot z^s = alpha-weighted mean of z_1..z_K of epoch s-1 (14); mirror snapshot
      (15) = the same mean of the log q_k; full gradient at z^s (16)          [cost N]
      for k = 0..K-1:
          z_{k+1/2} = prox step with the FULL snapshot gradient (17)
          one uniform sample per group (18); g = grad F(z_{k+1/2}; xi) - grad F(z^s; xi)
          + grad F(z^s) with the same samples (19)-(20)                      [cost 2m]
          z_{k+1}   = prox step with g, same anchors (21)
  output: eta-weighted mean of the half points z_{k+1/2} (22)

Effective steps are decoupled (§2.5): gamma_w (w-block) and gamma_q (q-block, entropic),
both multiplied by the schedule factor h_s; the output weights are h_s (proportional to eta).
"""

from __future__ import annotations

import math

import numpy as np

from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.solvers.dro import steps


class ALEGParams(Params):
    """ALEG's parameters (§2.5; steps tuned by §4.1; tuned values in the specs)."""

    gamma_w: float = steps.gamma_w(0.01)
    gamma_q: float = steps.gamma_q(0.1)
    schedule: steps.EpochSchedule = steps.epoch_schedule(
        "step factor h_s: decay = max(sqrt(0.05), 1/sqrt(s+1))")
    K: int | None = auto("inner iterations per epoch; auto: K = n_bar (Cor. 4.6 / Thm 5.2, "
                         "[DEFAULT] docs/papers/000.md §2.5)", ge=1)
    alpha: float | None = auto("snapshot weight in the prox anchors; auto: 1/K (Thm 4.4, "
                               "[DEFAULT] docs/papers/000.md §2.5)", legacy=0.0, gt=0, le=1)
    eta: float | None = steps.eta()
    eval_point: steps.EvalPoint = steps.eval_point("the eta-weighted mean (22)")


def schedule_factor(schedule: str, s: int) -> float:
    """h_s: 'decay' = max(sqrt(0.05), 1/sqrt(s+1)) (§2.5 [DEFAULT]); 'constant' = 1."""
    if schedule == "constant":
        return 1.0
    return max(math.sqrt(0.05), 1.0 / math.sqrt(s + 1.0))


@registry.solver(
    "aleg",
    reference="Yu et al. (2024), Alg. 1, eqs. (14)-(22)",
    params=ALEGParams,
    family="gdro",
    description="ALEG (Yu et al. 2024, Algorithm 1): VR stochastic mirror prox with group "
                "sampling for empirical GDRO",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """ALEG, Algorithm 1 of Yu et al. 2024 (eqs. (14)-(22)); returns the point (W, q)."""
    from drocli.solvers.dro.mirror_prox import effective_steps

    gamma_w, gamma_q = effective_steps(params, problem)
    K = params["K"] or max(1, int(round(problem.N / problem.m)))  # K = n_bar
    alpha = params["alpha"] or 1.0 / K
    st = run_aleg(problem, rng, monitor, gamma_w=gamma_w, gamma_q=gamma_q,
                  schedule=params["schedule"], K=K, alpha=alpha,
                  eval_point=params["eval_point"])
    return st.point(params["eval_point"])


def run_aleg(problem, rng: np.random.Generator, monitor=None, *, gamma_w: float,
             gamma_q: float, schedule: str, K: int, alpha: float, eval_point: str = "output",
             epochs: int | None = None):
    """The epoch loop of Algorithm 1 on `problem` (any GDROProblem-like object, e.g. the
    shifted MERO problem (24) or a one-group view with m = 1); returns the final VRState.

    With a monitor: runs until the monitor says stop, calling it at the start, after every
    snapshot and after every compiled chunk (chunks end at the monitor's checkpoints).
    Without (monitor=None): runs exactly `epochs` epochs, no monitor calls (ALEM stage 1).
    The random draws (one (K, m) block of group rows per epoch) do not depend on the monitor.
    """
    from drocli.solvers.dro.mirror_prox import VRState, group_rows

    m = problem.m
    st = VRState(problem)
    grps = np.ascontiguousarray(np.tile(np.arange(m, dtype=np.int64), (K, 1)))
    ones = np.ones(m)
    keep = monitor(*st.point(eval_point)) if monitor is not None else True
    s = 0
    while keep and (epochs is None or s < epochs):
        h = schedule_factor(schedule, s)
        st.take_snapshot()                                  # (14)-(16), cost N
        if monitor is not None:
            keep = monitor(*st.point(eval_point))
        rows = group_rows(problem, rng, K)                  # (18), drawn per epoch
        k = 0
        while keep and k < K:
            n = K - k
            if monitor is not None:
                n = min(n, monitor.steps_until_due(2 * m))
            st.run(rows[k:k + n], grps[k:k + n], ones, alpha, gamma_w * h, gamma_q * h, h)
            k += n
            if monitor is not None:
                keep = monitor(*st.point(eval_point))
        s += 1
    return st
