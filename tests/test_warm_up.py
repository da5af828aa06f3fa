"""The worker's warm-up (drocli.run.worker.warm_up) loads the kernels off the cell's clock and
evaluates no metric: its run is discarded, and at n = 1e6 every evaluation is a pass over
800 MB (issue 29)."""

from __future__ import annotations

import dataclasses

from drocli.plugins import registry
from drocli.run import worker
from drocli.run.cells import expand
from drocli.run.monitor import Monitor
from drocli.spec import load_spec
from tests.conftest import TINY_SPEC


def _counted_cell(tmp_path, monkeypatch):
    """A cell of the tiny spec whose problems count their `evaluate` calls."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC)
    cell = expand(load_spec(spec))[0]
    entry = registry.get("problem", cell.problem_name)
    calls = []

    def build(data, params):
        problem = entry.func(data, params)
        real = problem.evaluate

        def evaluate(*a, **k):
            calls.append(1)
            return real(*a, **k)

        problem.evaluate = evaluate
        return problem

    monkeypatch.setitem(registry._REGISTRY["problem"], cell.problem_name,
                        dataclasses.replace(entry, func=build))
    monkeypatch.setattr(worker, "_WARM", {})
    return cell, calls


def test_the_warm_up_runs_the_solver_but_evaluates_nothing(tmp_path, monkeypatch):
    cell, calls = _counted_cell(tmp_path, monkeypatch)
    assert worker.warm_up(cell) > 0
    assert calls == []
    rows, status, _ = worker.run_cell(cell)          # warm now: the cell evaluates
    assert status["status"] == "done" and status["warmup_s"] == 0
    assert len(calls) >= 2 and rows


def test_a_monitor_that_does_not_evaluate_still_stops_at_its_budget(tmp_path, monkeypatch):
    cell, calls = _counted_cell(tmp_path, monkeypatch)
    problem = worker._build(cell)
    monitor = Monitor(problem, 50, checkpoints=5, evaluate=False)
    worker._solve(cell, problem, monitor)
    assert monitor.status == "done" and monitor.calls >= 50
    assert monitor.rows == [] and calls == []
