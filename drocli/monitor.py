"""Checkpoint monitor: decides from the problem's oracle counter when to evaluate and record.

Solvers call `monitor(point...)` between compiled chunks; evaluation runs outside the
solver clock. `monitor.calls_until_due()` tells a solver how many oracle calls it may
spend before the next checkpoint, so compiled loops run in chunks, not per step.
"""

from __future__ import annotations

import math
import time

import numpy as np


def checkpoint_grid(budget: int, count: int, spacing: str = "linear") -> np.ndarray:
    """Oracle-call levels at which to record: 0, ..., budget (count+1 points)."""
    if spacing == "log":
        pts = np.unique(np.round(np.geomspace(1, budget, count)).astype(np.int64))
        return np.concatenate([[0], pts])
    return np.unique(np.round(np.linspace(0, budget, count + 1)).astype(np.int64))


class Monitor:
    """Records problem metrics at checkpoints of the oracle counter.

    `metrics` selects which of `problem.evaluate(...)`'s values are kept (None keeps all).
    """

    def __init__(self, problem, budget: int, checkpoints: int = 50, spacing: str = "linear",
                 metrics=None, max_time_s: float | None = None, clock=time.perf_counter):
        self.problem = problem
        self.budget = int(budget)
        self.grid = checkpoint_grid(self.budget, max(1, int(checkpoints)), spacing)
        self.metrics = list(metrics) if metrics else None
        self.max_time_s = max_time_s
        self._clock = clock
        self._t0 = clock()
        self._paused = 0.0
        self._gi = 0
        self.step = 0
        self.rows: list[tuple] = []
        self.status = "running"
        self.artifacts: dict = {}

    def keep(self, name: str, array) -> None:
        """Hand the runner a per-cell array (a final iterate, a front), saved as
        cells/<id>.npz beside the cell's rows."""
        self.artifacts[str(name)] = np.array(array, copy=True)

    # --- what solvers read -------------------------------------------------------------
    @property
    def calls(self) -> int:
        return int(self.problem.oracle_calls)

    @property
    def next_at(self) -> int:
        return int(self.grid[self._gi]) if self._gi < len(self.grid) else self.budget

    @property
    def done(self) -> bool:
        return self.status != "running"

    def calls_until_due(self) -> int:
        """Oracle calls a solver may spend before it must call the monitor again (>= 1)."""
        return max(1, min(self.next_at, self.budget) - self.calls)

    def steps_until_due(self, cost_per_step: float) -> int:
        """Steps of a given oracle cost until the next checkpoint (>= 1)."""
        return max(1, math.ceil(self.calls_until_due() / max(cost_per_step, 1e-12)))

    def elapsed(self) -> float:
        return self._clock() - self._t0 - self._paused

    # --- what solvers call ---------------------------------------------------------------
    def __call__(self, *point, force: bool = False, **named) -> bool:
        """Record at the current point if a checkpoint is due; return True to keep going."""
        calls = self.calls
        if self.max_time_s is not None and self.elapsed() > self.max_time_s:
            self.status = "timeout"
        if force or calls >= self.next_at or calls >= self.budget or self.done:
            self._record(calls, point, named)
            while self._gi < len(self.grid) and self.grid[self._gi] <= calls:
                self._gi += 1
        if calls >= self.budget and self.status == "running":
            self.status = "done"
        return not self.done

    def _record(self, calls, point, named):
        if self.rows and self.rows[-1][1] == calls:
            return
        t_solver = self.elapsed()
        t_eval = self._clock()
        finite = all(np.all(np.isfinite(np.asarray(p))) for p in point if p is not None)
        values = self.problem.evaluate(*point, **named) if finite else {}
        self._paused += self._clock() - t_eval
        keep = self.metrics or list(values)
        for name in keep:
            v = float(values.get(name, np.nan))
            if not math.isfinite(v):
                self.status = "diverged"
            self.rows.append((self.step, calls, t_solver, name, v))
        if not finite:
            self.status = "diverged"
        self.step += 1

    def finish(self, *point, **named) -> None:
        """Called by the runner after the solver returns: make sure the last point is recorded."""
        if self.status == "running":
            self.status = "done"
        if point and self.status == "done":
            self._record(self.calls, point, named)
