"""Run the cells of a spec in parallel (joblib), skip finished ones, merge the records.

The orchestration: which cells run (resume, recorded folders), where (local processes, or
dask through drocli.run.backends), writing what comes back. One cell's run is drocli.run.worker's,
the manifest's assembly drocli.results.manifest's."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from drocli.claims import registration
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.results import folder, ownership, records
from drocli.results.status import UNFINISHED
from drocli.run import backends, progress
from drocli.run.backends import dask_timeout  # noqa: F401 -- kept importable from here
from drocli.run.cells import Batch
from drocli.run.limits import default_limit
from drocli.run.worker import (  # noqa: F401 -- the cell-level API, kept importable from here
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


def _runs_here(backend: str) -> bool:
    """Whether cells run in this process (or in forks of it), so that the data the
    preflight loaded are used again rather than only held."""
    return backend in ("fork", "threading")


@dataclass
class RunSummary:
    out: Path
    total: int
    skipped: int
    ran: int
    failed: list[dict]
    records_path: Path | None
    judged: object = None     # verdicts.Judged of the folder as this run left it, if judged
    statuses: dict = field(default_factory=dict)   # cell id -> its status in the manifest

    def of(self, *kinds: str) -> list[dict]:
        """The statuses of the folder's cells that ended as one of `kinds` (this run's and
        earlier runs' alike: what the folder now holds)."""
        return [{**st, "cell": cid} for cid, st in self.statuses.items()
                if st.get("status") in kinds]

    @property
    def unfinished(self) -> list[dict]:
        """Cells that ran and did not finish (timed out or failed): not in the records."""
        return self.of(*UNFINISHED)

    def last_line(self) -> str:
        """`records: PATH`, then what did not finish and what diverged or stalled."""
        counts = [(len(self.of(k)), word) for k, word in (
            ("timeout", "stopped at their wall limit"), ("failed", "failed"),
            ("diverged", "diverged"), ("stalled", "stalled"))]
        said = [f"{n} {word}" for n, word in counts if n]
        if not said:
            return f"records: {self.records_path}"
        tail = ("; not in the records: re-run the same command to run them again"
                if self.unfinished else "; kept in the records: what the solver did")
        return (f"records: {self.records_path} ({', '.join(said)} of {self.total} "
                f"cells{tail})")


def _results(pending, blas_threads: int, n_jobs: int, backend: str, client=None):
    """(cell id, rows, status, artifacts) of every pending cell, as they finish.

    `fork` (the default on Linux), `spawn` (the default where forking is not safe) and
    `loky` (joblib's way of starting workers): worker processes under each cell's wall
    limit (drocli.run.pool), one worker at -j 1; `threading`: threads of this process under
    the same limits (drocli.run.in_process; a cell past its limit is interrupted, or abandoned
    to run on); with a dask `client` they go to the cluster in tasks of several cells and
    the results come back here, a cell past its limit killed with its worker
    (drocli.run.backends)."""
    if client is not None:                       # drocli.run.backends.Dask
        yield from client.results(pending, blas_threads)
        return
    workers = (os.cpu_count() or 1) if n_jobs < 0 else n_jobs
    if backend == "threading":
        from drocli.run.in_process import in_threads

        yield from in_threads(pending, blas_threads, workers)
        return
    from drocli.run.pool import supervised

    yield from supervised(pending, blas_threads, workers, method=backend)


def resolve_backend(backend: str, n_jobs: int = 1) -> str:
    """`auto`: on Linux, fork where forking this process is safe (no other thread running in
    it, as in the command line); in a program embedding drocli that runs other threads,
    its cells at -j 1 run in a thread of its own process, with what it registered
    (`threading`), and with more jobs in fresh workers (spawn: no worker started afresh
    has those registrations); elsewhere (macOS, Windows) spawn. Every backend keeps each
    cell's wall limit: fork, spawn and loky run cells in worker processes of drocli.run.pool,
    threading in threads of drocli.run.in_process. Other names are kept."""
    if backend != "auto":
        return backend
    import multiprocessing as mp
    import threading

    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        if threading.active_count() == 1:
            return "fork"
        return "threading" if n_jobs == 1 else "spawn"
    return "spawn"


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    tqdm.monitor_interval = 0       # no monitor thread: forked workers start from one thread
    return progress.cell_bar(total)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _run_pending(pending, out: Path, blas_threads: int, n_jobs: int, backend: str, client,
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
    where = ownership.inside(out, out / "cells" / ".progress" / "x").parent
    if bar is not None:      # the bar moves within cells too (progress files of the workers)
        watch = progress.Watcher(bar, where)
    elif not quiet:          # a log, not a terminal: a heartbeat line every minute
        every = progress.heartbeat_seconds()
        watch = progress.Watcher(None, where, min(0.5, every), beat=_stderr, every=every,
                                 total=len(pending),
                                 names={c.id: f"{c.label} seed {c.seed}" for c in pending})
    if watch is not None:
        watch.__enter__()
    results = _results(pending, blas_threads, n_jobs, backend, client)
    try:
        for cell_id, rows, st, artifacts in results:
            st = {**st, "at": registration.now()}   # when it finished: claims fixed before
            records.write_cell(out, cell_id, rows, st, artifacts)
            fresh[cell_id] = (st, rows)
            if st.get("status") == "failed":
                failed.append(st)
            if watch is not None:
                watch.done(cell_id)
            if bar is not None:
                bar.set_postfix_str(f"{st.get('label')} seed {st.get('seed')}: "
                                    f"{st.get('status')}")
            elif not quiet:
                log(f"  {st.get('label'):>12} seed {st.get('seed')}: {st.get('status')} "
                    f"in {st.get('wall_s', 0):.1f}s")
    finally:
        results.close()      # a stop between two cells: the workers go now, not at exit
        if watch is not None:
            watch.__exit__(None, None, None)
        if bar is not None:
            bar.close()
    return failed


def run(batch: Batch, out: Path, *, n_jobs: int = 1, backend: str = "auto",
        scheduler: str | None = None, force: bool = False, quiet: bool = False,
        log=print, run_key: str | None = None, seeds: list | None = None,
        only=None) -> RunSummary:
    """Run every unfinished cell of `batch` (the spec resolved once, `drocli.run.cells.resolve`)
    into `out`, then merge records.csv.gz. Workers return each cell's rows, status and
    artifacts; this process writes them (atomically, cell by cell, so an interrupted run
    resumes). backend `auto`: `resolve_backend`. A look of a sequential plan
    (`drocli.run.until_decided`) takes the cells of `seeds` (the plan's first n) and runs those
    `only(cell)` accepts (the solvers its undecided claims need); the others are merged as
    they are. spec.yaml stays the spec. What the folder holds and what the run leaves in it
    are drocli.results.folder's."""
    out = Path(out)
    backend = resolve_backend(backend, n_jobs)
    if n_jobs == 0 or n_jobs < -1:              # before the folder exists (joblib fails late)
        raise DrocliError(f"{n_jobs} is not a number of parallel cells", key="-j/--jobs",
                          fix="give -j 1 or more, or -j -1 for every core")
    if backend == "dask":
        backends.check_settings(scheduler)
    default_limit()                 # DROCLI_CELL_LIMIT_S refused before anything is written
    progress.heartbeat_seconds()    # and DROCLI_HEARTBEAT_S
    cells = batch.for_seeds(seeds)
    if not cells:
        raise DrocliError("the spec expands to no cells", key="seeds",
                          fix="give at least one seed, solver and grid value")
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise DrocliError("two cells have identical settings", key="solvers",
                          fix="remove the duplicated solver entry or seed")
    found = folder.survey(out, cells, force=force, spec_sha1=batch.sha1, allowed=batch.ids,
                          only=only)
    cells, pending = found.cells, by_data(found.pending)
    if found.current:
        ownership.mark(out, batch.name)         # marks a folder recorded before marks
        log(f"drocli: {batch.name} [{batch.profile}]: all {len(cells)} cells done and "
            f"records current -> {out}")
        return RunSummary(out, len(cells), len(cells), 0, [], records.records_path(out))
    if found.recorded is not None:   # same runs, revised claims / figures / text
        folder.revise(out, batch, found.recorded, run_key=run_key)
        log(f"drocli: {batch.name} [{batch.profile}]: all {len(cells)} cells already in the "
            f"records; spec.yaml updated (claims, figures, text) -> {out}")
        return RunSummary(out, len(cells), len(cells), 0, [], records.records_path(out))
    remote = backend == "dask" and bool(scheduler or os.environ.get("DROCLI_DASK_SCHEDULER"))
    if not remote:
        preflight(pending)
        if not _runs_here(backend):
            forget_data()
    client = None
    if pending and backend == "dask":
        client = backends.Dask(n_jobs, scheduler, total=len(cells),
                               kept=len(cells) - len(pending))
    try:
        if remote and pending:       # file-backed data live on the workers: check them there
            client.call(preflight, pending)
        before = folder.begin(out, batch, pending=bool(pending), previous=found.manifest)
        log(f"drocli: {batch.name} [{batch.profile}]: {len(cells)} cells, "
            f"{len(cells) - len(pending)} already done, {len(pending)} to run -> {out}")
        fresh = {k: v for k, v in found.known.items() if records.finished(v[0])}
        failed = _run_pending(pending, out, batch.blas_threads, n_jobs, backend, client,
                              quiet, log, fresh)
    finally:
        if client is not None:
            client.close()
    rec_path, statuses = folder.commit(out, batch, cells, fresh, before, run_key=run_key,
                                       n_jobs=n_jobs, backend=backend)
    judged = None
    if batch.claims:         # the verdicts as judged now, for readers without the plug-ins
        from drocli.claims.verdicts import record_verdicts

        judged = record_verdicts(out)
    return RunSummary(out, len(cells), len(cells) - len(pending), len(pending), failed, rec_path,
                      judged, statuses)
