"""Paper-like figures from records: one panel per metric, seed bands, one shared legend.

A figure is declared in the spec (`figures:`), validated by `FigureSpec`; each panel is
drawn by drocli.figures.curve_panel. A label keeps its color and marker across panels (a
fixed palette in legend order). No text is drawn over the curves: the title sits on top,
then the shared legend (with the dashed guide's label), then the notes (seeds diverged,
bands cut, curves coinciding or stopping short); an axis label every panel shares is
written once. The image carries no caption: captions sit beside it (the report's pages).
"""

from __future__ import annotations

import math
import warnings

import matplotlib
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from drocli.errors import DrocliError, did_you_mean
from drocli.figures.curve_panel import _draw_panel, _ylabel
from drocli.figures.layout import _legend_grid, _wrap
from drocli.figures.panel_notes import _figure_notes
from drocli.figures.plots.curves_model import FigureSpec
from drocli.figures.style import (
    BAND_ALPHA,
    GUIDE_COLOR,
    LEGEND_FS,
    MARKERS,
    NOTE_FS,
    PALETTE,
    RC,
    TITLE_FS,
)
from drocli.figures.sweep_labels import variants
from drocli.plugins import registry
from drocli.results.aggregate import apply_filter, metric_as_x


def make_figure(records: pd.DataFrame, spec: FigureSpec,
                experiment_title: str | None = None, metric_label=None,
                subset: bool = False) -> Figure:
    """Build (without saving) the matplotlib Figure of one figure spec. `metric_label`
    (metric name -> readable label or None, see `problem_metric_label`) labels the y-axes
    of panels that give no `ylabel`; `subset`: the records may hold a subset of the
    solvers, so a panel's metric they lack draws "no data" (when another panel's is there)."""
    if not isinstance(spec, FigureSpec):
        spec = FigureSpec.model_validate(spec)
    with matplotlib.rc_context(RC):
        return _make_figure(records, spec, experiment_title, metric_label, subset)


def problem_metric_label(run_spec):
    """The problem's `metric_label(name) -> str | None` (declared at its registration as
    `metric_label=`), None when the run's problem declares none or is not installed."""
    name = getattr(getattr(run_spec, "problem", None), "name", None)
    if not isinstance(name, str):
        return None
    try:
        entry = registry.get("problem", name)
    except DrocliError:
        return None
    label = entry.extra.get("metric_label")
    return label if callable(label) else None


def _make_figure(records: pd.DataFrame, spec: FigureSpec, experiment_title: str | None,
                 metric_label=None, subset: bool = False) -> Figure:
    for x in dict.fromkeys(spec.x_of(p) for p in spec.panels):
        records = metric_as_x(records, x)       # x may be a recorded metric (iteration)
    _check_columns(records, spec, subset)
    rows = apply_filter(records, spec.filter, where=f"figures[{spec.name}].filter")
    rows = rows[rows["metric"].isin([p.metric for p in spec.panels])]
    labels = _label_order(rows, spec)
    style = {lab: (spec.colors.get(lab, PALETTE[i % len(PALETTE)]), MARKERS[i % len(MARKERS)])
             for i, lab in enumerate(labels)}

    n_rows, n_cols = spec.grid_shape
    n_panels = len(spec.panels)
    xlabels = [spec.xlabel_of(p) for p in spec.panels]
    ylabels = [_ylabel(p, metric_label) for p in spec.panels]
    # an axis label every panel has (as_lsvrg_fig1's nine "iteration"s) is written once:
    # x centred under the grid, y on the first column only
    shared_x = xlabels[0] if n_panels > 1 and len(set(xlabels)) == 1 else None
    shared_y = n_panels > 1 and n_cols > 1 and len(set(ylabels)) == 1
    pw, ph = spec.panel_size
    width = math.ceil(pw * n_cols * 50) / 50      # whole pixels at 50, 100, 150, 300 dpi
    fig = Figure(figsize=(width, ph * n_rows + 1.0))     # height set once the notes are known
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharey=spec.sharey)
    for k, ax in enumerate(axes.flat):
        if k >= n_panels:
            ax.set_visible(False)
    drawn = []
    for i, panel in enumerate(spec.panels):
        drawn.append(_draw_panel(axes.flat[i], rows, spec, i, panel, labels, style,
                                 ylabels[i], ph))
        if shared_x is not None:
            axes.flat[i].set_xlabel("")
        if shared_y and i % n_cols:
            axes.flat[i].set_ylabel("")

    entries = [(lab, *style[lab]) for lab in labels]
    guides = list(dict.fromkeys(d.guide for d in drawn if d.guide is not None))
    legend_labels = labels + [f"$O(x^{{{g:g}}})$ guide" for g in guides]
    title = spec.title or experiment_title
    title_lines = _wrap(title, width, TITLE_FS, weight="bold")
    notes = _figure_notes(drawn, xlabels)
    note_lines = [(line, color) for text, color in notes
                  for line in _wrap(text, width, NOTE_FS)]
    per_row, legend_rows = _legend_grid(legend_labels, width)
    pad = 0.08
    label_h = 9.0 * 1.6 / 72                   # one axis-label line (axes.labelsize 9)
    title_h = len(title_lines) * TITLE_FS * 1.35 / 72
    legend_h = legend_rows * LEGEND_FS * 1.9 / 72 + (0.1 if legend_rows else 0.0)
    notes_h = len(note_lines) * NOTE_FS * 1.3 / 72 + (0.05 if note_lines else 0.0)
    head = pad + title_h + legend_h + notes_h + (0.04 if title_lines else 0.0)
    foot = pad + (label_h if shared_x else 0.0)
    height = math.ceil((ph * n_rows + head + foot) * 50) / 50
    fig.set_size_inches(width, height)

    if title_lines:
        fig.text(0.5, 1 - pad / height, "\n".join(title_lines), ha="center", va="top",
                 fontsize=TITLE_FS, fontweight="bold")
    if legend_labels:
        handles = [_legend_handle(color, marker, spec.band != "none")
                   for _, color, marker in entries]
        handles += [Line2D([], [], ls="--", lw=1.0, color=GUIDE_COLOR) for _ in guides]
        shown = list(legend_labels)
        if legend_rows > 1 and per_row * legend_rows == len(shown):
            # legends fill column by column: reorder so rows read in legend order
            order = [i * per_row + j for j in range(per_row) for i in range(legend_rows)]
            handles = [handles[k] for k in order]
            shown = [shown[k] for k in order]
        fig.legend(handles, shown, loc="upper center", ncol=per_row, frameon=False,
                   bbox_to_anchor=(0.5, 1 - (pad + title_h + 0.02) / height),
                   fontsize=LEGEND_FS, handlelength=2.4, columnspacing=1.6)
    top = pad + title_h + legend_h + 0.02
    for k, (line, color) in enumerate(note_lines):     # under the legend, over no curve
        fig.text(0.5, 1 - (top + k * NOTE_FS * 1.3 / 72) / height, line, ha="center",
                 va="top", fontsize=NOTE_FS, color=color)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # tight_layout on odd sizes
        fig.tight_layout(rect=(0.0, foot / height, 1.0, 1.0 - head / height),
                         h_pad=1.2, w_pad=1.0)
    if shared_x is not None:        # just under the lowest tick labels, centred on the grid
        renderer = fig.canvas.get_renderer()
        boxes = [ax.get_tightbbox(renderer) for ax in axes.flat[:n_panels]]
        low = min(b.y0 for b in boxes) / fig.bbox.height
        x0 = min(ax.get_position().x0 for ax in axes.flat[:n_panels])
        x1 = max(ax.get_position().x1 for ax in axes.flat[:n_panels])
        fig.supxlabel(shared_x, x=(x0 + x1) / 2, y=low - 0.06 / height, va="top",
                      fontsize=RC["axes.labelsize"])
    return fig


def _legend_handle(color: str, marker: str, band: bool):
    line = Line2D([], [], color=color, marker=marker, lw=1.8, markersize=4.5)
    if not band:
        return line
    return (Patch(facecolor=color, alpha=BAND_ALPHA * 1.6, edgecolor=color, linewidth=0.6),
            line)


def _check_columns(records: pd.DataFrame, spec: FigureSpec, subset: bool = False) -> None:
    where = f"figures[{spec.name}]"
    xs = list(dict.fromkeys(spec.x_of(p) for p in spec.panels))
    need = ["label", "seed", "cell", "metric", "value", *xs]
    missing = [c for c in need if c not in records.columns]
    if missing:
        bad_x = [x for x in xs if x in missing]
        raise DrocliError(f"records lack column(s) {', '.join(missing)}", key=where,
                          fix=(f"x: {did_you_mean(bad_x[0], map(str, records.columns))}"
                               if bad_x else "regenerate records.csv"))
    for x in xs:
        if not pd.api.types.is_numeric_dtype(records[x]):
            raise DrocliError(f"x column {x!r} is not numeric", key=f"{where}.x",
                              fix="use oracle_calls, time_s, step or a recorded metric such "
                                  "as iteration")
    metrics = sorted(map(str, records["metric"].dropna().unique()))
    if subset and any(panel.metric in metrics for panel in spec.panels):
        return      # a panel whose metric a subset of solvers does not record says "no data"
    for i, panel in enumerate(spec.panels):
        if panel.metric not in metrics:
            raise DrocliError(
                f"figure {spec.name!r}, panel {i}: unknown metric {panel.metric!r}; "
                f"metrics in the records: {', '.join(metrics) or '(none)'}",
                key=f"figures[{spec.name}].panels[{i}].metric",
                fix=did_you_mean(panel.metric, metrics))


def _label_order(rows: pd.DataFrame, spec: FigureSpec) -> list[str]:
    present = list(dict.fromkeys(map(str, rows["label"].dropna())))
    if spec.legend is None:
        return present
    legend = [v for lab in spec.legend for v in variants(lab, present)]
    missing = [lab for lab in spec.legend if not variants(lab, present)]
    if missing and present:
        hint = "; ".join(f"{m!r}: {did_you_mean(m, present)}" for m in missing)
        warnings.warn(f"figure {spec.name!r}: legend label(s) not in the records, not "
                      f"drawn: {hint}", stacklevel=3)
    return legend
