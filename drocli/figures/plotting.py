"""Paper-like figures from records: one panel per metric, seed bands, one shared legend.

A figure is declared in the spec (`figures:`), validated by `FigureSpec`. Each panel
draws, for every label, the seed aggregate on a common x-grid (`drocli.results.aggregate`): a
mean line with a light +-1 std band outlined in the line's colour (or median with the
0.25-0.75 quantiles); on a log y-axis the seeds are averaged on the log scale (geometric
mean, band times / divided by the geometric std), so a band never reaches <= 0. A label
keeps its color and marker across panels (a fixed palette in legend order).

The axes follow what is drawn: y-limits cover the curves inside the x-range shown, bands
included unless they would more than double the curves' range (a seed about to diverge);
a linear count or time axis starts at 0, where the run did; an x-axis whose curves end more
than 10x apart on wall time is logarithmic unless the panel says `logx: false`, and a log
x-axis draws no line across checkpoints more than 10x apart. Curves that coincide are drawn
with interleaved dashes. A y-label the spec does not give is the problem's readable label
of the metric (`metric_label=` at its registration), else the metric's name. No text is
drawn over the curves: the title sits on top, then the shared legend (with the dashed
guide's label), then the notes (seeds diverged, bands cut, curves coinciding or stopping
short); an axis label every panel shares is written once. The image carries no caption:
captions sit beside it (the report's pages). Files are written atomically (temp +
os.replace).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FixedLocator,
    FuncFormatter,
    MaxNLocator,
    NullFormatter,
)

from drocli import __version__  # noqa: E402
from drocli.errors import DrocliError, did_you_mean  # noqa: E402
from drocli.figures.plots import validate_figure  # noqa: E402
from drocli.figures.plots.curves_model import DEFAULT_XLABELS, FigureSpec, PanelSpec  # noqa: E402,F401
from drocli.plugins import registry
from drocli.results.aggregate import aggregate, apply_filter, metric_as_x  # noqa: E402

FORMATS = ("png", "pdf", "svg")
# Okabe-Ito (color-blind safe, minus the yellow that vanishes on white), then tab10 extras.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8,
    "ytick.labelsize": 8, "legend.fontsize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.35, "grid.linewidth": 0.5,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "drocli",
}
TITLE_FS, LEGEND_FS, CAPTION_FS = 11.0, 9.0, 7.5
HEAD_ZOOM_FRACTION = 0.02   # y-limits may ignore the first 2% of the x-range ...
SQUASH_RATIO = 2.0          # ... when including it would more than double the y-range
BAND_SPIKE = 4.0            # band points this many times their median width are spikes
BAND_ALPHA = 0.10           # band face: two overlapping bands keep their own hues ...
BAND_EDGE_ALPHA = 0.6       # ... and an outline in the curve's colour shows where each ends
BAND_EDGE_LW = 0.6
GAP_DECADES = 1.0           # log x: no line across checkpoints more than 10x apart
OVERLAP = 0.015             # curves this close (fraction of the axis height) coincide ...
DASH = 2.5                  # ... and are drawn with interleaved dashes (x line width)
MIN_TICK_GAP_IN = 0.2       # labelled ticks of a short log axis at least this far apart
NOTE_FS = 7.5               # the figure's notes, under the legend
NOTE_COLOR, WARN_COLOR, GUIDE_COLOR = "0.3", "#a00000", "0.35"



# --- saving -------------------------------------------------------------------------------

def save_figure(fig: Figure, out_dir: Path, name: str, formats: list[str], dpi: int,
                title: str) -> list[Path]:
    """Write `fig` as out_dir/<name>.<fmt> for each format, atomically."""
    from drocli.results.ownership import inside

    paths = []
    for f in formats:
        path = inside(out_dir, Path(out_dir) / f"{name}.{f}")
        _save_atomic(fig, path, f, dpi, title)
        paths.append(path)
    return paths


# --- public API ---------------------------------------------------------------------------


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
        from drocli.spec import run_caption

        tag = " [smoke run]" if run.profile == "smoke" else ""
        figures = [f.model_copy(update={"caption": run_caption(f.caption, run.profile,
                                                               run.seeds),
                                        "title": f"{f.title or ''}{tag}".strip() or None})
                   for f in figures]
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
    if isinstance(labels, list) and labels and "label" in rows.columns and \
            not set(map(str, labels)) & set(map(str, rows["label"].unique())):
        return f"none of its labels ({', '.join(map(str, labels))}) is in the records"
    return None


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


# --- building -----------------------------------------------------------------------------

def _formats(fmt: str) -> list[str]:
    formats = [f.strip().lower().lstrip(".") for f in str(fmt).split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise DrocliError(f"unknown figure format {fmt!r}", key="format",
                          fix=f"use one of {', '.join(FORMATS)} or a comma-separated list")
    return list(dict.fromkeys(formats))


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
    legend = [v for lab in spec.legend for v in _variants(lab, present)]
    missing = [lab for lab in spec.legend if not _variants(lab, present)]
    if missing and present:
        hint = "; ".join(f"{m!r}: {did_you_mean(m, present)}" for m in missing)
        warnings.warn(f"figure {spec.name!r}: legend label(s) not in the records, not "
                      f"drawn: {hint}", stacklevel=3)
    return legend


def _variants(label: str, present: list[str]) -> list[str]:
    """The records' labels a legend entry stands for: itself, or the swept variants a `-m`
    sweep made of it ('ERMEG (E=1)', 'ERMEG (E=4)' for 'ERMEG'), in the records' order."""
    if label in present:
        return [label]
    return [p for p in present if p.startswith(f"{label} (") and p.endswith(")")]


def _text_width(text: str, fontsize: float, weight: str = "normal") -> float:
    """Width in inches of one line of `text` as matplotlib draws it (no mathtext)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(size=fontsize, weight=weight)
    return text_to_path.get_text_width_height_descent(text, prop, ismath=False)[0] / 72


def _wrap(text: str | None, width_in: float, fontsize: float, weight: str = "normal"
          ) -> list[str]:
    """`text` broken into lines that fit `width_in` (less a small margin) at `fontsize`,
    measured with the font (a character count overflowed the edge of narrow figures)."""
    if not text:
        return []
    room = max(1.0, width_in - 0.2)
    lines = []
    for para in str(text).splitlines() or [""]:
        line = ""
        for word in para.split():
            trial = f"{line} {word}" if line else word
            if line and _text_width(trial, fontsize, weight) > room:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return lines


def _legend_grid(labels: list[str], width_in: float) -> tuple[int, int]:
    """(entries per row, rows) of a legend across the figure width, rows balanced."""
    if not labels:
        return 1, 0
    em = LEGEND_FS / 72
    entry = (2.4 + 0.8 + 1.6) * em + 0.6 * em * max(len(lab) for lab in labels)
    fit = max(1, min(len(labels), int((width_in - 0.3) / entry)))
    rows = -(-len(labels) // fit)
    return -(-len(labels) // rows), rows


@dataclass
class _Drawn:
    """What a drawn panel tells the figure: its notes (category -> details, written once
    under the legend, never over the curves) and the slope of its dashed guide, if any."""

    name: str
    notes: dict = field(default_factory=dict)
    guide: float | None = None

    def note(self, category: str, detail) -> None:
        self.notes.setdefault(category, []).append(detail)


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


LOG10_METRIC = re.compile(r"^log10_")
LOG10_LABEL = re.compile(r"^\s*log\s*_?\s*10(?=[\s(])", re.IGNORECASE)


def _ylabel(panel: PanelSpec, metric_label=None) -> str:
    """The panel's y-label: its own, else the readable label the problem gives the metric
    (`metric_label(name)`, declared with the problem: "$R_1$" rather than `risk_g0`), else
    the metric's name. On a `log10_*` metric (values recorded as log10 of a quantity) a
    label "log10(q)" or "log10 q" reads log$_{10}$(q), log$_{10}$ q: the axis says it holds
    exponents."""
    text = panel.ylabel
    if text is None and metric_label is not None:
        text = metric_label(panel.metric)
    if text is None:
        text = panel.metric
    if LOG10_METRIC.match(panel.metric):
        return LOG10_LABEL.sub("log$_{10}$", text, count=1)
    return text


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


def auto_logx(ends: list[float], ratio: float = 10.0) -> bool:
    """A log x-axis when the curves end more than `ratio` apart (wall time: 0.05 s and
    70 s), so the short ones are not squeezed against the y-axis; needs positive ends."""
    ends = [e for e in ends if np.isfinite(e) and e > 0]
    return len(ends) > 1 and max(ends) > ratio * min(ends)


def _draw_panel(ax, rows: pd.DataFrame, spec: FigureSpec, i: int, panel: PanelSpec,
                labels: list[str], style: dict, ylabel: str, height_in: float) -> _Drawn:
    where = f"figures[{spec.name}].panels[{i}]"
    drawn = _Drawn(panel.title if panel.title is not None else panel.metric)
    sub = apply_filter(rows, panel.filter, where=f"{where}.filter")
    sub = sub[sub["metric"] == panel.metric]
    logy = spec.logy if panel.logy is None else panel.logy
    x_name = spec.x_of(panel)
    aggs = []
    for lab in labels:
        lrows = sub[sub["label"].astype(str) == lab]
        if lrows.empty:
            continue
        # on a log axis the seeds are averaged on the log scale (geometric mean and std),
        # so the band is positive and symmetric on the axis as drawn
        agg = aggregate(lrows, x=x_name, band=spec.band, nan="omit",
                        what=f"{where} ({panel.metric}, {lab})", log=logy)
        if agg.diverged:
            drawn.note("diverged", f"{lab} {len(agg.diverged)}/{agg.n_seeds}")
        if logy:
            nonpos = int((agg.values <= 0).sum())
            if nonpos:
                drawn.note("nonpos", f"{lab} {nonpos}")
        ok = np.isfinite(agg.center)
        if ok.any():
            aggs.append((lab, agg, ok))
    logx = panel.logx if panel.logx is not None else spec.logx
    if panel.logx is None and not logx and x_name == "time_s":
        logx = auto_logx([float(a.grid[ok][-1]) for _, a, ok in aggs])
    curves = []                       # (label, agg, x, center, lo, hi) of the drawn points
    for lab, agg, ok in aggs:
        if logx:
            ok = ok & (agg.grid > 0)           # no x <= 0 on a log axis (time 0, call 0)
            if not ok.any():
                continue
        curves.append((lab, agg, agg.grid[ok], agg.center[ok], agg.lo[ok], agg.hi[ok]))

    # limits first: which curves coincide is a question of the axis as drawn
    xlim = _x_limits(curves, logx, panel.xlim)
    bands = [(g, lo, hi, c) for _, _, g, c, lo, hi in curves]
    zoom: dict = {}
    ylim = auto_ylim(bands, logy=logy, logx=logx, xlim=xlim, info=zoom)
    if panel.ylim is not None:
        lo, hi = panel.ylim
        ylim = (lo if lo is not None else (ylim or (None, None))[0],
                hi if hi is not None else (ylim or (None, None))[1])
    if ylim is not None and None in ylim:
        ylim = None
    dashes = _coincide_dashes(curves, ylim, logy, xlim) if ylim is not None else {}
    for group in dict.fromkeys(tuple(g) for g, _ in dashes.values()):
        drawn.note("overlap", group)

    isolated = []
    for k, (lab, agg, g, c, lo, hi) in enumerate(curves):
        color, marker = style[lab]
        xs, (cs, los, his), single = _split_gaps(g, [c, lo, hi], logx)
        if single.any():
            drawn.note("gap", lab)
            isolated.append((xs[single], cs[single], color, marker))
        if spec.band != "none" and agg.n_seeds > 1:
            fin = np.isfinite(los) & np.isfinite(his)
            ax.fill_between(xs, los, his, where=fin, facecolor=to_rgba(color, BAND_ALPHA),
                            edgecolor=to_rgba(color, BAND_EDGE_ALPHA),
                            linewidth=BAND_EDGE_LW, interpolate=False)
        ls = dashes[lab][1] if lab in dashes else "-"
        ax.plot(xs, cs, color=color, lw=1.6, ls=ls, marker=marker, markersize=4,
                markevery=(0.03 + 0.025 * (k % 6), 0.16), label=lab)
        if x_name != "time_s":
            _note_short_runs(drawn, lab, agg, float(g[-1]), xlim, logx)
    for xs, cs, color, marker in isolated:          # checkpoints with no line to a neighbour
        ax.plot(xs, cs, ls="none", color=color, marker=marker, markersize=4,
                label="_isolated")
    if panel.reference_slope is not None and curves:
        _, _, g, c, _, _ = curves[0]
        if _reference_line(ax, g, c, panel.reference_slope):
            drawn.guide = panel.reference_slope
    ax.set_title(panel.title if panel.title is not None else panel.metric)
    ax.set_xlabel(spec.xlabel_of(panel))
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if not curves:
        filt = {**spec.filter, **panel.filter}
        ax.text(0.5, 0.5, "no data" + (f"\nfilter {filt}" if filt else ""),
                transform=ax.transAxes, ha="center", va="center", color="0.4")
    if not logx:
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 3), useMathText=True)
    if not logy:
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        if LOG10_METRIC.match(panel.metric):   # exponents: whole decades as ticks
            ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", steps=[1, 2, 5, 10],
                                                   integer=True))
    if ylim is not None:
        ax.set_ylim(*ylim)
        for lab, _, g, _, lo, hi in curves:   # a start left out on purpose is no cut band
            if panel.ylim is None and _cut(g, lo, hi, ylim, xlim, logy,
                                           zoom.get("head", -np.inf)):
                drawn.note("cut", lab)        # (limits the spec sets are its own choice)
    if logy:
        lo, hi = ax.get_ylim()
        if lo > 0 and hi / lo < 10:      # less than a decade: 0.07, 0.1, 0.2, not 7 x 10^-2
            ticks = _log_ticks(lo, hi, max(0.5, height_in - 0.6))
            ax.yaxis.set_major_locator(FixedLocator(ticks))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.4g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
    if xlim is not None:
        ax.set_xlim(*xlim)
    return drawn


def _x_limits(curves: list, logx: bool, given) -> tuple[float, float] | None:
    """The x-range drawn: the panel's `xlim` where it gives one, else the curves' range
    with a 1 % margin at the end. On a linear axis with x >= 0 (counts, seconds) it starts
    at 0, where the run started: curves that begin later (after a stage 1) show it."""
    lo = hi = None
    if curves:
        x0 = min(float(c[2][0]) for c in curves)
        x1 = max(float(c[2][-1]) for c in curves)
        if x1 > x0:
            if logx:                   # 1 %: a marker on the first checkpoint shows whole
                lo, hi = x0 / (x1 / x0) ** 0.01, x1 * (x1 / x0) ** 0.01
            else:
                lo, hi = (0.0 if x0 > 0 else x0), x1 + 0.01 * (x1 - min(x0, 0.0))
    if given is not None:
        lo = given[0] if given[0] is not None else lo
        hi = given[1] if given[1] is not None else hi
    if lo is None or hi is None or not lo < hi:
        return None
    return float(lo), float(hi)


def _split_gaps(x: np.ndarray, ys: list[np.ndarray], logx: bool):
    """On a log x-axis, a NaN between checkpoints more than GAP_DECADES apart, so no line
    is drawn across decades where nothing was recorded (a straight segment there is
    invented). Returns x, the ys and the mask of points left with no neighbour (drawn
    as markers)."""
    x = np.asarray(x, dtype=float)
    if not logx or len(x) < 2:
        return x, ys, np.zeros(len(x), bool)
    jump = np.flatnonzero(np.log10(x[1:] / x[:-1]) > GAP_DECADES)
    if not len(jump):
        return x, ys, np.zeros(len(x), bool)
    mid = np.sqrt(x[jump] * x[jump + 1])
    xs = np.insert(x, jump + 1, mid)
    out = [np.insert(np.asarray(y, dtype=float), jump + 1, np.nan) for y in ys]
    fin = np.isfinite(out[0])
    prev = np.r_[False, fin[:-1]]
    nxt = np.r_[fin[1:], False]
    return xs, out, fin & ~prev & ~nxt


def _coincide_dashes(curves: list, ylim, logy: bool, xlim) -> dict:
    """Curves that lie within OVERLAP of the axis height of each other at every point they
    share (a line hidden under another) -> label: (its group, interleaved dash pattern):
    the group's colours alternate along the line, so each stays visible."""
    def axis_y(y):
        y = np.asarray(y, dtype=float)
        lo, hi = ylim
        if logy:
            with np.errstate(divide="ignore", invalid="ignore"):
                return (np.log10(y) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return (y - lo) / (hi - lo)

    def visible(g):
        m = np.ones(len(g), bool)
        if xlim is not None:
            m = (g >= xlim[0]) & (g <= xlim[1])
        return m

    n = len(curves)
    parent = list(range(n))

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for a in range(n):
        ga, ca = curves[a][2], curves[a][3]
        ma = visible(ga)
        for b in range(a + 1, n):
            gb, cb = curves[b][2], curves[b][3]
            mb = visible(gb)
            if ma.sum() < 2 or mb.sum() < 2:
                continue
            lo = max(ga[ma][0], gb[mb][0])
            hi = min(ga[ma][-1], gb[mb][-1])
            span = min(ga[ma][-1] - ga[ma][0], gb[mb][-1] - gb[mb][0])
            if not hi > lo or (hi - lo) < 0.5 * span:   # share at least half their range
                continue
            at = ga[ma][(ga[ma] >= lo) & (ga[ma] <= hi)]
            ya = axis_y(np.interp(at, ga, ca))
            yb = axis_y(np.interp(at, gb, cb))
            d = np.abs(ya - yb)
            if len(d) and np.all(np.isfinite(d)) and d.max() <= OVERLAP:
                parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for k in range(n):
        groups.setdefault(root(k), []).append(k)
    out = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        names = [curves[k][0] for k in members]
        m = len(members)
        for j, k in enumerate(members):
            out[curves[k][0]] = (names, (j * DASH, (DASH, (m - 1) * DASH)))
    return out


def _note_short_runs(drawn: _Drawn, lab: str, agg, end: float, xlim, logx: bool) -> None:
    """Note a curve cut visibly short (by over 5 % of the x-axis) because its seeds' runs end
    at different x: the mean is drawn where every finished seed has a value."""
    ends = [float(c.x[-1]) for c in agg.curves if c.complete]
    if len(ends) < 2 or xlim is None or end >= xlim[1]:
        return
    log = logx and xlim[0] > 0

    def pos(v):
        return math.log10(max(v, xlim[0])) if log else v

    span = pos(xlim[1]) - pos(xlim[0])
    if span > 0 and pos(min(max(ends), xlim[1])) - pos(min(ends)) > 0.05 * span:
        drawn.note("short", (lab, min(ends), max(ends)))


def _cut(g, lo, hi, ylim, xlim, logy: bool, after: float) -> bool:
    """A band reaching beyond the y-limits (by 1 % of the axis) inside the x-range drawn,
    after `after` (the start the y-limits may leave out, not a cut band)."""
    m = _from(g, after)
    if xlim is not None:
        m &= (g >= xlim[0]) & (g <= xlim[1])
    lo, hi = np.asarray(lo, float)[m], np.asarray(hi, float)[m]
    a, b = ylim
    if logy:
        slack = (b / a) ** 0.01
        return bool(np.any(lo[np.isfinite(lo)] < a / slack) or
                    np.any(hi[np.isfinite(hi)] > b * slack))
    slack = 0.01 * (b - a)
    return bool(np.any(lo[np.isfinite(lo)] < a - slack) or
                np.any(hi[np.isfinite(hi)] > b + slack))


def _log_ticks(lo: float, hi: float, height_in: float) -> list[float]:
    """Labelled ticks of a log axis spanning under a decade: the densest of 1-9, {1, 2, 3,
    5, 7}, {1, 2, 5}, {1, 3}, {1} times a power of ten whose labels stay MIN_TICK_GAP_IN
    apart (0.07, 0.08, 0.09, 0.1 crowd a short axis; 0.07, 0.1, 0.2 do not)."""
    decades = math.log10(hi / lo)
    e0, e1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    best = []
    for mant in ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0 ** e for e in range(e0, e1 + 1) for m in mant]
        vals = sorted(v for v in vals if lo <= v <= hi)
        if len(vals) < 2:
            continue
        gap = min(np.diff(np.log10(vals))) / decades * height_in
        best = vals
        if gap >= MIN_TICK_GAP_IN:
            return vals
    return best or [lo, hi]


def _fmt_x(v: float) -> str:
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _figure_notes(drawn: list[_Drawn], xlabels: list[str]) -> list[tuple[str, str]]:
    """The panels' notes as lines under the legend (text, colour): what was left out, cut or
    drawn specially, and in which panels (named by their titles; none when the figure has
    one panel)."""
    single = len(drawn) == 1

    def and_list(names) -> str:
        names = list(dict.fromkeys(names))
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    def by_panel(category, fmt) -> str | None:
        groups: dict[str, list[str]] = {}
        for d in drawn:
            if d.notes.get(category):
                groups.setdefault(fmt(d.notes[category]), []).append(d.name)
        if not groups:
            return None
        if single:
            return "; ".join(groups)
        return "; ".join(f"{text} in {and_list(f'‘{n}’' for n in names)}"
                         for text, names in groups.items())

    out = []
    text = by_panel("diverged", lambda ds: ", ".join(ds))
    if text:
        out.append((f"Diverged seeds, left out from their first non-finite value: {text}.",
                    WARN_COLOR))
    text = by_panel("nonpos", lambda ds: ", ".join(ds))
    if text:
        out.append((f"Values <= 0 left out (log axis): {text}.", WARN_COLOR))
    text = by_panel("overlap", lambda gs: "; ".join(and_list(g) for g in gs))
    if text:
        out.append((f"Coinciding curves (within {OVERLAP:.1%} of the axis height) are drawn "
                    f"with interleaved dashes: {text}.", NOTE_COLOR))
    short: dict[str, list[float]] = {}
    for d in drawn:
        for lab, lo, hi in d.notes.get("short", ()):
            r = short.setdefault(lab, [lo, hi])
            r[0], r[1] = min(r[0], lo), max(r[1], hi)
    if short:
        what = "; ".join(f"{lab} {_fmt_x(lo)}-{_fmt_x(hi)}"
                         for lab, (lo, hi) in short.items())
        xname = next((x for d, x in zip(drawn, xlabels, strict=True) if d.notes.get("short")),
                     "x")
        out.append((f"Seeds' runs end at different points ({xname}: {what}); each mean "
                    "curve stops where its shortest run ends.", NOTE_COLOR))
    text = by_panel("cut", lambda labs: and_list(labs))
    if text:
        out.append(("Bands cut at the y-axis, as in full they would more than double the "
                    f"curves' y-range: {text}.", NOTE_COLOR))
    if any(d.notes.get("gap") for d in drawn):
        out.append((f"Log x: no line across checkpoints more than {10 ** GAP_DECADES:g}x "
                    "apart; lone checkpoints are markers.", NOTE_COLOR))
    return out


def _reference_line(ax, x: np.ndarray, y: np.ndarray, slope: float) -> bool:
    """Dashed guide c * x^slope through the first curve at its log-middle x (x > 0); its
    label is the legend's (a text on the axes sat on the curves). False when not drawn."""
    pos = (x > 0) & (y > 0)
    if pos.sum() < 2:
        return False
    x, y = x[pos], y[pos]
    xm = math.exp(0.5 * (math.log(x[0]) + math.log(x[-1])))
    i = int(np.argmin(np.abs(np.log(x) - math.log(xm))))
    c = y[i] / x[i] ** slope
    xs = np.geomspace(x[0], x[-1], 50)
    ax.plot(xs, 0.5 * c * xs ** slope, ls="--", lw=1.0, color=GUIDE_COLOR, zorder=1,
            label="_guide")
    return True


def _from(g: np.ndarray, after: float) -> np.ndarray:
    """g >= after, a point on the boundary (2 % of 2e6 is 40000.000000000004) included."""
    return (g >= after) | np.isclose(g, after, rtol=1e-9, atol=0.0)


def _head_cut(x0: float, x1: float, logx: bool) -> float:
    """The x before which the start may be left out of the y-limits (HEAD_ZOOM_FRACTION of
    the x-range; of the log range on a log x-axis)."""
    if logx and x0 > 0:
        return x0 * (x1 / x0) ** HEAD_ZOOM_FRACTION
    return x0 + HEAD_ZOOM_FRACTION * (x1 - x0)


def auto_ylim(bands: list[tuple], logy: bool = False, pad: float = 0.05,
              logx: bool = False, xlim: tuple | None = None,
              info: dict | None = None) -> tuple[float, float] | None:
    """y-limits enclosing the curves drawn, padded by `pad` of the range.

    `bands` holds (grid, lo, hi) or (grid, lo, hi, center) per curve; only points inside
    `xlim` count (the x-range drawn: a run going on past it does not stretch the axis).
    If the first 2% of the x-range (e.g. the start value ln 2) would more than double the
    range, it is left out so the curves are not squashed (2% of the log range on a log
    x-axis; `info["head"]` is then the x before which points were left out, else -inf).
    Given the centers, the bands may not squash the curves either: when they
    would more than double the curves' y-range (SQUASH_RATIO; the range floored at the
    widest median band), band points wider than BAND_SPIKE times their curve's median
    width (seeds about to diverge) are left out, and the bands are cut at half the curves'
    range beyond them; the figure notes the bands cut. Log scale: computed on log10 of
    the positive values. None when there is nothing finite.
    """
    pts = []
    for b in bands:
        g, lo, hi = (np.asarray(a, dtype=float) for a in b[:3])
        c = np.asarray(b[3], dtype=float) if len(b) > 3 else None
        if xlim is not None:
            m = (g >= xlim[0]) & (g <= xlim[1])
            g, lo, hi, c = g[m], lo[m], hi[m], (c[m] if c is not None else None)
        if len(g):
            pts.append((g, lo, hi, c))
    if not pts:
        return None
    x0 = min(float(g[0]) for g, *_ in pts)
    x1 = max(float(g[-1]) for g, *_ in pts)

    def axis(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan) if logy else v

    def span(after: float | None):
        curves = []
        for g, lo, hi, c in pts:
            m = np.ones(len(g), bool) if after is None else _from(g, after)
            curves.append((axis(lo[m]), axis(hi[m]), None if c is None else axis(c[m])))
        vals = np.concatenate([np.concatenate([lo, hi] + ([c] if c is not None else []))
                               for lo, hi, c in curves])
        vals = vals[np.isfinite(vals)]
        if not len(vals):
            return None
        full = (float(vals.min()), float(vals.max()))
        cen = np.concatenate([c for _, _, c in curves if c is not None] or [np.empty(0)])
        cen = cen[np.isfinite(cen)]
        if not len(cen):
            return full
        widths = []
        for lo, hi, _ in curves:
            w = hi - lo
            w = w[np.isfinite(w)]
            widths.append(float(np.median(w)) if len(w) else 0.0)
        c0, c1 = float(cen.min()), float(cen.max())
        cspan = max(c1 - c0, max(widths))
        if cspan <= 0 or full[1] - full[0] <= SQUASH_RATIO * cspan:
            return full
        lows, highs = [c0], [c1]
        for (lo, hi, _), med in zip(curves, widths, strict=True):
            w = hi - lo
            keep = np.isfinite(w) & (w <= BAND_SPIKE * max(med, 0.01 * cspan))
            if keep.any():
                lows.append(float(lo[keep].min()))
                highs.append(float(hi[keep].max()))
        reach = (SQUASH_RATIO - 1) / 2 * cspan
        return max(min(lows), c0 - reach), min(max(highs), c1 + reach)

    full = span(None)
    if full is None:
        return None
    head = _head_cut(x0, x1, logx)
    tail = span(head) if x1 > x0 else None
    lo, hi = full
    if info is not None:
        info["head"] = -np.inf
    if tail is not None and (full[1] - full[0]) > SQUASH_RATIO * (tail[1] - tail[0]):
        lo, hi = tail
        if info is not None:
            info["head"] = head
    r = hi - lo
    if r <= 0:
        r = abs(hi) * 0.1 if hi != 0 else 1.0
    lo, hi = lo - pad * r, hi + pad * r
    return (10 ** lo, 10 ** hi) if logy else (lo, hi)


# --- saving -------------------------------------------------------------------------------

def _metadata(fmt: str, title: str) -> dict:
    creator = f"drocli {__version__}"
    if fmt == "png":
        return {"Title": title, "Software": creator}
    if fmt == "pdf":
        return {"Title": title, "Creator": creator, "CreationDate": None}
    return {"Title": title, "Creator": creator, "Date": None}


def _save_atomic(fig: Figure, path: Path, fmt: str, dpi: int, title: str) -> None:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name)
    tmp = path.with_name(f".{safe}.{os.getpid()}.tmp")
    try:
        if fmt == "png":
            _save_png(fig, tmp, dpi, _metadata(fmt, title))
        else:
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=_metadata(fmt, title))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _save_png(fig: Figure, path: Path, dpi: int, metadata: dict) -> None:
    """PNG without the alpha channel when every pixel is opaque (the figures' white
    background): the same pixels in 3 bytes instead of 4, about 10 % smaller files."""
    import io

    import numpy as np
    from PIL import Image, PngImagePlugin

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata=metadata)
    img = Image.open(buf)
    if img.mode == "RGBA" and int(np.asarray(img.getchannel("A")).min()) == 255:
        img = img.convert("RGB")
    info = PngImagePlugin.PngInfo()
    for key, value in metadata.items():
        info.add_text(key, value)
    img.save(path, format="PNG", pnginfo=info, dpi=(dpi, dpi))
