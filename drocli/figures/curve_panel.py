"""One panel of a curves figure: for every label, the seed aggregate on a common x-grid
(drocli.results.aggregate), a mean line with a light +-1 std band outlined in the line's
colour (or median with the 0.25-0.75 quantiles); on a log y-axis the seeds are averaged on
the log scale (geometric mean, band times / divided by the geometric std), so a band never
reaches <= 0.

The axes follow what is drawn (drocli.figures.axis_limits): an x-axis whose curves end more
than 10x apart on wall time is logarithmic unless the panel says `logx: false`, and a log
x-axis draws no line across checkpoints more than 10x apart. Curves that coincide are drawn
with interleaved dashes. A y-label the spec does not give is the problem's readable label
of the metric (`metric_label=` at its registration), else the metric's name. What the
panel left out or cut goes to its notes (drocli.figures.panel_notes), not over the curves.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from drocli.figures.axis_limits import _cut, _log_ticks, _x_limits, auto_ylim
from drocli.figures.panel_notes import _Drawn
from drocli.figures.plots.curves_model import FigureSpec, PanelSpec
from drocli.figures.style import (
    BAND_ALPHA,
    BAND_EDGE_ALPHA,
    BAND_EDGE_LW,
    DASH,
    GAP_DECADES,
    GUIDE_COLOR,
    OVERLAP,
)
from drocli.results.aggregate import aggregate, apply_filter

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
