"""`drocli run SPEC`: the options that choose the cells (-s, -d, KEY=VALUE, -m, --set), where
they run (-j, --backend, --scheduler) and where they are written (a variant never into a
recorded folder); resuming, --dry-run and --until-decided.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from drocli.cli.error_lines import _writing
from drocli.cli.folders import _folder_path
from drocli.errors import DrocliError

EPILOG_RUN = """\b
Examples:
  drocli run experiments/gdro_synthetic.yaml              # paper profile, results/gdro_synthetic/
  drocli run experiments/gdro_synthetic.yaml --profile smoke -j 2
  drocli run experiments/gdro_synthetic.yaml -p smoke data.params.n_train=200 seeds=[0,1,2]
  drocli run experiments/gdro_synthetic.yaml --profile smoke --set solvers.ALEG.params.gamma_w=0.05
  drocli run experiments/gdro_synthetic.yaml --profile smoke --backend dask -j 2
A variant (--set, KEY=VALUE, -m, -s, -d) goes to runs/<name>-<profile>-<tag> unless --out
says otherwise: never into a recorded folder under results/.
Re-running the same command resumes: finished cells are skipped (--force re-runs them).
Cells stopped at their wall limit or failed are named, kept out of the records and run
again by the same command; the run then exits 4.
"""



JOBS_PER_CORE = 4


def _jobs(ctx, param, value):
    """-j: a count of parallel cells from 1 to 4 per core, or -1 for every core; refused
    before anything is loaded or written (joblib fails on 0 only once the folder exists).
    Each job is a process on this machine (a local dask cluster's worker too) running one
    CPU-bound cell on one BLAS thread and holding its data: past the cores, jobs only share
    them; 4 per core leaves room for oversubscribing on purpose, more is a typo (-j 100000
    was taken as is)."""
    if value is None or value == -1:
        return value
    cores = os.cpu_count() or 1
    if value > JOBS_PER_CORE * cores:
        raise DrocliError(f"{value} parallel cells is more than {JOBS_PER_CORE} per core "
                          f"({cores} cores here)", key="-j/--jobs",
                          fix=f"give -j {JOBS_PER_CORE * cores} or fewer, or -j -1 for one "
                              "per core")
    if value < 1:
        raise DrocliError(f"{value} is not a number of parallel cells", key="-j/--jobs",
                          fix="give -j 1 or more, or -j -1 for every core")
    return value


def _default_out(spec, variant: tuple = ()) -> Path:
    """results/<name>[-<profile>] for the spec as written; a variant (--set, KEY=VALUE, -m,
    -s, -d) goes to runs/<name>[-<profile>]-<6 hex of what was typed>, so it never mixes into
    a recorded folder (issue 57) and the same command finds its folder again."""
    import hashlib

    name = spec.name if spec.profile == spec.default_profile else f"{spec.name}-{spec.profile}"
    if not variant:
        return Path("results") / name
    tag = hashlib.sha1("\0".join(variant).encode()).hexdigest()[:6]
    return Path("runs") / f"{name}-{tag}"


@click.command(epilog=EPILOG_RUN)
@click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("overrides", metavar="[KEY=VALUE]...", nargs=-1)
@click.option("--multirun", "-m", is_flag=True, help="Sweep: KEY=a,b,c runs every value "
              "(a grid over that data, problem or solver parameter, or seeds).")
@click.option("--solver", "-s", "only_solvers", multiple=True, metavar="LABEL",
              help="Run only this solver entry (label or name); repeatable.")
@click.option("--case", "-d", "--data", "only_data", multiple=True, metavar="CASE",
              help="Run only this case (named setting) of the spec; repeatable (-d and "
                   "--data, its older name, are the same).")
@click.option("--out", "-o", type=click.Path(), callback=_folder_path,
              help="Results folder [default: results/<spec name>, -<profile> unless paper; "
                   "runs/<...>-<tag> for a variant: --set, KEY=VALUE, -m, -s, -d].")
@click.option("-j", "--jobs", "n_jobs", type=int, default=1, show_default=True,
              callback=_jobs, help="Cells run in parallel (-1: all cores).")
@click.option("--profile", "-p", help="Spec profile: smoke (<1 min), quick, paper [default].")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a spec value by dotted path (YAML value); repeatable.")
@click.option("--backend", type=click.Choice(["auto", "fork", "spawn", "loky", "threading",
                                              "dask"]),
              default="auto",
              show_default=True, help="Where -j cells run: auto = fork on Linux (workers "
              "forked once imports, data and kernels are loaded), spawn on macOS/Windows "
              "(fresh workers), loky (workers started as joblib's are): each kills a cell "
              "past its wall limit. threading runs cells in threads of this process: one "
              "past its limit is interrupted, or abandoned to run on; dask runs cells on a "
              "dask.distributed cluster (LocalCluster unless --scheduler/"
              "DROCLI_DASK_SCHEDULER) and restarts a worker whose cell is past its limit.")
@click.option("--scheduler", metavar="ADDRESS", help="dask scheduler address (tcp://host:8786).")
@click.option("--force", is_flag=True, help="Re-run finished cells too.")
@click.option("--dry-run", is_flag=True,
              help="List the cells and whether each is done; run nothing.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option("--skip-memory-check", is_flag=True,
              help="Run even when the estimated memory exceeds what is available.")
@click.option("--until-decided", is_flag=True, help="Run the looks of the spec's "
              "sequential plan, adding the pool's seeds for the undecided claims' solvers "
              "after each look, until every claim is decided or the last look is reached.")
def run(spec_file, overrides, multirun, only_solvers, only_data, out, n_jobs, profile, sets,
        backend, scheduler, force, dry_run, quiet, skip_memory_check, until_decided):
    """Run the experiment described by SPEC and write tidy CSV.

    Writes OUT/records.csv.gz (one row per cell, checkpoint and metric), OUT/spec.yaml
    (the resolved spec) and OUT/manifest.json (provenance and per-cell status).
    KEY=VALUE after SPEC overrides a value as --set does (hydra style); with -m,
    KEY=a,b,c sweeps it.
    """
    from drocli.run.resume import nothing_to_do, run_key

    if backend == "dask":
        from drocli.run.backends import check_settings

        check_settings(scheduler)        # bad DROCLI_DASK_*TIMEOUT, empty --scheduler: refused
    typed = (*sets, *overrides, *(["-m"] if multirun else []),
             *(f"-s {x}" for x in only_solvers), *(f"-d {x}" for x in only_data))
    try:
        key = run_key(spec_file, profile, typed)
    except (OSError, DrocliError):   # unreadable spec: the full path says why, with the fix
        key = None
    if key and out is not None and not (force or dry_run or until_decided):   # decided
        done = nothing_to_do(out, key)       # from the manifest, no spec or plug-in loaded
        if done is not None:
            if not quiet:
                click.echo(done, err=True)
            click.echo(f"records: {Path(out) / 'records.csv.gz'}")
            return
    from drocli.run import runner
    from drocli.run.cells import resolve
    from drocli.spec import load_spec, parse_set
    from drocli.spec.overrides import comma_hint, positional

    with comma_hint(overrides, multirun):
        spec = load_spec(spec_file, profile=profile,
                         overrides=parse_set(sets) + positional(overrides, multirun),
                         solvers=only_solvers, data=only_data)
    out = out or _default_out(spec, typed)
    if not skip_memory_check:
        from drocli.run.resources import check as check_memory

        check_memory(spec, str(spec_file), n_jobs=n_jobs)
    try:
        batch = resolve(spec)        # the spec resolved into cells, once
    except DrocliError as e:         # e.g. a label template: named in the spec file
        if e.file:
            raise
        raise DrocliError(e.detail, file=str(spec_file), key=e.key, fix=e.fix) from None
    from drocli.run.until_decided import plan_unchanged

    try:
        plan_unchanged(batch, Path(out))   # a plan is fixed once its first look has run
    except DrocliError as e:
        raise DrocliError(e.detail, file=str(spec_file), key=e.key, fix=e.fix) from None
    if dry_run:
        cells = batch.for_seeds()
        from drocli.results.folder import finished_cells
        from drocli.results.records import cell_status
        from drocli.results.status import unfinished

        finished = set() if force else finished_cells(out, cells)
        ended = {} if force else {c.id: st["status"] for c in cells if c.id not in finished
                                  and unfinished(st := cell_status(Path(out), c.id))}
        again = (f" ({len(ended)} that did not finish: timed out or failed; this command "
                 "without --dry-run runs them again)" if ended else "")
        click.echo(f"drocli: {spec.name} [{spec.profile}]: {len(cells)} cells, "
                   f"{len(finished & {c.id for c in cells})} done, "
                   f"{len([c for c in cells if c.id not in finished])} to run{again} -> {out}",
                   err=True)
        for c in cells:
            done = "done" if c.id in finished else ended.get(c.id, "todo")
            click.echo(f"{c.id}  {done:7}  {c.label:<16} seed={c.seed}  {c.dataset}")
        if spec.sequential is not None:     # looks that can never decide a claim
            from drocli.claims.decidable import plan_notes

            for line in plan_notes(spec.claims, spec.sequential.looks):
                click.echo(f"drocli: plan: {line}", err=True)
        return
    log = (lambda *a, **k: None) if quiet else (lambda m: click.echo(m, err=True))
    from drocli.results.tree import require_clean

    require_clean(out)         # a paper folder is recorded from a clean tree only
    kw = dict(n_jobs=n_jobs, backend=backend, scheduler=scheduler, force=force,
              quiet=quiet, log=log, run_key=key)
    try:
        with _writing(out):
            if until_decided:
                from drocli.run.until_decided import run_until_decided

                summary = run_until_decided(batch, out, **kw)
            else:       # a folder some looks into keeps them and runs the first look only
                from drocli.run.until_decided import reached

                n = reached(batch.plan, out)
                first = {str(s) for s in batch.first}
                summary = runner.run(batch, out, **kw, seeds=batch.plan["order"][:n] if n
                                     else None, only=(lambda c: str(c.seed) in first) if n
                                     else None)
    except DrocliError as e:
        if e.file:
            raise
        raise DrocliError(e.detail, file=str(spec_file), key=e.key, fix=e.fix) from None
    for st in summary.unfinished:
        click.echo(f"drocli: cell {st['cell']} ({st['label']}, seed {st['seed']}) "
                   f"{st['status']}: {st.get('error')}", err=True)
    click.echo(summary.last_line())
    if summary.unfinished:
        from drocli.results.status import UNFINISHED_EXIT

        sys.exit(UNFINISHED_EXIT)
