"""drocli.solvers.bilevel: SVRB, RSVRB / RE-RSVRB (Guo, Hu, Zhang & Yang, spec 004 §2) and
the baselines of its Appendix E (STABLE, TTSA, BSA, stocBiO, spec §3.4) on the
`bilevel_weights` problem. Shared glue: parameter checks and the step schedules of E.1."""

from __future__ import annotations

import numpy as np

from drocli.errors import DrocliError
from drocli.ops.psd import FlooredSPD
from drocli.solvers.checks import KEY, positive  # noqa: F401  (re-exported)


def count(params: dict, name: str, minimum: int = 1) -> int:
    v = params.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise DrocliError(f"{name} must be an integer >= {minimum}, got {v!r}",
                          key=f"{KEY}.{name}", fix=f"e.g. {name}: 32")
    return v


def decay(t: int, c0: float, power: float) -> float:
    """(t + c0)^(-power): E.1's eta_t (power 1/3 for SVRB, 1/2 for the baselines)."""
    return (t + c0) ** (-power)


def clip_weights(p: np.ndarray, nonneg: bool) -> np.ndarray:
    """p unchanged (the paper's unconstrained problem) or clipped at 0 (spec P14 flag)."""
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
    return FlooredSPD(c * H_prev + weight * (H_cur - c * H_old), problem.lam), g_cur, g_old
