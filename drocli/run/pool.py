"""Local cells under a wall clock: worker processes forked from this one, each running one
cell at a time, watched by this process (issue 42: a solver that never returns must not hang
a run).

A cell's limit (drocli.run.limits) is its `budget.max_time_s`, else DROCLI_CELL_LIMIT_S, else
derived from the pace of its warm-up, which its worker announces: wall seconds for the
whole cell, warm-up, solver and evaluation. At the limit the monitor stops a
solver at its next call (status `timeout`, rows kept); a solver that does not call it (a
loop in Python or in a compiled kernel, a sleep) is killed `GRACE_S` later with its worker,
and the cell is recorded as timed out with the reason. A worker that dies (killed from
outside, out of memory) fails only its cell. Either way a fresh worker takes the next cell
and the run goes on. Ctrl-C kills the workers at once.

Workers are forked (backend `fork`, the default on Linux), so they start with this
process's imports and the data its preflight loaded; or, where forking this process is not
safe (another thread runs in it, or the platform has no fork: backend `spawn`), started
fresh, importing drocli and finding the plug-ins again (backend `loky`: the same, started
as joblib's loky starts its workers). Either way the same limits hold.
Each warms up its own kernels (drocli.run.worker.warm_up) on the clock of the cell that needs
them first."""

from __future__ import annotations

import math
import os
import signal
import time
from collections import deque

from drocli.run.limits import GRACE_S, first_limit, killed_at_limit

POLL_S = 0.5                    # how often the deadlines are looked at, at most
LIMIT = "limit"                 # a worker's message: (LIMIT, cell id, its limit after warm-up)


def _serve(conn, blas_threads: int, run) -> None:
    """A worker: cells in, `run(cell, blas_threads)` out (drocli.run.worker._run_remote: the
    cell id, rows, status and artifacts), until told to stop."""
    from drocli.run import worker

    run = run or worker._run_remote
    worker._leave_sigint_to_parent()
    worker._ANNOUNCE[:] = [lambda cell_id, limit: conn.send((LIMIT, cell_id, limit))]
    while True:
        try:
            cell = conn.recv()
        except (EOFError, OSError):
            break
        if cell is None:
            break
        conn.send(run(cell, blas_threads))
    os._exit(0)


class _Worker:
    def __init__(self, ctx, blas_threads: int, run):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, blas_threads, run), daemon=True)
        self.proc.start()
        child.close()
        self.cell = None
        self.started = 0.0
        self.deadline = math.inf

    def give(self, cell) -> None:
        self.cell, self.started = cell, time.monotonic()
        self.limit = first_limit(cell)      # until its warm-up has shown a pace
        self.deadline = self.started + self.limit + GRACE_S
        self.conn.send(cell)

    def heard(self, message) -> bool:
        """A limit the worker announced for its cell (True), not its result."""
        if not (isinstance(message, tuple) and len(message) == 3 and message[0] == LIMIT):
            return False
        if self.cell is not None and message[1] == self.cell.id:
            self.limit = float(message[2])
            self.deadline = self.started + self.limit + GRACE_S
        return True

    def kill(self) -> None:
        """Stop the worker now (one told to stop has usually left already), then reap it."""
        if self.proc.is_alive():
            try:
                self.proc.kill()
            except AttributeError:          # loky's processes can only be terminated
                os.kill(self.proc.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        self.proc.join(5)
        self.conn.close()


def lost(cell, status: str, error: str, seconds: float, stopped: str | None = None) -> tuple:
    """What a cell whose worker was killed or died hands back: no rows, the reason (also
    the dask backend's, drocli.run.backends, and a thread's, drocli.run.in_process, which says
    how it was `stopped`)."""
    stopped = stopped or ("killed" if status == "timeout" else "died")
    return cell.id, [], {"status": status, "error": error, "cell": cell.id,
                         "label": cell.label, "seed": cell.seed, "wall_s": round(seconds, 3),
                         "stopped": stopped}, {}


def _lost(w: _Worker, status: str, error: str) -> tuple:
    return lost(w.cell, status, error, time.monotonic() - w.started)


def _exit_reason(code) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _context(method: str):
    """The start method's context: multiprocessing's fork or spawn, or loky's (joblib's
    workers: a fresh interpreter, the process object sent by cloudpickle)."""
    if method == "loky":
        from joblib.externals.loky.backend import get_context

        return get_context("loky")
    import multiprocessing as mp

    return mp.get_context(method)


def supervised(pending, blas_threads: int, workers: int, run=None, method: str = "fork"):
    """(cell id, rows, status, artifacts) of every pending cell as they finish, each cell
    run in a worker process (`method`: fork, spawn or loky) under its wall limit (see the
    module's docstring). `run` replaces the worker's call (the contract suite's, which
    captures what a solver prints; with spawn a module-level function); with one worker
    the cells come back in their order."""
    from multiprocessing.connection import wait

    ctx = _context(method)
    queue = deque(pending)
    spare: list[_Worker] = []
    busy: list[_Worker] = []
    workers = max(1, min(int(workers), len(queue)))
    try:
        while queue or busy:
            while queue and len(busy) < workers:
                w = spare.pop() if spare else _Worker(ctx, blas_threads, run)
                busy.append(w)      # before its cell: a stop in between still kills it
                w.give(queue.popleft())
            now = time.monotonic()
            soonest = min(w.deadline for w in busy)
            wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                 timeout=max(0.0, min(POLL_S, soonest - now)))
            for w in list(busy):
                out = None
                if w.conn.poll():
                    try:
                        out = w.conn.recv()
                    except (EOFError, OSError):
                        out = None
                if out is not None and w.heard(out):
                    continue
                if out is not None:
                    busy.remove(w)
                    spare.append(w)
                    yield out
                elif not w.proc.is_alive():
                    busy.remove(w)
                    w.kill()
                    yield _lost(w, "failed", f"the worker process running this cell died "
                                             f"({_exit_reason(w.proc.exitcode)})")
                elif time.monotonic() > w.deadline:
                    busy.remove(w)
                    w.kill()
                    yield _lost(w, "timeout", killed_at_limit(w.cell, limit=w.limit))
    finally:                    # done, Ctrl-C or an error: no worker outlives the run
        for w in spare:         # idle ones are told to stop; busy ones are killed
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in busy + spare:
            w.kill()
