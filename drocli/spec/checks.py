"""Checks a spec passes once its values are valid: its grids multiply to a number of cells
that can run, its profile names are safe path components, its figures and claims are
models of their kinds with unique names, and an ablation names a claim of the spec."""

from __future__ import annotations

import re

from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN
from drocli.spec.model import MAX_CELLS, NAME_RULE, Spec, budget_limit


def cell_count(spec: Spec) -> int:
    """How many cells the spec expands into, counted without expanding: cases x data grid x
    problem grid x (each solver's grid, summed) x seeds."""
    def size(grid: dict) -> int:
        n = 1
        for values in (grid or {}).values():
            n *= max(1, len(values))
        return n

    solvers = sum(size(s.grid) for s in spec.solvers)
    return (max(1, len(spec.cases)) * size(spec.data.grid) * size(spec.problem.grid)
            * solvers * len(spec.seeds))


def check_cell_count(spec: Spec, file: str) -> None:
    """Refuse a spec whose grids multiply past DROCLI_MAX_CELLS (default 100,000) cells,
    before anything expands them: a typo there would run (or list) for hours."""
    var, default = MAX_CELLS
    limit = budget_limit(var, default, allow_inf=True)     # inf: no limit
    n = cell_count(spec)
    if n > limit:                          # so the limit is finite (int(inf) was exit 3)
        raise DrocliError(f"the spec expands to {n:,} cells, more than {int(limit):,}",
                          file=file,
                          key="seeds, solvers[].grid, data.grid, problem.grid, cases",
                          fix=f"shrink the grids or seeds, or raise the limit with {var}={n}")


def check_profile_name(name, *, file: str | None, key: str) -> None:
    """A profile name becomes part of the results folder's name (results/<spec>-<profile>):
    one safe path component, as spec names (no '/', no '..', no control characters)."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise DrocliError(f"profile name {name!r} is not a single safe path component",
                          file=file, key=key, fix=f"name profiles with {NAME_RULE}, e.g. smoke")


def _check_ablates(claims: list, written: dict, file: str) -> None:
    """An ablation's or a revision's claim names another claim of the spec as written."""
    ids = [c.get("id") for c in written.get("claims") or [] if isinstance(c, dict)]
    for i, c in enumerate(claims):
        for what in ("ablates", "revises"):
            a = getattr(c, what, None)
            if a is not None and (a.claim not in ids or a.claim == c.id):
                raise DrocliError(f"claim {c.id!r} {what} {a.claim!r}, which is not another "
                                  "claim of the spec", file=file, key=f"claims[{i}].{what}.claim",
                                  fix=did_you_mean(a.claim, [str(x) for x in ids if x != c.id]))


def validate_outputs(spec: Spec, file: str, lenient: bool = False,
                     written: dict | None = None) -> None:
    """Figures and claims as their kinds' models (tagged unions on `kind`), in place.
    `lenient` (a results folder's saved spec): a claim of a kind not installed here is kept
    as an OpaqueClaim, shown with its recorded verdict, and a figure of a kind not installed
    is left out, named in `spec._unread` (`plot` says so). `written`: the spec as written,
    before its profile and overrides, which the claims' causes are checked against
    (drocli.claims.cause)."""
    from drocli.claims import validate_claim
    from drocli.figures.plots import validate_figure

    figures, unread = [], []
    for i, f in enumerate(spec.figures):
        kind = str(f.get("kind", "curves")) if isinstance(f, dict) else None
        if lenient and kind is not None and kind not in registry.names("figure"):
            unread.append(f"figure {f.get('name', i)!r}: kind {kind!r} is not installed here")
            continue
        figures.append(validate_figure(f, file=file, key=f"figures[{i}]"))
    spec.figures = figures
    spec._unread = unread
    spec.claims = [validate_claim(c, file=file, key=f"claims[{i}]", lenient=lenient)
                   for i, c in enumerate(spec.claims)]
    if written is not None:            # causes against the spec as written
        from drocli.claims.cause import check_on_load

        for i, c in enumerate(spec.claims):
            check_on_load(c, written, file, f"claims[{i}]", spec.claims)
        if written.get("profile") is None:   # a saved spec holds the profile's claims only
            _check_ablates(spec.claims, written, file)
    for what, items in (("figure names", [f.name for f in spec.figures]),
                        ("claim ids", [c.id for c in spec.claims])):
        dup = sorted({n for n in items if items.count(n) > 1})
        if dup:
            raise DrocliError(f"{what} must be unique, repeated: {', '.join(dup)}", file=file,
                              key=what.split()[0] + "s", fix="rename one of them")
