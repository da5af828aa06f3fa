"""Progress within cells for the terminal bar: a cell of 100 seconds should not leave the
bar still for minutes.

Workers (local processes, which inherit the environment) write the fraction of the budget
each running cell has spent to a small file, at every checkpoint, in the folder named by
`DROCLI_PROGRESS_DIR`; a thread in the parent reads them twice a second and moves the bar
by the finished cells plus those fractions, so tqdm's rate and ETA follow the work done.
When stderr is not a terminal (a log, CI, a batch job) the same reading gives a heartbeat
line every `DROCLI_HEARTBEAT_S` seconds (default 60) instead: cells done, the running ones
with their fraction, and the time since the last cell finished, so a cell that runs long
is never silent. The records never depend on either.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

ENV = "DROCLI_PROGRESS_DIR"
HEARTBEAT_VAR = "DROCLI_HEARTBEAT_S"


def heartbeat_seconds() -> float:
    """DROCLI_HEARTBEAT_S (default 60 s), a number of seconds > 0."""
    from drocli.run.limits import env_seconds

    return env_seconds(HEARTBEAT_VAR, 60.0)


def reporter(cell_id: str):
    """A callable fraction -> None writing this cell's progress, or None when no bar
    listens."""
    where = os.environ.get(ENV)
    if not where or Path(where).parts[-2:] != ("cells", ".progress"):
        return None             # only the run's own folder (`drocli run` sets it)
    path = Path(where) / cell_id

    def report(fraction: float) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            tmp.write_text(f"{min(max(float(fraction), 0.0), 1.0):.4f}")
            os.replace(tmp, path)
        except OSError:       # progress is a courtesy: never a reason to fail a cell
            pass

    return report


BAR_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {done}/{total_fmt} cells "
              "[{elapsed}<{remaining}, {rate_fmt}{postfix}]")


def cell_bar(total: int, file=None):
    """The terminal bar: its position (and so its rate and ETA) counts the running cells'
    fractions, while the count it shows is of whole finished cells (`bar.whole`)."""
    import sys

    from tqdm import tqdm

    class CellBar(tqdm):
        whole = 0

        @property
        def format_dict(self):
            return {**super().format_dict, "done": self.whole}

    return CellBar(total=total, unit="cell", desc="drocli run", file=file or sys.stderr,
                   dynamic_ncols=True, bar_format=BAR_FORMAT)


class Watcher:
    """Moves `bar` to (finished cells + the running cells' fractions) until stopped; or,
    without a bar, hands `beat` a heartbeat line every `every` seconds (`names`: cell id ->
    how a line names it)."""

    def __init__(self, bar, folder: Path, interval: float = 0.5, *, beat=None,
                 every: float = 60.0, names: dict | None = None, total: int = 0):
        self.bar, self.folder, self.interval = bar, Path(folder), interval
        self.beat, self.every, self.names, self.total = beat, every, names or {}, total
        self.finished: set[str] = set()
        self.started = self.last_done = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def running(self) -> dict[str, float]:
        """Cell id -> fraction of its budget spent, for the cells running now that have
        reached a checkpoint."""
        out: dict[str, float] = {}
        try:
            names = os.listdir(self.folder)
        except OSError:
            return out
        for name in names:
            if name.startswith(".") or name in self.finished:
                continue
            try:
                out[name] = float((self.folder / name).read_text() or 0.0)
            except (OSError, ValueError):
                continue
        return out

    def partial(self) -> float:
        return sum(self.running().values())

    def line(self) -> str:
        """The heartbeat: `drocli: 3 of 12 cells done after 4m10s; running: ALEG seed 0
        (40 %), ...; last cell finished 1m05s ago`."""
        now = time.monotonic()
        run = sorted(self.running().items())
        shown = ", ".join(f"{self.names.get(c, c)} ({f:.0%})" for c, f in run[:4])
        more = f" and {len(run) - 4} more" if len(run) > 4 else ""
        return (f"drocli: {len(self.finished)} of {self.total} cells done after "
                f"{_clock(now - self.started)}; "
                + (f"running: {shown}{more}; " if run else "")
                + f"last cell finished {_clock(now - self.last_done)} ago")

    def done(self, cell_id: str) -> None:
        with self._lock:
            self.finished.add(cell_id)
            self.last_done = time.monotonic()
            self.refresh()

    def refresh(self) -> None:
        if self.bar is None:
            return
        n = len(self.finished) + self.partial()
        self.bar.whole = len(self.finished)
        self.bar.n = min(float(self.bar.total or n), round(n, 2))
        self.bar.refresh()

    def _loop(self) -> None:
        due = self.started + self.every
        while not self._stop.wait(self.interval):
            with self._lock:
                self.refresh()
                if self.beat is not None and time.monotonic() >= due:
                    due = time.monotonic() + self.every
                    self.beat(self.line())

    def __enter__(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        os.environ[ENV] = str(self.folder)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=2)
        os.environ.pop(ENV, None)
        for p in self.folder.glob("*"):
            p.unlink(missing_ok=True)
        try:
            self.folder.rmdir()
        except OSError:
            pass
        return False


def _clock(seconds: float) -> str:
    """4m10s, 1h02m, 35s."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
