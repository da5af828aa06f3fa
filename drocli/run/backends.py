"""Where cells run beyond local processes: the dask backend (issue 30 splits the runner into
orchestration, drocli.run.runner, one cell's run, drocli.run.worker, and backends, here).

A dask cluster can lose what drocli counts on; each case ends the run with one line, the
cells already back kept in the results folder (a re-run resumes), exit 2:

- a worker that cannot import drocli, or runs another drocli (its source digest,
  `drocli.run.resume.source_digest`, differs from the client's): refused by name, on connect
  (every worker is probed with `client.run`) and for a worker that joins later (each task
  checks its worker before it unpickles the cell, so such a worker no longer dies on it);
- no worker connected for DROCLI_DASK_NO_WORKER_TIMEOUT seconds (default 60);
- the scheduler lost (distributed's loggers are kept quiet while drocli holds a client,
  so no tracebacks come before that line);
- a task that fails on the cluster itself (a worker killed by it again and again).

Each finished cell's status records the worker that ran it: its address, drocli version,
source digest and git commit."""

from __future__ import annotations

import logging
import os
import time
import warnings
from pathlib import Path

from drocli.errors import DrocliError
from drocli.run.limits import env_seconds

POLL_S = 0.5                  # how often the client looks at its tasks and the workers
TASK_S = 0.5                  # a task of several cells lasts about this long, once the
#                               cells' duration is known (per-task overhead spread thin)
MAX_BATCH = 256               # cells in one task at most
IN_FLIGHT = 2                 # tasks submitted and not yet collected, per worker
FETCH_S = 10.0                # first wait for a finished task's value (doubled each retry)
_AGAIN = object()
REFUSED = "drocli-worker-refused"    # marks a task refused by its worker's check
STARTED = "drocli-cell-started"      # the scheduler's event topic of cells starting
FIX_WORKER = ("install the client's drocli (same commit) on every worker, or stop that "
              "worker; then re-run")
_IDENTITY: dict | None = None


def dask_timeout() -> float:
    """Seconds to wait for the dask scheduler: DROCLI_DASK_TIMEOUT (default 10)."""
    return env_seconds("DROCLI_DASK_TIMEOUT", 10)


def no_worker_timeout() -> float:
    """Seconds a run waits while no worker is connected: DROCLI_DASK_NO_WORKER_TIMEOUT
    (default 60)."""
    return env_seconds("DROCLI_DASK_NO_WORKER_TIMEOUT", 60)


def check_settings(scheduler: str | None = None) -> None:
    """Refuse bad dask settings before anything is read or written: the timeouts, and a
    --scheduler given empty (an address file that stayed empty must not turn into a local
    cluster on the login node)."""
    dask_timeout()
    no_worker_timeout()
    if scheduler is not None and not scheduler.strip():
        raise DrocliError("the scheduler address is empty", key="--scheduler",
                          fix="give the address the cluster printed, e.g. tcp://HOST:8786, "
                              "or leave --scheduler out for a local cluster")


def identity() -> dict:
    """The drocli this process runs: version, source digest and git commit (of drocli's
    checkout, when it is one); computed once."""
    global _IDENTITY
    if _IDENTITY is None:
        from drocli import __version__
        from drocli.results.tree import head
        from drocli.run.resume import source_digest

        _IDENTITY = {"drocli": __version__, "source": source_digest(),
                     "git_commit": head(Path(__file__).resolve().parents[1])}
    return _IDENTITY


def describe(ident: dict) -> str:
    commit = ident.get("git_commit")
    return (f"drocli {ident.get('drocli')}, source {str(ident.get('source'))[:12]}"
            + (f", commit {commit[:12]}" if commit else ""))


def _stamped(out, address: str | None):
    """A cell's output whose status names the worker that ran it."""
    if isinstance(out, tuple) and len(out) == 4 and isinstance(out[2], dict):
        cell_id, rows, status, artifacts = out
        out = cell_id, rows, {**status, "worker": {"address": address, **identity()}}, artifacts
    return out


def run_payload(payload: bytes, address: str | None):
    """On a worker that passed the check: the call `payload` holds (pickled on the client);
    each cell's status gains the worker that ran it."""
    import pickle

    func, args = pickle.loads(payload)
    out = func(*args)
    if isinstance(out, dict) and "cells" in out:
        out["cells"] = [_stamped(o, address) for o in out["cells"]]
        return out
    return _stamped(out, address)


def _announce(cell) -> None:
    """Tell the scheduler that this worker starts `cell`, and wait for it to have heard: a
    solver that then holds the interpreter (a compiled loop) cannot delay the news, and the
    client times the cell's wall limit from it. Outside a dask worker, nothing."""
    try:
        from distributed import get_client, get_worker

        address = get_worker().address
    except (ImportError, ValueError):
        return
    try:
        get_client().log_event(STARTED, {"cell": cell.id, "worker": address})
    except Exception:           # noqa: BLE001 -- the cell still runs, under the monitor's stop
        pass


def run_cells(cells, blas_threads: int) -> dict:
    """One task's cells, one after another on a worker: their outputs and the seconds they
    took together (the client sizes later tasks from it). Each cell's start is announced
    first (its wall limit is watched by the client, which restarts a worker whose cell
    does not return)."""
    from drocli.run.worker import _run_remote

    t0 = time.perf_counter()
    outs = []
    for c in cells:
        _announce(c)
        outs.append(_run_remote(c, blas_threads))
    return {"cells": outs, "seconds": time.perf_counter() - t0}


def next_batch(per_cell_s: float | None, remaining: int, workers: int) -> int:
    """Cells in the next task: one until a task has come back, then as many as fill TASK_S
    at the measured seconds per cell, at most MAX_BATCH, and never more than an even share
    of what is left over IN_FLIGHT tasks per worker (the last tasks stay short, so no
    worker waits on another's long tail)."""
    if per_cell_s is None or remaining <= 0:
        return 1
    fill = int(TASK_S / max(per_cell_s, 1e-6))
    share = -(-remaining // (IN_FLIGHT * max(1, workers)))
    return max(1, min(fill, MAX_BATCH, share))


# Sent by value (cloudpickle pickles functions of a module it cannot import by value), so a
# worker without drocli, or with another one, runs them and says so instead of failing to
# unpickle a task and exiting.
_BY_VALUE = '''
def worker_check(source):
    """None when this worker runs the client's drocli, else why not."""
    try:
        from drocli.run.backends import describe, identity
        mine = identity()
    except BaseException as e:
        return f"cannot import drocli ({type(e).__name__}: {e})"
    if mine["source"] != source:
        return f"runs another drocli ({describe(mine)})"
    return None


def drocli_task(payload, source):
    """A drocli call on a worker, after the worker's check."""
    try:
        from distributed import get_worker
        address = get_worker().address
    except BaseException:
        address = None
    why = worker_check(source)
    if why is not None:
        raise RuntimeError(f"{REFUSED}\\t{address}\\t{why}")
    from drocli.run.backends import run_payload
    return run_payload(payload, address)


def kill_worker(dask_worker=None):
    """On a nanny: kill its worker process at once (the nanny starts a fresh one)."""
    import os
    import signal
    process = getattr(getattr(dask_worker, "process", None), "process", None)
    pid = getattr(process, "pid", None)
    if not pid:
        return "no worker process"
    os.kill(pid, signal.SIGKILL)
    return "killed"
'''
_NAMESPACE = {"__name__": "drocli_by_value", "REFUSED": REFUSED}
exec(compile(_BY_VALUE, "<drocli.run.backends by value>", "exec"), _NAMESPACE)
worker_check, drocli_task = _NAMESPACE["worker_check"], _NAMESPACE["drocli_task"]
kill_worker = _NAMESPACE["kill_worker"]


def _refused(address, why: str) -> DrocliError:
    if why.startswith("runs another"):
        why += f", not the client's source {identity()['source'][:12]}"
    return DrocliError(f"the dask worker {address} {why}", key="--scheduler", fix=FIX_WORKER)


class _Quiet:
    """distributed's loggers (and asyncio's, tornado's) silenced while a client is held: a
    lost scheduler or worker is reported in one line, not in pages of tracebacks. Its
    version-mismatch warning too: a worker in another environment (one without drocli)
    made the client print a table of package versions, ten lines before drocli's own line
    refusing the worker; drocli checks its workers itself (`worker_check`)."""

    NAMES = ("distributed", "tornado", "asyncio")

    def __init__(self):
        self.saved = {}
        self.warnings = None

    def __enter__(self):
        for name in [*self.NAMES, *logging.root.manager.loggerDict]:
            if name.split(".")[0] in self.NAMES:
                log = logging.getLogger(name)
                self.saved.setdefault(name, log.level)
                log.setLevel(logging.CRITICAL + 1)
        self.warnings = warnings.catch_warnings()
        self.warnings.__enter__()
        quiet_version_warnings()
        return self

    def __exit__(self, *exc):
        for name, level in self.saved.items():
            logging.getLogger(name).setLevel(level)
        if self.warnings is not None:
            self.warnings.__exit__(*exc)
            self.warnings = None


def quiet_version_warnings() -> None:
    """Ignore distributed's warning that the client, scheduler and workers run different
    package versions (Client warns it on connect, from its event-loop thread: the filter
    is the process's)."""
    warnings.filterwarnings("ignore", message="Mismatched versions found")
    try:
        from distributed.versions import VersionMismatchWarning
    except ImportError:
        return
    warnings.filterwarnings("ignore", category=VersionMismatchWarning)


class _Watch:
    """The wall limits of cells on a cluster. Each cell's start is an event on the
    scheduler (`run_cells` announces it and waits until it is heard); a cell not back
    GRACE_S after its limit (drocli.run.limits) from when this client heard of its start has
    its task cancelled and its worker restarted by the worker's nanny: a solver that never
    returns (a loop in Python or in a compiled kernel, a sleep) cannot be stopped inside
    the worker. The cell is recorded as timed out, and the other cells of its task go out
    again in a task of their own. A worker that cannot be restarted (no nanny) stops the
    run in one line, the cells already back kept."""

    def __init__(self, dask: Dask, tasks: dict):
        self.dask, self.tasks = dask, tasks
        self.started: dict[str, tuple[float, str]] = {}    # cell id -> (heard, worker)
        self.restarts = 0                       # workers restarted so far (task keys)

    def _heard(self, event) -> None:          # in the client's event loop
        msg = event[1] if isinstance(event, tuple) and len(event) == 2 else event
        if isinstance(msg, dict) and "cell" in msg:
            self.started[msg["cell"]] = (time.monotonic(), str(msg.get("worker")))

    def listen(self) -> None:
        self.dask.client.subscribe_topic(STARTED, self._heard)

    def stop(self) -> None:
        try:
            self.dask.client.unsubscribe_topic(STARTED)
        except Exception:               # noqa: BLE001 -- a lost scheduler: nothing to undo
            pass

    def overdue(self):
        """(outputs of cells killed now, lists of cells to send again, futures dropped)."""
        from drocli.run.limits import GRACE_S, cell_limit

        now = time.monotonic()
        values, again, drop = [], [], []
        for key, (fut, chunk) in list(self.tasks.items()):
            if fut.done():
                continue
            running = [c for c in chunk if c.id in self.started]
            if not running:
                continue
            cell = running[-1]              # a task runs its cells in order
            heard, worker = self.started[cell.id]
            if now <= heard + cell_limit(cell) + GRACE_S:
                continue
            fut.cancel()
            del self.tasks[key]
            drop.append(fut)
            self._restart(worker, cell)
            for c in chunk:                 # heard of on the restarted worker: stale now
                self.started.pop(c.id, None)
            for other in list(self.started):
                if self.started[other][1] == worker:
                    del self.started[other]
            self.restarts += 1
            values.append(_killed(cell, worker, now - heard))
            rest = [c for c in chunk if c.id != cell.id]
            if rest:
                again.append(rest)
        return values, again, drop

    def _restart(self, worker: str, cell) -> None:
        from drocli.run.limits import cell_limit

        try:                            # the nanny kills its worker, then starts another
            res = self.dask.client.run(kill_worker, workers=[worker], nanny=True,
                                       on_error="return")
            status = (res or {}).get(worker, "no nanny answered")
        except Exception as e:          # noqa: BLE001 -- any failure: say it, stop
            status = type(e).__name__
        if status != "killed":
            status = status if isinstance(status, str) else type(status).__name__
            raise DrocliError(
                f"cell {cell.id} ran past its limit of {cell_limit(cell):g} s on dask worker "
                f"{worker}, which could not be restarted ({status}); {self.dask.kept} of "
                f"{self.dask.total} cells are kept", key="--scheduler",
                fix="start workers with a nanny (no --no-nanny), then re-run to resume")


def _killed(cell, worker: str, seconds: float) -> tuple:
    """What a cell whose worker was restarted at its limit hands back: the local pool's
    timed-out output (drocli.run.pool.lost), naming the worker."""
    from drocli.run.limits import killed_at_limit
    from drocli.run.pool import lost

    cell_id, rows, status, artifacts = lost(
        cell, "timeout", f"{killed_at_limit(cell)}; its dask worker {worker} was restarted",
        seconds)
    return cell_id, rows, {**status, "worker": {"address": worker}}, artifacts


class Dask:
    """A dask client for one run: the scheduler at `scheduler` / DROCLI_DASK_SCHEDULER, or a
    LocalCluster of `n_jobs` single-thread worker processes. `total` cells in the run,
    `kept` of them finished before it (for the line that stops it)."""

    def __init__(self, n_jobs: int, scheduler: str | None, *, total: int, kept: int):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise DrocliError("the dask backend needs dask.distributed", key="--backend",
                              fix="pip install 'drocli[dask]'") from None
        self.total, self.kept = total, kept
        self.no_worker_s = no_worker_timeout()
        self.source = identity()["source"]
        self.checked: set[str] = set()
        self.quiet = _Quiet().__enter__()
        self.cluster = None
        self.address = scheduler or os.environ.get("DROCLI_DASK_SCHEDULER")
        try:
            if self.address:
                wait = dask_timeout()
                try:
                    self.client = Client(self.address, timeout=wait)
                except (OSError, TimeoutError, ValueError) as e:
                    raise DrocliError(f"cannot reach the dask scheduler at {self.address} "
                                      f"within {wait:g} s ({type(e).__name__})",
                                      key="--scheduler", fix="start it (`dask scheduler`), "
                                      "check the address, or raise DROCLI_DASK_TIMEOUT"
                                      ) from None
            else:
                self.cluster = LocalCluster(n_workers=max(1, n_jobs), threads_per_worker=1,
                                            processes=True, dashboard_address=None,
                                            silence_logs=logging.ERROR)
                self.client = Client(self.cluster)
                self.address = self.cluster.scheduler_address
            self._check_workers()
        except BaseException:
            self.close()
            raise

    # -- the workers ------------------------------------------------------------------------
    def _workers(self) -> set[str]:
        """The workers the scheduler knows now (raises the lost-scheduler line)."""
        try:
            info = self.client.scheduler_info(n_workers=-1)
        except TypeError:               # older distributed: no n_workers
            info = self.client.scheduler_info()
        except Exception:               # noqa: BLE001 -- any failure to ask: it is gone
            raise self._lost("the dask scheduler at {address} was lost") from None
        return set((info or {}).get("workers") or {})

    def _check_workers(self) -> set[str]:
        """Probe the workers not seen before (`client.run`, by value); a worker that cannot
        run this drocli stops the run with its name. The workers now connected."""
        workers = self._workers()
        new = sorted(workers - self.checked)
        if new:
            try:
                answers = self.client.run(worker_check, self.source, workers=new,
                                          on_error="return")
            except Exception:           # noqa: BLE001 -- a worker gone meanwhile: next time
                return workers
            for address in new:
                why = answers.get(address)
                if isinstance(why, str):
                    raise _refused(address, why)
                if why is None and address in answers:
                    self.checked.add(address)
        return workers

    def _lost(self, what: str) -> DrocliError:
        kept = f"{self.kept} of {self.total} cells are kept"
        return DrocliError(what.format(address=self.address) + f"; {kept}",
                           key="--scheduler", fix="re-run the same command to resume once "
                           "the cluster is back")

    # -- running ----------------------------------------------------------------------------
    def _submit(self, func, *args, key: str | None = None):
        import cloudpickle

        payload = cloudpickle.dumps((func, args))
        return self.client.submit(drocli_task, payload, self.source, pure=False, key=key)

    def _wait(self, futures, more=None, watch=None):
        """(future, value) as each finishes, checking every POLL_S the scheduler, the workers
        (new ones probed) and how long no worker has been connected. A value that cannot be
        fetched in time (its worker died just after the task: the scheduler recomputes it)
        is waited for again, with no worker counted meanwhile. `more()`, called once the
        finished values are consumed, returns further futures to wait for. `watch()`,
        called at each poll, returns (values to hand on as (None, value), futures to add,
        futures no longer waited for)."""
        from distributed import wait

        pending = set(futures)
        tries: dict = {}
        alone_since = None
        while pending:
            try:
                done, pending = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            except Exception:           # noqa: BLE001 -- the connection went
                raise self._lost("the dask scheduler at {address} was lost") from None
            for fut in done:
                tries[fut.key] = tries.get(fut.key, 0) + 1
                value = self._result(fut, FETCH_S * 2 ** min(tries[fut.key] - 1, 6))
                if value is _AGAIN:
                    pending.add(fut)
                else:
                    yield fut, value
            if watch is not None:
                values, add, drop = watch()
                for value in values:
                    yield None, value
                pending = (pending - set(drop)) | set(add)
            if more is not None:
                pending |= set(more())
            if not pending:
                return
            if self.client.status not in ("running", "newly-created"):
                raise self._lost("the dask scheduler at {address} was lost")
            workers = self._check_workers()
            if workers:
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > self.no_worker_s:
                raise self._lost(f"no dask worker has been connected to {{address}} for "
                                 f"{self.no_worker_s:g} s (DROCLI_DASK_NO_WORKER_TIMEOUT)")

    def _result(self, fut, timeout: float):
        """The future's value, _AGAIN when it cannot be fetched within `timeout` seconds, or
        the one line that stops the run."""
        if fut.status == "cancelled":
            raise self._lost("the dask scheduler at {address} was lost")
        if fut.status == "error":
            exc = fut.exception()
            text = str(exc)
            if isinstance(exc, RuntimeError) and text.startswith(REFUSED + "\t"):
                _, address, why = text.split("\t", 2)
                raise _refused(address, why)
            if isinstance(exc, DrocliError):
                raise exc
            raise self._lost(f"a task failed on the dask cluster at {{address}} "
                             f"({type(exc).__name__}: {' '.join(text.split())[:200]})")
        try:
            return fut.result(timeout=timeout)
        except TimeoutError:
            return _AGAIN
        except Exception as e:          # noqa: BLE001 -- fetching it failed, not the task
            if isinstance(e, OSError) or self.client.status != "running":
                raise self._lost("the dask scheduler at {address} was lost") from None
            raise self._lost(f"a result could not be fetched from the dask cluster at "
                             f"{{address}} ({type(e).__name__})") from None

    def call(self, func, *args):
        """func(*args) on a worker (e.g. the data preflight), waited for like the cells."""
        for _, value in self._wait([self._submit(func, *args)]):
            return value

    def results(self, pending, blas_threads: int):
        """(cell id, rows, status, artifacts) of every pending cell, as they finish.

        Cells go out in tasks of `next_batch` cells, at most IN_FLIGHT tasks per worker at a
        time, each topped up as one is collected: the per-task cost of dask (about 20 ms) is
        spread over the cells of a task, and finished values do not pile up on the workers
        (where a worker's death would lose them)."""
        from drocli.results.records import finished

        cells = list(pending)
        state = {"pos": 0, "per_cell": None, "live": 0}
        tasks: dict = {}                # future key -> (future, its cells)
        watch = _Watch(self, tasks)

        def submit(chunk):
            state["live"] += 1
            fut = self._submit(run_cells, chunk, blas_threads,
                               key=f"drocli-{chunk[0].id}-{len(chunk)}-{os.getpid()}"
                                   f"-{watch.restarts}")
            tasks[fut.key] = fut, chunk
            return fut

        def submit_more():
            new = []
            workers = max(1, len(self.checked))
            while state["pos"] < len(cells) and state["live"] < IN_FLIGHT * workers:
                size = next_batch(state["per_cell"], len(cells) - state["pos"], workers)
                chunk = cells[state["pos"]:state["pos"] + size]
                state["pos"] += len(chunk)
                new.append(submit(chunk))
            return new

        def overdue():
            values, add, drop = watch.overdue()
            state["live"] -= len(drop)
            return values, [submit(rest) for rest in add], drop

        watch.listen()
        try:
            yield from self._collect(self._wait(submit_more(), more=submit_more,
                                                watch=overdue), state, tasks, finished)
        finally:
            watch.stop()

    def _collect(self, finished_values, state, tasks, finished):
        """The outputs of the tasks as they come back (a timed-out cell's as its own)."""
        for fut, value in finished_values:
            if fut is None:             # a cell killed at its limit (_Watch)
                yield value
                if finished(value[2]):
                    self.kept += 1
                continue
            state["live"] -= 1
            tasks.pop(fut.key, None)
            try:
                fut.release()
            except Exception:           # noqa: BLE001 -- a lost scheduler: seen next time
                pass
            outs = value["cells"]
            per = value["seconds"] / max(1, len(outs))
            old = state["per_cell"]
            state["per_cell"] = per if old is None else 0.5 * (old + per)
            for out in outs:
                yield out
                if finished(out[2]):    # written by the runner once it asks for the next
                    self.kept += 1

    def close(self) -> None:
        """Close the client and the local cluster, bounded in time and quietly."""
        for thing in (getattr(self, "client", None), self.cluster):
            if thing is None:
                continue
            try:
                thing.close(timeout=5)
            except Exception:           # noqa: BLE001 -- a lost scheduler: nothing to close
                pass
        self.quiet.__exit__()
