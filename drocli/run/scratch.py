"""Private per-user folders under the temporary folder, for the caches that would otherwise go
into the install or under HOME (numba's compiled kernels, matplotlib's font cache). A
read-only install run by a user without a writable home must still work (issue 43)."""

from __future__ import annotations

import os
import stat
import tempfile


def private_dir(kind: str) -> str | None:
    """tmp/drocli-KIND-UID, a folder only this user can use. Refused if it is a link, another
    user's, or open to others (a cache there holds code or data drocli loads): then a fresh
    one. None if the temporary folder cannot be written either."""
    path = os.path.join(tempfile.gettempdir(), f"drocli-{kind}-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
        if (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
                and not st.st_mode & 0o077 and os.access(path, os.W_OK | os.X_OK)):
            return path
        return tempfile.mkdtemp(prefix=f"drocli-{kind}-")
    except OSError:
        return None


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def matplotlib_config() -> None:
    """Point MPLCONFIGDIR at a private folder when matplotlib's own (under HOME) cannot be
    written; matplotlib would warn on every command and rebuild its font cache each time."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    if _writable(os.path.join(base, "matplotlib")):
        return
    folder = private_dir("matplotlib")
    if folder is not None:
        os.environ["MPLCONFIGDIR"] = folder
