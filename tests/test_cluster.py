"""A real dask cluster without a shared file system: a `dask scheduler` and a `dask worker`
on 127.0.0.1, the worker in its own mount namespace where the client's results folder is
hidden under an empty tmpfs. The records must equal those of `-j 1`, and the cells must
have run on the worker."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import call

pytest.importorskip("dask.distributed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _can_unshare() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0


def _wait_port(port: int, timeout: float = 60.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture
def cluster(tmp_path):
    """(address, hidden folder): a scheduler and one single-thread worker that cannot see
    `hidden` (its own mount namespace mounts an empty tmpfs there)."""
    if not _can_unshare():
        pytest.skip("needs root and unshare -m to hide the results folder from the worker")
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    hidden = tmp_path / "client"
    hidden.mkdir()
    port = _free_port()
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=env)]
    try:
        _wait_port(port)
        worker = (f"mount -t tmpfs tmpfs {hidden} && cd {hidden} && exec {sys.executable} -m "
                  f"distributed.cli.dask_worker tcp://127.0.0.1:{port} --nthreads 1 "
                  f"--nworkers 1 --no-dashboard --local-directory {hidden}/scratch")
        procs.append(subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh",
                                       "-c", worker], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, env=env))
        from dask.distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
        yield f"tcp://127.0.0.1:{port}", hidden
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_cluster_without_shared_file_system(cluster, tiny_spec, tmp_path):
    address, hidden = cluster
    out, local = hidden / "res", tmp_path / "local"
    assert call("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler", address,
                "-q") == 0
    assert call("run", tiny_spec, "--out", local, "-j", "1", "-q") == 0
    key = ["cell", "step", "metric"]
    a = pd.read_csv(out / "records.csv.gz").sort_values(key).reset_index(drop=True)
    b = pd.read_csv(local / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert len(a) == len(b) > 0
    assert a["cell"].tolist() == b["cell"].tolist()
    assert a["value"].tolist() == b["value"].tolist()
    statuses = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    assert statuses and all(st["pid"] != os.getpid() for st in statuses)   # ran on the worker
    assert sorted(p.name for p in hidden.iterdir()) == ["res"]              # worker wrote none


def test_unreachable_scheduler_exits_2_quickly(tiny_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DROCLI_DASK_TIMEOUT", "2")
    port = _free_port()                         # nothing listens there
    out = tmp_path / "res"
    t0 = time.time()
    code = call("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler",
                f"tcp://127.0.0.1:{port}", "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert time.time() - t0 < 30 and len(err.splitlines()) == 1
    assert "cannot reach the dask scheduler" in err and "--scheduler" in err
    assert not Path(out).exists()                      # refused before anything is written


def test_jobqueue_cluster_as_documented(tiny_spec, tmp_path):
    """The SLURM / PBS recipe of docs/clusters.md with dask-jobqueue's local job class (the same
    JobQueueCluster machinery, jobs started as local processes instead of sbatch/qsub):
    drocli runs against its scheduler address and gets the records of -j 1."""
    jq = pytest.importorskip("dask_jobqueue.local")
    cluster = jq.LocalCluster(cores=1, processes=1, memory="2GB", walltime="00:10:00",
                              log_directory=str(tmp_path / "logs"))
    try:
        cluster.scale(jobs=1)
        from dask.distributed import Client

        with Client(cluster.scheduler_address, timeout=30) as client:
            client.wait_for_workers(1, timeout=120)
        out, local = tmp_path / "res", tmp_path / "local"
        assert call("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler",
                    cluster.scheduler_address, "-q") == 0
    finally:
        cluster.close()
    assert call("run", tiny_spec, "--out", local, "-j", "1", "-q") == 0
    key = ["cell", "step", "metric"]
    a = pd.read_csv(out / "records.csv.gz").sort_values(key).reset_index(drop=True)
    b = pd.read_csv(local / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert a["value"].tolist() == b["value"].tolist()
