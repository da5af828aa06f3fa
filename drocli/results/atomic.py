"""Atomic writes: a temp file in the same folder, then a rename, so a reader never sees a
half-written file. Below records and ownership, which both write with it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _file_mode() -> int:
    """0o666 less the user's umask: what open() would give (mkstemp gives 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()


def temp_prefix(name: str) -> str:
    """The name atomic_write's temp file for `name` starts with (then random letters)."""
    return f".{name}."


def atomic_write(path: Path, write, mode: str = "wb") -> None:
    """`write(fh)` into a temp file in the same folder, then rename: never a half-written
    file. The file gets the user's umask, so a shared results folder stays readable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            write(fh)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda fh: fh.write(text), "w")


@contextlib.contextmanager
def signals_held():
    """SIGTERM and SIGHUP wait until the block ends, then reach the handler that was in
    place (drocli's stops with its one line): writes that go together, such as a report's
    index pages and list, all happen before the stop. Outside the main thread, where
    handlers cannot be set, the block runs as is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    before = {s: signal.signal(s, lambda n, _f: got.append(n))
              for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        if got:
            signal.raise_signal(got[0])
