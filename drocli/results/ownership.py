"""A results folder belongs to one experiment.

`drocli run` marks the folder it creates with `.drocli.json` (the experiment's name) and
writes only into an empty folder, a folder it marked for the same experiment, or a drocli
folder of the same experiment made before marks existed (its manifest.json names the
experiment; it is marked on the way). Anything else, a user's folder or another
experiment's results, is refused with exit 2 before a byte is written; `--force` re-runs
cells of the same experiment and never takes a folder over. `inside` checks that a path
drocli is about to write stays inside the folder.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from drocli.errors import DrocliError
from drocli.results.atomic import atomic_write_text, temp_prefix
from drocli.results.files import read_bytes
from drocli.results.layout import MAX_MANIFEST_BYTES

MARK = ".drocli.json"


def owner(out: Path) -> str | None:
    """The experiment a results folder belongs to: its mark, else (folders written before
    marks) the experiment its manifest.json names; None when neither says."""
    for name, key in ((MARK, "experiment"), ("manifest.json", "experiment")):
        path = Path(out) / name
        if path.is_file():
            try:
                value = json.loads(read_bytes(path, MAX_MANIFEST_BYTES)).get(key)
            except (OSError, ValueError, AttributeError, DrocliError, RecursionError):
                continue
            if isinstance(value, str):
                return value
    return None


def mark(out: Path, experiment: str) -> None:
    """Make `out` this experiment's results folder, or refuse (DrocliError, exit 2)."""
    out = Path(out)
    fix_other = f"give another --out (e.g. results/{experiment}) or remove that folder first"
    from drocli.results.files import refuse_link_loop

    refuse_link_loop(out)          # else "File exists" (exists() is False, mkdir fails)
    if out.exists() and not out.is_dir():
        raise DrocliError("--out is a file, not a folder", file=str(out), key="--out",
                          fix=fix_other)
    for parent in out.parents:
        if parent.exists() and not parent.is_dir():
            raise DrocliError(f"--out lies under the file {parent}", file=str(out), key="--out",
                              fix=fix_other)
    # a mark being written by a concurrent run of the same command is a temp file
    if out.is_dir() and any(not e.name.startswith(temp_prefix(MARK)) for e in out.iterdir()):
        have = owner(out)
        if have is None:
            raise DrocliError("this folder is not empty and is not a drocli results folder; "
                              "refusing to write into it", file=str(out), key="--out",
                              fix=fix_other)
        if have != experiment:
            raise DrocliError(f"this results folder belongs to experiment {have!r}, not "
                              f"{experiment!r}", file=str(out), key="--out", fix=fix_other)
        if (out / MARK).is_file():
            return
    out.mkdir(parents=True, exist_ok=True)
    from drocli import __version__

    atomic_write_text(out / MARK, json.dumps(
        {"experiment": experiment, "drocli": __version__,
         "marked": datetime.now(timezone.utc).isoformat(timespec="seconds")}, indent=1) + "\n")


def _outside(out: Path, path: Path) -> DrocliError:
    return DrocliError(f"refusing to write {path}: it lies outside the results folder",
                       file=str(out), fix="use plain names (no '..' or '/') for figures and "
                                          "cells")


def inside(out: Path, path: Path) -> Path:
    """`path`, after checking that it lies inside the results folder `out`: lexically (no
    '..' out of it), with no symbolic link among the folders between `out` and it (a
    `cells/` or `figures/` that links elsewhere would send the writes there), and once
    resolved. The folder `out` itself may be a link the user made."""
    base, target = Path(out), Path(path)
    try:
        rel = target.relative_to(base)
    except ValueError:
        rel = None
    if rel is None or ".." in rel.parts:
        raise _outside(out, path)
    cur = base
    for part in rel.parts[:-1]:
        cur = cur / part
        if cur.is_symlink():
            where = cur.relative_to(base).as_posix()
            raise DrocliError(f"refusing to write into {where}/: it is a symbolic link",
                              file=str(out), fix=f"replace the link {where} with a real "
                                                 "folder (or remove it) and run again")
    resolved = target.resolve()
    root = base.resolve()
    if resolved != root and root not in resolved.parents:
        raise _outside(out, path)
    return target
