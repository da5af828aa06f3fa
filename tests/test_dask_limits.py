"""The wall limit on a dask cluster (issue 42): a solver that never returns, on a worker,
is recorded as timed out soon after its limit; its worker is restarted by its nanny and the
run goes on, the other cells done. The hanging solver comes from an outside package the
workers find through its entry point, as a user's plug-in would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import TINY_SPEC
from tests.test_cluster import Dask

pytest.importorskip("dask.distributed")

NO_HANG_S = 240         # a bound that only a hang exceeds (the solver sleeps for an hour)
LIMIT_S = 15            # the budget's limit: every cell's, so the other solver's cells (a
#                         fresh worker after the restart warms its kernels up on their clock)
#                         must finish inside it on a loaded machine; 4 s did not, under load


@pytest.fixture
def no_nanny(tmp_path):
    """A `dask scheduler` and `dask worker --no-nanny` processes, killed in the end."""
    d = Dask(tmp_path)
    try:
        yield d
    finally:
        d.close()


def _hang_package(where):
    (where / "hang_plugin.py").write_text(textwrap.dedent('''\
        """A solver that never returns (drocli.run.misbehaving's), under an outside name."""
        from drocli.plugins import registry
        from drocli.run.misbehaving import numba_loop, sleeps

        registry.solver("hang_sleeps", family="gdro", description="sleeps for an hour",
                        reference="none")(sleeps)
        registry.solver("hang_numba", family="gdro", description="loops in a kernel",
                        reference="none")(numba_loop)
        '''))
    dist = where / "hang_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hang-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[drocli.plugins]\nsolver.hang_sleeps = hang_plugin\nsolver.hang_numba = hang_plugin\n")


@pytest.mark.parametrize("solver", ["hang_sleeps", "hang_numba"])
def test_a_hang_on_a_dask_worker_is_killed_and_the_run_goes_on(tmp_path, solver):
    _hang_package(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("{name: aleg, label: ALEG}",
                                      f"{{name: {solver}, label: HANG}}")
                    .replace("checkpoints: 8}", f"checkpoints: 8, max_time_s: {LIMIT_S}}}")
                    .replace("solver: ALEG", "solver: HANG"))
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "drocli", "run", str(spec), "--out", str(out),
                          "-q", "-j", "1", "--backend", "dask"], env=env, capture_output=True,
                         text=True, timeout=NO_HANG_S)
    assert time.monotonic() - t0 < NO_HANG_S
    assert res.returncode == 4, res.stderr[-2000:]      # cells past their limit: exit 4
    man = json.loads((out / "manifest.json").read_text())
    by = sorted((s["label"], s["status"], s.get("stopped")) for s in man["cells"].values())
    assert by == [("HANG", "timeout", "killed")] * 2 + [("SMD", "done", None)] * 2
    hung = [s for s in man["cells"].values() if s["label"] == "HANG"]
    assert all("was restarted" in s["error"] and f"limit of {LIMIT_S} s" in s["error"]
               for s in hung)
    done = [s for s in man["cells"].values() if s["label"] == "SMD"]
    assert all(s["worker"]["address"].startswith("tcp://") for s in done)


def test_a_hang_on_a_worker_without_nanny_stops_the_run_in_one_line(no_nanny, tmp_path):
    """A worker started with --no-nanny cannot be restarted: the run stops at the hang's
    limit with one line naming the cell, the worker and the fix, exit 2, the cells already
    back kept."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    _hang_package(plugin)
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("{name: aleg, label: ALEG}",
                                      "{name: hang_sleeps, label: HANG}")
                    .replace("checkpoints: 8}", "checkpoints: 8, max_time_s: 3}")
                    .replace("solver: ALEG", "solver: HANG"))
    no_nanny.scheduler()
    no_nanny.worker(pythonpath=plugin)
    no_nanny.workers(1)
    out = tmp_path / "res"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(plugin), *filter(None, [os.environ.get("PYTHONPATH")])])}
    res = subprocess.run([sys.executable, "-m", "drocli", "run", str(spec), "--out", str(out),
                          "-q", "--backend", "dask", "--scheduler", no_nanny.address],
                         env=env, capture_output=True, text=True, timeout=NO_HANG_S)
    err = res.stderr.strip()
    assert res.returncode == 2 and len(err.splitlines()) == 1, err
    assert "ran past its limit of 3 s" in err and "could not be restarted" in err, err
    assert "--no-nanny" in err and "cells are kept" in err, err
