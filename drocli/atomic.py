"""Atomic writes: a temp file in the same folder, then a rename, so a reader never sees a
half-written file. Below records and ownership, which both write with it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _file_mode() -> int:
    """0o666 less the user's umask: what open() would give (mkstemp gives 0600)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _file_mode()


def atomic_write(path: Path, write, mode: str = "wb") -> None:
    """`write(fh)` into a temp file in the same folder, then rename: never a half-written
    file. The file gets the user's umask, so a shared results folder stays readable."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
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
