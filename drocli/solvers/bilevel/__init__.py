"""drocli.solvers.bilevel: SVRB, RSVRB / RE-RSVRB (Guo, Hu, Zhang & Yang, spec 004 §2) and
the baselines of its Appendix E (STABLE, TTSA, BSA, stocBiO, spec §3.4) on the
`bilevel_weights` problem. Shared glue: parameter checks and the step schedules of E.1."""

from __future__ import annotations

import numpy as np

from drocli.errors import DrocliError
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
