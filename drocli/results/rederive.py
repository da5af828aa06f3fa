"""`check` re-derives a folder's cells from its spec.yaml (issue 56): the digests only say
that the files are those the run wrote, and whoever edits a file can recompute them. The
cells spec.yaml expands to (labels, solver, data and problem parameters, seeds, budget and
cases: everything a cell id hashes) must be the cells the records hold, each with its label
and seed. A mismatch is flagged whatever the digests say.

This reading needs the plug-ins the spec names (their parameter defaults enter the ids);
without them it is skipped, and `check` says so in one line instead of a flag.
"""

from __future__ import annotations

SHOWN = 3


def derived(spec):
    """The cells of the folder's spec as `drocli run` would expand it (every seed of its
    plan), or the reason they cannot be derived here."""
    from drocli.errors import DrocliError
    from drocli.run.cells import expand, plan_spec

    try:
        return expand(plan_spec(spec)), None
    except (DrocliError, KeyError, LookupError) as e:
        return None, f"{type(e).__name__}: {e}"


def _name(cell) -> str:
    where = ", ".join(f"{k}={v}" for k, v in cell.swept.items() if k == "setting")
    return f"{cell.label} seed {cell.seed}" + (f" ({where})" if where else "")


def mismatches(spec, df, man: dict) -> tuple[list[str], str | None]:
    """(the lines that say how the records and spec.yaml differ, a note when the cells
    could not be derived)."""
    if df is None or df.empty or "cell" not in df.columns:
        return [], None
    cells, why = derived(spec)
    if cells is None:
        return [], f"cells not re-derived from spec.yaml ({why})"
    mine = {c.id: c for c in cells}
    first = {int(s) for s in spec.seeds}
    seen = df.drop_duplicates("cell")
    lines = []
    foreign = [str(r.cell) for r in seen.itertuples() if str(r.cell) not in mine]
    if foreign:
        rows = seen[seen["cell"].astype(str).isin(foreign[:SHOWN])]
        names = ", ".join(f"{r.label} seed {r.seed}" for r in rows.itertuples())
        lines.append(f"{len(foreign)} cell(s) in the records are not cells of spec.yaml (e.g. "
                     f"{names}): its solvers, parameters, budget, seeds or cases differ from "
                     "the run's")
    renamed = [f"{r.cell} is {mine[str(r.cell)].label} seed {mine[str(r.cell)].seed} in "
               f"spec.yaml, {r.label} seed {r.seed} in the records"
               for r in seen.itertuples() if str(r.cell) in mine and
               (str(r.label) != mine[str(r.cell)].label or int(r.seed) != mine[str(r.cell)].seed)]
    if renamed:
        lines.append(f"{len(renamed)} cell(s) carry other labels or seeds in the records than "
                     f"in spec.yaml ({'; '.join(renamed[:SHOWN])}): labels swapped after the run")
    held = set(map(str, seen["cell"]))
    statuses = man.get("cells") if isinstance(man.get("cells"), dict) else {}
    missing = [c for c in cells if c.seed in first and c.id not in held
               and c.id not in statuses]
    if missing:
        lines.append(f"{len(missing)} cell(s) of spec.yaml's seeds are neither in the records "
                     f"nor in the manifest (e.g. {', '.join(map(_name, missing[:SHOWN]))}): "
                     "its solvers, seeds or cases differ from the run's")
    return lines, None

