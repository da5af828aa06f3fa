"""The records (records.csv.gz) checked against the run's manifest before `plot` or `check`
read them.

A results folder's records must be what `drocli run` wrote: the columns and their types,
one row per (cell, step, metric), only cells the manifest lists, every finished cell
present, and (for runs that recorded them) the row count and checksum the manifest holds.
Anything else is refused with exit 2 and the fix (re-run, which rebuilds the records from
the cells). Cells that did not finish make the folder *incomplete*: verdicts say so.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from drocli.errors import DrocliError
from drocli.results.layout import MAX_MANIFEST_BYTES, RECORDS  # noqa: F401 (integrity.RECORDS kept)
from drocli.results.layout import REBUILD_FIX as FIX

if TYPE_CHECKING:
    import pandas as pd

NUMERIC = ("step", "oracle_calls", "time_s", "value")
HEX = re.compile(r"[0-9a-f]+")


@dataclass(frozen=True)
class Completeness:
    finished: int
    total: int

    @property
    def complete(self) -> bool:
        return self.finished >= self.total

    def note(self) -> str:
        return "" if self.complete else f"incomplete: {self.finished} of {self.total} cells"


def file_digest(path: Path, algo: str = "sha1") -> str:
    """Hex digest of a file, read in 1 MiB blocks (an OSError names the file, a failed
    read too)."""
    from drocli.results.files import named

    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        try:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        except OSError as e:
            raise named(path, e) from e
    return h.hexdigest()


def records_stamp(path: Path) -> dict:
    """What a new manifest records of its records file's bytes."""
    return {"records_sha256": file_digest(path, "sha256")}


def records_current(path: Path, man: dict) -> bool:
    """The records file at `path` has the checksum the manifest recorded (False when the
    manifest holds none or the file cannot be read)."""
    from drocli.results.records import records_digest

    want = records_digest(man)
    try:
        return bool(want) and Path(path).is_file() and file_digest(path, want[0]) == want[1]
    except OSError:
        return False


def manifest(results_dir: Path) -> dict:
    """The folder's manifest.json ({} when there is none), its fields checked as far as
    drocli computes with them (DrocliError naming the field otherwise)."""
    from drocli.results.files import read_bytes, refuse_link_loop

    path = Path(results_dir) / "manifest.json"
    if not path.exists():
        refuse_link_loop(path)      # a link loop is not "no manifest" (no checksum to check)
        return {}
    try:               # a regular file only: a FIFO or /dev/zero is refused, never read
        data = json.loads(read_bytes(path, MAX_MANIFEST_BYTES, fix="remove it and " + FIX))
    except OSError as e:
        raise DrocliError(f"manifest.json cannot be read ({e.strerror or e})", file=str(path),
                          fix=FIX) from None
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested 100,000 deep
        raise DrocliError("manifest.json is not readable JSON", file=str(path), fix=FIX) \
            from None
    if not isinstance(data, dict):
        raise DrocliError("manifest.json is not a mapping", file=str(path), fix=FIX)
    cells = data.get("cells")
    if cells is not None and not isinstance(cells, dict):
        raise DrocliError(f"its cells are a {type(cells).__name__}, not a mapping of cell id "
                          "-> status", file=str(path), key="cells", fix=FIX)
    for cid, st in (cells or {}).items():
        if not isinstance(st, dict) or not isinstance(st.get("status", ""), str):
            raise DrocliError(f"the status of cell {str(cid)[:40]!r} is not a mapping with a "
                              "text `status`", file=str(path), key=f"cells.{str(cid)[:40]}",
                              fix=FIX)
    for key in ("claims",):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise DrocliError(f"its {key} are not a mapping", file=str(path), key=key, fix=FIX)
    _check_records_fields(data, path)
    return data


def _shown(value) -> str:
    """A forged JSON value, short, for an error line."""
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 30 else "a huge number"
    return f"a {type(value).__name__}"


def _check_records_fields(data: dict, path: Path) -> None:
    """records_rows must be a whole number >= 0, records_sha1 40 hex digits and
    records_sha256 64 (or absent):
    a row count written as the text "60" was compared with the records' 60 rows and
    refused as "has 60 rows, the manifest says 60", and both bound what reading the
    records may cost (drocli.results.records.records_bytes)."""
    rows = data.get("records_rows")
    if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or rows < 0):
        raise DrocliError(f"records_rows is {_shown(rows)}, not a number of rows (a whole "
                          "number, 0 or more)", file=str(path), key="records_rows", fix=FIX)
    for key, name, digits in (("records_sha1", "SHA-1", 40), ("records_sha256", "SHA-256", 64)):
        value = data.get(key)
        if value is not None and not (isinstance(value, str) and len(value) == digits
                                      and HEX.fullmatch(value)):
            raise DrocliError(f"{key} is {_shown(value)}, not a {name} checksum ({digits} hex "
                              "digits)", file=str(path), key=key, fix=FIX)


def validate(results_dir: Path, df: pd.DataFrame, man: dict | None = None) -> Completeness:
    """Refuse corrupted records (DrocliError); return how many cells are finished. `df` as
    `read_records` read it: the records' checksum was checked there, before decompressing;
    `man` the folder's manifest (read when not given)."""
    import pandas as pd

    from drocli.results.records import finished, records_path

    path = records_path(results_dir)
    where = str(path)
    man = manifest(results_dir) if man is None else man
    if man.get("records_rows") is not None and man["records_rows"] != len(df):
        raise DrocliError(f"{path.name} has {len(df)} rows, the manifest says "
                          f"{man['records_rows']} (truncated or edited)", file=where, fix=FIX)
    for col in NUMERIC:
        raw = df[col]
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna() & raw.notna()
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise DrocliError(f"column {col!r} holds a non-number {raw.iloc[i]!r} (data row "
                              f"{i + 1})", file=where, fix=FIX)
        if col != "value" and num.isna().any():
            i = int(num.isna().to_numpy().nonzero()[0][0])
            raise DrocliError(f"column {col!r} is empty in data row {i + 1} (a cut line?)",
                              file=where, fix=FIX)
    dup = df.duplicated(["cell", "step", "metric"], keep="first")
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise DrocliError(f"{int(dup.sum())} duplicated rows (cell, step, metric), the first "
                          f"at data row {i + 1}", file=where, fix=FIX)
    cells = man.get("cells")
    if not isinstance(cells, dict) or not cells:
        return Completeness(int(df["cell"].nunique()), int(df["cell"].nunique()))
    have = {str(c) for c in df["cell"].unique()}
    foreign = sorted(have - set(cells))
    if foreign:
        raise DrocliError(f"{len(foreign)} cell(s) in the records are not in the manifest "
                          f"(e.g. {foreign[0]})", file=where, fix=FIX)
    done = [c for c, st in cells.items() if isinstance(st, dict) and finished(st)]
    # a cell killed at its wall limit (drocli.run.pool) has no rows, and its status says so
    missing = [c for c in done if c not in have and not cells[c].get("stopped")]
    if missing:
        raise DrocliError(f"{len(missing)} finished cell(s) have no rows in the records "
                          f"(e.g. {missing[0]})", file=where, fix=FIX)
    return Completeness(len(done), len(cells))


def read_checked(results_dir: Path) -> tuple[pd.DataFrame, Completeness]:
    """records.csv, validated against the manifest (its checksum before decompressing),
    and how complete it is."""
    from drocli.results.records import existing_records, read_records

    existing_records(results_dir)       # a missing folder or file said so first
    man = manifest(results_dir)
    df = read_records(results_dir, man)
    return df, validate(results_dir, df, man)
