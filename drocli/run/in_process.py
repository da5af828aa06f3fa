"""Cells in threads of this process under their wall limits (backend `threading`, and
`auto` at -j 1 in a program that runs other threads: its cells run where its plug-ins were
registered; issue 42).

Each cell runs in a thread of its own, at most `workers` at a time; this thread waits for
them. At a cell's limit the monitor stops its solver at the next call (status `timeout`,
rows kept). A solver that does not call the monitor is given `GRACE_S` more; then the cell
is recorded as timed out and the run goes on with the next one. A thread cannot be killed:
one in a Python loop is interrupted (an exception raised in it at its next bytecode, so it
ends within a moment); one asleep, or in a compiled kernel that releases the GIL, runs on,
abandoned, until it returns or this process exits, and its status says so. A compiled
kernel that holds the GIL (numba's default) holds up the whole process, this watch
included, until it returns: no thread can stop it. Worker processes (`fork`, `spawn`,
`loky`: drocli.run.pool) kill any of these; that is the price of running in this process."""

from __future__ import annotations

import ctypes
import queue
import threading
import time
from collections import deque

from drocli.run.limits import GRACE_S, cell_limit, killed_at_limit
from drocli.run.pool import POLL_S, lost

STOP_WAIT_S = 0.5      # after the interruption, how long to wait for the thread to end


class CellInterrupted(BaseException):
    """Raised in a cell's thread past its limit (not an Exception: nothing catches it on
    the way out)."""


def _serve(cell, blas_threads: int, run, done: queue.Queue) -> None:
    try:
        done.put((cell.id, run(cell, blas_threads)))
    except CellInterrupted:
        done.put((cell.id, None))


def _interrupt(thread: threading.Thread) -> None:
    """Raise CellInterrupted in `thread` at its next bytecode."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                               ctypes.py_object(CellInterrupted))


def in_threads(pending, blas_threads: int, workers: int, run=None):
    """(cell id, rows, status, artifacts) of every pending cell as they finish, each cell in
    a thread of this process under its wall limit (see the module's docstring); `run`
    replaces drocli.run.worker._run_remote. With one worker the cells come back in order."""
    from drocli.run.worker import _run_remote

    run = run or _run_remote
    todo = deque(pending)
    done: queue.Queue = queue.Queue()
    busy: dict = {}                       # cell id -> (thread, cell, started, deadline)
    workers = max(1, min(int(workers), len(todo)))
    while todo or busy:
        while todo and len(busy) < workers:
            cell = todo.popleft()
            t = threading.Thread(target=_serve, args=(cell, blas_threads, run, done),
                                 name=f"drocli-cell-{cell.id}", daemon=True)
            now = time.monotonic()
            busy[cell.id] = (t, cell, now, now + cell_limit(cell) + GRACE_S)
            t.start()
        soonest = min(d for *_, d in busy.values())
        try:
            cid, out = done.get(timeout=max(0.0, min(POLL_S, soonest - time.monotonic())))
        except queue.Empty:
            cid, out = None, None
        if cid in busy and out is not None:
            del busy[cid]
            yield out
        now = time.monotonic()
        for cid, (t, cell, started, deadline) in list(busy.items()):
            if now <= deadline:
                continue
            del busy[cid]
            _interrupt(t)
            t.join(STOP_WAIT_S)
            alive = t.is_alive()
            why = killed_at_limit(cell, "stopped")
            if alive:
                why += ("; it could not be interrupted (a compiled kernel or a sleep) and runs "
                        "on in this process until it returns")
            yield lost(cell, "timeout", why, time.monotonic() - started,
                       "abandoned" if alive else "interrupted")

