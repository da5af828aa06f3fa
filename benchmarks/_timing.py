"""Timing a command as a fresh child process, shared by the benchmark scripts: wall time and
the child's CPU time (user + sys, from getrusage of the finished children)."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_cpu() -> float:
    """CPU seconds (user + sys) of every finished child of this process so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], ok=(0,), cwd: Path = ROOT) -> tuple[float, float]:
    """(wall s, CPU s) of `cmd` run in `cwd`; an exit code outside `ok` raises with the
    tail of its stderr."""
    c0, t0 = child_cpu(), time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True)
    if res.returncode not in ok:
        raise RuntimeError(f"{cmd} exited {res.returncode}: {res.stderr.decode()[-300:]}")
    return time.perf_counter() - t0, child_cpu() - c0
