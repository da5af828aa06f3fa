"""A cell's wall limit (issues 42, 56): seconds for the whole cell, warm-up, solver and
evaluation. The monitor stops a solver at the limit (drocli.run.monitor); the local pool kills
one that does not return `GRACE_S` later (drocli.run.pool).

The limit is `budget.max_time_s`, else DROCLI_CELL_LIMIT_S, else derived from the budget:
the warm-up (drocli.run.worker.warm_up) runs the solver for 1 % of the budget, and the cell may
take `PACE_FACTOR` times the pace it showed (10 x 100 x the warm-up's seconds), at least
`FLOOR_S` and at most `CEILING_S`. Until the warm-up has run, a cell may take `FLOOR_S` plus
1 % of the ceiling: a warm-up slower than that means a cell past the ceiling anyway, so a
solver that never returns is stopped within minutes, not hours."""

from __future__ import annotations

import math
import os

from drocli.errors import DrocliError

GRACE_S = 3.0                   # after the limit, before a worker that did not return is killed
CEILING_S = 6 * 3600.0          # the derived limit's most
FLOOR_S = 300.0                 # the derived limit's least: short cells, slow evaluations
PACE_FACTOR = 10.0              # times the pace the warm-up showed
WARMUP_FRACTION = 0.01          # of the budget, for the warm-up run
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


def default_limit() -> float | None:
    """DROCLI_CELL_LIMIT_S in seconds, or None when it is unset (the limit is derived)."""
    if os.environ.get(LIMIT_VAR) is None:
        return None
    return env_seconds(LIMIT_VAR, CEILING_S)


def derived(warmup_s: float) -> float:
    """The limit a warm-up of `warmup_s` seconds (1 % of the budget) implies."""
    return min(CEILING_S, max(FLOOR_S, PACE_FACTOR * warmup_s / WARMUP_FRACTION))


def fixed_limit(cell) -> float | None:
    """budget.max_time_s, else DROCLI_CELL_LIMIT_S; None when the limit is derived."""
    given = (cell.budget or {}).get("max_time_s")
    return float(given) if given else default_limit()


def first_limit(cell) -> float:
    """The limit before the warm-up has shown a pace: fixed, else FLOOR_S + 1 % of the
    ceiling (what a backend that hears no more, threads and dask, keeps: the ceiling)."""
    fixed = fixed_limit(cell)
    return fixed if fixed is not None else FLOOR_S + WARMUP_FRACTION * CEILING_S


def cell_limit(cell, warmup_s: float | None = None) -> float:
    """The wall seconds a cell may take: fixed, else derived from `warmup_s` (the ceiling
    when no warm-up was measured)."""
    fixed = fixed_limit(cell)
    if fixed is not None:
        return fixed
    return CEILING_S if warmup_s is None else derived(warmup_s)


def killed_at_limit(cell, how: str = "killed", limit: float | None = None) -> str:
    """The reason recorded for a cell whose solver did not return by its limit (the local
    pool and the dask backend kill its worker GRACE_S after it; in a thread of this
    process it is `stopped`, drocli.run.in_process)."""
    limit = cell_limit(cell) if limit is None else limit
    return (f"{how} {GRACE_S:g} s after its limit of {limit:g} s "
            f"({why_limit(cell, limit)}): the solver did not return")


def why_limit(cell, limit: float | None = None) -> str:
    if (cell.budget or {}).get("max_time_s"):
        return "budget.max_time_s"
    if default_limit() is not None:
        return LIMIT_VAR
    if limit is not None and limit == first_limit(cell):
        return "its warm-up's: 1 % of the budget ran past it"
    return (f"derived: {PACE_FACTOR:g} x the pace of its 1 % warm-up, within "
            f"[{FLOOR_S:g}, {CEILING_S:g}] s; set budget.max_time_s or {LIMIT_VAR}")
