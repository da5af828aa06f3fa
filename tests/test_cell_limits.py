"""A cell's wall limit (issue 42): a solver that never returns, in a Python loop, a numba
kernel or a sleep, is stopped within seconds of `budget.max_time_s`, warm-up included; the
cell is recorded as timed out with its reason and the run goes on. A solver that spends its
budget without its metrics moving is marked stalled. The contract suite finds both."""

from __future__ import annotations

import time

import pytest

from drocli import misbehaving, registry, testing
from drocli.errors import DrocliError
from drocli.limits import GRACE_S, default_limit
from drocli.monitor import stalled
from drocli.pool import POLL_S, supervised
from tests.conftest import call

NO_HANG_S = 120         # a bound that only a hang exceeds (the solvers sleep for an hour)


def test_the_kill_comes_within_5_s_of_the_limit_by_design():
    assert GRACE_S + POLL_S <= 5


HANGS = {f"toy_{name}": func for name, func in misbehaving.HANGS.items()}


@pytest.fixture
def toys():
    names = misbehaving.register_toys()
    yield
    for name in names:
        registry._REGISTRY["solver"].pop(name, None)


def test_workers_started_fresh_kill_a_hang_too(toys):
    """Backend spawn (the default where forking this process is not safe): workers that
    import drocli afresh are under the same wall limit; the run goes on."""
    limit = 1.0
    cells = [testing.tiny_cell("toy_python_loop", limit_s=limit),
             testing.tiny_cell("toy_no_move")]
    t0 = time.monotonic()
    outs = {st["label"]: (rows, st) for _, rows, st, _ in
            supervised(cells, 1, 2, run=misbehaving.run_with_toys, method="spawn")}
    assert time.monotonic() - t0 < NO_HANG_S
    rows, st = outs["toy_python_loop"]
    assert st["status"] == "timeout" and st["stopped"] == "killed", st
    assert rows == [] and st["wall_s"] >= limit + GRACE_S
    assert outs["toy_no_move"][1]["status"] == "stalled"


def test_spawned_and_forked_workers_record_the_same_numbers(tiny_spec, tmp_path):
    """The backend changes where cells run, never their numbers."""
    import pandas as pd

    for backend in ("fork", "spawn"):
        assert call("run", tiny_spec, "--profile", "smoke", "--out", tmp_path / backend,
                    "-q", "-j", "2", "--backend", backend) == 0
    a, b = (pd.read_csv(tmp_path / d / "records.csv.gz").drop(columns="time_s")
            for d in ("fork", "spawn"))
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("name", list(HANGS))
def test_a_solver_that_never_returns_is_killed_soon_after_its_limit(toys, name):
    limit = 1.0
    cells = [testing.tiny_cell(name, limit_s=limit), testing.tiny_cell("toy_no_move"),
             testing.tiny_cell(name, seed=1, limit_s=limit)]
    t0 = time.monotonic()
    outs = {(st["label"], st["seed"]): (rows, st) for _, rows, st, _ in
            supervised(cells, 1, 2)}
    # no hang: an hour otherwise (how soon after the limit: benchmarks/cell_limits.py)
    assert time.monotonic() - t0 < NO_HANG_S
    for seed in (0, 1):
        rows, st = outs[(name, seed)]
        assert st["status"] == "timeout" and st["stopped"] == "killed", st
        assert "limit of 1 s (budget.max_time_s)" in st["error"] and rows == []
        assert st["wall_s"] >= limit + GRACE_S        # not before its limit and grace
    rows, st = outs[("toy_no_move", 0)]       # the run went on: the other cell finished
    assert st["status"] == "stalled" and "without any metric moving" in st["error"]


def test_a_solver_that_calls_the_monitor_stops_at_the_limit_with_its_rows(toys):
    """The monitor's own stop: a slow solver keeps the rows it recorded."""
    cell = testing.tiny_cell("toy_slow_steps", epochs=1e4, limit_s=1.0)
    (_, rows, st, _), = supervised([cell], 1, 1)
    assert st["status"] == "timeout" and "stopped at its limit of 1 s" in st["error"]
    assert rows and "stopped" not in st           # stopped by the monitor, not killed


def test_the_contract_suite_finds_a_hang_and_a_stall_in_seconds(toys, monkeypatch):
    monkeypatch.setattr(testing, "RUN_LIMIT_S", 2.0)
    for name, words in (("toy_sleeps", "timeout: killed"), ("toy_numba_loop", "timeout"),
                        ("toy_no_move", "stalled")):
        t0 = time.monotonic()
        with pytest.raises(AssertionError, match=words):
            testing.check_entry("solver", name, time_limit_s=60)
        assert time.monotonic() - t0 < NO_HANG_S


def test_stalled_needs_three_records_of_unmoved_metrics():
    flat = [(i, 10 * i, 0.1 * i, m, 1.5) for i in range(3) for m in ("a", "b")]
    assert stalled(flat)
    assert not stalled(flat[:4])                         # two records: too few to say
    assert not stalled(flat + [(3, 30, 0.3, "a", 1.4)])  # one metric moved
    assert not stalled([])


def test_a_bad_default_limit_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("DROCLI_CELL_LIMIT_S", "1e400")
    with pytest.raises(DrocliError, match="DROCLI_CELL_LIMIT_S"):
        default_limit()
    monkeypatch.setenv("DROCLI_CELL_LIMIT_S", "90")
    assert default_limit() == 90.0


def test_a_run_records_the_hang_goes_on_and_checks(toys, tmp_path):
    """Through `drocli run`: the hanging solver's cells are timed out with their reason and
    no rows, the others done; `check` judges the folder (no 're-run' loop); a cell file
    marked done with no rows and no reason is not finished (it runs again)."""
    import json

    from drocli import records
    from tests.conftest import TINY_SPEC

    family = registry.get("solver", "smd").family
    entry = registry.get("solver", "toy_sleeps")
    registry._REGISTRY["solver"]["toy_sleeps"] = entry.__class__(
        **{**entry.__dict__, "family": family})
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("{name: aleg, label: ALEG}",
                                      "{name: toy_sleeps, label: ALEG}")
                    .replace("checkpoints: 8}", "checkpoints: 8, max_time_s: 20}"))
    from drocli import worker
    from drocli.cells import expand
    from drocli.spec import load_spec

    # SMD's kernels compiled here, before the workers fork: its cells then need milliseconds,
    # far inside the limit however loaded the machine is
    worker.warm_up(next(c for c in expand(load_spec(spec)) if c.label == "SMD"))
    out = tmp_path / "res"
    t0 = time.monotonic()
    assert call("run", spec, "--out", out, "-q", "-j", "2", "--backend", "fork") in (0, 1)
    assert time.monotonic() - t0 < NO_HANG_S
    man = json.loads((out / "manifest.json").read_text())
    by = sorted((s["label"], s["status"], s.get("stopped")) for s in man["cells"].values())
    assert by == [("ALEG", "timeout", "killed")] * 2 + [("SMD", "done", None)] * 2
    assert call("check", out) in (0, 1)              # judged: not exit 2 ("re-run")
    killed = [c for c, st in man["cells"].items() if st.get("stopped") == "killed"]
    done = next(c for c, st in man["cells"].items() if st["status"] == "done")
    path = records.cell_path(out, done)
    path.write_text(json.dumps({**json.loads(path.read_text()), "rows": []}))
    assert not records.is_finished(out, done) and records.is_finished(out, killed[0])
