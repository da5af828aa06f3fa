"""Memory sanity at load: refuse a spec whose cells cannot fit in this machine's memory.

Each data source estimates the bytes of the arrays it returns (`memory=` in its registration);
the monitor's rows and checkpoint grid are estimated from the budget. A run holds, per parallel
job, one cell's data and monitor; the client also merges every cell's rows. The largest need
is compared with the memory available now (MemAvailable), before anything is written.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from drocli.errors import DrocliError
from drocli.plugins import registry

ROW_BYTES = 160        # one monitor row: a 5-tuple of Python numbers and a metric name
RECORD_BYTES = 120     # one records.csv row in the merged DataFrame (incl. parameter columns)
GRID_BYTES = 8         # one int64 checkpoint
HEADROOM = 0.9         # use at most this fraction of the available memory


@dataclass(frozen=True)
class Need:
    """An estimated need: bytes, the spec key to change, and what it is."""

    bytes: int
    key: str
    what: str


def available_memory() -> int:
    """MemAvailable from /proc/meminfo (bytes), else physical pages x page size."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**27 else f"{n / 2**20:.3g} MiB"


def _grid_combos(grid: dict) -> list[dict]:
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, v, strict=True)) for v in itertools.product(*grid.values())]


def _culprit(entry, params: dict, total: int) -> str:
    """The data parameter whose reset to its default lowers the estimate most."""
    defaults = entry.defaults
    best, key = total, "data.params"
    for k, v in params.items():
        d = defaults.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v == d or d is None:
            continue
        try:
            b = int(entry.memory({**params, k: d}))
        except Exception:  # a combination the source cannot size: skip it
            continue
        if b < best:
            best, key = b, f"data.params.{k}"
    return key


def needs(spec, n_jobs: int = 1) -> list[Need]:
    """The estimated memory needs of running `spec` with `n_jobs` parallel cells."""
    out: list[Need] = []
    for name, case in spec.case_specs():
        where = "" if name is None else f" (case {name})"
        d_entry = registry.get("data", case.data.name)
        data_bytes = 0
        for combo in _grid_combos(case.data.grid):
            if d_entry.memory is None:
                continue
            params = registry.resolve_params(d_entry, {**case.data.params, **combo})
            b = int(d_entry.memory(params))
            if b > data_bytes:
                data_bytes = b
                key = _culprit(d_entry, params, b)
                shown = ", ".join(f"{k}={v:g}" for k, v in params.items()
                                  if isinstance(v, (int, float)) and not isinstance(v, bool)
                                  and v > 1)
                data_need = Need(b, key, f"data {case.data.name}{where}"
                                 + (f" ({shown})" if shown else ""))
        p_entry = registry.get("problem", case.problem.name)
        n_metrics = len(case.metrics) or max(1, len(p_entry.metrics))
        cps = int(case.budget.checkpoints)
        monitor = cps * (GRID_BYTES + n_metrics * ROW_BYTES)
        cells = len(case.seeds) * max(1, len(_grid_combos(case.data.grid))) * max(
            1, len(_grid_combos(case.problem.grid))) * sum(
            len(_grid_combos(s.grid)) for s in case.solvers)
        jobs = max(1, min(n_jobs if n_jobs > 0 else (os.cpu_count() or 1), cells))
        if data_bytes:
            out.append(Need((data_bytes + monitor) * jobs, data_need.key,
                            data_need.what + (f" x {jobs} parallel jobs" if jobs > 1 else "")))
        out.append(Need(monitor * jobs, "budget.checkpoints",
                        f"monitor rows ({cps:g} checkpoints x {n_metrics} metrics per cell)"))
        out.append(Need(cells * (cps + 1) * n_metrics * RECORD_BYTES, "budget.checkpoints",
                        f"merged records ({cells} cells x {cps:g} checkpoints x {n_metrics} "
                        "metrics)"))
    return out


def check(spec, file: str, n_jobs: int = 1, available: int | None = None) -> None:
    """Raise DrocliError (exit 2) when the largest need exceeds the available memory."""
    avail = available_memory() if available is None else available
    worst = max(needs(spec, n_jobs), key=lambda n: n.bytes, default=None)
    if worst is not None and worst.bytes > HEADROOM * avail:
        raise DrocliError(
            f"needs about {gib(worst.bytes)} for {worst.what}, but {gib(avail)} are "
            "available", file=file, key=worst.key,
            fix=f"lower {worst.key}, use fewer jobs (-j), or pass --skip-memory-check if you "
                "know better")
