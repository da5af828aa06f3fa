"""Where and how a folder's numbers were made, from its manifest: the commit (a dirty
working tree flagged), the machine (CPU model, BLAS kernels, load), the compute time summed
over the cells and the clock of the last run. The pages and `drocli show RESULTS_DIR` print
these rows.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from drocli.errors import DrocliError
from drocli.report.judged_seeds import seeds_row
from drocli.report.page import Page, _solver_times
from drocli.results.durations import finite_number, span, wall_times


def _when(stamp) -> datetime | None:
    """A manifest's time stamp; one without a zone (hand-written, forged) read as UTC, so
    that any two compare."""
    try:
        t = datetime.fromisoformat(str(stamp))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def _utc(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t is not None else "?"


def compute_total(manifest: dict, cell_times: dict) -> tuple[str, str]:
    """The folder's compute time: its cells' wall times (`cells.*.wall_s`, warm-up
    included) summed, whichever runs they were spread over; a manifest from before cells
    kept them gives the cells' solver time summed (the records' last `time_s`) instead.
    The clock of the last run is no measure of it: a resumed run may have run few cells."""
    cells = manifest.get("cells") if isinstance(manifest.get("cells"), dict) else {}
    walls = wall_times(cells)
    if walls:
        rest = (f"; {len(cells) - len(walls)} of {len(cells)} cells have none recorded"
                if len(walls) < len(cells) else "")
        return ("compute", f"{span(sum(walls))} summed over {len(walls)} cells' wall times "
                           f"(warm-up and evaluation included){rest}")
    if cell_times:
        return ("compute", f"{span(sum(cell_times.values()))} of solver time summed over "
                           f"{len(cell_times)} cells (no wall times recorded: warm-up and "
                           "evaluation excluded)")
    return ("compute", "unknown (no cell times recorded)")


def compute_clock(manifest: dict, cell_times: dict) -> list[tuple[str, str]]:
    """The folder's compute time (`compute_total`), then the clock of the last run that
    computed cells, never a later spec rewrite's.

    A revision (`spec_revised`) keeps the compute run's `started`/`finished`. Where cells
    carry `at` (when each first finished), the last run says how many of them first ran in
    it (a resumed run may run a few of many) and their span is shown. Manifests without
    `at` and rewritten before that rule kept the rewrite's clock: such a clock is shorter
    than the cells' own solver time can allow (sum of their times / the run's
    parallelism), so it is shown as unknown.
    """
    m = manifest or {}
    rows = [compute_total(m, cell_times)]
    t0, t1 = _when(m.get("started")), _when(m.get("finished"))
    cells = m.get("cells") if isinstance(m.get("cells"), dict) else {}
    solver = sum(cell_times.values())
    par = next((v for v in (m.get("n_jobs"), m.get("cpus"))       # any JSON in a forgery
                if isinstance(v, int) and not isinstance(v, bool) and v > 0), 1)
    par = max(1, min(par, len(cell_times) or 1))
    need = solver / par
    how = f", -j {m.get('n_jobs', '?')} ({m.get('backend', '?')})"
    ats = sorted(t for t in (_when(c.get("at")) for c in cells.values()
                             if isinstance(c, dict) and c.get("at")) if t is not None)
    if t0 is None or t1 is None:
        rows.append(("last run", "unknown (the manifest has no clock)"))
    elif ats:
        ran = sum((t - t0).total_seconds() >= -1 and (t - t1).total_seconds() <= 1
                  for t in ats)              # differences: t1 + 1 s overflows at year 9999
        rows.append(("last run", f"{_utc(t0)} to {_utc(t1)} "
                     f"({span((t1 - t0).total_seconds())}){how}: {ran} of {len(cells)} "
                     "cells first ran in it"))
    elif (t1 - t0).total_seconds() < 0.5 * need:
        rows.append(("last run", f"unknown: the manifest's clock ({_utc(t0)}, "
                     f"{span((t1 - t0).total_seconds())}) is shorter than the cells' solver "
                     f"time allows ({span(solver)} over {par} worker(s)); it is a later "
                     "rewrite's, not the run that computed them"))
    else:
        rows.append(("last run", f"{_utc(t0)} to {_utc(t1)} "
                     f"({span((t1 - t0).total_seconds())}){how}"))
    if ats:
        rows.append(("cells finished", f"{len(ats)} of {len(cells)} cells carry their "
                     f"finish time: first {_utc(ats[0])}, last {_utc(ats[-1])} (a re-run "
                     "cell keeps the time it first ran)"))
    ran = m.get("cells_ran_after")
    if isinstance(ran, dict) and ran.get("at"):
        rows.append(("cells ran after", f"{_utc(_when(ran['at']))} ({ran.get('why', '')})"))
    if cell_times and wall_times(cells):          # else the compute row is the solver time
        rows.append(("solver time", f"{span(solver)} summed over {len(cell_times)} cells "
                     "(evaluation excluded)"))
    rev = m.get("spec_revised")
    if isinstance(rev, dict):
        rows.append(("spec revised", f"{_utc(_when(rev.get('at')))}, commit "
                     f"{str(rev.get('git_commit') or '?')[:12]}"
                     f"{' (dirty)' if rev.get('git_dirty') else ''}: spec.yaml and the "
                     "manifest rewritten, the numbers kept"))
    return rows


def _blas_text(blas) -> str:
    """The manifest's `blas` entries as 'openblas 0.3.30, SkylakeX kernels, 2 threads'."""
    out = []
    for b in blas if isinstance(blas, list) else []:
        if not isinstance(b, dict):
            continue
        parts = [" ".join(str(b[k]) for k in ("internal_api", "version") if b.get(k))]
        if b.get("architecture"):
            parts.append(f"{b['architecture']} kernels")
        if b.get("num_threads") is not None:
            n = b["num_threads"]
            parts.append(f"{n} thread{'' if n == 1 else 's'}")
        out.append(", ".join(p for p in parts if p))
    return "; ".join(sorted(set(out))) or "not recorded"


def _load_text(m: dict) -> str | None:
    """The load averages when the run started (1, 5, 15 min) and the cells' 1-minute load
    at their starts (median, max), or None when neither was recorded."""
    parts = []
    load = m.get("load_avg")
    if isinstance(load, list) and load and all(finite_number(x) for x in load):
        parts.append(f"{', '.join(f'{x:.2f}' for x in load)} (1, 5, 15 min averages) at "
                     "the last run's start")
    cells = m.get("cells") if isinstance(m.get("cells"), dict) else {}
    loads = sorted(st["load_1m"] for st in cells.values()
                   if isinstance(st, dict) and finite_number(st.get("load_1m")))
    if loads:
        parts.append(f"at the {len(loads)} cells' starts: median {loads[len(loads) // 2]:.2f}, "
                     f"max {loads[-1]:.2f} (1 min)")
    return "; ".join(parts) or None


def machine_rows(m: dict) -> list[tuple[str, str]]:
    """Where the cells ran: host, platform, CPU count and model, the BLAS libraries with
    their kernel family, and the load (wall-time claims depend on all of them). Fields a
    manifest lacks (older drocli) show as '?' or are left out; any JSON is shown as text."""
    rows = [("machine", f"{m.get('host', '?')}, {m.get('platform', '?')}, "
                        f"{m.get('cpus', '?')} CPUs"),
            ("CPU", " ".join(str(m.get("cpu_model") or "? (not recorded)").split())),
            ("BLAS", _blas_text(m.get("blas")))]
    load = _load_text(m)
    if load:
        rows.append(("load", load))
    return rows


def folder_provenance(results_dir: Path) -> list[tuple[str, str]]:
    """What `drocli show RESULTS_DIR` prints before the saved spec: the commit, the machine
    (CPU model, BLAS kernels, load) and the compute time from the manifest; the records'
    solver times only when the cells carry no wall times (older manifests)."""
    from drocli.results.integrity import manifest as read_manifest
    from drocli.results.integrity import read_checked

    m = read_manifest(results_dir)
    times = {}
    cells = m.get("cells") if isinstance(m.get("cells"), dict) else {}
    if not wall_times(cells):
        try:
            times = _solver_times(read_checked(results_dir)[0])
        except DrocliError:
            pass
    commit = str(m.get("git_commit") or "?")
    return [("drocli", f"{m.get('drocli', '?')} (commit {commit[:12]}"
                       f"{', DIRTY working tree' if m.get('git_dirty') else ''})"),
            *machine_rows(m), *compute_clock(m, times)]


def dirty_note(page: Page) -> str:
    """'' for a clean commit; else the warning a page opens with."""
    m = page.manifest or {}
    if not m.get("git_dirty"):
        return ""
    commit = str(m.get("git_commit") or "?")[:12]
    return (f"Recorded from a dirty working tree: commit {commit} plus uncommitted changes, "
            "so that commit alone may not reproduce these numbers.")


def _provenance(page: Page) -> list[tuple[str, str]]:
    m = page.manifest
    commit = str(m.get("git_commit") or "?")       # forged manifests: any JSON value
    return [("experiment", page.experiment), ("profile", page.profile),
            ("seeds", seeds_row(page.claims, page.seeds)),
            ("drocli", f"{m.get('drocli', '?')} (commit {commit[:12]}"
                       f"{', DIRTY working tree' if m.get('git_dirty') else ''}"
                       f"{', dirty or not unknown' if m.get('git_dirty') is None else ''}"
                       f"{'; ' + str(m['git_from']) if m.get('git_from') else ''})"),
            *machine_rows(m), *compute_clock(m, page.cell_times),
            *([("records history", page.history)] if page.history else [])]
