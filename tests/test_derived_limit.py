"""Issue 56: without `budget.max_time_s` or DROCLI_CELL_LIMIT_S a cell's wall limit is
derived from its budget (drocli.run.limits): 10 times the pace its 1 % warm-up showed, within
[300 s, 6 h], and 300 s + 1 % of 6 h until the warm-up has shown one. The worker tells the
pool the derived limit, so a solver that hangs after its warm-up is killed there too."""

from __future__ import annotations

import time

import pytest

from drocli import testing
from drocli.plugins import registry
from drocli.run import limits, misbehaving
from drocli.run.pool import supervised


def test_the_derived_limit_is_ten_times_the_warm_ups_pace_within_its_bounds(monkeypatch):
    monkeypatch.delenv(limits.LIMIT_VAR, raising=False)
    cell = testing.tiny_cell("smd")
    assert limits.derived(0.2) == 300.0                       # 10 x 20 s: the floor
    assert limits.derived(1.5) == pytest.approx(1500.0)       # 10 x 150 s
    assert limits.derived(1e4) == 6 * 3600.0                  # the ceiling
    assert limits.first_limit(cell) == pytest.approx(300.0 + 216.0)
    assert limits.cell_limit(cell, 2.0) == pytest.approx(2000.0)
    assert limits.cell_limit(cell) == 6 * 3600.0              # no pace heard: the ceiling
    assert "derived" in limits.why_limit(cell, 2000.0)
    fixed = testing.tiny_cell("smd", limit_s=7)
    assert limits.first_limit(fixed) == limits.cell_limit(fixed, 2.0) == 7.0
    monkeypatch.setenv(limits.LIMIT_VAR, "90")
    assert limits.cell_limit(cell, 2.0) == limits.first_limit(cell) == 90.0


def _hangs_after_warm_up(problem, params, rng, monitor):
    """Steps normally in its warm-up (1 % of the budget), then sleeps for an hour."""
    x = problem.zero_point()
    if monitor.budget > 50:
        time.sleep(3600)
    while monitor(x):
        problem.sample_gradients(x, rng.integers(problem.n, size=1))
        x = x + 1e-3
    return x


@pytest.fixture
def toys(monkeypatch):
    monkeypatch.delenv(limits.LIMIT_VAR, raising=False)
    names = misbehaving.register_toys()
    registry.solver("lim_hangs_late", family="finite_sum", description="toy",
                    reference="none")(_hangs_after_warm_up)
    yield
    for name in [*names, "lim_hangs_late"]:
        registry._REGISTRY["solver"].pop(name, None)


def _run(cells):
    return {st["label"]: (rows, st) for _, rows, st, _ in supervised(cells, 1, 2)}


def test_a_slow_solver_stops_at_the_limit_its_warm_up_implies(toys, monkeypatch):
    from drocli.run import worker

    monkeypatch.setattr(worker, "_WARM", {})     # the forked worker warms up itself
    monkeypatch.setattr(limits, "PACE_FACTOR", 0.2)       # 20 x its warm-up's seconds
    monkeypatch.setattr(limits, "FLOOR_S", 0.1)
    rows, st = _run([testing.tiny_cell("toy_slow_steps")])["toy_slow_steps"]
    assert st["status"] == "timeout" and rows, st           # stopped by the monitor, rows kept
    assert st["warmup_s"] > 0.04                            # one step of 0.05 s at least
    assert st["limit_s"] == pytest.approx(20 * st["warmup_s"], rel=0.05, abs=0.02)
    assert st["wall_s"] < st["limit_s"] + 2
    assert "derived" in st["error"]


def test_a_hang_is_killed_before_or_after_its_warm_up_within_seconds(toys, monkeypatch):
    from drocli.run import worker

    monkeypatch.setattr(worker, "_WARM", {})
    monkeypatch.setattr(limits, "PACE_FACTOR", 0.05)      # 5 x its warm-up's seconds
    monkeypatch.setattr(limits, "FLOOR_S", 1.0)
    monkeypatch.setattr(limits, "CEILING_S", 1000.0)      # before a pace: 1 + 10 s
    t0 = time.monotonic()
    outs = _run([testing.tiny_cell("lim_hangs_late"), testing.tiny_cell("toy_sleeps")])
    assert time.monotonic() - t0 < 40
    rows, st = outs["lim_hangs_late"]          # the pool heard its derived limit (~1 s)
    assert st["status"] == "timeout" and st["stopped"] == "killed" and rows == [], st
    assert st["wall_s"] < 9 and "derived" in st["error"]     # not the 11 s before a pace
    rows, st = outs["toy_sleeps"]              # never past its warm-up: 11 s
    assert st["status"] == "timeout" and st["stopped"] == "killed", st
    assert 11 <= st["wall_s"] < 25 and "warm-up" in st["error"]
