"""drocli.solvers.bilevel: SVRB, RSVRB / RE-RSVRB (Guo, Hu, Zhang & Yang, docs/papers/004.md §2) and
the baselines of its Appendix E (STABLE, TTSA, BSA, stocBiO, docs/papers/004.md §3.4) on the
`bilevel_weights` problem. Shared glue: parameter models and the step schedules of E.1."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.ops.psd import FlooredSPD
from drocli.plugins.registry import Params, added, auto


class Batches(Params):
    """Minibatch sizes of the single-loop methods (App. E.1: 32 / 32 [UNSPEC], §3.1)."""

    batch: int = Field(32, ge=1, description="lower-level (training) minibatch per task "
                       "and iteration")
    batch_val: int = Field(32, ge=1, description="upper-level (validation) minibatch")


class StormSteps(Params):
    """E.1's step rule of the STORM methods: eta_t = tau_t = (t + c0)^(-1/3)."""

    c0: float = Field(100.0, gt=0, description="offset c0 of the decay (t + c0)^(-1/3) "
                      "(App. E.1)")
    gamma: float = Field(1.0, gt=0, description="upper (x) step multiplier (tuned, "
                         "experiments/tuning/)")
    nonneg: bool = Field(False, description="clip the weights p at 0 (P14; the figures "
                         "use true)")


class NeumannSteps(Params):
    """The non-VR baselines' E.1 step rule (t + c0)^(-1/2) and their Neumann series
    (tau0 = 10: lower step 0.1 at t = 0)."""

    c0: float = Field(100.0, gt=0, description="offset c0 of the decay (t + c0)^(-1/2) "
                      "(App. E.1)")
    gamma: float = Field(1.0, gt=0, description="upper (x) step multiplier (tuned)")
    tau0: float = Field(10.0, gt=0, description="lower (y) step multiplier (tuned)")
    L: float | None = auto("Neumann constant L (eta_N = 1 / L); auto: by L_rule",
                           legacy=0.0, gt=0)
    L_rule: Literal["bound", "curvature"] = added(
        "bound", description="the automatic L: bound, the row-norm bound 0.25 max ||x~_j||^2 "
        "/ sigma_min^2 + lam (loose); curvature, L_safety x the top eigenvalue of task i's "
        "lower Hessian at (p_0, w_0 = 0) by power iteration (issue 26's fair setup)")
    L_safety: float = added(1.0, description="curvature rule: the factor on the power-"
                            "iteration eigenvalue", ge=1.0)
    nonneg: bool = Field(False, description="clip the weights p at 0 (docs/papers/004.md P14)")


def decay(t: int, c0: float, power: float) -> float:
    """(t + c0)^(-power): E.1's eta_t (power 1/3 for SVRB, 1/2 for the baselines)."""
    return (t + c0) ** (-power)


def clip_weights(p: np.ndarray, nonneg: bool) -> np.ndarray:
    """p unchanged (the paper's unconstrained problem) or clipped at 0 (P14 flag)."""
    return np.maximum(p, 0.0) if nonneg else p


def storm_lower(problem, prev: tuple, cur: tuple, i: int, B: np.ndarray, H_prev: np.ndarray,
                alpha: np.ndarray, c: float, weight: float = 1.0):
    """STORM (Lemma 8) of task i's Hessian and cross-Jacobian estimates on ONE batch B at the
    previous and the current (p, w) (pitfall 2), c = 1 - beta, increments scaled by `weight`
    (1 / pi_i in RSVRB's RC-STORM, 1 otherwise). alpha, already decayed by c, gets
    weight (a_cur - c a_old) on B in place. Returns (S^l_lam[c H_prev + weight (H_cur -
    c H_old)], g_cur, g_old), the gradients for the caller's own gradient estimate."""
    g_old, H_old, a_old = problem.lower_terms(*prev, B, i)
    g_cur, H_cur, a_cur = problem.lower_terms(*cur, B, i)
    alpha[B] += weight * (a_cur - c * a_old)
    return FlooredSPD.storm(H_prev, H_cur, H_old, c, weight, problem.lam), g_cur, g_old
