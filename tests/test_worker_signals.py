"""A stop reaches drocli's worker processes only as the parent decides (issue 42's review):
a forked worker does not keep the parent's SIGTERM / SIGHUP handler (which raises a stop
exception and printed a stray traceback when multiprocessing ended the daemonic worker
with SIGTERM at exit), and a stop between two cells stops the workers at once."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest

from drocli.run import pool, runner


def _dispositions(cell, blas_threads):
    """In the worker: how SIGINT, SIGTERM and SIGHUP are handled there."""
    got = {s.name: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    return cell.id, [], {k: getattr(v, "name", repr(v)) for k, v in got.items()}, {}


def _raise_stop(signum, frame):    # what drocli's command line installs (cli._stop_on)
    raise KeyboardInterrupt


def test_a_forked_worker_drops_the_parents_stop_handlers(monkeypatch):
    monkeypatch.setenv("DROCLI_PARENT_PID", str(os.getpid()))
    before = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        cell = SimpleNamespace(id="c0", budget={"max_time_s": 60})
        (_, _, got, _), = list(pool.supervised([cell], 1, 1, run=_dispositions,
                                                method="fork"))
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    assert got == {"SIGINT": "SIG_IGN", "SIGTERM": "SIG_DFL", "SIGHUP": "SIG_DFL"}


def test_a_stop_between_two_cells_closes_the_workers(monkeypatch, tmp_path):
    closed = []

    def results(*a, **k):
        try:
            yield "c0", [], {"status": "done", "label": "x", "seed": 0}, {}
            yield "c1", [], {"status": "done", "label": "x", "seed": 1}, {}
        finally:
            closed.append(True)

    def write_cell(*a, **k):
        raise KeyboardInterrupt          # a stop while the first cell is written

    monkeypatch.setattr(runner, "_results", results)
    monkeypatch.setattr(runner.records, "write_cell", write_cell)

    class Spec:
        blas_threads = 1

    with pytest.raises(KeyboardInterrupt):
        runner._run_pending(["c0", "c1"], tmp_path, Spec(), 1, "fork", None, True,
                            lambda *a: None, {})
    assert closed == [True]
