"""Curve figures a reader can take at their word (issue 43): y-limits follow the curves drawn,
readable axis labels, no text over the curves, coinciding curves told apart, no invented line
across decades of a log x-axis, sparse ticks on a short log axis, notes for what is cut or
left out. Asserted on the matplotlib objects, not on pixels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from drocli.figures.plotting import (
    BAND_ALPHA,
    MIN_TICK_GAP_IN,
    FigureSpec,
    _log_ticks,
    auto_ylim,
    make_figure,
    problem_metric_label,
)


def records(curves: dict, metric: str = "m", x: str = "oracle_calls") -> pd.DataFrame:
    """curves: label -> {seed: (x array, y array)} -> tidy records (time_s = x when x is
    oracle_calls, else oracle_calls = x)."""
    rows = []
    for label, seeds in curves.items():
        for seed, (xs, ys) in seeds.items():
            for step, (xi, yi) in enumerate(zip(xs, ys, strict=True)):
                rows.append(dict(experiment="t", cell=f"{label}-{seed}", solver=label,
                                 label=label, dataset="d", seed=seed, step=step,
                                 oracle_calls=float(xi), time_s=float(xi), metric=metric,
                                 value=float(yi)))
    return pd.DataFrame(rows)


def fig_spec(**kw) -> FigureSpec:
    base = {"name": "f", "panels": [{"metric": "m", "title": "panel"}]}
    base.update(kw)
    return FigureSpec.model_validate(base)


def axes_of(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def curve_lines(ax):
    return [ln for ln in ax.lines if not ln.get_label().startswith("_")]


def notes(fig) -> str:
    """The figure's texts as one string, lines rejoined (notes wrap to the width)."""
    return " ".join(" ".join(t.get_text().split()) for t in fig.texts)


def decay(x, a, b, c):
    return a * np.exp(-b * x) + c


X = np.linspace(0, 1000, 51)


# --- y-limits -----------------------------------------------------------------------------

def test_ylim_covers_the_visible_x_range_only():
    """A run going on past the panel's xlim (SGD to the shared gradient budget) does not
    stretch the y-axis: the limits hug what is drawn (as_lsvrg_fig1's -3.5 under data above
    -0.5)."""
    long_x = np.linspace(0, 3000, 151)
    rec = records({"SGD": {s: (long_x, -long_x / 500 - 0.05 * s) for s in range(3)},
                   "SVRG": {s: (X, -X / 800 - 0.05 * s) for s in range(3)}})
    (ax,) = axes_of(make_figure(rec, fig_spec(panels=[{"metric": "m", "xlim": [0, 1000]}])))
    lo, hi = ax.get_ylim()
    shown = rec[rec["oracle_calls"] <= 1000]["value"]
    vmin, vmax = shown.min(), shown.max()
    r = vmax - vmin
    assert lo <= vmin and hi >= vmax                        # every visible point is inside
    assert vmin - lo < 0.15 * r and hi - vmax < 0.15 * r   # with small margins, no more


def test_ylim_encloses_bands_with_small_margins():
    rng = np.random.default_rng(0)
    rec = records({lab: {s: (X, decay(X, 1.0, k / 300, 0.5) + 0.05 * rng.standard_normal(51))
                         for s in range(5)} for k, lab in ((1, "A"), (3, "B"))})
    fig = make_figure(rec, fig_spec())
    (ax,) = axes_of(fig)
    lo, hi = ax.get_ylim()
    ys = np.concatenate([p.vertices[:, 1] for c in ax.collections for p in c.get_paths()])
    ys = ys[np.isfinite(ys)]
    assert lo <= ys.min() and hi >= ys.max()             # every band vertex is inside
    assert (hi - lo) < 1.15 * (ys.max() - ys.min())       # 5 % margins, not more
    assert "cut" not in notes(fig)


def test_a_diverging_seed_does_not_stretch_a_log_axis_over_decades():
    """One seed blowing up just before it diverges makes a band 15 decades wide for a few
    points (re_rsvrb_fig2_digits): the axis keeps to the curves, the figure says the band
    is cut, and the cut band does not hide a curve."""
    x = np.linspace(0, 1000, 101)
    seeds = {s: (x, decay(x, 50.0, 1 / 300, 20.0) * (1 + 0.02 * s)) for s in range(5)}
    blow = decay(x, 50.0, 1 / 300, 20.0).copy()
    blow[60:64] = [1e4, 1e8, 1e12, 1e15]
    blow[64:] = np.nan                                   # diverged
    rec = records({"STEADY": {s: (x, decay(x, 80.0, 1 / 200, 40.0) * (1 + 0.02 * s))
                              for s in range(5)},
                   "SPIKY": {**seeds, 9: (x, blow)}})
    fig = make_figure(rec, fig_spec(logy=True))
    (ax,) = axes_of(fig)
    lo, hi = ax.get_ylim()
    assert math.log10(hi / lo) < 3                       # not 15 decades
    for ln in curve_lines(ax):                           # every center line is inside
        y = np.asarray(ln.get_ydata(), float)
        y = y[np.isfinite(y)]
        assert lo <= y.min() and y.max() <= hi
    text = notes(fig)
    assert "Bands cut at the y-axis" in text and "SPIKY" in text
    assert "SPIKY 1/6" in text                            # and the divergence is noted


def test_auto_ylim_leaves_a_band_that_does_not_dominate_alone():
    g = np.linspace(0, 1, 11)
    c = np.linspace(1.0, 2.0, 11)
    lim = auto_ylim([(g, c - 0.3, c + 0.3, c)])
    assert lim == pytest.approx((0.7 - 0.08, 2.3 + 0.08))
    # given without centers the bands count whole, as before
    assert auto_ylim([(g, np.full(11, 1.0), np.full(11, 2.0))]) == pytest.approx((0.95, 2.05))


# --- labels and text ----------------------------------------------------------------------

def test_ylabel_is_the_problems_readable_label_not_the_column_name():
    rec = records({"A": {0: (X, decay(X, 1, 0.01, 0.1))}}, metric="excess_g0")
    from drocli.problems.mero_regression import metric_label

    s = fig_spec(panels=[{"metric": "excess_g0"}])
    (ax,) = axes_of(make_figure(rec, s, metric_label=metric_label))
    assert ax.get_ylabel() == r"excess risk $R_{1} - R_{1}^*$, group 1"   # 1-based
    s = fig_spec(panels=[{"metric": "excess_g0", "ylabel": "mine"}])
    (ax,) = axes_of(make_figure(rec, s, metric_label=metric_label))
    assert ax.get_ylabel() == "mine"                     # the spec's own label wins
    (ax,) = axes_of(make_figure(rec, fig_spec(panels=[{"metric": "excess_g0"}])))
    assert ax.get_ylabel() == "excess_g0"                # no label known: the name


def test_problem_metric_labels_are_found_drawable_and_numbered_from_one():
    from types import SimpleNamespace

    from drocli.figures.plots import mathtext_error

    label = problem_metric_label(SimpleNamespace(problem=SimpleNamespace(
        name="mero_regression")))
    assert label is not None
    for metric in ("mer", "mer_minus_opt", "max_risk", "gap", "est_err", "est_err_mean",
                   "excess_g0", "risk_g9"):
        text = label(metric)
        assert text and "_g" not in text and mathtext_error(text) is None, metric
    assert "group 10" in label("risk_g9") and label("nonsense") is None
    assert problem_metric_label(SimpleNamespace(problem=SimpleNamespace(
        name="no_such_problem"))) is None
    assert problem_metric_label(None) is None


def test_no_text_is_drawn_over_the_curves():
    """Notes (diverged seeds) and the guide's label sit outside the axes: in the legend and
    under it, above every panel."""
    x = np.geomspace(1, 1e4, 40)
    ok = {s: (x, (1 + 0.1 * s) / np.sqrt(x)) for s in range(3)}
    bad = (x, np.where(x < 100, 2 / np.sqrt(x), np.nan))
    rec = records({"A": ok, "B": {**ok, 7: bad}})
    s = fig_spec(logx=True, logy=True,
                 panels=[{"metric": "m", "title": "a", "reference_slope": -0.5},
                         {"metric": "m", "title": "b"}])
    fig = make_figure(rec, s)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    for ax in axes_of(fig):
        assert not ax.texts
    top = max(ax.get_tightbbox(r).y1 for ax in axes_of(fig))
    texts = [t for t in fig.texts if t.get_text() and t is not fig._supxlabel]
    assert any("B 1/4" in t.get_text() for t in texts)
    for t in texts:
        box = t.get_window_extent(r)
        assert box.y0 >= top - 1                          # above the panels
        assert box.x0 >= -1 and box.x1 <= fig.bbox.x1 + 1  # and inside the image
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["A", "B", "$O(x^{-0.5})$ guide"]


def test_long_title_lines_fit_the_figure():
    s = fig_spec(title="Empirical MERO, synthetic: running time (reconstructed settings) " * 2)
    rec = records({"A": {0: (X, decay(X, 1, 0.01, 0.1))}})
    fig = make_figure(rec, s)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    (title,) = [t for t in fig.texts if "Empirical" in t.get_text()]
    box = title.get_window_extent(r)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1
    assert title.get_text().count("\n") >= 1


# --- curves -------------------------------------------------------------------------------

def test_coinciding_curves_get_interleaved_dashes_and_a_note():
    base = decay(X, 1.0, 0.01, 0.2)
    rec = records({"A": {0: (X, base), 1: (X, base * 1.001)},
                   "B": {0: (X, base * 1.002), 1: (X, base * 1.003)},
                   "C": {0: (X, base + 0.5), 1: (X, base + 0.51)}})
    fig = make_figure(rec, fig_spec())
    (ax,) = axes_of(fig)
    style = {ln.get_label(): ln for ln in curve_lines(ax)}
    a, b, c = style["A"], style["B"], style["C"]
    assert c.get_linestyle() == "-"
    # A and B alternate: the same period, shifted by one dash
    (oa, sa), (ob, sb) = a._unscaled_dash_pattern, b._unscaled_dash_pattern
    assert sa == sb and len(sa) == 2 and oa != ob
    assert "A and B" in notes(fig) and "interleaved dashes" in notes(fig)


def test_no_straight_line_across_decades_of_a_log_x_axis():
    """A first checkpoint at 1e-3 s and the next at 1 s: no segment joins them (it would be
    invented); the lone checkpoint is a marker and the figure says so."""
    t = np.r_[1e-3, np.geomspace(1.0, 100.0, 30)]
    rec = records({"A": {s: (t, decay(t, 1.0, 0.05, 0.1) + 0.01 * s) for s in range(3)},
                   "B": {s: (t * 2, decay(t, 1.0, 0.02, 0.2) + 0.01 * s) for s in range(3)}})
    fig = make_figure(rec, fig_spec(logx=True))
    (ax,) = axes_of(fig)
    for ln in curve_lines(ax):
        x, y = (np.asarray(v, float) for v in ln.get_data())
        fin = np.isfinite(y[:-1]) & np.isfinite(y[1:])
        assert np.all(np.log10(x[1:] / x[:-1])[fin] <= 1.0)
    lone = [ln for ln in ax.lines if ln.get_label() == "_isolated"]
    assert lone and all(ln.get_linestyle() == "None" for ln in lone)
    assert sorted(float(x) for ln in lone for x in ln.get_xdata()) == pytest.approx(
        [1e-3, 2e-3])
    assert "Log x: no line across checkpoints" in notes(fig)


def test_count_axis_starts_at_zero_when_the_curves_start_later():
    """Curves that start after a stage 1 (mero_synthetic at 4.4e6 of 8.75e6 gradients)
    are drawn on an axis from 0, where the run (and the count) started."""
    x = np.linspace(4.4e6, 8.75e6, 30)
    rec = records({"A": {s: (x, decay(x / 1e6, 0.1, 1, 0.4) + 0.001 * s) for s in range(2)}})
    (ax,) = axes_of(make_figure(rec, fig_spec()))
    assert ax.get_xlim()[0] == 0.0 and ax.get_xlim()[1] >= 8.75e6


def test_short_log_axis_labels_few_well_spaced_ticks():
    """Under a decade the labels are chosen so they do not crowd (svrb_fig1_fashion's
    0.02, 0.03, ..., 0.1 became 0.02, 0.03, 0.05, 0.07, 0.1)."""
    for lo, hi, h in ((0.0155, 0.105, 1.9), (0.066, 0.16, 1.9), (0.4, 0.52, 1.0)):
        ticks = _log_ticks(lo, hi, h)
        assert len(ticks) >= 2 and all(lo <= t <= hi for t in ticks)
        gaps = np.diff(np.log10(ticks)) / math.log10(hi / lo) * h
        assert gaps.min() >= MIN_TICK_GAP_IN or len(ticks) == 2
    x = np.linspace(0, 1000, 51)
    rec = records({"A": {s: (x, decay(x, 0.08, 0.01, 0.025) * (1 + 0.05 * s))
                         for s in range(3)}})
    fig = make_figure(rec, fig_spec(logy=True))
    fig.canvas.draw()
    (ax,) = axes_of(fig)
    lo, hi = ax.get_ylim()
    shown = [t for t in ax.yaxis.get_majorticklabels() if t.get_text()
             and lo <= t.get_position()[1] <= hi]
    minor = [t for t in ax.yaxis.get_minorticklabels() if t.get_text()]
    assert 2 <= len(shown) <= 6 and not minor


def test_runs_ending_at_different_x_are_noted():
    """L-SVRG's runs end between 4,200 and 5,650 iterations at a fixed gradient budget: the
    mean stops at the shortest, short of the axis, and the figure says why."""
    x_long = np.linspace(0, 5000, 51)
    rec = records({"SGD": {s: (x_long, -x_long / 1000 - 0.1 * s) for s in range(3)},
                   "SVRG": {s: (np.linspace(0, end, 40), -np.linspace(0, end, 40) / 700)
                            for s, end in enumerate((4200.0, 4900.0, 5650.0))}})
    fig = make_figure(rec, fig_spec(panels=[{"metric": "m", "xlim": [0, 5000]}]))
    text = notes(fig)
    assert "SVRG 4,200-5,650" in text and "shortest run" in text
    assert "SGD" not in text.split("points")[1]


def test_band_faces_are_light_with_an_edge_in_the_curve_colour():
    rec = records({lab: {s: (X, decay(X, 1.0, k / 300, 0.5) + 0.05 * s) for s in range(3)}
                   for k, lab in ((1, "A"), (3, "B"))})
    (ax,) = axes_of(make_figure(rec, fig_spec()))
    lines = {ln.get_label(): ln.get_color() for ln in curve_lines(ax)}
    for coll, lab in zip(ax.collections, ["A", "B"], strict=True):
        face = coll.get_facecolor()[0]
        edge = coll.get_edgecolor()[0]
        assert face[3] == pytest.approx(BAND_ALPHA)
        assert tuple(edge[:3]) == pytest.approx(to_rgba(lines[lab])[:3])
        assert edge[3] > face[3]
