"""A recorded metric (e.g. `iteration`) as a figure's x-axis: `metric_as_x` and `x: iteration`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drocli.errors import DrocliError
from drocli.figures.plotting import FigureSpec, make_figure, plot_figures
from drocli.results.aggregate import aggregate, metric_as_x


def make_records(seeds=(0, 1), n=10):
    """Two labels whose oracle cost per iteration differs (1 vs 3), metrics gap + iteration."""
    rows = []
    for lab, cost in (("SGD", 1.0), ("L-SVRG", 3.0)):
        for s in seeds:
            for k in range(n + 1):
                calls = 30.0 * k
                it = calls / cost
                for metric, value in (("log10_gap", -it / 10.0 - 0.1 * s),
                                      ("iteration", it)):
                    rows.append(dict(experiment="e", cell=f"{lab}-{s}", solver=lab, label=lab,
                                     dataset="d", seed=s, step=k, oracle_calls=calls,
                                     time_s=calls * 1e-6, metric=metric, value=value))
    return pd.DataFrame(rows)


def test_metric_as_x_pivots_the_metric_of_the_same_cell_and_step():
    rec = make_records()
    out = metric_as_x(rec, "iteration")
    assert "iteration" in out.columns and len(out) == len(rec)
    gap = out[out["metric"] == "log10_gap"]
    cost = np.where(gap["label"] == "SGD", 1.0, 3.0)
    np.testing.assert_allclose(gap["iteration"], gap["oracle_calls"] / cost)
    # the original rows and index are kept
    pd.testing.assert_frame_equal(out[rec.columns], rec)


def test_metric_as_x_leaves_columns_and_unknown_names_alone():
    rec = make_records()
    assert metric_as_x(rec, "oracle_calls") is rec
    assert metric_as_x(rec, "not_a_metric") is rec


def test_metric_as_x_missing_checkpoint_gives_nan_and_is_dropped():
    rec = make_records()
    drop = (rec["metric"] == "iteration") & (rec["step"] == 3)
    out = metric_as_x(rec[~drop], "iteration")
    gap = out[(out["metric"] == "log10_gap") & (out["step"] == 3)]
    assert gap["iteration"].isna().all()
    rows = out[(out["metric"] == "log10_gap") & (out["label"] == "SGD")]
    agg = aggregate(rows, x="iteration", band="std")
    assert np.isfinite(agg.center).all() and 90.0 not in set(agg.grid)


def test_aggregate_on_iterations_is_exact():
    out = metric_as_x(make_records(), "iteration")
    rows = out[(out["metric"] == "log10_gap") & (out["label"] == "L-SVRG")]
    agg = aggregate(rows, x="iteration", band="std")
    np.testing.assert_allclose(agg.grid, 10.0 * np.arange(11))
    np.testing.assert_allclose(agg.center, -agg.grid / 10.0 - 0.05)


def fig_spec(**kw):
    base = dict(name="iters", title="t", x="iteration", legend=["SGD", "L-SVRG"],
                panels=[{"metric": "log10_gap"}])
    base.update(kw)
    return FigureSpec.model_validate(base)


def test_figure_with_iteration_x(tmp_path):
    rec = make_records()
    fig = make_figure(rec, fig_spec())
    ax = fig.axes[0]
    assert ax.get_xlabel() == "iteration"
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    # SGD spends 1 call per iteration, L-SVRG 3: same calls, 3x the iterations
    assert lines["SGD"].get_xdata().max() == pytest.approx(300.0)
    assert lines["L-SVRG"].get_xdata().max() == pytest.approx(100.0)
    paths = plot_figures(rec, [fig_spec()], tmp_path)
    assert paths[0].stat().st_size > 5000


def test_unknown_x_still_errors():
    with pytest.raises(DrocliError, match="x: "):
        make_figure(make_records(), fig_spec(x="iterations"))


def test_panels_may_have_their_own_x():
    """Paper 004's layout: the objective vs samples on top, vs running time below."""
    spec = fig_spec(x="oracle_calls", layout=[2, 1], xlabel="# of samples",
                    panels=[{"metric": "log10_gap"},
                            {"metric": "log10_gap", "x": "time_s"},
                            ])
    fig = make_figure(make_records(), spec)
    top, bottom = fig.axes[:2]
    assert top.get_xlabel() == "# of samples" and bottom.get_xlabel() == "wall time (s)"
    t = {ln.get_label(): ln.get_xdata() for ln in top.get_lines()}
    b = {ln.get_label(): ln.get_xdata() for ln in bottom.get_lines()}
    np.testing.assert_allclose(b["SGD"], t["SGD"] * 1e-6)      # time_s = calls x 1e-6
    spec2 = fig_spec(panels=[{"metric": "log10_gap", "x": "iteration", "xlabel": "it"},
                             {"metric": "log10_gap", "x": "oracle_calls"}], x="time_s")
    fig2 = make_figure(make_records(), spec2)
    assert [ax.get_xlabel() for ax in fig2.axes[:2]] == ["it", "# oracle calls"]
    with pytest.raises(DrocliError, match="x: "):
        make_figure(make_records(), fig_spec(panels=[{"metric": "log10_gap", "x": "secs"}]))
