"""A results folder as a run finds it and as the run leaves it (issue 42: the run path).

`survey` reads once what the folder holds for a run's cells: each cell file, the cells a
recorded folder keeps only in its records (written back as cell files), and whether the
records are already current, so that nothing needs to run. `begin` fixes the claims as they
stand before the run's cells (drocli.claims.registration). `commit` writes what the run leaves:
the merged records, the artifacts, spec.yaml and the manifest. `revise` records a revised
spec (claims, figures, text) over records that already hold every cell. The runner calls
these and nothing else of the folder."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from drocli.claims import registration
from drocli.errors import DrocliError
from drocli.results import manifest, ownership, records, tree
from drocli.results.integrity import manifest as read_manifest
from drocli.results.integrity import records_current, records_stamp
from drocli.results.provenance import provenance


@dataclass
class Survey:
    """What the folder holds for a run's cells."""

    cells: list          # the run's cells (a look's: those it runs or the folder holds)
    known: dict          # cell id -> (status, rows) from its cell file (or adopted)
    pending: list        # the cells to run
    recorded: dict | None  # the manifest, when the records hold every cell, finished
    current: bool        # nothing to run or rewrite: records current for this spec
    manifest: dict       # the folder's manifest as found ({} when none or unreadable)


def survey(out: Path, cells: list, *, force: bool, spec_sha1: str, allowed: set[str],
           only=None) -> Survey:
    """Read the folder once for these cells. `only(cell)` (a look of a sequential plan)
    runs only the cells it accepts; the others stay the folder's only if it holds them.
    `allowed`: the ids of every cell the spec's plan can run (a folder past its first look
    holds more seeds than `seeds`)."""
    try:                     # read once: what the folder's last run recorded
        man = read_manifest(out)
    except DrocliError:
        man = {}
    # whether the records still have the checksum the manifest recorded: hashed at most
    # once and only when asked (a resumed run with its cell files never needs it)
    current = functools.cache(lambda: records_current(records.records_path(out), man))
    known = {} if force else {c.id: records.read_cell(out, c.id) for c in cells}
    if not force:            # a recorded folder (no cell files) keeps the cells it holds
        known.update(_adopt_recorded(out, cells, known, man, current))
    pending = [c for c in cells if (force or not records.finished(known[c.id][0]))
               and (only is None or only(c))]
    if only is not None:     # a look's cells the plan does not need are not the folder's
        cells = [c for c in cells if only(c) or (c.id in known
                                                 and records.finished(known[c.id][0]))]
    ids = [c.id for c in cells]
    # recorded folders keep no cell files: their records are checked against the manifest;
    # a run's folder with every cell finished is the same case (nothing runs: the manifest
    # keeps when and how its cells ran, a revised spec is noted as such)
    recorded = None if force or 0 < len(pending) < len(cells) else \
        _recorded(out, ids, allowed, man, current)
    up_to_date = (not pending and _holds(man.get("cells"), ids, allowed)
                  and man.get("spec_sha1") == spec_sha1 and current()) or (
        recorded is not None and recorded.get("spec_sha1") == spec_sha1)
    return Survey(cells, known, pending, recorded, up_to_date, man)


def revise(out: Path, batch, man: dict, *, run_key: str | None) -> None:
    """Same runs, revised claims / figures / text: spec.yaml and the manifest re-recorded
    (`batch`: the spec resolved, drocli.run.cells.Batch)."""
    ownership.mark(out, batch.name)
    records.atomic_write_text(out / "spec.yaml", batch.text)
    manifest.write(out, manifest.revised(man, batch, run_key=run_key, out=out))
    _clear_pending(out)


@dataclass
class Before:
    """The folder before the run's cells: when the run started, the tree it started from,
    the claims as fixed then, the earlier manifests and when each cell first ran."""

    started: str
    provenance: dict
    claims: dict
    previous: dict
    committed: dict
    first_ran: dict


def begin(out: Path, batch, *, pending: bool, previous: dict) -> Before:
    """Fix the claims as they stand before this run's cells (merged with those of the
    folder's manifest `previous` (Survey.manifest), the committed manifest's and an
    interrupted run's), mark the folder as the spec's, and keep the claims in a pending file
    while cells run, in case the run is interrupted."""
    started = datetime.now(timezone.utc).isoformat()
    prov = provenance(out)      # the tree the run starts from, not where it ends
    committed = tree.committed_manifest(out) or {}     # re-recorded from scratch
    claims_fixed = registration.register(
        registration.merge(registration.merge(committed.get("claims"),
                                              previous.get("claims")),
                           registration.read_pending(out)),
        batch.claims, at=started, plan=(batch.plan or {}).get("registered"))
    # a cell re-run (same id: same settings and seed, so the same numbers) keeps the
    # time it first ran: only a cell never run before can confirm a claim fixed since
    first_ran = registration.cell_times(previous)
    ownership.mark(out, batch.name)
    if pending:         # kept if this run is interrupted before its manifest
        records.atomic_write_text(
            ownership.inside(out, registration.pending_path(out)),
            json.dumps(claims_fixed, indent=1))
    return Before(started, prov, claims_fixed, previous, committed, first_ran)


def commit(out: Path, batch, cells: list, fresh: dict, before: Before, *,
           run_key: str | None, n_jobs: int, backend: str) -> tuple[Path, dict]:
    """Merge the cells into records.csv.gz and artifacts.npz, write spec.yaml and the
    manifest, and drop the pending claims; the records' path and the cells' statuses as
    the manifest lists them."""
    df, cell_st = records.merge(out, cells, fresh)
    rec_path = records.write_records(out, df)
    records.merge_artifacts(out, cells, cell_st)
    records.atomic_write_text(out / "spec.yaml", batch.text)
    statuses = manifest.cell_statuses(cells, cell_st, before.first_ran)
    manifest.write(out, manifest.assemble(
        batch, started=before.started, run_key=run_key, n_jobs=n_jobs,
        backend=backend, records_rows=len(df), records_file=rec_path, claims=before.claims,
        statuses=statuses, earlier=(before.previous, before.committed),
        provenance=before.provenance))
    _clear_pending(out)
    return rec_path, statuses


def _holds(listed, ids: list[str], allowed: set[str]) -> bool:
    """The manifest's cells are these cells, or these plus cells of the spec's sequential plan
    that earlier looks ran (a folder past its first look holds more seeds than `seeds`)."""
    listed = set(listed or ())
    return set(ids) <= listed <= (allowed | set(ids))


def _recorded(out: Path, ids: list[str], allowed: set[str], man: dict,
              current) -> dict | None:
    """The manifest when the records already hold every one of these cells (see `_holds`),
    finished, with the checksum it recorded (a folder kept without its cell files, e.g. in
    git); else None. Cell ids hash every setting a run depends on, so the same ids are the
    same runs."""
    cells = man.get("cells") or {}
    if not _holds(cells, ids, allowed) or not all(records.finished(st) for st in cells.values()):
        return None
    rec = records.records_path(out)
    if not rec.is_file():
        return None
    if records.records_digest(man):
        return man if current() else None
    from drocli.results.integrity import read_checked  # recorded before checksums: validate once

    df, completeness = read_checked(out)
    if not completeness.complete:
        return None
    return {**man, "records_rows": len(df), **records_stamp(rec)}


def finished_cells(out: Path, cells) -> set[str]:
    """The ids of these cells that `run` would not run again: finished in their cell file,
    or listed finished by the manifest of a folder whose records still have the checksum it
    recorded (a recorded folder keeps no cell files). What `--dry-run` shows."""
    out = Path(out)
    done = {c.id for c in cells if records.is_finished(out, c.id)}
    try:
        man = read_manifest(out)
    except DrocliError:
        return done
    listed = man.get("cells") or {}
    if isinstance(listed, dict) and records_current(records.records_path(out), man):
        done |= {c.id for c in cells if isinstance(listed.get(c.id), dict)
                 and records.finished(listed[c.id])}
    return done


def _adopt_recorded(out: Path, cells, known: dict, man: dict, current) -> dict:
    """Cells a recorded folder holds without their cell files (results/ in git keeps only
    the merged records): listed finished by a manifest whose records checksum still holds.
    They are written back as cell files (rows from the records, arrays from artifacts.npz),
    so a spec that adds seeds or solvers runs only the new cells. id -> (status, rows)."""
    missing = [c for c in cells if known.get(c.id, (None,))[0] is None]
    if not missing:
        return {}
    listed = man.get("cells") or {}
    wanted = [c for c in missing if records.finished(listed.get(c.id))]
    if len(wanted) == len(missing):     # nothing new to run: the recorded-folder path decides
        return {}
    if not wanted or not current():
        return {}
    df = records.read_records(out, man)
    arrays = records.read_artifacts(out)
    by_cell = {k: g for k, g in df.groupby("cell", sort=False)}
    adopted = {}
    for c in wanted:
        rows_df = by_cell.get(c.id)
        if rows_df is None:
            continue
        rows = [(int(st), float(oc), float(t), str(m), float(v)) for st, oc, t, m, v in
                rows_df[list(records.ROW_FIELDS)].itertuples(index=False, name=None)]
        status = {**listed[c.id], "cell": c.id, "adopted": "from the recorded records"}
        records.write_cell(out, c.id, rows, status, arrays.get(c.id))
        adopted[c.id] = (status, rows)
    return adopted


def _clear_pending(out: Path) -> None:
    """The manifest now holds the claims as fixed: the interrupted-run record goes, so that
    a later revision recorded only in the manifest is never overridden by it."""
    try:
        ownership.inside(out, registration.pending_path(out)).unlink(missing_ok=True)
    except OSError:
        pass
