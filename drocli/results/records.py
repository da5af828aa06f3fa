"""Tidy records: per-cell files of a run in progress, the merged records.csv.gz and
artifacts.npz (the contract; the manifest is drocli.results.manifest's, provenance
drocli.results.provenance's).

records.csv has one row per (cell, checkpoint, metric) with the columns of COLUMNS
plus one column per swept parameter.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from drocli.errors import DrocliError
from drocli.results.atomic import FILE_MODE, atomic_write, atomic_write_text  # noqa: F401 (API here)
from drocli.results.layout import RECORDS
from drocli.results.status import DONE, finished  # noqa: F401  (records.finished is the API)

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["experiment", "cell", "solver", "label", "dataset", "seed", "step", "oracle_calls",
           "time_s", "metric", "value"]
ROW_FIELDS = ["step", "oracle_calls", "time_s", "metric", "value"]
# identity columns read back as the text they hold: a label spelled NA, nan, None or null
# (or a case named so) is a name, not a missing value
STRING_COLUMNS = ("experiment", "cell", "solver", "label", "dataset", "metric", "setting")
NA_TEXT = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
           "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def cell_path(out: Path, cell_id: str) -> Path:
    """cells/<id>.json: the cell's status and its rows in one file (written last, atomically:
    its presence with a finished status marks the cell done)."""
    return Path(out) / "cells" / f"{cell_id}.json"


def artifact_path(out: Path, cell_id: str) -> Path:
    return Path(out) / "cells" / f"{cell_id}.npz"


def _jsonable(x):
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def write_cell(out: Path, cell_id: str, rows: list[tuple], status: dict,
               artifacts: dict | None = None) -> None:
    """Artifacts first, then one JSON file with the status and the rows (floats as their
    exact shortest repr, NaN as NaN), which marks the cell finished. One file per cell: the
    client writes every cell, and a file open costs about a millisecond. Refused when
    `cells/` is a link out of the folder (ownership.inside)."""
    from drocli.results.ownership import inside

    inside(out, cell_path(out, cell_id))
    if artifacts:
        _atomic_write_npz(artifact_path(out, cell_id), artifacts)
    doc = {**status, "rows": [list(r) for r in rows]}
    atomic_write_text(cell_path(out, cell_id), json.dumps(doc, default=_jsonable))


def read_cell(out: Path, cell_id: str) -> tuple[dict | None, list | None]:
    """(status, rows) of a cell file; (None, None) when absent or unreadable. Cells written
    before the one-file format (`<id>.json` status + `<id>.csv` rows) are read too."""
    from drocli.results.files import read_bytes

    path = cell_path(out, cell_id)
    try:                   # a FIFO or a device in cells/ is unreadable, never waited on
        doc = json.loads(read_bytes(path, MAX_RECORDS_BYTES))
    except (OSError, ValueError, DrocliError, RecursionError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    rows = doc.pop("rows", None)
    if rows is None:
        old = path.with_suffix(".csv")
        if not old.is_file():
            return None, None
        try:
            frame = read_tidy_csv(read_bytes(old, MAX_RECORDS_BYTES))
        except (OSError, ValueError, DrocliError):
            return None, None
        rows = frame[ROW_FIELDS].values.tolist()
    if not _rows_ok(rows):      # a cell file with bad rows is not finished: it runs again
        return None, None
    if not rows and finished(doc) and not doc.get("stopped"):
        return None, None       # marked finished with no rows and no reason: it runs again
    return doc, rows


def _rows_ok(rows) -> bool:
    """Rows as a cell writes them: lists of (step, oracle_calls, time_s, metric, value)
    with numbers where numbers go and the metric as text (value may be NaN / None)."""
    if not isinstance(rows, list):
        return False
    num = (int, float)
    for r in rows:
        if not (isinstance(r, list | tuple) and len(r) == len(ROW_FIELDS)):
            return False
        step, calls, t, metric, value = r
        if not (isinstance(step, num) and isinstance(calls, num) and isinstance(t, num)
                and isinstance(metric, str) and (value is None or isinstance(value, num))):
            return False
    return True


def read_tidy_csv(data: bytes) -> pd.DataFrame:
    """A tidy CSV (records or a legacy cell file) as a frame: the identity columns
    (STRING_COLUMNS) as text, never as NaN, the other columns as pandas reads them."""
    import csv

    import pandas as pd

    first = data.split(b"\n", 1)[0].decode("utf-8", "replace")
    header = next(csv.reader([first]), [])
    text = [c for c in header if c in STRING_COLUMNS]
    df = pd.read_csv(io.BytesIO(data), dtype=dict.fromkeys(text, object), keep_default_na=False,
                     na_values={c: list(NA_TEXT) for c in header if c not in STRING_COLUMNS})
    for c in df.columns:     # text as Python str objects: pandas 3's pyarrow-backed str dtype
        if isinstance(df[c].dtype, pd.StringDtype):      # iterates 100x slower (check: 7x)
            df[c] = df[c].astype(object)
    return df


def _atomic_write_npz(path: Path, arrays: dict) -> None:
    import numpy as np

    atomic_write(path, lambda fh: np.savez(fh, **{k: np.asarray(v) for k, v in arrays.items()}))


def read_cell_artifacts(out: Path, cell_id: str) -> dict:
    """The arrays one cell handed the runner ({} if none); object arrays are refused."""
    return _read_npz(artifact_path(out, cell_id))


def _read_npz(path: Path) -> dict:
    import numpy as np

    from drocli.results.files import regular_stat

    if not path.exists():
        return {}
    regular_stat(path, fix="remove it and re-run `drocli run` (it rebuilds the arrays)")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise DrocliError(f"unreadable artifact file: {e}", file=str(path),
                          fix="re-run the cells with `drocli run ... --force`") from None


ARTIFACTS = "artifacts.npz"


def merge_artifacts(out: Path, cells, statuses: dict | None = None) -> Path | None:
    """Every finished cell's arrays in one file beside records.csv (`artifacts.npz`): what
    plots read, so a results folder travels without its cells/. Each distinct array is
    stored once (fronts repeat in every cell); `index` rows are (cell, name, blob). The zip
    is deflated with fixed timestamps: the same arrays give the same bytes."""
    import numpy as np

    blobs, index = {}, []
    for c in cells:
        st = statuses.get(c.id) if statuses is not None else cell_status(out, c.id)
        if not finished(st):
            continue
        for name, arr in sorted(read_cell_artifacts(out, c.id).items()):
            arr = np.ascontiguousarray(arr)
            h = hashlib.sha1(f"{arr.dtype.str}{arr.shape}".encode() + arr.tobytes()).hexdigest()
            blobs.setdefault(f"b{h[:16]}", arr)
            index.append((c.id, name, f"b{h[:16]}"))
    path = Path(out) / ARTIFACTS
    if not index:
        if path.exists():
            path.unlink()
        return None
    arrays = {"index": np.array(index, dtype=str), **blobs}

    def write(fh):
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
            for key in sorted(arrays):
                info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                with zf.open(info, "w") as f:
                    np.lib.format.write_array(f, arrays[key], allow_pickle=False)

    atomic_write(path, write)
    return path


def read_artifacts(results_dir: Path) -> dict[str, dict]:
    """cell id -> {name: array}, from the merged artifacts.npz ({} if there is none)."""
    z = _read_npz(Path(results_dir) / ARTIFACTS)
    if not z:
        return {}
    out: dict[str, dict] = {}
    try:
        for cell, name, blob in z["index"].reshape(-1, 3):
            out.setdefault(str(cell), {})[str(name)] = z[str(blob)]
    except KeyError as e:
        raise DrocliError(f"artifacts.npz lacks array {e}", file=str(Path(results_dir) /
                          ARTIFACTS), fix="re-run `drocli run` to rebuild it") from None
    return out


def cell_status(out: Path, cell_id: str) -> dict | None:
    return read_cell(out, cell_id)[0]


def is_finished(out: Path, cell_id: str) -> bool:
    return finished(cell_status(out, cell_id))


def param_column(name: str) -> str:
    """Column of a swept parameter; `param_` prefix where it would clash with COLUMNS."""
    return f"param_{name}" if name in COLUMNS else name


class Table:
    """Records as columns: `columns` maps each name, in column order, to a list of Python
    values (what `merge` builds and `write_records` writes, without pandas: a short run's
    records need no frame, and importing pandas is a fifth of such a run's start-up)."""

    def __init__(self, columns: dict[str, list]):
        self.columns = columns

    def __len__(self) -> int:          # rows, as len(DataFrame)
        return len(next(iter(self.columns.values()), []))


def merge(out: Path, cells, fresh: dict | None = None) -> tuple[Table, dict]:
    """(the finished cells' rows joined with their identity columns as one tidy table, every
    cell's status or None). `fresh` maps the ids of cells run just now to their (status,
    rows), so they are not read back from disk."""
    fresh = fresh or {}
    swept_keys: list[str] = []
    for c in cells:
        for k in c.swept:
            if k not in swept_keys:
                swept_keys.append(k)
    columns = [param_column(k) for k in swept_keys]
    cols: dict[str, list] = {k: [] for k in COLUMNS + columns}
    statuses = {}
    for c in cells:
        st, rows = fresh[c.id] if c.id in fresh else read_cell(out, c.id)
        statuses[c.id] = st
        if not finished(st) or not rows:
            continue
        n = len(rows)
        for j, name in enumerate(ROW_FIELDS):
            cols[name] += [r[j] for r in rows]
        for k, v in (("experiment", c.experiment), ("cell", c.id), ("solver", c.solver),
                     ("label", c.label), ("dataset", c.dataset), ("seed", c.seed)):
            cols[k] += [v] * n
        for k, col in zip(swept_keys, columns, strict=True):
            cols[col] += [cell_value(c.swept.get(k))] * n
    return Table({k: cols[k] for k in COLUMNS + columns}), statuses


def cell_value(v):
    """A swept value as one records cell: lists and mappings as JSON text."""
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, separators=(", ", ": "))
    return v


LEGACY_RECORDS = "records.csv"     # plain CSV of folders written before compression
GZIP_LEVEL = 6
MAX_RECORDS_BYTES = 4 << 30        # decompressed: a results folder is never larger


def records_path(results_dir: Path) -> Path:
    """The records file of a results folder: records.csv.gz, else a legacy records.csv
    (the .gz name when neither exists)."""
    gz = Path(results_dir) / RECORDS
    plain = Path(results_dir) / LEGACY_RECORDS
    return plain if plain.exists() and not gz.exists() else gz


def write_records(out: Path, table: Table) -> Path:
    """records.csv.gz: the tidy CSV (%.17g floats) of a Table gzipped with a zero timestamp
    and no file name, so the same records give the same bytes; a legacy records.csv is
    removed."""
    import gzip

    text = table_csv_text(table).encode()

    def write(fh):
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, compresslevel=GZIP_LEVEL,
                           mtime=0) as gz:
            gz.write(text)

    path = Path(out) / RECORDS
    atomic_write(path, write)
    legacy = Path(out) / LEGACY_RECORDS
    if legacy.exists():
        legacy.unlink()
    return path


def _csv_field(v) -> str:
    """One CSV field as pandas' to_csv(float_format="%.17g") writes it (QUOTE_MINIMAL)."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if v != v else f"{v:.17g}"
    t = str(v)
    if any(ch in t for ch in ',"\n'):       # csv QUOTE_MINIMAL, line end \n
        return '"' + t.replace('"', '""') + '"'
    return t


def _column_kind(values: list) -> str:
    """The dtype kind pandas infers for a column built from these Python values: "i" (all
    int), "f" (numbers with a float or a missing value), "b" (all bool), else "O"."""
    kinds = set()
    for v in values:
        if v is None:
            kinds.add("none")
        elif isinstance(v, bool):
            kinds.add("b")
        elif isinstance(v, int):
            kinds.add("i")
        elif isinstance(v, float):
            kinds.add("f")
        else:
            return "O"
    if kinds == {"i"}:
        return "i"
    if kinds == {"b"}:
        return "b"
    if "b" not in kinds and kinds & {"i", "f"} and kinds <= {"i", "f", "none"}:
        return "f"
    return "O"


def _column_text(values: list) -> list[str]:
    """One column's fields, as the format's pandas writer (tests/test_records_format.py's
    csv_text) wrote the column pandas builds from these values:
    each distinct value (by ==, as pandas.factorize groups them) formatted at its first
    occurrence; in a float column ints are floats and missing values are empty."""
    kind = _column_kind(values)
    shown: dict = {}
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            out.append("")
            continue
        t = shown.get(v)
        if t is None:
            if kind == "f":
                t = f"{float(v):.17g}"
            elif kind == "i":
                t = str(v)
            else:
                t = _csv_field(v)
            shown[v] = t
        out.append(t)
    return out


def table_csv_text(table: Table) -> str:
    """The tidy CSV of a Table: byte for byte what the records' earlier pandas writer
    (csv_text in tests/test_records_format.py, itself pandas' to_csv with %.17g floats)
    wrote for the DataFrame pandas builds from it, checked there on awkward values. numpy
    scalars (rows of legacy cell files) count as the Python values they hold."""
    import numpy as np

    head = ",".join(_csv_field(str(c)) for c in table.columns)
    if not len(table):
        return head + "\n"
    cols = [_column_text([v.item() if isinstance(v, np.generic) else v for v in values])
            for values in table.columns.values()]
    return head + "\n" + "".join(",".join(r) + "\n" for r in zip(*cols, strict=True))


def results_file(results_dir: Path, name: str) -> Path:
    """A file of a results folder, with a one-line error when the folder or file is missing."""
    from drocli.results.files import refuse_link_loop, regular_stat

    if not Path(results_dir).is_dir():
        refuse_link_loop(results_dir)     # is_dir() says False for a link loop too
        raise DrocliError("results folder not found", file=str(results_dir),
                          fix="give the folder `drocli run` wrote, e.g. results/gdro_synthetic")
    path = Path(results_dir) / name
    if not path.exists():
        refuse_link_loop(path)
        raise DrocliError(f"no {name} in this folder", file=str(results_dir),
                          fix="run `drocli run SPEC --out DIR` first (a re-run merges the cells)")
    regular_stat(path, fix=f"remove it and re-run `drocli run SPEC --out {results_dir}` (it "
                 f"writes {name} again)")       # a FIFO or a device: never opened
    return path


MAX_ROW_BYTES = 64 << 10     # per row the manifest counts (a row is about 150 bytes)
ROWS_SLACK = 64 << 20        # on top of them: the header, rows lengthened by swept values
MAX_LINE_BYTES = 16 << 20    # one line of the CSV (a spec, whose values fill it, is <= 1 MB)
MAX_RATIO = 100              # decompressed / compressed: tidy records are 9-10x (their floats)


def decompressed_limit(man: dict | None, compressed: int | None = None) -> int:
    """The most bytes the records may decompress to: ROWS_SLACK plus MAX_ROW_BYTES per row
    the manifest counts (records_rows), and ROWS_SLACK plus MAX_RATIO times the compressed
    size, at most MAX_RECORDS_BYTES. A forged manifest sealing a gzip bomb is refused after
    a few MiB, not after 4 GiB (70 s, 4 GB); a folder without a manifest, after 100 times
    the bomb's own size."""
    limit = MAX_RECORDS_BYTES
    rows = (man or {}).get("records_rows")
    if isinstance(rows, int) and not isinstance(rows, bool) and rows >= 0:
        limit = min(limit, ROWS_SLACK + rows * MAX_ROW_BYTES)
    if compressed is not None:
        limit = min(limit, ROWS_SLACK + MAX_RATIO * compressed)
    return limit


def gunzip_bounded(raw: bytes, limit: int, path: Path, fix: str) -> bytes:
    """`raw` gunzipped, read 1 MiB at a time and refused (DrocliError) past `limit` bytes
    or past a line of MAX_LINE_BYTES (a bomb of zeros has no line ends): memory stays
    bounded by what a records file can hold."""
    import gzip
    import zlib

    out = io.BytesIO()            # getvalue() hands over its buffer: no second copy
    line = 0                      # bytes since the last line end
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            while block := gz.read(1 << 20):
                if out.tell() + len(block) > limit:
                    raise DrocliError(f"{path.name} decompresses to more than {limit:,} bytes, "
                                      "more than its rows can take or a records file of its "
                                      "size holds (a gzip bomb?)",
                                      file=str(path), fix=fix)
                end = block.rfind(b"\n")
                line = line + len(block) if end < 0 else len(block) - end - 1
                if line > MAX_LINE_BYTES:
                    raise DrocliError(f"{path.name} holds a line of more than {MAX_LINE_BYTES:,}"
                                      " bytes, not a row of records (a gzip bomb?)",
                                      file=str(path), fix=fix)
                out.write(block)
    except (OSError, EOFError, zlib.error) as e:
        raise DrocliError(f"{path.name} is not a complete gzip file ({e})", file=str(path),
                          fix=fix) from None
    return out.getvalue()


DIGESTS = (("records_sha256", "sha256"), ("records_sha1", "sha1"))   # newest first


def records_digest(man: dict | None) -> tuple[str, str] | None:
    """(algorithm, hex digest) of the records as the manifest recorded them: SHA-256 in
    manifests written since issue 56, SHA-1 in older ones (still read); None without one."""
    for key, algo in DIGESTS:
        want = (man or {}).get(key)
        if want:
            return algo, want
    return None


def records_bytes(path: Path, man: dict | None = None) -> bytes:
    """The CSV bytes of a records file; DrocliError if corrupt. The file is read once: its
    bytes are checked against the manifest's checksum (records_sha256, or an older
    manifest's records_sha1, when `man` has one)
    before they are gunzipped, and gunzipping is bounded (`decompressed_limit`)."""
    import hashlib

    from drocli.results.files import read_bytes
    from drocli.results.layout import REBUILD_FIX

    fix = "re-run `drocli run` to rebuild it"
    raw = read_bytes(path, MAX_RECORDS_BYTES, fix="remove it and " + fix,
                     too_large="is larger than a records file can be", too_large_fix=fix)
    want = records_digest(man)
    if want and hashlib.new(want[0], raw).hexdigest() != want[1]:
        raise DrocliError(f"{path.name} differs from what the run wrote (checksum in the "
                          "manifest)", file=str(path), fix=REBUILD_FIX)
    if path.suffix != ".gz":
        return raw
    return gunzip_bounded(raw, decompressed_limit(man, len(raw)), path, fix)


def existing_records(results_dir: Path) -> Path:
    """The records file of a results folder; the one-line error when the folder or the
    file is missing."""
    if not Path(results_dir).is_dir():
        results_file(results_dir, RECORDS)
    path = records_path(results_dir)
    if not path.exists():
        results_file(results_dir, RECORDS)
    return path


def read_records(results_dir: Path, man: dict | None = None) -> pd.DataFrame:
    """The records as a frame; a file that is not drocli's tidy CSV is a one-line error.
    `man`: the folder's manifest (drocli.results.integrity.manifest), whose checksum the file must
    have before it is gunzipped and whose row count bounds gunzipping; commands read the
    records through drocli.results.integrity.read_checked, which passes it."""
    import pandas as pd

    path = existing_records(results_dir)
    name = path.name
    fix = "re-run `drocli run` to rebuild it"
    data = records_bytes(path, man)
    if not data:
        raise DrocliError(f"{name} is empty", file=str(path), fix=fix)
    if b"\0" in data[:4096]:
        raise DrocliError(f"{name} is a binary file", file=str(path), fix=fix)
    if not data.endswith(b"\n"):
        raise DrocliError(f"{name} ends in the middle of a line (cut short)", file=str(path),
                          fix=fix)
    try:
        df = read_tidy_csv(data)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as e:
        raise DrocliError(f"{name} is not readable CSV: {e}", file=str(path),
                          fix=fix) from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DrocliError(f"{name} lacks columns {missing}", file=str(path), fix=fix)
    return df
