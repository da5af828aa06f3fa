"""Figures: files written, layout, legend order, colors, zoomed y, caption, errors."""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from drocli.errors import DrocliError
from drocli.figures.plotting import FigureSpec, auto_ylim, make_figure, plot_figures

LABELS = {"SMD": (0.04, 2.0, 0.66), "ALEG": (0.05, 6.0, 0.64), "MPVR": (0.045, 4.0, 0.65)}


LN2 = float(np.log(2))


def make_records(start=LN2, datasets=("synthetic",), seeds=(0, 1, 2), n=30):
    """Curves a*exp(-b x/B) + c per label and seed, first checkpoint at `start`."""
    rng = np.random.default_rng(0)
    rows = []
    budget = 1e6
    for ds in datasets:
        for lab, (a, b, c) in LABELS.items():
            for s in seeds:
                x = np.linspace(0, budget, n + 1)
                x[1:] += rng.integers(0, 2000, n)
                for metric, shift in (("max_risk_train", 0.0), ("max_risk_test", 0.01)):
                    y = a * np.exp(-b * x / budget) + c + shift + 0.002 * s
                    y[0] = start
                    for k in range(len(x)):
                        rows.append(dict(experiment="e", cell=f"{ds}-{lab}-{s}", solver=lab,
                                         label=lab, dataset=ds, seed=s, step=k,
                                         oracle_calls=x[k], time_s=x[k] * 1e-6,
                                         metric=metric, value=y[k]))
    return pd.DataFrame(rows)


def spec(**kw):
    base = dict(name="fig1", title="GDRO synthetic", caption="reconstructed settings: n_i=5000",
                legend=["ALEG", "SMD", "MPVR"],
                panels=[{"metric": "max_risk_train", "title": "train"},
                        {"metric": "max_risk_test", "title": "test"}])
    base.update(kw)
    return FigureSpec.model_validate(base)


def png_size(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_png_written_with_expected_size_and_no_temp_files(tmp_path):
    s = spec()
    paths = plot_figures(make_records(), [s], tmp_path, fmt="png")
    assert paths == [tmp_path / "fig1.png"]
    assert paths[0].stat().st_size > 10_000
    w_in, h_in = make_figure(make_records(), s).get_size_inches()
    w, h = png_size(paths[0])
    assert (w, h) == (int(round(w_in * 150)), int(round(h_in * 150)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig1.png"]


def test_png_drops_only_an_all_opaque_alpha_channel(tmp_path):
    """The saved RGB pixels are matplotlib's own RGBA rendering minus its alpha (all 255);
    title and dpi are kept; a figure with a transparent background keeps its alpha."""
    import io

    from PIL import Image

    s = spec()
    path = plot_figures(make_records(), [s], tmp_path, fmt="png")[0]
    img = Image.open(path)
    assert img.mode == "RGB" and img.info["Title"].startswith("GDRO synthetic")
    assert round(img.info["dpi"][0]) == 150
    from drocli.figures.plotting import _save_png
    fig = make_figure(make_records(), s)
    _save_png(fig, tmp_path / "same.png", 150, {"Title": "t"})
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    ref = np.asarray(Image.open(buf))
    assert ref.shape[2] == 4 and (ref[..., 3] == 255).all()
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "same.png")), ref[..., :3])
    fig.patch.set_alpha(0.0)
    for ax in fig.axes:
        ax.patch.set_alpha(0.0)
    _save_png(fig, tmp_path / "clear.png", 50, {"Title": "t"})
    assert Image.open(tmp_path / "clear.png").mode == "RGBA"


def test_pdf_and_svg(tmp_path):
    paths = plot_figures(make_records(), [spec()], tmp_path, fmt="pdf,svg",
                         experiment_title="E1")
    assert [p.suffix for p in paths] == [".pdf", ".svg"]
    assert paths[0].read_bytes()[:4] == b"%PDF"
    assert b"<svg" in paths[1].read_bytes()[:2000]


def test_unknown_format_is_user_error(tmp_path):
    with pytest.raises(DrocliError, match="format"):
        plot_figures(make_records(), [spec()], tmp_path, fmt="jpeg")


def test_one_axes_per_panel_in_layout_and_bands_drawn():
    s = spec(layout=[2, 2], panels=[{"metric": "max_risk_train"}, {"metric": "max_risk_test"},
                                    {"metric": "max_risk_train", "logy": True}])
    fig = make_figure(make_records(), s)
    axes = visible_axes(fig)
    assert len(axes) == 3
    assert [ax.get_title() for ax in axes] == ["max_risk_train", "max_risk_test",
                                               "max_risk_train"]
    assert axes[2].get_yscale() == "log"
    for ax in axes:
        assert len(ax.lines) == 3 and len(ax.collections) == 3   # a line and a band per label


def test_legend_order_and_consistent_colors():
    fig = make_figure(make_records(), spec(legend=["MPVR", "ALEG", "SMD"]))
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["MPVR", "ALEG", "SMD"]
    a, b = visible_axes(fig)
    colors_a = {ln.get_label(): ln.get_color() for ln in a.lines}
    colors_b = {ln.get_label(): ln.get_color() for ln in b.lines}
    assert colors_a == colors_b and len(set(colors_a.values())) == 3


def test_default_legend_is_first_appearance_and_selection():
    fig = make_figure(make_records(), spec(legend=None))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["SMD", "ALEG", "MPVR"]
    fig = make_figure(make_records(), spec(legend=["ALEG", "SMD"]))
    assert [ln.get_label() for ln in visible_axes(fig)[0].lines] == ["ALEG", "SMD"]
    with pytest.warns(UserWarning, match="AL-SVRE"):
        make_figure(make_records(), spec(legend=["ALEG", "AL-SVRE"]))


def test_ylim_zooms_on_curves_when_start_is_far_off():
    fig = make_figure(make_records(start=2.0), spec())
    lo, hi = visible_axes(fig)[0].get_ylim()
    # train curves live in [0.64, 0.71]; the start value 2.0 is left out
    assert 0.62 < lo < 0.645 and 0.70 < hi < 0.75


def test_ylim_keeps_start_when_it_does_not_squash():
    fig = make_figure(make_records(start=0.72), spec())
    lo, hi = visible_axes(fig)[0].get_ylim()
    assert 0.62 < lo < 0.645 and 0.72 <= hi < 0.73


def test_explicit_ylim_and_partial_ylim():
    s = spec(panels=[{"metric": "max_risk_train", "ylim": [0.6, 0.8]},
                     {"metric": "max_risk_test", "ylim": [None, 0.9]}])
    a, b = visible_axes(make_figure(make_records(), s))
    assert a.get_ylim() == pytest.approx((0.6, 0.8))
    assert b.get_ylim()[1] == pytest.approx(0.9) and b.get_ylim()[0] > 0.6


def test_auto_ylim_pads_five_percent():
    g = np.linspace(0, 1, 11)
    assert auto_ylim([(g, np.full(11, 1.0), np.full(11, 2.0))]) == pytest.approx((0.95, 2.05))
    assert auto_ylim([]) is None


def test_title_and_legend_visible_and_no_caption_in_the_image():
    """The caption belongs beside the image (the report), not baked into it."""
    fig = make_figure(make_records(), spec(caption="x " * 200))
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    fb = fig.bbox
    axes_boxes = [ax.get_tightbbox(r) for ax in visible_axes(fig)]
    top = max(b.y1 for b in axes_boxes)
    assert not [t for t in fig.texts if "x x" in t.get_text()]
    lb = fig.legends[0].get_window_extent(r)
    assert lb.y0 >= top - 1 and lb.y1 <= fb.y1
    title = [t for t in fig.texts if t.get_text() == "GDRO synthetic"][0]
    assert title.get_window_extent(r).y0 >= lb.y1 - 1


def _lognormal_records(ends=None, seeds=range(5), sigma=1.5, n=40, metric="loss"):
    """Strictly positive, very noisy curves (log-normal around a decay): mean - std < 0."""
    rng = np.random.default_rng(1)
    rows = []
    for lab, end in (ends or {"A": 1.0, "B": 1.0}).items():
        for s in seeds:
            x = np.linspace(0, end, n + 1)
            y = np.exp(-3 * x / end) * np.exp(sigma * rng.standard_normal(n + 1))
            for k in range(n + 1):
                rows.append(dict(experiment="e", cell=f"{lab}-{s}", solver=lab, label=lab,
                                 dataset="d", seed=s, step=k, oracle_calls=1000.0 * k,
                                 time_s=x[k], metric=metric, value=y[k]))
    return pd.DataFrame(rows)


def _band_ys(ax):
    """The y of every vertex of every band (fill_between polygons) drawn on `ax`."""
    ys = [path.vertices[:, 1] for coll in ax.collections for path in coll.get_paths()]
    assert ys, "no band drawn"
    return np.concatenate(ys)


@pytest.mark.parametrize("band", ["std", "quantile"])
def test_band_on_a_log_axis_stays_positive(band):
    """On a log y-axis the band lives on the log scale (geometric mean and std): no vertex
    of a band polygon reaches <= 0, though the arithmetic mean - std of the same data does."""
    rec = _lognormal_records()
    v = rec.pivot_table(index=["label", "step"], columns="seed", values="value")
    assert (v.mean(axis=1) - v.std(axis=1) <= 0).any()        # the old band went below 0
    s = FigureSpec.model_validate({"name": "f", "logy": True, "band": band,
                                   "panels": [{"metric": "loss"}]})
    (ax,) = visible_axes(make_figure(rec, s))
    assert ax.get_yscale() == "log"
    ys = _band_ys(ax)
    assert np.all(ys[np.isfinite(ys)] > 0)
    assert ax.get_ylim()[0] > 0
    # the center line is the geometric mean of the seeds
    line = ax.lines[0]
    a = rec[rec.label == "A"].pivot_table(index="oracle_calls", columns="seed", values="value")
    if band == "std":
        np.testing.assert_allclose(line.get_ydata(), np.exp(np.log(a).mean(axis=1)), rtol=1e-12)


def test_band_on_a_linear_axis_is_still_mean_and_std():
    rec = _lognormal_records()
    s = FigureSpec.model_validate({"name": "f", "panels": [{"metric": "loss"}]})
    (ax,) = visible_axes(make_figure(rec, s))
    a = rec[rec.label == "A"].pivot_table(index="oracle_calls", columns="seed", values="value")
    np.testing.assert_allclose(ax.lines[0].get_ydata(), a.mean(axis=1), rtol=1e-12)
    assert (_band_ys(ax) < 0).any()


def test_wall_time_panel_goes_log_when_curves_end_decades_apart():
    far = _lognormal_records(ends={"fast": 0.05, "slow": 70.0}, sigma=0.1)
    near = _lognormal_records(ends={"fast": 6.0, "slow": 12.0}, sigma=0.1)
    s = FigureSpec.model_validate({"name": "f", "x": "time_s", "logy": True,
                                   "panels": [{"metric": "loss"}]})
    (ax,) = visible_axes(make_figure(far, s))
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] > 0
    assert np.all(_band_ys(ax) > 0)
    (ax,) = visible_axes(make_figure(near, s))
    assert ax.get_xscale() == "linear"
    # the panel decides when it says so; oracle calls never switch by themselves
    s = FigureSpec.model_validate({"name": "f", "x": "time_s",
                                   "panels": [{"metric": "loss", "logx": False}]})
    assert visible_axes(make_figure(far, s))[0].get_xscale() == "linear"
    s = FigureSpec.model_validate({"name": "f", "panels": [{"metric": "loss"}]})
    assert visible_axes(make_figure(far, s))[0].get_xscale() == "linear"


def test_shared_axis_labels_are_written_once():
    s = spec(layout=[2, 2], xlabel="# gradients",
             panels=[{"metric": "max_risk_train", "ylabel": "risk"},
                     {"metric": "max_risk_test", "ylabel": "risk"},
                     {"metric": "max_risk_train", "ylabel": "risk"},
                     {"metric": "max_risk_test", "ylabel": "risk"}])
    fig = make_figure(make_records(), s)
    axes = visible_axes(fig)
    assert [ax.get_xlabel() for ax in axes] == ["", "", "", ""]
    assert fig._supxlabel is not None and fig._supxlabel.get_text() == "# gradients"
    assert [ax.get_ylabel() for ax in axes] == ["risk", "", "risk", ""]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    low = min(ax.get_tightbbox(r).y0 for ax in axes)
    assert fig._supxlabel.get_window_extent(r).y1 <= low + 1     # under the panels
    # panels with their own x keep their own label
    s = spec(layout=[2, 1], panels=[{"metric": "max_risk_train"},
                                    {"metric": "max_risk_train", "x": "time_s"}])
    fig = make_figure(make_records(), s)
    assert [ax.get_xlabel() for ax in visible_axes(fig)] == ["# oracle calls", "wall time (s)"]
    assert fig._supxlabel is None
    fig = make_figure(make_records(), spec())          # one row, the same x: once as well
    assert [ax.get_xlabel() for ax in visible_axes(fig)] == ["", ""]
    assert fig._supxlabel.get_text() == "# oracle calls"
    fig = make_figure(make_records(), spec(panels=[{"metric": "max_risk_train"}]))
    assert visible_axes(fig)[0].get_xlabel() == "# oracle calls" and fig._supxlabel is None


def test_log10_metric_says_log10_and_ticks_whole_exponents():
    rec = make_records().assign(metric=lambda d: "log10_" + d["metric"],
                                value=lambda d: -20 * d["value"])
    s = spec(panels=[{"metric": "log10_max_risk_train", "ylabel": "log10(F(x) - F*)"},
                     {"metric": "log10_max_risk_test", "ylabel": "log10 cross entropy"},
                     {"metric": "log10_max_risk_test"}])
    a, b, c = visible_axes(make_figure(rec, s))
    assert a.get_ylabel() == "log$_{10}$(F(x) - F*)"
    assert b.get_ylabel() == "log$_{10}$ cross entropy"
    assert c.get_ylabel() == "log10_max_risk_test"
    ticks = [t for t in a.get_yticks() if a.get_ylim()[0] <= t <= a.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_unknown_metric_names_figure_panel_and_metrics():
    s = spec(panels=[{"metric": "max_risk_train"}, {"metric": "max_risk_tst"}])
    with pytest.raises(DrocliError) as err:
        make_figure(make_records(), s)
    msg = str(err.value)
    assert "fig1" in msg and "panel 1" in msg and "max_risk_test" in msg


def test_panel_filter_selects_dataset_and_ambiguity_is_an_error():
    rec = make_records(datasets=("synthetic", "cifar"))
    with pytest.raises(DrocliError, match="dataset"):
        make_figure(rec, spec())
    s = spec(panels=[{"metric": "max_risk_train", "filter": {"dataset": "synthetic"}},
                     {"metric": "max_risk_train", "filter": {"dataset": "cifar"}}])
    assert all(len(ax.lines) == 3 for ax in visible_axes(make_figure(rec, s)))
    s = spec(filter={"dataset": "cifar"})
    assert len(visible_axes(make_figure(rec, s))[0].lines) == 3


def test_empty_filter_gives_an_empty_panel_not_a_crash():
    fig = make_figure(make_records(), spec(filter={"dataset": "nope"}))
    assert any("no data" in t.get_text() for t in visible_axes(fig)[0].texts)


def test_diverged_seed_is_noted_under_the_legend_naming_the_panel():
    """Not over the curves (issue 43): a figure note names the label, the count and the
    panel."""
    rec = make_records()
    bad = (rec["label"] == "SMD") & (rec["seed"] == 1) & (rec["step"] >= 10)
    rec.loc[bad, "value"] = np.nan
    fig = make_figure(rec, spec())
    assert not visible_axes(fig)[0].texts
    assert any("SMD 1/3 in ‘train’" in t.get_text() and "Diverged" in t.get_text()
               for t in fig.texts)


def test_x_time_and_default_xlabel():
    fig = make_figure(make_records(), spec(x="time_s", band="quantile"))
    assert fig._supxlabel.get_text() == "wall time (s)"            # both panels: once


def test_spec_validation():
    with pytest.raises(ValidationError, match="layout"):
        spec(layout=[1, 1])
    with pytest.raises(ValidationError, match="titel"):
        spec(titel="typo")
    with pytest.raises(ValidationError):
        spec(panels=[{"metric": "m", "ylim": [1.0, 0.5]}])
    with pytest.raises(ValidationError):
        spec(band="sem")
    with pytest.raises(DrocliError, match="unique"):
        plot_figures(make_records(), [spec(), spec()], "/tmp/unused-drocli-test")


def test_multirow_legend_reads_in_spec_order_row_by_row():
    rec = make_records()
    extra = rec[rec["label"] == "SMD"].assign(label="SMD tuned",
                                              cell=lambda d: d["cell"] + "-t")
    s = spec(legend=["ALEG", "SMD", "MPVR", "SMD tuned"],
             panels=[{"metric": "max_risk_train"}])
    fig = make_figure(pd.concat([rec, extra]), s)
    (legend,) = fig.legends
    # two rows of two, filled column by column: ALEG MPVR | SMD "SMD tuned"
    assert legend._ncols == 2
    assert [t.get_text() for t in legend.get_texts()] == [
        "ALEG", "MPVR", "SMD", "SMD tuned"]


def test_a_sweep_draws_every_swept_label_of_a_legend_entry():
    """Issue 57: a `-m` sweep names its labels 'ALEG (gamma_w=0.01)'; the spec's legend
    [ALEG, SMD, MPVR] drew nothing of them."""
    import warnings

    rec = make_records()
    swept = rec[rec["label"] == "ALEG"].copy()
    rec.loc[rec["label"] == "ALEG", "label"] = "ALEG (gamma_w=0.01)"
    swept["label"] = "ALEG (gamma_w=0.1)"
    swept["cell"] = swept["cell"].astype(str) + "-b"        # its own cells
    rec = pd.concat([rec, swept], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # nothing is left out
        fig = make_figure(rec, spec())
    from drocli.figures.plotting import _label_order

    assert _label_order(rec, spec()) == ["ALEG (gamma_w=0.01)", "ALEG (gamma_w=0.1)", "SMD",
                                         "MPVR"]
    assert len(visible_axes(fig)[0].lines) == 4


def test_plot_says_a_legend_mismatch_in_one_drocli_line(tiny_spec, tmp_path, capsys):
    """Issue 57: a raw Python UserWarning with a file path; now drocli's one line."""
    import yaml

    from tests.conftest import call

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    saved["figures"][0]["legend"] = ["ALEG", "SMD", "MPVR"]    # as a hand would leave it
    (out / "spec.yaml").write_text(yaml.safe_dump(saved))
    capsys.readouterr()
    call("plot", out)
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "legend label(s)" in x)
    assert line.startswith(f"drocli: {out}: figure 'fig_tiny'") and "Warning" not in err
    assert ".py:" not in err
