"""Every figure of a spec drawn from the records: each by its kind's render function
(drocli.figures.plots), its caption followed by what the run shows (profile and seeds), and
a figure whose filters match nothing in the records (a run of some cases or solvers only)
named as not drawn instead of drawn empty."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd

from drocli.errors import DrocliError
from drocli.figures.plots import validate_figure
from drocli.figures.saving import _formats
from drocli.figures.style import RC
from drocli.figures.sweep_labels import variants
from drocli.plugins import registry


def plot_figures(records: pd.DataFrame, figures: list, out_dir: Path,
                 fmt: str = "png", experiment_title: str | None = None,
                 dpi: int = 150, context: dict | None = None,
                 skipped: list | None = None) -> list[Path]:
    """Render every figure to `out_dir/<name>.<fmt>`; return the written paths.

    `fmt` is png, pdf or svg, or a comma-separated list of them ("png,pdf"). `context`
    carries what some kinds need beyond the records (the resolved spec, as `spec`). A
    figure whose filters match no records (a run of some cases or solvers only) is not
    drawn: one line naming it goes to `skipped`.
    """
    formats = _formats(fmt)
    figures = [validate_figure(f) for f in figures]
    names = [f.name for f in figures]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DrocliError(f"figure names must be unique, repeated: {', '.join(dup)}",
                          key="figures")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    run = (context or {}).get("spec")
    if run is not None and getattr(run, "profile", None):
        from drocli.spec.captions import run_caption

        tag = " [smoke run]" if run.profile == "smoke" else ""
        figures = [f.model_copy(update={"caption": run_caption(f.caption, run.profile,
                                                               run.seeds),
                                        "title": f"{f.title or ''}{tag}".strip() or None})
                   for f in figures]
    if run is not None and getattr(run, "profile", None) not in (None, "paper"):
        figures = [drop_empty_panels(records, f) for f in figures]
    with matplotlib.rc_context(RC):
        for spec in figures:
            empty = matches_nothing(records, spec, metrics=skipped is not None)
            if empty:
                if skipped is not None:
                    skipped.append(f"figure {spec.name}: {empty}: not drawn")
                continue
            render = registry.get("figure", spec.kind).func
            # `subset`: the records may be a subset of the solvers (a panel whose metric
            # they do not record says "no data" instead of refusing the figure)
            paths += render(records, spec, out_dir, formats, dpi, experiment_title,
                            {**(context or {}), "subset": skipped is not None})
    return paths


def drop_empty_panels(records: pd.DataFrame, spec):
    """The figure without the panels whose filter matches none of the records, in a run of a
    profile that holds some of the spec's cases only (issue 57: a smoke run of one setting
    drew the others as "no data"); its caption names them. A figure with no panel left, or
    one whose panels have no filters, is returned as it is (matches_nothing decides)."""
    import math

    from drocli.results.aggregate import apply_filter

    panels = getattr(spec, "panels", None)
    if not isinstance(panels, list | tuple) or not panels or \
            "layout" not in type(spec).model_fields:
        return spec
    try:
        rows = apply_filter(records, dict(getattr(spec, "filter", None) or {}))
        keep = [p for p in panels if getattr(p, "filter", None) is None
                or not apply_filter(rows, dict(p.filter)).empty]
    except DrocliError:
        return spec
    if not keep or len(keep) == len(panels):
        return spec
    gone = [", ".join(f"{k}={v}" for k, v in dict(p.filter).items()) for p in panels
            if p not in keep]
    cols = min((spec.layout or (1, len(panels)))[1], len(keep))
    note = (f"Not in this run, so not drawn: the panels of {'; '.join(dict.fromkeys(gone))}.")
    caption = f"{spec.caption.rstrip()} {note}" if getattr(spec, "caption", None) else note
    return spec.model_copy(update={"panels": keep, "caption": caption,
                                   "layout": (math.ceil(len(keep) / cols), cols)})


def matches_nothing(records: pd.DataFrame, spec, metrics: bool = True) -> str | None:
    """Why a figure has nothing to draw (its filter, or every panel's, matches no records,
    none of the labels it names is in them, or, with `metrics`, none of its metrics: a
    subset of the solvers that record them); None when something matches, or when its
    filters name a column the records lack (the kind says so itself). Without `metrics` an
    absent metric is left to the kind, which names it as unknown."""
    from drocli.results.aggregate import apply_filter

    fig_filter = dict(getattr(spec, "filter", None) or {})
    try:
        rows = apply_filter(records, fig_filter)
        if rows.empty:
            return f"its filter {fig_filter} matches no records"
        panels = getattr(spec, "panels", None)
        panels = [dict(getattr(p, "filter", None) or {})
                  for p in (panels if isinstance(panels, list | tuple) else ())]
        if panels and all(apply_filter(rows, f).empty for f in panels):
            return "no panel's filter matches the records"
        refs = getattr(spec, "metric_refs", None)
        wanted = [m for _, m in (refs() if refs else ()) if m is not None]
        if metrics and wanted and "metric" in rows.columns and \
                not set(wanted) & set(rows["metric"]):
            return f"none of its metrics ({', '.join(dict.fromkeys(wanted))}) is in the records"
    except DrocliError:
        return None
    labels = getattr(spec, "legend", None) or getattr(spec, "labels", None)
    present = list(map(str, rows["label"].unique())) if "label" in rows.columns else []
    if isinstance(labels, list) and labels and "label" in rows.columns and \
            not any(variants(str(lab), present) for lab in labels):
        return f"none of its labels ({', '.join(map(str, labels))}) is in the records"
    return None
