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


def _documented_commands() -> str:
    """The SLURM / PBS command block of docs/clusters.md, as written."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "clusters.md").read_text()
    start = text.index("    cat > dask_cluster.py")
    block = []
    for line in text[start:].splitlines():
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block).strip() + "\n"


def test_jobqueue_cluster_as_documented(tiny_spec, tmp_path):
    """The SLURM / PBS lines of docs/clusters.md run as written, with dask-jobqueue's local job
    class in place of SLURMCluster (the same JobQueueCluster machinery, jobs started as local
    processes instead of sbatch/qsub), one job, the tiny spec, the scheduler on 127.0.0.1:
    drocli gets the records of -j 1, and killing the cluster script ends its jobs."""
    import signal

    pytest.importorskip("dask_jobqueue.local")
    commands = _documented_commands()
    for old, new in [("from dask_jobqueue import SLURMCluster",
                      "from dask_jobqueue.local import LocalCluster as SLURMCluster"),
                     ("cluster.scale(jobs=20)", "cluster.scale(jobs=1)"),
                     ("experiments/omd_tch_fl_mnist.yaml", str(tiny_spec))]:
        assert commands.count(old) == 1, old
        commands = commands.replace(old, new)
    bin_dir = str(Path(sys.executable).parent)          # `python` and `drocli` of this install
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "DASK_JOBQUEUE__LOCAL__SCHEDULER_OPTIONS": "{'host': '127.0.0.1'}"}
    shell = subprocess.Popen(["bash", "-c", commands], cwd=tmp_path, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        out, err = shell.communicate(timeout=240)
        assert shell.returncode == 0, err
        assert (tmp_path / "scheduler.txt").read_text().startswith("tcp://127.0.0.1:")
        t0 = time.time()                # the cluster script closes its jobs once killed
        while time.time() - t0 < 60 and _group_alive(shell.pid):
            time.sleep(0.2)
        assert not _group_alive(shell.pid), "the cluster or its jobs outlived `kill`"
    finally:
        if _group_alive(shell.pid):
            os.killpg(shell.pid, signal.SIGKILL)
        if shell.poll() is None:
            shell.kill()
            shell.wait(timeout=20)
    assert "records:" in out, err
    local = tmp_path / "local"
    assert call("run", tiny_spec, "--out", local, "-j", "1", "-q") == 0
    key = ["cell", "step", "metric"]
    a = pd.read_csv(tmp_path / "results" / "tiny" / "records.csv.gz").sort_values(key)
    b = pd.read_csv(local / "records.csv.gz").sort_values(key)
    assert len(a) == len(b) > 0
    assert a["value"].tolist() == b["value"].tolist()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- clusters that lose workers, schedulers or versions (issue 27) ----------------------------
# A scheduler and workers as subprocesses on 127.0.0.1 (`--no-nanny`: the worker's pid is the
# process's), drocli run as a subprocess too: its real stderr is read, and every wait is
# bounded. Everything started is killed in the end.

BLOCK_DROCLI = '''\
import sys


class _NoDrocli:
    def find_spec(self, name, path=None, target=None):
        if name == "drocli" or name.startswith("drocli."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoDrocli())
'''


class Dask:
    """`dask scheduler` and `dask worker` processes; `close()` kills them all."""

    def __init__(self, cwd: Path):
        self.cwd = cwd                  # not the checkout: `python -m` puts the cwd first
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []

    def scheduler(self) -> subprocess.Popen:
        proc = self._start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                            str(self.port), "--no-dashboard"], {})
        _wait_port(self.port)
        return proc

    def worker(self, pythonpath: Path | None = None) -> subprocess.Popen:
        """A single-thread worker; with `pythonpath` first on its sys.path."""
        env = {"PYTHONPATH": os.pathsep.join(
            [str(pythonpath), *filter(None, [os.environ.get("PYTHONPATH")])])} \
            if pythonpath else {}
        return self._start(["distributed.cli.dask_worker", self.address, "--nthreads", "1",
                            "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"], env)

    def _start(self, args, env) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env={**os.environ, **env},
                                cwd=self.cwd)
        self.procs.append(proc)
        return proc

    def workers(self, n: int, timeout: float = 60) -> dict[int, str]:
        """pid -> address once `n` workers are connected."""
        from dask.distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=timeout)
            return {pid: a for a, pid in client.run(os.getpid).items()}

    def close(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait(timeout=20)


@pytest.fixture
def dask_procs(tmp_path):
    d = Dask(tmp_path)
    try:
        yield d
    finally:
        d.close()


def _drocli(*args, env=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "drocli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


FAKE_VERSIONS = '''
import importlib.metadata as _metadata

_real = _metadata.version


def _version(name):
    """Another environment's toolz: distributed sees mismatched versions."""
    return "0.0.1" if name == "toolz" else _real(name)


_metadata.version = _version
'''


def _no_drocli(tmp_path, extra: str = "") -> Path:
    """A folder whose sitecustomize makes `import drocli` fail as if it were not installed
    (and runs `extra`, e.g. FAKE_VERSIONS: another environment's package versions)."""
    folder = tmp_path / "no_drocli"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(BLOCK_DROCLI + extra)
    return folder


def _other_drocli(tmp_path) -> Path:
    """A copy of drocli with one more line: another source digest (another commit)."""
    import drocli

    folder = tmp_path / "other_drocli"
    shutil.copytree(Path(drocli.__file__).parent, folder / "drocli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "drocli" / "__init__.py", "a") as f:
        f.write("# another commit\n")
    return folder


def _many_cells(tiny_spec: Path, seeds: int = 60) -> Path:
    """The tiny spec with `seeds` seeds (2 x seeds short cells)."""
    spec = tiny_spec.with_name("many.yaml")
    spec.write_text(tiny_spec.read_text().replace(
        "seeds: [0, 1]", f"seeds: {list(range(seeds))}").replace("n_train: 40", "n_train: 3000"))
    return spec


def _wait_for(predicate, timeout: float = 60) -> None:
    t0 = time.time()
    while not predicate():
        assert time.time() - t0 < timeout, "timed out"
        time.sleep(0.05)


def _one_line(res: subprocess.CompletedProcess) -> str:
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("extra", ["", FAKE_VERSIONS], ids=["same_versions", "other_versions"])
def test_worker_without_drocli_is_refused_by_name(dask_procs, tiny_spec, tmp_path, extra):
    """A cluster with one good worker and one that cannot import drocli: refused on connect,
    exit 2, one line naming the bad worker and the fix; nothing written; the bad worker is
    not killed by a task (it never gets one). A worker in another environment (other
    package versions too): distributed's table of mismatched versions (ten lines) came
    before drocli's one line (issue 43); it is silenced."""
    dask_procs.scheduler()
    dask_procs.worker()
    bad = dask_procs.worker(_no_drocli(tmp_path, extra))
    address = dask_procs.workers(2)[bad.pid]
    out = tmp_path / "res"
    res = _drocli("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler",
                  dask_procs.address, "-q", timeout=90)
    err = _one_line(res)
    assert res.returncode == 2, err
    assert f"the dask worker {address} cannot import drocli" in err, err
    assert "install the client's drocli (same commit) on every worker" in err
    assert not out.exists()
    assert bad.poll() is None                       # still alive: no task reached it


def test_worker_running_another_drocli_is_refused_by_name(dask_procs, tiny_spec, tmp_path):
    """A worker whose drocli source differs from the client's (another commit): exit 2, one
    line naming it and both versions; nothing written."""
    dask_procs.scheduler()
    other = dask_procs.worker(_other_drocli(tmp_path))
    address = dask_procs.workers(1)[other.pid]
    out = tmp_path / "res"
    res = _drocli("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler",
                  dask_procs.address, "-q", timeout=90)
    err = _one_line(res)
    assert res.returncode == 2, err
    assert f"the dask worker {address} runs another drocli" in err, err
    assert not out.exists()


def test_task_refused_by_a_worker_without_drocli(tmp_path):
    """The task drocli sends is pickled by value: a worker without drocli (one that joins
    after the probe) unpickles and runs it, and it raises the refusal, not an unpickling
    error that would end the worker."""
    import cloudpickle

    from drocli.run import backends

    blob = cloudpickle.dumps((backends.drocli_task, backends.worker_check))
    script = ("import pickle, sys\n"
              "task, check = pickle.loads(sys.stdin.buffer.read())\n"
              "print(check('x'))\n"
              "try:\n    task(b'', 'x')\n"
              "except RuntimeError as e:\n    print(str(e).split(chr(9))[0])\n")
    res = subprocess.run([sys.executable, "-c", script], input=blob, capture_output=True,
                         timeout=60, env={**os.environ, "PYTHONPATH": str(_no_drocli(tmp_path))})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.decode().splitlines()
    assert lines[0].startswith("cannot import drocli (ModuleNotFoundError")
    assert lines[1] == backends.REFUSED


def test_no_worker_left_stops_with_cells_kept(dask_procs, tiny_spec, tmp_path):
    """Every worker gone mid-run: after DROCLI_DASK_NO_WORKER_TIMEOUT seconds one line says
    so with the cells kept, exit 2; a re-run with a worker resumes, and each cell's status
    in the manifest names the worker that ran it and its drocli (version, source digest)."""
    from drocli.run.resume import source_digest

    spec = _many_cells(tiny_spec)
    dask_procs.scheduler()
    worker = dask_procs.worker()
    dask_procs.workers(1)
    out = tmp_path / "res"
    run = subprocess.Popen([sys.executable, "-m", "drocli", "run", str(spec), "--out", str(out),
                            "--backend", "dask", "--scheduler", dask_procs.address, "-q"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "DROCLI_DASK_NO_WORKER_TIMEOUT": "2"})
    dask_procs.procs.append(run)
    t0 = time.time()
    _wait_for(lambda: any((out / "cells").glob("*.json")) if (out / "cells").is_dir()
              else False)
    worker.kill()
    _, err = run.communicate(timeout=60)
    assert time.time() - t0 < 60
    err = err.strip()
    assert run.returncode == 2 and len(err.splitlines()) == 1, err
    assert "no dask worker has been connected" in err and "for 2 s" in err, err
    kept = len(list((out / "cells").glob("*.json")))
    assert f"{kept} of 120 cells are kept" in err and 0 < kept < 120, err
    dask_procs.worker()
    dask_procs.workers(1)
    res = _drocli("run", spec, "--out", out, "--backend", "dask", "--scheduler",
                  dask_procs.address, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{kept} already done, {120 - kept} to run" in res.stderr
    cells = json.loads((out / "manifest.json").read_text())["cells"]
    ran = [st["worker"] for st in cells.values() if st.get("worker")]
    assert len(ran) == 120
    assert {w["source"] for w in ran} == {source_digest()}
    assert all(w["address"].startswith("tcp://127.0.0.1:") and w["drocli"] for w in ran)


def test_lost_scheduler_is_one_line(dask_procs, tiny_spec, tmp_path):
    """The scheduler killed mid-run: one line (no distributed traceback) saying it was lost
    and how many cells are kept, exit 2."""
    spec = _many_cells(tiny_spec)
    scheduler = dask_procs.scheduler()
    dask_procs.worker()
    dask_procs.workers(1)
    out = tmp_path / "res"
    run = subprocess.Popen([sys.executable, "-m", "drocli", "run", str(spec), "--out", str(out),
                            "--backend", "dask", "--scheduler", dask_procs.address, "-q"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dask_procs.procs.append(run)
    _wait_for(lambda: any((out / "cells").glob("*.json")) if (out / "cells").is_dir()
              else False)
    scheduler.kill()
    _, err = run.communicate(timeout=60)
    err = err.strip()
    assert run.returncode == 2 and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "CommClosedError" not in err
    kept = len(list((out / "cells").glob("*.json")))
    assert f"the dask scheduler at {dask_procs.address} was lost; {kept} of 120 cells are " \
           "kept" in err, err
    assert "re-run the same command to resume" in err


def test_no_worker_timeout_validated(tiny_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DROCLI_DASK_NO_WORKER_TIMEOUT", "-1")
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--backend", "dask", "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "DROCLI_DASK_NO_WORKER_TIMEOUT" in err and not out.exists()


def test_empty_scheduler_refused(tiny_spec, tmp_path, capsys):
    """`--scheduler "$(cat scheduler.txt)"` with the file still empty: refused, not a local
    cluster."""
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--backend", "dask", "--scheduler", "", "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "the scheduler address is empty" in err and not out.exists()
