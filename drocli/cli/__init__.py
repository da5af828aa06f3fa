"""The `drocli` command line: run, plot, check and list."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import warnings
from pathlib import Path

import click

from drocli import __version__
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


def _tolerance(ctx, param, value):
    """--rtol / --atol: finite and >= 0 (NaN compares false, so NaN matched everything)."""
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise DrocliError(f"{value} is not a tolerance", key=f"--{param.name}",
                          fix=f"give a finite number >= 0, e.g. --{param.name} "
                          f"{param.default:g}")
    return value


@contextlib.contextmanager
def _writing(folder):
    """Name `folder` (a path, or a callable giving it) in an OSError that carries no path:
    a write to an open file (disk full, a file-size limit) printed "(no path)"."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or _failed_stream(e):
            raise
        where = folder() if callable(folder) else folder
        raise OSError(e.errno, e.strerror or str(e), str(where)) from e


def _failed_stream(e: OSError) -> str | None:
    """"standard output" (or error) when `e` was raised writing it with click.echo (`drocli
    list > /dev/full`, a closed pipe): what an OSError without a path names instead of
    "(no path)"."""
    tb = e.__traceback__
    while tb is not None:
        code, names = tb.tb_frame.f_code, tb.tb_frame.f_locals
        if code.co_name == "echo" and "click" in code.co_filename:
            err = names.get("err") or names.get("file") is sys.stderr
            return "standard error" if err else "standard output"
        tb = tb.tb_next
    return None


def _folder_path(ctx, param, value):
    """An output folder given on the command line: never empty (Path('') is the working
    directory itself, which a run would then fill)."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("is empty: name a folder (e.g. results/mine), or leave "
                                 "the option out", param=param)
    return Path(value)


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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="drocli")
def cli():
    """Reproduce, extend and regression-check stochastic-optimization papers.

    \b
    A YAML spec in experiments/ names the data, the problem, the solvers, the seeds,
    the budget, the figures and the paper's claims. The usual loop:
      drocli run experiments/gdro_synthetic.yaml --profile smoke --out runs/gdro   # -> tidy CSV
      drocli plot runs/gdro                          # the paper's figures
      drocli check runs/gdro --reference results/gdro_synthetic-smoke   # claims, regressions
    `drocli list` shows the registered solvers, data sources, problems and specs.
    """


@cli.command(epilog=EPILOG_RUN)
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


EPILOG_PLOT = """\b
Examples:
  drocli plot results/gdro_synthetic                 # PNGs in results/gdro_synthetic/figures/
  drocli plot results/gdro_synthetic --format pdf    # publication PDFs
Figures (panels, x, bands, legend order, captions) are declared under `figures:` in the spec.
"""

EPILOG_CHECK = """\b
Examples:
  drocli check results/gdro_synthetic
  drocli check runs/gdro --reference results/gdro_synthetic-smoke   # a new run vs the recorded
Each comparative claim is judged on one summary per seed: a paired t-interval of its effect
at the claim's confidence (default 95 %), Bonferroni over the labels it must beat to refute
it, an exact sign-flip test for seed spreads; fewer than 3 seeds are inconclusive.
Verdicts: HOLDS (interval past the threshold), FAILS (significantly not), INCONCLUSIVE
(the interval contains the threshold: within the noise), NOT REPRODUCED (expected: the
spec marks the paper's claim as not reproduced), UNEXPECTEDLY HOLDS (marked not
reproduced, yet holds: re-examine the mark), NOT JUDGED (some of its cells did not finish:
re-run), SKIPPED (claim not for this profile). FAILS, reference mismatches and edited files
make the exit code 1; else a claim marked reproduced left NOT JUDGED makes it 4. The answer
is kept by the content of the folders, the options and drocli itself: checking the same
bytes again replays it.
"""


@cli.command(epilog=EPILOG_PLOT)
@click.argument("results_dir", metavar="RESULTS_DIR", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(), callback=_folder_path,
              help="Figure folder [default: RESULTS_DIR/figures].")
@click.option("--format", "fmt", type=click.Choice(["png", "pdf", "svg"]), default="png",
              show_default=True)
def plot(results_dir, out, fmt):
    """Render the figures declared in the spec saved in RESULTS_DIR."""
    from drocli.figures.plotting import plot_figures
    from drocli.results.integrity import read_checked

    spec = _saved_spec(results_dir)
    df, completeness = read_checked(results_dir)
    if not completeness.complete:
        click.echo(f"drocli: {results_dir}: {completeness.note()}; the figures show the "
                   "finished cells only", err=True)
    if out is None:       # the folder's own figures/: never written through a link
        from drocli.results.ownership import inside

        inside(Path(results_dir), Path(results_dir) / "figures" / "figure")
    folder = Path(out or Path(results_dir) / "figures")
    skipped: list[str] = []
    try:
        with _writing(folder), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", UserWarning)
            paths = plot_figures(df, spec.figures, folder, fmt=fmt,
                                 experiment_title=spec.title or spec.name,
                                 context={"spec": spec, "results_dir": Path(results_dir)},
                                 skipped=skipped)
    except ValueError as e:     # a label drawn as mathtext ($\frac{1$) that matplotlib refuses
        from drocli.figures.plots import MATH_FIX, mathtext_failure

        why = mathtext_failure(e)
        if why is None:
            raise
        raise DrocliError(why, file=str(Path(results_dir) / "spec.yaml"),
                          fix=MATH_FIX) from None
    for p in paths:
        click.echo(str(p))
    for line in skipped:               # figures of cases or solvers this run left out
        click.echo(f"drocli: {results_dir}: {line}", err=True)
    for w in said:                     # drocli's one-line messages, not Python's warnings
        if issubclass(w.category, UserWarning):
            click.echo(f"drocli: {results_dir}: {' '.join(str(w.message).split())}", err=True)
    for line in spec._unread:          # figures whose kind's plug-in is not installed
        click.echo(f"drocli: {results_dir}: {line}: not drawn; install the package that "
                   "brings it", err=True)


@cli.command(epilog=EPILOG_CHECK)
@click.argument("results_dir", metavar="RESULTS_DIR", type=click.Path(path_type=Path))
@click.option("--reference", type=click.Path(path_type=Path),
              help="Recorded results folder: final values must match within tolerance.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, callback=_tolerance,
              help="Relative tolerance on final values against --reference.")
@click.option("--atol", type=float, default=1e-9, show_default=True, callback=_tolerance,
              help="Absolute tolerance on final values against --reference.")
@click.option("--json", "as_json", is_flag=True, help="The verdicts (and reference "
              "mismatches) as one JSON document on stdout, for machines.")
@click.option("--no-cache", is_flag=True, help="Judge afresh even when the same folder, "
              "options and drocli were checked before (answers are kept in $DROCLI_CACHE).")
@click.option("--plan", "show_plan", is_flag=True, help="Also say, for each undecided claim, "
              "how many seeds it is expected to need at its estimated effect and spread, "
              "beside the spec's sequential plan.")
def check(results_dir, reference, rtol, atol, as_json, no_cache, show_plan):
    """Check the paper's claims (and a reference run) on RESULTS_DIR; exit 1 if any fails."""
    from drocli.results import check_cache

    options = {"rtol": rtol, "atol": atol, "json": as_json,      # the answer prints the paths
               "dir": str(results_dir), "reference": str(reference), "plan": show_plan}
    key = None if no_cache else check_cache.key(results_dir, reference, options)
    answer = check_cache.load(key)
    if answer is None:
        out, err, code = _judge(results_dir, reference, rtol, atol, as_json, show_plan)
        answer = {"out": "".join(f"{line}\n" for line in out),
                  "err": "".join(f"{line}\n" for line in err), "code": code}
        check_cache.store(key, answer["out"], answer["err"], code)
    click.echo(answer["out"], nl=False)
    click.echo(answer["err"], nl=False, err=True)
    sys.exit(answer["code"])


def plan_lines(spec, results) -> list[str]:
    """`check --plan`: for each undecided claim, its look and the seeds it is expected to
    need (80 % power at its estimated effect and spread, drocli.claims.judge)."""
    import math

    from drocli.claims.judge import seeds_to_decide

    plan = spec.plan()
    looks = plan["looks"] if plan else None
    out = []
    if looks:                  # looks that can never decide a claim, from the plan alone
        from drocli.claims.decidable import plan_notes

        out += [f"PLAN     {line}" for line in plan_notes(spec.claims, looks)]
    for r in results:
        if r.status != "inconclusive":
            continue
        need = seeds_to_decide(r.effects) if r.effects else math.nan
        est = ("no number of seeds would decide it (its estimate sits on its threshold)"
               if need == math.inf else "not estimated" if math.isnan(need)
               else f"about {int(need)} seeds would decide it at its estimated effect")
        if looks and r.look:
            j, n = r.look.get("look", 0), r.look.get("seeds", 0)
            where = (f"look {j} of {len(looks)} ({n} seeds); "
                     + ("the last look" if j >= len(looks) else
                        f"next look at {looks[j]} seeds, last at {looks[-1]}"))
        else:
            where = (f"{len(set(r.judged.values())) or '?'} seeds judged; no sequential plan "
                     "(adding seeds after this look is a second look: see docs/verdicts.md)")
        out.append(f"PLAN     {r.id}: {where}; {est}")
    return out


def _judge(results_dir, reference, rtol, atol, as_json, show_plan=False
           ) -> tuple[list, list, int]:
    """check's stdout lines, stderr lines and exit code."""
    from drocli.claims import format_result, summary_counts, summary_line
    from drocli.claims.verdicts import judge_folder
    from drocli.results.integrity import read_checked
    from drocli.results.reference import compare_reference, kernel_note, later_seeds

    judged = judge_folder(results_dir)
    spec, df, completeness, results = (judged.spec, judged.records, judged.completeness,
                                       judged.claims)
    ref_df = read_checked(reference)[0] if reference is not None else None
    note = completeness.note()
    mismatches = kernels = None
    if reference is not None:
        mismatches = compare_reference(df, ref_df, rtol=rtol, atol=atol,
                                       rtol_by_label=spec.reference_rtol)
        kernels = kernel_note(results_dir, reference)
    flags = judged.flags
    ok = (not any(r.failed for r in results) and not mismatches
          and not any(f.tampered for f in flags))
    from drocli.results.status import UNFINISHED_EXIT

    unjudged = any(r.status == "incomplete" and r.reproduced for r in results)
    code = 1 if not ok else UNFINISHED_EXIT if unjudged else 0
    if as_json:
        return [json.dumps({
            "results_dir": str(results_dir), "experiment": spec.name, "profile": spec.profile,
            "cells": {"finished": completeness.finished, "total": completeness.total},
            "claims": [{**r.to_dict(), **({"note": note} if note else {})} for r in results],
            "summary": summary_counts(results),
            "paper": None if judged.paper is None else
            json.loads(judged.paper.to_json(orient="records")),
            "flags": [{"what": f.what, "line": f.line, "tampered": f.tampered}
                      for f in flags],
            "reference": None if reference is None else {
                "path": str(reference), "rtol": rtol, "atol": atol,
                "rtol_by_label": spec.reference_rtol, "mismatches": mismatches,
                "later_seeds": later_seeds(df, ref_df),
                "kernels": kernels},
            "ok": ok}, indent=1)], [], code
    out, err = [], []
    if not results:
        out.append("no claims in this spec: nothing to judge")
    out += [f"FLAG     {f.line}" for f in flags]
    out += [format_result(r) + (f" [{note}]" if note else "") for r in results]
    if judged.paper is not None:
        from drocli.report.paper_vs_ours import lines

        out += lines(judged.paper)
    if note:
        err.append(f"drocli: {results_dir}: {note}; re-run `drocli run` to finish the rest")
    if reference is not None:
        out += [f"MISMATCH {line}" for line in mismatches]
        if mismatches and kernels:
            out.append(f"NOTE     {kernels}")
        later = later_seeds(df, ref_df)
        if later:
            out.append(f"NOTE     the reference also holds {len(later)} seed(s) this run did "
                       f"not run ({', '.join(later[:4])}{' ...' if len(later) > 4 else ''}: "
                       "its later looks); compared on this run's seeds")
        if not mismatches:
            loose = "".join(f", {lab}: {t:g}" for lab, t in spec.reference_rtol.items()
                            if t > rtol)
            out.append(f"MATCHES  reference {reference} (rtol={rtol:g}{loose})")
    if show_plan:
        out += plan_lines(spec, results)
    if results or flags:
        out.append(summary_line(results)
                   + (f"; {len(flags)} flag(s)" if flags else "")
                   + (f"; {len(mismatches)} reference mismatch(es)" if mismatches else "")
                   + (f" [{note}]" if note else ""))
    return out, err, code


LIST_KINDS = {"solvers": "solver", "problems": "problem", "data": "data",
              "figures": "figure", "claims": "claim"}


@cli.command(name="list")
@click.argument("what", type=click.Choice([*LIST_KINDS, "experiments"]), required=False)
@click.argument("name", required=False)
def list_(what, name):
    """List plug-ins (solvers, problems, data, figures, claims) or shipped specs.

    \b
    drocli list solvers          # name, family, one line each
    drocli list solvers aleg     # every parameter: type, range, default, description
    """
    from drocli.cli import listing

    if name is not None:
        if what in (None, "experiments"):
            raise DrocliError("a NAME needs a plug-in kind", key="list",
                              fix="e.g. `drocli list solvers aleg`")
        click.echo(listing.describe(LIST_KINDS[what], name))
        return
    kinds = [what] if what else [*LIST_KINDS, "experiments"]
    for kind in kinds:
        if kind == "experiments":
            from drocli.cli.catalog import listing as experiments

            click.echo(experiments())
            continue
        click.echo(listing.table(LIST_KINDS[kind]))


@cli.command()
@click.argument("spec_file", metavar="SPEC", type=click.Path(path_type=Path))
@click.argument("overrides", metavar="[KEY=VALUE]...", nargs=-1)
@click.option("--multirun", "-m", is_flag=True, help="KEY=a,b,c sweeps the value, as in run.")
@click.option("--solver", "-s", "only_solvers", multiple=True, metavar="LABEL",
              help="Only this solver entry (label or name); repeatable.")
@click.option("--case", "-d", "--data", "only_data", multiple=True, metavar="CASE",
              help="Only this case (named setting); repeatable (-d, --data: the same).")
@click.option("--profile", "-p", help="Spec profile: smoke, quick, paper [default].")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a spec value by dotted path (YAML value); repeatable.")
def show(spec_file, overrides, multirun, only_solvers, only_data, profile, sets):
    """Print the resolved spec (profile, overrides and defaults applied) without running it.
    Given a results folder: its provenance (commit, machine, CPU model, BLAS kernels, load,
    compute time) as YAML comments, then its saved spec."""
    from drocli.spec import dump_spec, load_spec, parse_set
    from drocli.spec.overrides import comma_hint, positional

    if spec_file.is_dir():
        if overrides or multirun or only_solvers or only_data or profile or sets:
            raise DrocliError("a results folder's spec is shown as it was run",
                              file=str(spec_file), fix="give overrides with a SPEC file")
        from drocli import report as rep

        for k, v in rep.folder_provenance(spec_file):
            click.echo(rep.shown(f"# {k}: {' '.join(str(v).split())}"))
        click.echo(dump_spec(_saved_spec(spec_file)), nl=False)
        return
    with comma_hint(overrides, multirun):
        spec = load_spec(spec_file, profile=profile,
                         overrides=parse_set(sets) + positional(overrides, multirun),
                         solvers=only_solvers, data=only_data)
    click.echo(dump_spec(spec), nl=False)


@cli.command()
@click.argument("results_dirs", metavar="RESULTS_DIR...", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(), required=True, callback=_folder_path,
              help="Report folder (Markdown and HTML pages, index, the figures copied in); "
                   "required: the tracked docs/report is written only when named.")
@click.option("--readme", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the status block of this README (between its markers).")
@click.option("--check", is_flag=True, help="With --readme: write nothing; exit 1 when the "
              "block is stale.")
def report(results_dirs, out, readme, check):
    """Write a reproduction report of RESULTS_DIR... into --out: per folder a Markdown and an
    HTML page (figures copied into the report, verdicts with paired effects and intervals,
    provenance) and an index; the folder can be moved or copied whole. With --readme, the
    README's generated status block (one line per folder, linking --out)."""
    import os

    from drocli import report as rep

    results_dirs = rep.distinct(results_dirs)     # a folder given twice is reported once
    if check:
        if readme is None:
            raise DrocliError("--check needs --readme", key="--check",
                              fix="drocli report results/* --out docs/report --readme "
                                  "README.md --check")
        pages = [rep._load(d) for d in results_dirs]
    else:
        with _writing(out):
            pages = rep.write(list(results_dirs), out)
        click.echo(f"report: {rep.shown(out / 'index.html')} ({len(pages)} pages)")
    if readme is not None:
        link = os.path.relpath(out, Path(readme).parent)
        with _writing(readme):
            current = rep.update_readme(readme, rep.readme_block(pages, link), check)
        if check and not current:
            click.echo(rep.shown(f"{readme}: the status block is stale; run `drocli report "
                       f"{' '.join(map(str, results_dirs))} --out {out} --readme {readme}`"),
                       err=True)
            sys.exit(1)
        click.echo(rep.shown(f"{readme}: status block {'current' if current else 'written'}"))


@cli.group()
def data():
    """The papers' data sets: where they are expected, and downloading them.

    \b
    drocli data list                          # every file-backed source: folder, status, size
    drocli data fetch cifar10                 # download, verify (MD5), place atomically
    drocli data fetch libsvm --file w8a --file w8a.t
    drocli data fetch mnist --mirror https://my.mirror/mnist/
    """


@data.command(name="list")
def data_list():
    """Every file-backed data source: where its files are expected, present or missing,
    their size on disk, and whether `drocli data fetch` can download them."""
    from drocli.data import datasets

    click.echo(datasets.table())


@data.command(name="fetch")
@click.argument("name")
@click.option("--mirror", metavar="URL", help="Base address replacing the canonical one "
              "(file names kept).")
@click.option("--file", "files", multiple=True, metavar="NAME",
              help="Only this file (repeatable); default: all of the source's files.")
@click.option("--to", type=click.Path(path_type=Path), help="Target folder [default: "
              "$DROCLI_DATA/<source>/]; pass the same folder as data.params.path.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def data_fetch(name, mirror, files, to, quiet):
    """Download NAME's files from the data set's public address, verify each against its
    published checksum (or the first download's size and SHA-256) and place it atomically;
    an interrupted download resumes."""
    from drocli.data import datasets
    from drocli.plugins import registry

    with _writing(lambda: to or datasets.folder_of(registry.get("data", name))):
        for path in datasets.fetch(name, mirror=mirror, files=files, to=to, quiet=quiet,
                                   log=lambda m: click.echo(m, err=True)):
            click.echo(str(path))


def _saved_spec(results_dir):
    from drocli.results.records import results_file
    from drocli.spec import load_saved

    return load_saved(results_file(results_dir, "spec.yaml"))


OS_FIXES = {
    errno.ENOSPC: "free disk space, or give --out on another disk; re-running resumes",
    errno.EDQUOT: "free space in your quota, or give --out elsewhere; re-running resumes",
    errno.EACCES: "give a folder you can write (--out), or fix its permissions",
    errno.EPERM: "give a folder you can write (--out), or fix its permissions",
    errno.EROFS: "the file system is read-only: give --out on a writable one",
    errno.EFBIG: "the file exceeds the file-size limit (ulimit -f): raise it or use fewer "
                 "checkpoints",
    errno.ENOTDIR: "a part of the path is a file, not a folder: give another --out",
    errno.EISDIR: "the path is a folder where a file is expected",
    errno.ENOENT: "check the path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "a symbolic link loop (the link leads back to itself): make the link point "
                 "at a real file or folder, or give the real path",
    errno.EIO: "give a regular file (a special file such as /proc/self/mem cannot be "
               "read); if it is one, check the disk",
}


def os_error_line(e: OSError) -> str:
    """An OSError as one line with the path and the fix (a long path loses its middle)."""
    from drocli.errors import fit_line

    stream = None if e.filename is not None else _failed_stream(e)
    path = e.filename if e.filename is not None else stream
    what = e.strerror or type(e).__name__
    fix = OS_FIXES.get(e.errno, "check the path and the disk")
    if stream:
        fix = (f"{stream} goes to a full disk or a closed pipe: send it where it can be "
               "written")
    return fit_line(None if path is None else str(path), None, what, fix)


def usage_line(e: click.UsageError) -> str:
    """A usage error (a value click cannot convert, as `-j 1e400` or `--rtol abc`, an
    unknown option, a missing argument) as one line with the fix, like every other bad
    input: click printed four."""
    from drocli.errors import fit_line

    command = e.ctx.command_path if e.ctx is not None else "drocli"
    return fit_line(None, None, e.format_message(), f"see `{command} --help`")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stopped like Ctrl-C (workers stopped, finished cells kept)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop_on(signum, _frame):
    raise Terminated(signum)


def _stopped(e: BaseException) -> None:
    """One line and the shell's exit code for a stop: 130 (Ctrl-C), 143 (SIGTERM), 129
    (SIGHUP)."""
    cause = e if isinstance(e, Terminated) else getattr(e, "__cause__", None)
    if isinstance(cause, Terminated):
        import signal

        name = signal.Signals(cause.signum).name
        click.echo(f"drocli: stopped by {name}; re-run the same command to resume", err=True)
        sys.exit(128 + cause.signum)
    click.echo("drocli: interrupted; re-run the same command to resume", err=True)
    sys.exit(130)


def _stop_late(signum, _frame):
    """A stop while Python shuts down after the command, its work done and written (it
    died silently there): one line and 128 + signal at once, since no exception can be
    caught any more."""
    import signal

    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"drocli: stopped by {signal.Signals(signum).name} while exiting; its "
                    "work was done\n".encode())
    os._exit(128 + signum)


def main(argv=None):
    """Entry point: user errors print one line and exit 2; no traceback. SIGTERM and SIGHUP
    stop a run as Ctrl-C does, and one that comes while Python shuts down after the
    command still prints its line (`_stop_late`)."""
    import signal
    import threading

    from drocli.run.scratch import matplotlib_config

    matplotlib_config()
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            before[sig] = signal.signal(sig, _stop_on)
    try:
        _main(argv)
    except KeyboardInterrupt as e:      # a stop as _main was printing its own last line
        _stopped(e)
    finally:   # in-process callers (tests, given argv) get their handlers back
        for sig, handler in before.items():
            signal.signal(sig, handler if argv is not None else _stop_late)


def _main(argv) -> None:
    try:
        cli.main(args=argv, prog_name="drocli", standalone_mode=False)
    except click.exceptions.Abort as e:
        _stopped(e)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:   # bare `drocli [data]`
        click.echo(e.ctx.get_help(), err=True)        # the help as click lays it out
        sys.exit(2)
    except click.UsageError as e:   # click's own four lines (usage, hint, blank, error)
        click.echo(f"drocli: error: {usage_line(e)}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except DrocliError as e:
        click.echo(f"drocli: error: {e.line()}", err=True)
        sys.exit(2)
    except OSError as e:            # disk full, read-only folder, permissions, file too large
        click.echo(f"drocli: error: {os_error_line(e)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt as e:
        _stopped(e)
    except Exception as e:
        if os.environ.get("DROCLI_DEBUG"):
            raise
        click.echo(f"drocli: internal error: {type(e).__name__}: {e} "
                   "(set DROCLI_DEBUG=1 for the traceback)", err=True)
        sys.exit(3)
    sys.exit(0)
