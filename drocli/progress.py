"""Progress within cells for the terminal bar: a cell of 100 seconds should not leave the
bar still for minutes.

Workers (local processes, which inherit the environment) write the fraction of the budget
each running cell has spent to a small file, at every checkpoint, in the folder named by
`DROCLI_PROGRESS_DIR`; a thread in the parent reads them twice a second and moves the bar
by the finished cells plus those fractions, so tqdm's rate and ETA follow the work done.
Only when the bar is shown (stderr is a terminal); the records never depend on it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

ENV = "DROCLI_PROGRESS_DIR"


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


class Watcher:
    """Moves `bar` to (finished cells + the running cells' fractions) until stopped."""

    def __init__(self, bar, folder: Path, interval: float = 0.5):
        self.bar, self.folder, self.interval = bar, Path(folder), interval
        self.finished: set[str] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def partial(self) -> float:
        total = 0.0
        try:
            names = os.listdir(self.folder)
        except OSError:
            return 0.0
        for name in names:
            if name.startswith(".") or name in self.finished:
                continue
            try:
                total += float((self.folder / name).read_text() or 0.0)
            except (OSError, ValueError):
                continue
        return total

    def done(self, cell_id: str) -> None:
        with self._lock:
            self.finished.add(cell_id)
            self.refresh()

    def refresh(self) -> None:
        n = len(self.finished) + self.partial()
        self.bar.n = min(float(self.bar.total or n), round(n, 2))
        self.bar.refresh()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self.refresh()

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
