"""Checkpoint monitor: decides from the problem's oracle counter when to evaluate and record.

Solvers call `monitor(point...)` between compiled chunks; evaluation runs outside the
solver clock. `monitor.calls_until_due()` tells a solver how many oracle calls it may
spend before the next checkpoint, so compiled loops run in chunks, not per step.
A pure-Python solver hands its step to `run_steps(monitor, step, point)`, which does that
split for it.

A solver that makes no oracle progress fails at once instead of running forever: a step
cost of 0 (or less) is refused by `steps_until_due`, and `STALL_CALLS` consecutive monitor
calls at the same oracle count raise `NoProgress`, a DrocliError the runner records as the
cell's one-line failure.
"""

from __future__ import annotations

import math
import time

import numpy as np

from drocli.errors import DrocliError

STALL_CALLS = 50    # consecutive monitor calls without a move of the oracle counter


class NoProgress(DrocliError):
    """The solver keeps calling the monitor, or asks for steps, without spending oracle
    calls: it would never reach its budget."""


def checkpoint_grid(budget: int, count: int, spacing: str = "linear") -> np.ndarray:
    """Oracle-call levels at which to record: 0, ..., budget (count+1 points)."""
    if spacing == "log":
        pts = np.unique(np.round(np.geomspace(1, budget, count)).astype(np.int64))
        return np.concatenate([[0], pts])
    return np.unique(np.round(np.linspace(0, budget, count + 1)).astype(np.int64))


class Monitor:
    """Records problem metrics at checkpoints of the oracle counter.

    `metrics` selects which of `problem.evaluate(...)`'s values are kept (None keeps all).
    `evaluate=False` keeps the checkpoints but evaluates and records nothing (the worker's
    warm-up: its run is discarded, and at n = 1e6 each evaluation is a pass over the data).
    Past `deadline` (a `clock` value: the cell's wall limit, drocli.run.limits), the next call
    stops the solver with status `timeout`.
    """

    def __init__(self, problem, budget: int, checkpoints: int = 50, spacing: str = "linear",
                 metrics=None, clock=time.perf_counter,
                 stall_calls: int = STALL_CALLS, evaluate: bool = True,
                 deadline: float = math.inf):
        self.problem = problem
        self.evaluate = bool(evaluate)
        self.budget = int(budget)
        self.grid = checkpoint_grid(self.budget, max(1, int(checkpoints)), spacing)
        self.metrics = list(metrics) if metrics else None
        # a problem that declares `metrics_on_request` is told which metrics are kept
        self._asked = ({"wanted": frozenset(self.metrics)} if self.metrics is not None
                       and getattr(problem, "metrics_on_request", False) else {})
        self.deadline = float(deadline)    # a `clock` value: the cell's wall limit
        self._clock = clock
        self._t0 = clock()
        self._paused = 0.0
        self._gi = 0
        self.step = 0
        self.rows: list[tuple] = []
        self.status = "running"
        self.artifacts: dict = {}
        self.stall_calls = int(stall_calls)
        self._last_calls: int | None = None
        self._stalled = 0
        self.on_record = None     # fraction of the budget -> None, after each record

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
        """Steps of a given oracle cost until the next checkpoint (>= 1). A cost that is not
        a positive number raises NoProgress: the budget would never be reached."""
        try:
            cost = float(cost_per_step)
        except (TypeError, ValueError):
            cost = math.nan
        if not cost > 0 or not math.isfinite(cost):
            raise NoProgress(f"the solver's oracle cost per step is {cost_per_step!r}: it "
                             "would never reach its budget",
                             fix="a step spends at least one oracle call (check batch sizes "
                                 "and their defaults)")
        return max(1, math.ceil(self.calls_until_due() / cost))

    def elapsed(self) -> float:
        return self._clock() - self._t0 - self._paused

    # --- what solvers call ---------------------------------------------------------------
    def __call__(self, *point, force: bool = False, **named) -> bool:
        """Record at the current point if a checkpoint is due; return True to keep going."""
        calls = self.calls
        if not force:
            self._check_progress(calls)
        if self._clock() > self.deadline:
            self.status = "timeout"
        if force or calls >= self.next_at or calls >= self.budget or self.done:
            self._record(calls, point, named)
            while self._gi < len(self.grid) and self.grid[self._gi] <= calls:
                self._gi += 1
        if calls >= self.budget and self.status == "running":
            self.status = "done"
        return not self.done

    def _check_progress(self, calls: int) -> None:
        if calls != self._last_calls or self.done:
            self._last_calls, self._stalled = calls, 0
            return
        self._stalled += 1
        if self._stalled >= self.stall_calls:
            raise NoProgress(f"no oracle progress: the counter stayed at {calls} of "
                             f"{self.budget} across {self._stalled + 1} monitor calls",
                             fix="each step must call the problem's counted oracles")

    def _record(self, calls, point, named):
        if not self.evaluate:
            return
        if self.rows and self.rows[-1][1] == calls:
            return
        t_solver = self.elapsed()
        t_eval = self._clock()
        finite = all(np.all(np.isfinite(np.asarray(p))) for p in point if p is not None)
        values = self.problem.evaluate(*point, **named, **self._asked) if finite else {}
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
        if self.on_record is not None:      # the terminal bar's progress within the cell
            self.on_record(calls / max(1, self.budget))

    def finish(self, *point, **named) -> None:
        """Called by the runner after the solver returns: make sure the last point is recorded."""
        if self.status == "running":
            self.status = "done"
        if point and self.status == "done":
            self._record(self.calls, point, named)


def stalled(rows: list[tuple], min_records: int = 3) -> bool:
    """Whether a run's metrics never moved: at least `min_records` checkpoints recorded and
    every metric's value the same at each of them (a solver that spends its oracle calls
    without changing its point)."""
    steps: dict[str, set] = {}
    values: dict[str, set] = {}
    for step, _, _, name, value in rows:
        steps.setdefault(name, set()).add(step)
        values.setdefault(name, set()).add(repr(float(value)))
    return bool(values) and max(len(s) for s in steps.values()) >= min_records and \
        all(len(v) == 1 for v in values.values())


def _as_tuple(point) -> tuple:
    return point if isinstance(point, tuple) else (point,)


def run_steps(monitor: Monitor, step, point, cost_per_step: float | None = None):
    """The step loop of a pure-Python solver: `step()` advances the iterate (spending oracle
    calls), `point()` returns what the monitor evaluates (an array or a tuple of arrays, the
    arguments of `problem.evaluate`). Runs until the monitor says stop, calling it at every
    checkpoint, and returns the last `point()`.

    With `cost_per_step` (the oracle calls one step spends) the steps between checkpoints run
    without a monitor call; without it the monitor is asked after every step (it records
    only when a checkpoint is due). A step that spends no oracle call fails with
    `NoProgress` instead of running forever.
    """
    keep = monitor(*_as_tuple(point()))
    while keep:
        n = monitor.steps_until_due(cost_per_step) if cost_per_step is not None else 1
        for _ in range(n):
            step()
        keep = monitor(*_as_tuple(point()))
    return point()
