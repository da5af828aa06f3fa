"""A cell's wall limit (issue 42): a solver that never returns, in a Python loop, a numba
kernel or a sleep, is stopped within seconds of `budget.max_time_s`, warm-up included; the
cell is recorded as timed out with its reason and the run goes on. A solver that spends its
budget without its metrics moving is marked stalled. The contract suite finds both."""

from __future__ import annotations

import time

import pytest

from drocli import testing
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.run import misbehaving
from drocli.run.in_process import STOP_WAIT_S, in_threads
from drocli.run.limits import GRACE_S, default_limit
from drocli.run.monitor import stalled
from drocli.run.pool import POLL_S, supervised
from tests.conftest import call

NO_HANG_S = 120         # a bound that only a hang exceeds (the solvers sleep for an hour)


def test_the_kill_comes_within_5_s_of_the_limit_by_design():
    assert GRACE_S + POLL_S + STOP_WAIT_S <= 5


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


def test_loky_workers_kill_a_hang_too(toys):
    """Backend loky: workers started as joblib's loky starts them are drocli's pool's, under
    the same wall limit (a loop in Python and one in a compiled kernel)."""
    cells = [testing.tiny_cell("toy_python_loop", limit_s=1.0),
             testing.tiny_cell("toy_numba_loop", limit_s=1.0), testing.tiny_cell("toy_no_move")]
    t0 = time.monotonic()
    outs = {st["label"]: st for _, _, st, _ in
            supervised(cells, 1, 2, run=misbehaving.run_with_toys, method="loky")}
    assert time.monotonic() - t0 < NO_HANG_S
    for name in ("toy_python_loop", "toy_numba_loop"):
        assert outs[name]["status"] == "timeout" and outs[name]["stopped"] == "killed"
        assert 1.0 + GRACE_S <= outs[name]["wall_s"] <= 1.0 + 5
    assert outs["toy_no_move"]["status"] == "stalled"


def test_cells_in_threads_are_stopped_soon_after_their_limit(toys):
    """Backend threading (and `auto` at -j 1 in a program that runs other threads): a
    Python loop is interrupted, a sleep is abandoned to sleep on; each is recorded as timed
    out within 5 s of its limit, with no rows; the monitor's stop keeps its rows; the other
    cells finish."""
    limit = 1.0
    cells = [testing.tiny_cell("toy_python_loop", limit_s=limit),
             testing.tiny_cell("toy_sleeps", limit_s=limit), testing.tiny_cell("toy_no_move"),
             testing.tiny_cell("toy_slow_steps", epochs=1e4, limit_s=limit)]
    t0 = time.monotonic()
    outs = {st["label"]: (rows, st) for _, rows, st, _ in in_threads(cells, 1, 2)}
    assert time.monotonic() - t0 < NO_HANG_S
    for name, how in (("toy_python_loop", "interrupted"), ("toy_sleeps", "abandoned")):
        rows, st = outs[name]
        assert st["status"] == "timeout" and st["stopped"] == how and rows == [], st
        assert "stopped 3 s after its limit of 1 s (budget.max_time_s)" in st["error"]
        assert limit + GRACE_S <= st["wall_s"] <= limit + 5
    assert "runs on in this process" in outs["toy_sleeps"][1]["error"]
    rows, st = outs["toy_slow_steps"]
    assert st["status"] == "timeout" and rows and "stopped" not in st
    assert outs["toy_no_move"][1]["status"] == "stalled"


def test_a_threaded_run_records_a_sleeping_cell_and_exits(tmp_path):
    """Through `drocli run --backend threading` in a process of its own: a solver asleep in
    a thread of the run is recorded as timed out within 5 s of its limit, the run ends, and
    the process exits (the abandoned thread ends with it)."""
    import json
    import subprocess
    import sys

    from tests.conftest import TINY_SPEC

    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("{name: aleg, label: ALEG}",
                                      "{name: toy_sleeps, label: ALEG}")
                    .replace("checkpoints: 8}", "checkpoints: 8, max_time_s: 2}"))
    code = ("import sys; from drocli.run import misbehaving; from drocli.plugins import registry\n"
            "from drocli.cli import main\n"
            "misbehaving.register_toys()\n"
            "e = registry.get('solver', 'toy_sleeps')\n"
            "registry._REGISTRY['solver']['toy_sleeps'] = e.__class__(**{**e.__dict__, "
            "'family': registry.get('solver', 'smd').family})\n"
            "sys.argv = ['drocli', 'run', sys.argv[1], '--out', sys.argv[2], '-q', '-j', '2', "
            "'--backend', 'threading']\nmain()")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, str(spec), str(tmp_path / "res")],
                          capture_output=True, text=True, timeout=NO_HANG_S)
    assert time.monotonic() - t0 < NO_HANG_S
    assert proc.returncode == 4, proc.stderr        # cells did not finish
    stats = [json.loads(p.read_text()) for p in (tmp_path / "res" / "cells").glob("*.json")]
    asleep = [st for st in stats if st["label"] == "ALEG"]
    assert len(asleep) == 2 and all(st["status"] == "timeout" and st["stopped"] == "abandoned"
                                    and 2 + GRACE_S <= st["wall_s"] <= 2 + 5
                                    for st in asleep), asleep


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
    no rows, the others done, and the run exits 4; `check` does not judge the claim that
    compares them (exit 4); a timed-out cell, and a cell file marked done with no rows and
    no reason, are not finished (they run again)."""
    import json

    from drocli.results import records
    from tests.conftest import TINY_SPEC

    family = registry.get("solver", "smd").family
    entry = registry.get("solver", "toy_sleeps")
    registry._REGISTRY["solver"]["toy_sleeps"] = entry.__class__(
        **{**entry.__dict__, "family": family})
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("{name: aleg, label: ALEG}",
                                      "{name: toy_sleeps, label: ALEG}")
                    .replace("checkpoints: 8}", "checkpoints: 8, max_time_s: 20}"))
    from drocli.run import worker
    from drocli.run.cells import expand
    from drocli.spec import load_spec

    # SMD's kernels compiled here, before the workers fork: its cells then need milliseconds,
    # far inside the limit however loaded the machine is
    worker.warm_up(next(c for c in expand(load_spec(spec)) if c.label == "SMD"))
    out = tmp_path / "res"
    t0 = time.monotonic()
    assert call("run", spec, "--out", out, "-q", "-j", "2", "--backend", "fork") == 4
    assert time.monotonic() - t0 < NO_HANG_S
    man = json.loads((out / "manifest.json").read_text())
    by = sorted((s["label"], s["status"], s.get("stopped")) for s in man["cells"].values())
    assert by == [("ALEG", "timeout", "killed")] * 2 + [("SMD", "done", None)] * 2
    assert call("check", out) == 4     # its claim not judged: cells did not finish
    killed = [c for c, st in man["cells"].items() if st.get("stopped") == "killed"]
    done = next(c for c, st in man["cells"].items() if st["status"] == "done")
    path = records.cell_path(out, done)
    path.write_text(json.dumps({**json.loads(path.read_text()), "rows": []}))
    assert not records.is_finished(out, done) and not records.is_finished(out, killed[0])
