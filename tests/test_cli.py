"""End-to-end CLI: run, plot, check, list; bad input exits 2 without a traceback; resume."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from drocli.results.records import COLUMNS
from tests.conftest import call


def test_run_plot_check_list(tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    df = pd.read_csv(out / "records.csv.gz")
    assert set(COLUMNS) <= set(df.columns)
    assert sorted(df["label"].unique()) == ["ALEG", "SMD"]
    assert sorted(df["seed"].unique()) == [0, 1]
    assert set(df["metric"]) == {"max_risk_train", "max_risk_test"}
    assert (out / "spec.yaml").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(c["status"] == "done" for c in manifest["cells"].values())
    assert manifest["profile"] == "paper" and "git_commit" in manifest
    # each cell's oracle calls increase and reach the budget
    for _, g in df[df.metric == "max_risk_train"].groupby("cell"):
        x = g.sort_values("step")["oracle_calls"].to_numpy()
        assert (x[1:] > x[:-1]).all() and x[-1] >= 4 * 120
    assert call("plot", out) == 0
    assert (out / "figures" / "fig_tiny.png").stat().st_size > 1000
    assert call("plot", out, "--format", "pdf") == 0
    assert (out / "figures" / "fig_tiny.pdf").exists()
    capsys.readouterr()
    code = call("check", out, "--reference", out)
    text = capsys.readouterr().out
    assert "below_start" in text and "MATCHES" in text
    assert code in (0, 1)
    assert call("list", "solvers") == 0
    assert "aleg" in capsys.readouterr().out


def test_resume_skips_finished_cells(tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    first = pd.read_csv(out / "records.csv.gz")
    cells = sorted((out / "cells").glob("*.json"))
    # simulate an interrupted run: one cell lost its status marker, one a half-written temp file
    cells[0].unlink()
    (out / "cells" / ".junk.csv.tmp").write_text("partial")
    mtimes = {p: p.stat().st_mtime_ns for p in cells[1:]}
    capsys.readouterr()
    assert call("run", tiny_spec, "--out", out) == 0
    err = capsys.readouterr().err
    assert "3 already done, 1 to run" in err
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())
    again = pd.read_csv(out / "records.csv.gz")
    key = ["cell", "step", "metric"]
    assert not again.duplicated(key).any()
    pd.testing.assert_frame_equal(first.sort_values(key).reset_index(drop=True)[["value"]],
                                  again.sort_values(key).reset_index(drop=True)[["value"]])


def test_kill_and_resume_subprocess(tiny_spec, tmp_path):
    """A run killed mid-way completes on re-run with no duplicate or corrupt rows."""
    out = tmp_path / "res"
    spec = tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3, 4, 5]")
    tiny_spec.write_text(spec.replace("epochs: 4", "epochs: 400"))
    cmd = [sys.executable, "-m", "drocli", "run", str(tiny_spec), "--out", str(out), "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cells_dir = out / "cells"
    import time
    deadline = time.time() + 120
    while time.time() < deadline and len(list(cells_dir.glob("*.json"))) < 2:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    done_before = len(list(cells_dir.glob("*.json")))
    assert 2 <= done_before < 12
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(out / "records.csv.gz")
    assert df["cell"].nunique() == 12
    assert not df.duplicated(["cell", "step", "metric"]).any()
    assert df["value"].notna().all()


def test_parallel_and_dask_identical(tiny_spec, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert call("run", tiny_spec, "--out", a, "-j", "1", "-q") == 0
    assert call("run", tiny_spec, "--out", b, "-j", "2", "-q") == 0
    key = ["cell", "step", "metric"]
    va = pd.read_csv(a / "records.csv.gz").sort_values(key).reset_index(drop=True)
    vb = pd.read_csv(b / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert va["value"].tolist() == vb["value"].tolist()
    f = tmp_path / "f"       # forked workers, each warming up a solver once
    assert call("run", tiny_spec, "--out", f, "-j", "2", "--backend", "fork", "-q") == 0
    vf = pd.read_csv(f / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert va.drop(columns="time_s").equals(vf.drop(columns="time_s"))
    pids = {json.loads(c.read_text())["pid"] for c in (f / "cells").glob("*.json")}
    assert pids and os.getpid() not in pids     # every cell ran in a forked worker
    warmed = [(d["pid"], d["label"]) for d in (json.loads(c.read_text())
                                               for c in (f / "cells").glob("*.json"))
              if d.get("warmup_s")]
    assert len(warmed) == len(set(warmed))      # at most once per worker and solver
    from drocli.run.runner import resolve_backend

    assert resolve_backend("loky") == "loky"
    import threading

    linux = sys.platform.startswith("linux")
    expected = ("fork" if threading.active_count() == 1 else "threading") if linux else "spawn"
    assert resolve_backend("auto") == expected
    stop = threading.Event()         # another thread runs: forking is not safe
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert resolve_backend("auto") == ("threading" if linux else "spawn")  # -j 1: here
        assert resolve_backend("auto", 2) == "spawn"     # workers that can be killed
    finally:
        stop.set()
        t.join()
    d = tmp_path / "d"       # the default backend (auto) gives the same values
    assert call("run", tiny_spec, "--out", d, "-j", "2", "-q") == 0
    vd = pd.read_csv(d / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert va["value"].tolist() == vd["value"].tolist()
    pytest.importorskip("dask.distributed")
    c = tmp_path / "c"
    assert call("run", tiny_spec, "--out", c, "-j", "2", "--backend", "dask", "-q") == 0
    vc = pd.read_csv(c / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert va["value"].tolist() == vc["value"].tolist()


@pytest.mark.parametrize("args, needle", [
    (["run", "MISSING.yaml"], "not found"),
    (["run", "{spec}", "--set", "solvers.ALEG.params.gamma_w=fast"], "expected float"),
    (["run", "{spec}", "--set", "solvers.ALEG.name=alegg"], "did you mean 'aleg'"),
    (["run", "{spec}", "--set", "nonsense"], "KEY=VALUE"),
    (["run", "{spec}", "--profile", "smok"], "did you mean 'smoke'"),
    (["plot", "{tmp}/nowhere"], "results folder not found"),
    (["check", "{tmp}"], "no spec.yaml"),
])
def test_bad_input_exits_2_one_line(args, needle, tiny_spec, tmp_path):
    args = [a.format(spec=tiny_spec, tmp=tmp_path) for a in args]
    env = {**os.environ, "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "drocli", *args], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 2, res.stderr
    assert needle in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_bad_spec_leaves_results_untouched(tiny_spec, tmp_path):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    tiny_spec.write_text(tiny_spec.read_text().replace("name: smd", "name: nosuch"))
    assert call("run", tiny_spec, "--out", out) == 2
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after


def test_help_teaches():
    res = subprocess.run([sys.executable, "-m", "drocli", "run", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0
    assert "Examples:" in res.stdout and "--set" in res.stdout and "resume" in res.stdout
    assert Path(sys.executable).exists()


def test_swept_param_named_like_a_column_keeps_both(tiny_spec, tmp_path):
    """A solver parameter called `step` must not overwrite the checkpoint column."""
    from drocli.results.records import merge, write_cell
    from drocli.run.cells import Cell

    cell = Cell(experiment="e", solver="s", label="S", dataset="d", seed=0, data_name="d",
                data_params={}, data_seed=0, problem_name="p", problem_params={},
                solver_params={"step": 0.5}, budget={}, metrics=(), swept={"step": 0.5})
    write_cell(tmp_path, cell.id, [(0, 0, 0.0, "m", 1.0), (1, 10, 0.1, "m", 0.5)],
               {"status": "done"})
    table, _ = merge(tmp_path, [cell])
    assert table.columns["step"] == [0, 1]
    assert table.columns["param_step"] == [0.5, 0.5]


def test_list_valued_swept_params_are_json(tmp_path):
    """A list-valued swept parameter lands in records.csv as JSON, not as a Python repr."""
    import json

    from drocli.results.records import merge, write_cell, write_records
    from drocli.run.cells import Cell

    cell = Cell(experiment="e", solver="s", label="S", dataset="d", seed=0, data_name="d",
                data_params={}, data_seed=0, problem_name="p", problem_params={},
                solver_params={}, budget={}, metrics=(),
                swept={"angles": [0, 90], "names": ["a", "b"]})
    write_cell(tmp_path, cell.id, [(0, 0, 0.0, "m", 1.0)], {"status": "done"})
    path = write_records(tmp_path, merge(tmp_path, [cell])[0])
    df = pd.read_csv(path)
    assert json.loads(df["angles"][0]) == [0, 90]
    assert json.loads(df["names"][0]) == ["a", "b"]


def test_cell_artifacts_round_trip(tmp_path):
    """A cell's arrays are saved as cells/<id>.npz before its status marks it finished, and
    read back exactly; the merged artifacts.npz stores each distinct array once, has the
    same bytes when written twice, and maps every cell back to its arrays; object arrays
    are refused."""
    import types

    import numpy as np

    from drocli.errors import DrocliError
    from drocli.results.records import (
        artifact_path,
        is_finished,
        merge_artifacts,
        read_artifacts,
        read_cell_artifacts,
        write_cell,
    )

    theta = np.linspace(-1, 1, 7)
    for cid, t in (("abc", theta), ("def", 2 * theta)):
        write_cell(tmp_path, cid, [(0, 0, 0.0, "m", 1.0)], {"status": "done"},
                   {"theta": t, "front": np.eye(3)})
    assert is_finished(tmp_path, "abc")
    got = read_cell_artifacts(tmp_path, "abc")
    assert set(got) == {"theta", "front"}
    np.testing.assert_array_equal(got["theta"], theta)
    assert read_cell_artifacts(tmp_path, "missing") == {}
    cells = [types.SimpleNamespace(id=i) for i in ("abc", "def", "missing")]
    path = merge_artifacts(tmp_path, cells)
    first = path.read_bytes()
    merged = read_artifacts(tmp_path)
    assert set(merged) == {"abc", "def"}
    np.testing.assert_array_equal(merged["def"]["theta"], 2 * theta)
    np.testing.assert_array_equal(merged["abc"]["front"], np.eye(3))
    with np.load(path) as z:
        assert len(z.files) == 1 + 3                      # index + 2 thetas + 1 front
    assert merge_artifacts(tmp_path, cells).read_bytes() == first
    np.savez(artifact_path(tmp_path, "bad"), x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DrocliError, match="artifact"):
        read_cell_artifacts(tmp_path, "bad")


def test_check_json_for_machines(tiny_spec, tmp_path, capsys):
    import json

    from drocli.claims import ClaimResult, format_result

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    capsys.readouterr()
    code = call("check", out, "--json", "--reference", out)
    doc = json.loads(capsys.readouterr().out)
    assert doc["experiment"] == "tiny" and doc["profile"] == "smoke"
    assert doc["cells"]["finished"] == doc["cells"]["total"] > 0
    assert [c["id"] for c in doc["claims"]] == ["below_start"]
    assert doc["reference"]["mismatches"] == []
    assert code == (0 if doc["ok"] else 1)
    assert doc["ok"] == all(c["status"] != "fails" for c in doc["claims"])
    line = format_result(ClaimResult("c", "t", "final_below", "unexpectedly_holds", "a < b"))
    assert "re-examine the mark" in line


def test_cells_of_the_earlier_two_file_format_are_still_read(tmp_path):
    """Cells written before the one-file format (<id>.csv rows + <id>.json status) resume
    and merge like new ones; a new cell file round-trips floats exactly."""
    import json

    from drocli.results.records import is_finished, merge, read_cell, write_cell
    from drocli.run.cells import Cell

    def cell(step):
        return Cell(experiment="e", solver="s", label="S", dataset="d", seed=0, data_name="d",
                    data_params={}, data_seed=0, problem_name="p", problem_params={},
                    solver_params={"step": step}, budget={}, metrics=())

    old, new = cell(0.1), cell(0.2)
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / f"{old.id}.csv").write_text(
        "step,oracle_calls,time_s,metric,value\n0,0,0.0,m,0.30000000000000004\n1,10,0.5,m,\n")
    (tmp_path / "cells" / f"{old.id}.json").write_text(json.dumps({"status": "done"}))
    write_cell(tmp_path, new.id, [(0, 0, 0.0, "m", 0.1 + 0.2), (1, 10, 0.5, "m", float("nan"))],
               {"status": "done"})
    assert is_finished(tmp_path, old.id) and is_finished(tmp_path, new.id)
    assert read_cell(tmp_path, new.id)[1][0][4] == 0.1 + 0.2
    table, statuses = merge(tmp_path, [old, new])
    df = pd.DataFrame(table.columns)
    df["value"] = pd.to_numeric(df["value"])
    a, b = df[df["cell"] == old.id], df[df["cell"] == new.id]
    assert a["value"].tolist()[0] == b["value"].tolist()[0] == 0.1 + 0.2
    assert a["value"].isna().tolist() == b["value"].isna().tolist() == [False, True]
    assert statuses[old.id]["status"] == statuses[new.id]["status"] == "done"


def test_records_gzip_deterministic_and_legacy_csv_read(tiny_spec, tmp_path):
    """records.csv.gz has the same bytes for the same records; a folder written before
    compression (plain records.csv) is still checked and plotted, and a re-run rewrites it as
    records.csv.gz."""
    import gzip

    from drocli.results.records import Table, read_records, write_records

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    df = read_records(out)
    first = (out / "records.csv.gz").read_bytes()
    write_records(out, Table({c: df[c].tolist() for c in df.columns}))
    assert (out / "records.csv.gz").read_bytes() == first
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for name in ("spec.yaml", ".drocli.json"):
        (legacy / name).write_bytes((out / name).read_bytes())
    (legacy / "records.csv").write_bytes(gzip.decompress(first))
    assert call("check", legacy) in (0, 1) and call("plot", legacy) == 0
    pd.testing.assert_frame_equal(read_records(legacy), df)
    assert call("run", tiny_spec, "--profile", "smoke", "--out", legacy, "-q") == 0
    assert (legacy / "records.csv.gz").exists() and not (legacy / "records.csv").exists()


def test_ctrl_c_stops_forked_workers(tiny_spec, tmp_path):
    """Ctrl-C during a `--backend fork` run: exit 130 within seconds, one line, no traceback,
    the finished cells kept, no worker left running."""
    import signal
    import time

    out = tmp_path / "res"
    spec = tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3, 4, 5, 6, 7]")
    # cells of about a second each, so that the interrupt lands while cells run, however
    # warm the compiled kernels are (at 3000 epochs the 16 cells took about 1.5 s in all)
    tiny_spec.write_text(spec.replace("epochs: 4", "epochs: 30000"))
    cmd = [sys.executable, "-m", "drocli", "run", str(tiny_spec), "--out", str(out), "-q",
           "-j", "2", "--backend", "fork"]
    # started as from a terminal, with Ctrl-C at its default: a process inherits an ignored
    # SIGINT (as a background job does), and in a full suite run an earlier test leaves
    # SIGINT ignored in this process, so the run ignored the interrupt and ended 0 (open:
    # which test leaks it)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and len(list((out / "cells").glob("*.json"))) < 1:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    t0 = time.time()
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130 and time.time() - t0 < 30, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
    assert len(list((out / "cells").glob("*.json"))) < 16
    time.sleep(0.5)              # forked workers carry the parent's command line
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout


def test_reference_mismatch_names_different_blas_kernels(tiny_spec, tmp_path, capsys):
    """A mismatch between folders computed with different OpenBLAS kernel families says so and
    how to compare like with like; same kernels (or no record of them): no note."""
    from drocli.results.reference import blas_kernels, kernel_note

    run, ref = tmp_path / "run", tmp_path / "ref"
    assert call("run", tiny_spec, "--out", run, "-q") == 0
    assert call("run", tiny_spec, "--out", ref, "-q", "--set", "budget.epochs=3") == 0

    def set_arch(folder, archs):
        path = folder / "manifest.json"
        doc = json.loads(path.read_text())
        doc["blas"] = [{"internal_api": "openblas", "architecture": a} for a in archs]
        path.write_text(json.dumps(doc))

    set_arch(run, ["SkylakeX", "SkylakeX"])
    set_arch(ref, ["Haswell"])
    assert blas_kernels(run) == "SkylakeX" and blas_kernels(ref) == "Haswell"
    assert blas_kernels(tmp_path) is None
    capsys.readouterr()
    assert call("check", run, "--reference", ref) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out
    assert "NOTE     the reference was computed with OpenBLAS Haswell kernels, this run with " \
           "SkylakeX" in out and "OPENBLAS_CORETYPE=Haswell" in out
    assert call("check", run, "--json", "--reference", ref) == 1
    assert "Haswell" in json.loads(capsys.readouterr().out)["reference"]["kernels"]
    set_arch(ref, ["SkylakeX"])
    assert kernel_note(run, ref) is None
    assert call("check", run, "--reference", ref) == 1
    assert "NOTE" not in capsys.readouterr().out


def _children(pid: int) -> set[int]:
    """Every descendant of pid (from /proc)."""
    kids, frontier = set(), {pid}
    while frontier:
        new = set()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in frontier and int(d) not in kids:
                new.add(int(d))
        kids |= new
        frontier = new
    return kids


def _alive(pids) -> set[int]:
    out = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.add(p)
        except OSError:
            pass
    return out


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_signals_stop_the_run_and_its_workers(tiny_spec, tmp_path, sig):
    """SIGTERM / SIGHUP stop a loky run as Ctrl-C does (one line, exit 128 + signal, cells
    kept, a re-run resumes); after any of them, SIGKILL included, no worker is left."""
    import signal
    import time

    out = tmp_path / "res"
    spec = tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3, 4, 5, 6, 7]")
    tiny_spec.write_text(spec.replace("epochs: 4", "epochs: 3000"))
    cmd = [sys.executable, "-m", "drocli", "run", str(tiny_spec), "--out", str(out), "-q",
           "-j", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list((out / "cells").glob("*.json"))) < 1:
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert workers
        proc.send_signal(getattr(signal, sig))
        err = proc.communicate(timeout=60)[1]
        if sig != "SIGKILL":
            assert proc.returncode == 128 + getattr(signal, sig), err
            assert err.strip().splitlines() == [f"drocli: stopped by {sig}; re-run the same "
                                                "command to resume"], err
        deadline = time.time() + 20
        while time.time() < deadline and _alive(workers):
            time.sleep(0.2)
        assert not _alive(workers)
    finally:
        if proc.poll() is None:
            proc.kill()
    done = len(list((out / "cells").glob("*.json")))
    assert done < 16
    assert call("run", tiny_spec, "--out", out, "-q") == 0      # resumes


def test_dask_batch_size_rule():
    """Tasks hold one cell until one comes back, then enough cells to last TASK_S, capped
    by MAX_BATCH and by an even share of what is left (short last tasks)."""
    from drocli.run.backends import IN_FLIGHT, MAX_BATCH, TASK_S, next_batch

    assert next_batch(None, 1000, 2) == 1
    assert next_batch(TASK_S / 10, 1000, 2) == 10
    assert next_batch(1e-9, 10**6, 2) == MAX_BATCH
    assert next_batch(1e-9, 40, 2) == 40 // (IN_FLIGHT * 2)
    assert next_batch(10.0, 1000, 2) == 1                  # long cells: one per task
    assert next_batch(1e-9, 1, 8) == 1


def test_dask_batches_cells_and_stamps_each(tiny_spec, tmp_path, monkeypatch):
    """With many short cells the dask backend sends several cells per task, and every
    cell's status still names the worker that ran it; the values equal a -j 1 run."""
    pytest.importorskip("dask.distributed")
    from drocli.run import backends

    sizes = []
    real = backends.run_cells

    def counting(cells, blas_threads):
        return real(cells, blas_threads)

    orig_submit = backends.Dask._submit

    def spy(self, func, *args, key=None):
        if func is counting:
            sizes.append(len(args[0]))
        return orig_submit(self, func, *args, key=key)

    monkeypatch.setattr(backends, "run_cells", counting)
    monkeypatch.setattr(backends.Dask, "_submit", spy)
    monkeypatch.setattr(backends, "TASK_S", 10.0)          # tiny cells: fill big tasks
    a, c = tmp_path / "a", tmp_path / "c"
    assert call("run", tiny_spec, "--out", a, "seeds=[0,1,2,3,4,5,6,7]", "-q") == 0
    assert call("run", tiny_spec, "--out", c, "seeds=[0,1,2,3,4,5,6,7]", "-j", "2",
                "--backend", "dask", "-q") == 0
    assert sum(sizes) == 16 and max(sizes) > 1 and len(sizes) < 16, sizes
    statuses = [json.loads(f.read_text()) for f in (c / "cells").glob("*.json")]
    assert len(statuses) == 16 and all(s.get("worker", {}).get("address") for s in statuses)
    key = ["cell", "step", "metric"]
    va = pd.read_csv(a / "records.csv.gz").sort_values(key).reset_index(drop=True)
    vc = pd.read_csv(c / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert va["value"].tolist() == vc["value"].tolist()


def test_a_bare_command_prints_its_help_laid_out(capsys):
    """`drocli` and `drocli data` alone print their help on several lines (exit 2), not the
    usage squashed into one error line (issue 43)."""
    for args in ([], ["data"]):
        assert call(*args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") > 5 and "Commands:" in err and not err.startswith("drocli: error")


def test_a_comma_value_without_m_hints_at_m(tiny_spec, capsys):
    """KEY=a,b without -m is one text value; when the spec refuses it, the fix names -m."""
    assert call("show", tiny_spec, "budget.epochs=1,2") == 2
    err = capsys.readouterr().err
    assert "-m budget.epochs=1,2" in err and err.count("\n") == 1


def test_the_docs_synopsis_names_every_option():
    """Issue 57: docs/cli.md's synopsis lacked --until-decided, check --plan and
    --skip-memory-check. Every option of every command appears there (short or long)."""
    import re
    from pathlib import Path

    from drocli.cli import cli

    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    synopsis = doc.split("\n- `run` writes")[0]
    missing = []
    for name, cmd in cli.commands.items():
        subs = getattr(cmd, "commands", None)
        for full, c in ([(f"{name} {n}", s) for n, s in subs.items()] if subs
                        else [(name, cmd)]):
            for p in c.params:
                if p.param_type_name != "option" or "--help" in p.opts:
                    continue
                if not any(re.search(rf"[\[ ]{re.escape(o)}\b", synopsis) for o in p.opts):
                    missing.append(f"{full} {p.opts[-1]}")
    assert not missing, missing


def test_list_experiments_shows_titles_profiles_and_recorded_cost(tmp_path, monkeypatch):
    """Issue 57: bare paths before; outside a checkout, an empty list that did not say where
    it looked."""
    import json
    from pathlib import Path

    from drocli.cli.catalog import listing

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "toy.yaml").write_text(
        "name: toy\ntitle: A toy\nprofiles: {smoke: {seeds: [0]}}\n")
    folder = tmp_path / "results" / "toy-smoke"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps(
        {"cells": {"a": {"wall_s": 30.0}, "b": {"wall_s": 60.0}}}))
    monkeypatch.chdir(tmp_path)
    text = listing()
    assert "experiments/toy.yaml  A toy" in text
    assert "paper: not recorded here" in text
    assert "smoke: 2 cells, 1 min 30 s of compute (results/toy-smoke)" in text
    empty = listing(Path("nowhere"))
    assert "no spec in" in empty and "nowhere" in empty
