"""Parameter checks shared by the solver families: one-line errors naming solver.params.<name>."""

from __future__ import annotations

import math

from drocli.errors import DrocliError

KEY = "solver.params"


def positive(params: dict, name: str, example: float = 1.0) -> float:
    """params[name] as a finite float > 0."""
    v = float(params.get(name))
    if not (v > 0 and math.isfinite(v)):
        raise DrocliError(f"{name} must be > 0, got {v}", key=f"{KEY}.{name}",
                          fix=f"e.g. {name}: {example:g}")
    return v
