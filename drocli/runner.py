"""Run the cells of a spec in parallel (joblib), skip finished ones, merge the records.

The orchestration: which cells run (resume, recorded folders), where (local processes, or
dask through drocli.backends), writing what comes back. One cell's run is drocli.worker's,
the manifest's assembly drocli.manifest's."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from drocli import backends, manifest, ownership, progress, records, registration, registry, tree
from drocli.backends import dask_timeout  # noqa: F401 -- kept importable from here
from drocli.cells import expand
from drocli.errors import DrocliError
from drocli.integrity import file_digest, records_current
from drocli.integrity import manifest as read_manifest
from drocli.limits import default_limit
from drocli.spec import Spec, dump_spec
from drocli.worker import (  # noqa: F401 -- the cell-level API, kept importable from here
    WARMUP_FRACTION,
    _leave_sigint_to_parent,
    _run_remote,
    budget_calls,
    data_key,
    execute,
    forget_data,
    load_data,
    run_cell,
    warm_up,
)


def fetch_command(entry, params: dict) -> str | None:
    """The `drocli data fetch` command that brings a source's missing files, if it has one."""
    downloads = entry.extra.get("downloads")
    if downloads is None:
        return None
    args = entry.extra.get("fetch_args")
    extra = "".join(" " + a for a in args(params)) if args else ""
    path = params.get("path")
    to = f" --to {path}" if path else ""
    return f"drocli data fetch {entry.name}{extra}{to}"


def preflight(cells) -> None:
    """Fail before anything is written when a data source's files are missing or malformed:
    each distinct file-backed data set (a source with a `preflight` or `files=True`) is
    loaded once here and checked (`drocli.data.checks`)."""
    from drocli.data.checks import check_grouped

    seen = set()
    for c in cells:
        key = data_key(c.data_name, c.data_params, c.data_seed)[:2]
        if key in seen:
            continue
        seen.add(key)
        entry = registry.get("data", c.data_name)
        if entry.preflight is not None:
            try:
                entry.preflight(dict(c.data_params))
            except DrocliError as e:
                cmd = fetch_command(entry, c.data_params)
                if cmd is None:
                    raise
                raise DrocliError(e.detail, file=e.file, key=e.key,
                                  fix=f"{e.fix}; or download them: `{cmd}`") from None
        if entry.preflight is not None or entry.extra.get("files"):
            check_grouped(load_data(c.data_name, c.data_params, c.data_seed))


def by_data(cells) -> list:
    """The cells reordered so that those of one data set (source, params, seed) follow each
    other, in the order each data set first appears: a process then loads each at most
    once, with a cache of one. Numbers do not depend on the order (each cell has its own
    stream); the records keep the spec's order."""
    first: dict = {}
    for c in cells:
        first.setdefault(data_key(c.data_name, c.data_params, c.data_seed), len(first))
    return sorted(cells, key=lambda c: first[data_key(c.data_name, c.data_params,
                                                      c.data_seed)])


def _runs_here(backend: str, n_jobs: int) -> bool:
    """Whether cells run in this process (or in forks of it), so that the data the
    preflight loaded are used again rather than only held."""
    return backend in ("fork", "threading") or (backend != "dask" and n_jobs == 1)


@dataclass
class RunSummary:
    out: Path
    total: int
    skipped: int
    ran: int
    failed: list[dict]
    records_path: Path | None
    judged: object = None     # verdicts.Judged of the folder as this run left it, if judged


def _results(pending, blas_threads: int, n_jobs: int, backend: str, client=None):
    """(cell id, rows, status, artifacts) of every pending cell, as they finish.

    `fork` (the default on Linux): forked workers under each cell's wall limit
    (drocli.pool), one worker at -j 1. Otherwise joblib's workers (loky, threading) or, at
    -j 1, this process run them, and only the monitor's stop applies (a solver that never
    calls it is not stopped); with a dask `client` they go to the cluster in tasks of several
    cells and the results come back here (drocli.backends)."""
    if client is not None:                       # drocli.backends.Dask
        yield from client.results(pending, blas_threads)
        return
    workers = (os.cpu_count() or 1) if n_jobs < 0 else n_jobs
    if backend == "fork":
        from drocli.pool import supervised

        yield from supervised(pending, blas_threads, workers)
        return
    if workers == 1:
        for c in pending:           # no pool to start, and joblib not even imported
            yield _run_remote(c, blas_threads)
        return
    import joblib

    jobs = (joblib.delayed(_run_remote)(c, blas_threads) for c in pending)
    with joblib.parallel_config(backend=backend):
        yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)


def resolve_backend(backend: str) -> str:
    """`auto`: fork where forking this process is safe and cheap (Linux, no other thread
    running in it), else loky. Other names are kept."""
    if backend != "auto":
        return backend
    import multiprocessing as mp
    import threading

    if (sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods()
            and threading.active_count() == 1):
        return "fork"
    return "loky"


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    tqdm.monitor_interval = 0       # no monitor thread: forked workers start from one thread
    return tqdm(total=total, unit="cell", desc="drocli run", file=sys.stderr, dynamic_ncols=True)


def _holds(listed, ids: list[str], allowed: set[str]) -> bool:
    """The manifest's cells are these cells, or these plus cells of the spec's sequential plan
    that earlier looks ran (a folder past its first look holds more seeds than `seeds`)."""
    listed = set(listed or ())
    return set(ids) <= listed <= (allowed | set(ids))


def _up_to_date(out: Path, spec_sha1: str, ids: list[str], allowed: set[str]) -> bool:
    """Nothing to run and nothing to rewrite: the manifest lists these cells (see `_holds`),
    was written for this resolved spec, and the records still have the checksum it
    recorded."""
    try:
        man = read_manifest(out)
    except DrocliError:
        return False
    if not _holds(man.get("cells"), ids, allowed) or man.get("spec_sha1") != spec_sha1:
        return False
    return records_current(records.records_path(out), man)


def _recorded(out: Path, ids: list[str], allowed: set[str]) -> dict | None:
    """The manifest when the records already hold every one of these cells (see `_holds`),
    finished, with the checksum it recorded (a folder kept without its cell files, e.g. in
    git); else None. Cell ids hash every setting a run depends on, so the same ids are the
    same runs."""
    try:
        man = read_manifest(out)
    except DrocliError:
        return None
    cells = man.get("cells") or {}
    if not _holds(cells, ids, allowed) or not all(records.finished(st) for st in cells.values()):
        return None
    rec = records.records_path(out)
    if not rec.is_file():
        return None
    if man.get("records_sha1"):
        return man if records_current(rec, man) else None
    from drocli.integrity import read_checked  # recorded before checksums: validate once

    df, completeness = read_checked(out)
    if not completeness.complete:
        return None
    return {**man, "records_rows": len(df), "records_sha1": file_digest(rec)}


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


def _adopt_recorded(out: Path, cells, known: dict) -> dict:
    """Cells a recorded folder holds without their cell files (results/ in git keeps only
    the merged records): listed finished by a manifest whose records checksum still holds.
    They are written back as cell files (rows from the records, arrays from artifacts.npz),
    so a spec that adds seeds or solvers runs only the new cells. id -> (status, rows)."""
    missing = [c for c in cells if known.get(c.id, (None,))[0] is None]
    if not missing:
        return {}
    try:
        man = read_manifest(out)
    except DrocliError:
        return {}
    listed = man.get("cells") or {}
    wanted = [c for c in missing if records.finished(listed.get(c.id))]
    if len(wanted) == len(missing):     # nothing new to run: the recorded-folder path decides
        return {}
    if not wanted or not records_current(records.records_path(out), man):
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


def _run_pending(pending, out: Path, spec: Spec, n_jobs: int, backend: str, client,
                 quiet: bool, log, fresh: dict) -> list[dict]:
    """Run the pending cells and write each one as it comes back (also into `fresh`:
    id -> (status, rows), so the merge need not read them back); the failed statuses."""
    failed: list[dict] = []
    if not pending:
        return failed
    bar = _progress(len(pending), quiet)
    os.environ["DROCLI_PARENT_PID"] = str(os.getpid())    # local workers inherit it
    os.environ.pop(progress.ENV, None)     # drocli's own channel: never one set from outside
    watch = None
    if bar is not None:      # the bar moves within cells too (progress files of the workers)
        watch = progress.Watcher(bar, ownership.inside(out, out / "cells" / ".progress" / "x")
                                 .parent)
    if watch is not None:
        watch.__enter__()
    try:
        for cell_id, rows, st, artifacts in _results(pending, spec.blas_threads, n_jobs,
                                                     backend, client):
            st = {**st, "at": registration.now()}   # when it finished: claims fixed before
            records.write_cell(out, cell_id, rows, st, artifacts)
            fresh[cell_id] = (st, rows)
            if st.get("status") == "failed":
                failed.append(st)
            if watch is not None:
                watch.done(cell_id)
                bar.set_postfix_str(f"{st.get('label')} seed {st.get('seed')}: "
                                    f"{st.get('status')}")
            elif not quiet:
                log(f"  {st.get('label'):>12} seed {st.get('seed')}: {st.get('status')} "
                    f"in {st.get('wall_s', 0):.1f}s")
    finally:
        if watch is not None:
            watch.__exit__(None, None, None)
            bar.close()
    return failed


def run(spec: Spec, out: Path, *, n_jobs: int = 1, backend: str = "auto",
        scheduler: str | None = None, force: bool = False, quiet: bool = False,
        log=print, run_key: str | None = None, seeds: list | None = None,
        only=None) -> RunSummary:
    """Run every unfinished cell of `spec` into `out`, then merge records.csv.gz. Workers
    return each cell's rows, status and artifacts; this process writes them (atomically,
    cell by cell, so an interrupted run resumes). backend `auto`: `resolve_backend`. A look
    of a sequential plan (`drocli.until_decided`) takes the cells of `seeds` (the plan's
    first n) and runs those `only(cell)` accepts (the solvers its undecided claims need);
    the others are merged as they are. spec.yaml stays the spec."""
    out = Path(out)
    backend = resolve_backend(backend)
    if n_jobs == 0 or n_jobs < -1:              # before the folder exists (joblib fails late)
        raise DrocliError(f"{n_jobs} is not a number of parallel cells", key="-j/--jobs",
                          fix="give -j 1 or more, or -j -1 for every core")
    if backend == "dask":
        backends.check_settings(scheduler)
    default_limit()                 # DROCLI_CELL_LIMIT_S refused before anything is written
    cells = expand(spec if seeds is None else
                   spec.model_copy(update={"seeds": list(seeds), "sequential": None}))
    if not cells:
        raise DrocliError("the spec expands to no cells", key="seeds",
                          fix="give at least one seed, solver and grid value")
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise DrocliError("two cells have identical settings", key="solvers",
                          fix="remove the duplicated solver entry or seed")
    # each cell file is read once: to know what is pending and, finished, for the merge
    known = {} if force else {c.id: records.read_cell(out, c.id) for c in cells}
    if not force:            # a recorded folder (no cell files) keeps the cells it holds
        known.update(_adopt_recorded(out, cells, known))
    pending = by_data([c for c in cells if (force or not records.finished(known[c.id][0]))
                       and (only is None or only(c))])
    if only is not None:     # a look's cells the plan does not need are not the folder's
        cells = [c for c in cells if only(c) or (c.id in known
                                                 and records.finished(known[c.id][0]))]
        ids = [c.id for c in cells]
    spec_text = dump_spec(spec)
    spec_sha1 = manifest.spec_digest(spec_text)
    # recorded folders keep no cell files: their records are checked against the manifest;
    # a run's folder with every cell finished is the same case (nothing runs: the manifest
    # keeps when and how its cells ran, a revised spec is noted as such)
    allowed = _plan_ids(spec)
    man = None if force or 0 < len(pending) < len(cells) else _recorded(out, ids, allowed)
    if (not pending and _up_to_date(out, spec_sha1, ids, allowed)) or (
            man is not None and man.get("spec_sha1") == spec_sha1):
        ownership.claim(out, spec.name)          # marks a folder recorded before marks
        log(f"drocli: {spec.name} [{spec.profile}]: all {len(cells)} cells done and "
            f"records current -> {out}")
        return RunSummary(out, len(cells), len(cells), 0, [], records.records_path(out))
    if man is not None:      # same runs, revised claims / figures / text: re-record the spec
        ownership.claim(out, spec.name)
        records.atomic_write_text(out / "spec.yaml", spec_text)
        manifest.write(out, manifest.revised(man, spec, spec_sha1=spec_sha1, run_key=run_key,
                                             out=out))
        _clear_pending(out)
        log(f"drocli: {spec.name} [{spec.profile}]: all {len(cells)} cells already in the "
            f"records; spec.yaml updated (claims, figures, text) -> {out}")
        return RunSummary(out, len(cells), len(cells), 0, [], records.records_path(out))
    remote = backend == "dask" and bool(scheduler or os.environ.get("DROCLI_DASK_SCHEDULER"))
    if not remote:
        preflight(pending)
        if not _runs_here(backend, n_jobs):
            forget_data()
    client = None
    if pending and backend == "dask":
        client = backends.Dask(n_jobs, scheduler, total=len(cells),
                               kept=len(cells) - len(pending))
    try:
        if remote and pending:       # file-backed data live on the workers: check them there
            client.call(preflight, pending)
        started = datetime.now(timezone.utc).isoformat()
        prov = records.provenance(out)      # the tree the run starts from, not where it ends
        try:                    # the claims as fixed before this run's cells
            previous = read_manifest(out)
        except DrocliError:
            previous = {}
        committed = tree.committed_manifest(out) or {}     # re-recorded from scratch
        claims_fixed = registration.register(
            registration.merge(registration.merge(committed.get("claims"),
                                                  previous.get("claims")),
                               registration.read_pending(out)),
            spec.claims, at=started, plan=(spec.plan() or {}).get("registered"))
        # a cell re-run (same id: same settings and seed, so the same numbers) keeps the
        # time it first ran: only a cell never run before can confirm a claim fixed since
        first_ran = registration.cell_times(previous)
        ownership.claim(out, spec.name)
        if pending:         # kept if this run is interrupted before its manifest
            records.atomic_write_text(
                ownership.inside(out, registration.pending_path(out)),
                json.dumps(claims_fixed, indent=1))
        log(f"drocli: {spec.name} [{spec.profile}]: {len(cells)} cells, "
            f"{len(cells) - len(pending)} already done, {len(pending)} to run -> {out}")
        fresh = {k: v for k, v in known.items() if records.finished(v[0])}
        failed = _run_pending(pending, out, spec, n_jobs, backend, client, quiet, log, fresh)
    finally:
        if client is not None:
            client.close()
    df, cell_st = records.merge(out, cells, fresh)
    rec_path = records.write_records(out, df)
    records.merge_artifacts(out, cells, cell_st)
    records.atomic_write_text(out / "spec.yaml", spec_text)
    statuses = manifest.cell_statuses(cells, cell_st, first_ran)
    manifest.write(out, manifest.assemble(
        spec, started=started, spec_sha1=spec_sha1, run_key=run_key, n_jobs=n_jobs,
        backend=backend, records_rows=len(df), records_file=rec_path, claims=claims_fixed,
        statuses=statuses, earlier=(previous, committed), provenance=prov))
    _clear_pending(out)
    judged = None
    if spec.claims:         # the verdicts as judged now, for readers without the plug-ins
        from drocli.verdicts import record_verdicts

        judged = record_verdicts(out)
    return RunSummary(out, len(cells), len(cells) - len(pending), len(pending), failed, rec_path,
                      judged)


def _plan_ids(spec: Spec) -> set[str]:
    """The ids of every cell the spec's sequential plan can run (its seeds and pool)."""
    if spec.sequential is None:
        return set()
    return {c.id for c in expand(spec.model_copy(update={"seeds": spec.seed_order(),
                                                         "sequential": None}))}


def _clear_pending(out: Path) -> None:
    """The manifest now holds the claims as fixed: the interrupted-run record goes, so that
    a later revision recorded only in the manifest is never overridden by it."""
    try:
        ownership.inside(out, registration.pending_path(out)).unlink(missing_ok=True)
    except OSError:
        pass
