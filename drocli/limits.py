"""A cell's wall limit (issue 42): `budget.max_time_s`, else DROCLI_CELL_LIMIT_S (default
6 h), seconds for the whole cell: warm-up, solver and evaluation. The monitor stops a solver
at the limit (drocli.monitor); the local pool kills one that does not return `GRACE_S`
later (drocli.pool)."""

from __future__ import annotations

import math
import os

from drocli.errors import DrocliError

GRACE_S = 3.0                   # after the limit, before a worker that did not return is killed
DEFAULT_LIMIT_S = 6 * 3600.0    # a cell's limit without budget.max_time_s
LIMIT_VAR = "DROCLI_CELL_LIMIT_S"


class TimeLimit(AssertionError):
    """A time limit reached by an alarm (the contract suite's): it stops the cell, and a
    warm-up never swallows it."""


def env_seconds(name: str, default: float) -> float:
    """A duration from the environment variable `name` (unset: `default`): a finite number
    > 0, else a one-line error naming the variable."""
    raw = os.environ.get(name, f"{default:g}")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise DrocliError(f"{raw!r} is not a number of seconds > 0", key=name,
                          fix=f"set it to e.g. {name}={max(30, int(default))}, or unset it "
                              f"({default:g} s)")
    return value


def default_limit() -> float:
    """DROCLI_CELL_LIMIT_S (default 6 h)."""
    return env_seconds(LIMIT_VAR, DEFAULT_LIMIT_S)


def cell_limit(cell) -> float:
    """The wall seconds a cell may take: budget.max_time_s, else `default_limit()`."""
    given = (cell.budget or {}).get("max_time_s")
    return float(given) if given else default_limit()


def killed_at_limit(cell, how: str = "killed") -> str:
    """The reason recorded for a cell whose solver did not return by its limit (the local
    pool and the dask backend kill its worker GRACE_S after it; in a thread of this
    process it is `stopped`, drocli.in_process)."""
    return (f"{how} {GRACE_S:g} s after its limit of {cell_limit(cell):g} s "
            f"({why_limit(cell)}): the solver did not return")


def why_limit(cell) -> str:
    return ("budget.max_time_s" if (cell.budget or {}).get("max_time_s")
            else f"{LIMIT_VAR}, default 6 h")
