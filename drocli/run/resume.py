"""A re-run with nothing to do, recognised without loading the spec (issue 19: start-up).

`drocli run` records in the manifest a key of everything its cells and records depend on
that can be read without importing the plug-ins: the spec file's bytes, the profile and
`--set` options as typed, and the drocli source itself (every .py file's contents, so an
edited or upgraded drocli never takes this path). When a later `run` with `--out` finds the
same key, the folder's ownership mark, every cell finished (and its cell file, where the
folder keeps them) and the records with the checksum the manifest holds, there is nothing
to run and nothing to rewrite; any difference takes the full path, which decides from the
resolved spec and its cell ids. Without `--out` the spec names the folder, so it is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from drocli.results.integrity import RECORDS, manifest, records_current
from drocli.results.ownership import MARK
from drocli.results.status import finished

_SOURCE: str | None = None


def source_digest() -> str:
    """SHA-1 over drocli's .py files (relative path and contents), computed once."""
    global _SOURCE
    if _SOURCE is None:
        root = Path(__file__).resolve().parents[1]     # drocli/
        h = hashlib.sha1()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes())
        _SOURCE = h.hexdigest()
    return _SOURCE


def run_key(spec_file, profile: str | None, sets) -> str:
    """The key of a `run` invocation: spec bytes, profile, --set values, drocli source."""
    from drocli.results.files import MAX_SPEC_BYTES, read_bytes

    h = hashlib.sha1(read_bytes(spec_file, MAX_SPEC_BYTES))   # a regular file, bounded
    h.update(json.dumps([profile, list(sets or ()), source_digest()]).encode())
    return h.hexdigest()


def nothing_to_do(out, key: str) -> str | None:
    """The line to print when the folder at `out` was written by the same invocation and is
    complete and intact; None to take the full path."""
    try:
        man = manifest(Path(out))
    except Exception:      # noqa: BLE001 -- any doubt: the full path decides and explains
        return None
    cells = man.get("cells")
    if man.get("run_key") != key or not isinstance(cells, dict) or not cells:
        return None
    if not all(isinstance(c, dict) and finished(c) for c in cells.values()):
        return None
    if not (Path(out) / MARK).is_file():         # a folder to adopt: the full path marks it
        return None
    cell_dir = Path(out) / "cells"
    if cell_dir.is_dir():                        # a run's folder: every cell file still there
        try:
            have = set(os.listdir(cell_dir))
        except OSError:
            return None
        if any(f"{c}.json" not in have for c in cells):
            return None
    if not records_current(Path(out) / RECORDS, man):
        return None
    return (f"drocli: {man.get('experiment')} [{man.get('profile')}]: all {len(cells)} cells "
            f"done and records current -> {out}")
