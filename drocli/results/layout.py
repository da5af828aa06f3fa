"""Names and size limits of a results folder's files, in an import-light module: the resume
fast path, the records, their integrity check and the ownership mark all read them, and
none of those need import another for a constant."""

from __future__ import annotations

RECORDS = "records.csv.gz"         # gzip of the tidy CSV, deterministic bytes
MAX_MANIFEST_BYTES = 256 << 20     # per-cell statuses: ~200 bytes a cell
# the fix for records that are not what the run wrote (results.integrity, results.records)
REBUILD_FIX = "re-run `drocli run SPEC --out RESULTS_DIR` (it rebuilds the records from the cells)"
# a name that becomes one path component of a results folder (spec, profile, figure file
# stem): safe characters, under the 255-byte limit of a file name with its suffixes
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
