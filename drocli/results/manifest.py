"""The manifest.json a run writes into its results folder, assembled from what the runner
hands over: the resolved spec's digest and the run key, how it ran (jobs, backend, BLAS
threads, provenance), the records' row count and checksum, the claims as fixed before its
cells, and each cell's status with the time it first ran. Read back by
`drocli.results.integrity.manifest`."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from drocli.claims import registration
from drocli.results import records
from drocli.results.durations import finite_number
from drocli.results.integrity import records_stamp
from drocli.results.provenance import provenance as collect_provenance
from drocli.results.status import unfinished


def cell_statuses(cells, cell_st: dict, first_ran: dict) -> dict:
    """Cell id -> label, seed, status, error and when it first ran (a re-run cell keeps its
    first time: only a cell never run before can confirm a claim fixed since); with dask,
    the worker that ran it; its wall time (`wall_s`, warm-up included: the folder's compute
    time is their sum, whichever runs the cells were spread over) and the 1-minute load
    average at its start (`load_1m`), where its status has them (cells run before these
    were recorded do not)."""
    statuses = {}
    for c in cells:
        st = cell_st.get(c.id) or {"status": "missing"}
        statuses[c.id] = {"label": c.label, "seed": c.seed, "status": st.get("status"),
                          "error": st.get("error"),
                          "at": registration.earliest(first_ran.get(c.id), st.get("at"))}
        if st.get("worker"):         # dask: address, drocli version, source digest, commit
            statuses[c.id]["worker"] = st["worker"]
        if st.get("stopped"):        # killed at its wall limit, or its worker died: no rows
            statuses[c.id]["stopped"] = st["stopped"]
        if unfinished(st):           # where it sits, for the claims it leaves unjudged
            statuses[c.id]["where"] = where(c)
        for key, digits in (("wall_s", 3), ("load_1m", 2)):
            if finite_number(st.get(key)):
                statuses[c.id][key] = round(float(st[key]), digits)
    return statuses


def where(cell) -> dict:
    """A cell's identity columns as the records would hold them (dataset and its swept
    values: the case's setting, grid values): what a claim's filter selects on."""
    return {"dataset": cell.dataset, **{records.param_column(k): records.cell_value(v)
                                        for k, v in cell.swept.items()}}


def assemble(batch, *, started: str, run_key: str | None, n_jobs: int,
             backend: str, records_rows: int, records_file: Path, claims: dict,
             statuses: dict, earlier: tuple = (), provenance: dict | None = None) -> dict:
    """The manifest of a run that has just merged its records (finished now), of `batch`
    (the spec resolved, drocli.run.cells.Batch); `earlier`: the manifests this one replaces
    (the folder's, the committed one), whose first-seen times of seeds and claims it keeps
    (`seen`); `provenance` as taken when the run started (the commit and tree state its
    code was loaded from), else now."""
    man = {"experiment": batch.name, "profile": batch.profile, "started": started,
           "finished": datetime.now(timezone.utc).isoformat(),
           "spec_sha1": batch.sha1, "run_key": run_key,
           "n_jobs": n_jobs, "backend": backend, "blas_threads": batch.blas_threads,
           "records_rows": records_rows, **records_stamp(records_file),
           **(provenance or collect_provenance(Path(records_file).parent)), "claims": claims,
           "cells": statuses}
    man["seen"] = registration.seen(man, *earlier)
    return man


def revised(man: dict, batch, *, run_key: str | None, out: Path | None = None) -> dict:
    """A recorded manifest for the same runs under a revised spec (claims, figures, text):
    the new digest and run key, the claims registered anew (a dropped claim stays, marked
    removed), and when and by which drocli the spec was revised."""
    prov = collect_provenance(out)
    new = {**man, "spec_sha1": batch.sha1, "run_key": run_key,
           "claims": registration.register(man.get("claims"), batch.claims,
                                           plan=(batch.plan or {}).get("registered")),
           "spec_revised": {
               "at": datetime.now(timezone.utc).isoformat(),
               **{k: prov.get(k) for k in ("drocli", "git_commit", "git_dirty")}}}
    new["seen"] = registration.seen(new, man)
    return new


def write(out: Path, man: dict) -> None:
    """manifest.json, atomically."""
    records.atomic_write_text(Path(out) / "manifest.json", json.dumps(man, indent=1, default=str))
