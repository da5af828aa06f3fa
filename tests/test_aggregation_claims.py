"""Seed aggregation, claim kinds and reference comparison on records whose truth is known
by construction (analytic curves), plus the figures drawn from them."""

import math

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

from drocli.claims import evaluate_claims, format_result, validate_claim
from drocli.errors import DrocliError
from drocli.figures.plotting import FigureSpec, plot_figures
from drocli.results.aggregate import aggregate, interpolate
from drocli.results.reference import compare_reference


def claim_of(**fields):
    """A claim model from keyword fields (the spec's mapping)."""
    return validate_claim(fields)


def records(curves: dict, metric="m", time_per_x=1e-6) -> pd.DataFrame:
    """curves: label -> {seed: (x array, y array)} -> tidy records."""
    rows = []
    for label, seeds in curves.items():
        for seed, (x, y) in seeds.items():
            cell = f"{label}-{seed}"
            for step, (xi, yi) in enumerate(zip(x, y, strict=True)):
                rows.append(dict(experiment="t", cell=cell, solver=label.lower(), label=label,
                                 dataset="d", seed=seed, step=step, oracle_calls=float(xi),
                                 time_s=float(xi) * time_per_x, metric=metric,
                                 value=float(yi)))
    return pd.DataFrame(rows)


X = np.linspace(0, 100, 11)


def expcurve(a, b, c, x=X):
    return x, a * np.exp(-b * x) + c


def test_interpolate_linear_and_nan_outside():
    x = np.array([0.0, 10.0, 20.0])
    y = np.array([1.0, 3.0, 2.0])
    out = interpolate(x, y, np.array([-1.0, 0.0, 5.0, 15.0, 20.0, 25.0]))
    np.testing.assert_allclose(out[1:5], [1.0, 2.0, 2.5, 2.0])
    assert math.isnan(out[0]) and math.isnan(out[5])


def test_mean_and_std_of_linear_seeds_on_mismatched_grids():
    # seed 0: y = x on 0..100 step 10; seed 1: y = 2x + 1 on 5..95 step 15
    x0 = np.arange(0, 101, 10.0)
    x1 = np.arange(5, 96, 15.0)
    df = records({"A": {0: (x0, x0), 1: (x1, 2 * x1 + 1)}})
    agg = aggregate(df[df.label == "A"], band="std")
    assert agg.grid[0] == 5 and agg.grid[-1] == 95  # largest start, smallest end
    g = agg.grid
    np.testing.assert_allclose(agg.center, (g + 2 * g + 1) / 2)
    sd = np.abs(g - (2 * g + 1)) / math.sqrt(2)  # sample std of two values
    np.testing.assert_allclose(agg.hi - agg.center, sd)
    np.testing.assert_allclose(agg.center - agg.lo, sd)


def test_final_below_per_seed_and_means():
    df = records({"A": {s: expcurve(1, 0.05, 0.1 + 0.01 * s) for s in range(3)},
                  "B": {s: expcurve(1, 0.05, 0.12 + 0.01 * s) for s in range(3)},
                  "C": {0: expcurve(1, 0.05, 0.05), 1: expcurve(1, 0.05, 0.2),
                        2: expcurve(1, 0.05, 0.2)}})
    base = dict(text="t", kind="final_below", metric="m", solver="A")
    res = evaluate_claims(df, [
        claim_of(id="ab", others=["B"], per_seed=True, **base),
        claim_of(id="ac_seed", others=["C"], per_seed=True, **base),
        claim_of(id="ac_mean", others=["C"], per_seed=False, **base),
        claim_of(id="ab_margin", others=["B"], margin=0.05, **base),
        claim_of(id="nr", others=["C"], per_seed=True, reproduced=False, **base),
        claim_of(id="prof", others=["B"], profiles=["paper"], **base),
    ], profile="smoke")
    status = {r.id: r.point_status for r in res}
    assert status == {"ab": "holds", "ac_seed": "fails", "ac_mean": "holds",
                      "ab_margin": "fails", "nr": "not_reproduced", "prof": "skipped"}
    line = format_result(res[0])      # 3 seeds: the sign-flip test's smallest p is 1/8
    assert "0.11" in line and line.startswith("INCONCLUSIVE") and "sign-flip" in line


def test_reach_first_level_and_never_reaching():
    # A reaches 0.5 at x = ln 2 / 0.1 = 6.93; B at ln 2 / 0.05 = 13.9; C never (floor 0.6)
    xs = np.linspace(0, 100, 1001)
    df = records({"A": {0: expcurve(1, 0.1, 0, xs)}, "B": {0: expcurve(1, 0.05, 0, xs)},
                  "C": {0: expcurve(0.4, 0.05, 0.6, xs)}})
    base = dict(text="t", kind="reach_first", metric="m", level=0.5)
    r = evaluate_claims(df, [claim_of(id="a", solver="A", others=["B", "C"], **base),
                             claim_of(id="b", solver="B", others=["A"], **base)], "paper")
    assert [x.point_status for x in r] == ["holds", "fails"]
    assert r[0].values["A"] == pytest.approx(math.log(2) / 0.1, abs=0.1)
    assert r[0].values["B"] == pytest.approx(math.log(2) / 0.05, abs=0.1)
    assert math.isinf(r[0].values["C"])


def test_smoother_and_wall_time():
    rng = np.random.default_rng(0)
    x, y = expcurve(1, 0.05, 0.1)
    noisy = y + 0.05 * rng.standard_normal(len(y))
    df = records({"S": {0: (x, y)}, "N": {0: (x, noisy)}})
    r = evaluate_claims(df, [claim_of(id="s", text="t", kind="smoother", metric="m",
                                       solver="S", others=["N"])], "paper")
    assert r[0].point_status == "holds"
    fast = records({"F": {0: (x, y)}}, time_per_x=1e-3)
    slow = records({"W": {0: (x, y)}}, time_per_x=3e-3)
    r = evaluate_claims(pd.concat([fast, slow]), [
        claim_of(id="w", text="t", kind="wall_time_below", solver="F", others=["W"]),
        claim_of(id="w2", text="t", kind="wall_time_below", solver="F", others=["W"],
                  factor=0.2)], "paper")
    assert [x.point_status for x in r] == ["holds", "fails"]


def test_diverged_seed_loses_and_missing_label_skips():
    x, y = expcurve(1, 0.05, 0.1)
    bad = y.copy()
    bad[5:] = np.nan
    df = records({"A": {0: (x, y)}, "B": {0: (x, bad)}})
    r = evaluate_claims(df, [
        claim_of(id="a", text="t", kind="final_below", metric="m", solver="A", others=["B"]),
        claim_of(id="b", text="t", kind="final_below", metric="m", solver="B", others=["A"]),
        claim_of(id="z", text="t", kind="final_below", metric="m", solver="A", others=["Z"]),
    ], "paper")
    assert [x.point_status for x in r] == ["holds", "fails", "skipped"]
    with pytest.raises(DrocliError):
        evaluate_claims(df, [claim_of(id="q", text="t", kind="final_below", metric="nope",
                                       solver="A", others=["B"])], "paper")


def test_compare_reference_reports_changed_and_missing():
    df = records({"A": {0: expcurve(1, 0.05, 0.1), 1: expcurve(1, 0.05, 0.2)}})
    assert compare_reference(df, df.copy()) == []
    changed = df.copy()
    changed.loc[changed.index[-1], "value"] *= 1.01
    lines = compare_reference(changed, df, rtol=1e-4)
    assert len(lines) == 1 and "A" in lines[0]
    assert compare_reference(changed, df, rtol=0.1) == []
    # a per-label floor (the spec's reference_rtol) loosens that label only
    assert compare_reference(changed, df, rtol=1e-4, rtol_by_label={"A": 0.02}) == []
    assert len(compare_reference(changed, df, rtol=1e-4, rtol_by_label={"B": 0.02})) == 1
    assert "rtol 0.005" in compare_reference(changed, df, rtol_by_label={"A": 0.005})[0]
    fewer = df[df.seed == 0]        # a reference further into its plan: the run's seeds only
    assert compare_reference(fewer, df) == []
    from drocli.results.reference import later_seeds

    assert later_seeds(fewer, df) == ["1"]
    assert len(compare_reference(df, fewer)) == 1      # a seed the reference lacks still counts


def test_plot_writes_readable_figure(tmp_path):
    df = pd.concat([records({"A": {s: expcurve(1, 0.05, 0.1 + 0.01 * s) for s in range(3)},
                             "B": {s: expcurve(1, 0.03, 0.15) for s in range(3)}}, metric=m)
                    for m in ("train", "test")])
    fig = FigureSpec.model_validate({
        "name": "f", "title": "T (reconstructed settings)", "caption": "caption text",
        "layout": [1, 2], "legend": ["B", "A"],
        "panels": [{"metric": "train", "title": "train"}, {"metric": "test", "title": "test"}]})
    paths = plot_figures(df, [fig], tmp_path, fmt="png")
    img = mpimg.imread(paths[0])
    assert img.shape[0] > 300 and img.shape[1] > 600
    assert plot_figures(df, [fig], tmp_path, fmt="svg")[0].read_text().count("<svg") == 1
    bad = FigureSpec.model_validate({"name": "g", "panels": [{"metric": "nope"}]})
    with pytest.raises(DrocliError) as ei:
        plot_figures(df, [bad], tmp_path)
    assert "nope" in str(ei.value) and "train" in str(ei.value)
    skipped: list = []          # where the caller takes skips (plot, report): named, not drawn
    assert plot_figures(df, [bad], tmp_path, skipped=skipped) == []
    assert skipped == ["figure g: none of its metrics (nope) is in the records: not drawn"]


def test_reference_line_has_the_requested_slope():
    from drocli.figures.plotting import make_figure

    x = np.geomspace(1, 1e4, 30)
    df = records({"A": {0: (x, 1 / np.sqrt(x))}})
    fig = make_figure(df, FigureSpec.model_validate({
        "name": "r", "logx": True, "logy": True,
        "panels": [{"metric": "m", "reference_slope": -0.5}]}))
    dashed = [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 1
    xs, ys = dashed[0].get_data()
    slope = np.polyfit(np.log(xs), np.log(ys), 1)[0]
    assert slope == pytest.approx(-0.5, abs=1e-9)


def test_excess_variation_is_exactly_zero_for_monotone_curves_and_else_tv_minus_net():
    """measure: excess is TV - |net change| (checked against that formula on wiggly curves,
    to rounding), and exactly 0 on monotone ones: two labels whose curves never turn back
    are tied on every seed, so the claim is undecidable (no effect, no seed count), not
    decided on rounding noise."""
    rng = np.random.default_rng(3)
    x = np.linspace(0.0, 1.0, 60)
    curves = {"A": {}, "B": {}}
    for seed in range(12):
        # decreasing losses with a seed-dependent shape: TV - |net| rounds to +-1e-17
        curves["A"][seed] = (x, np.exp(-(3 + rng.random()) * x) + 0.1 * rng.random())
        curves["B"][seed] = (x, np.exp(-(2 + rng.random()) * x) + 0.1 * rng.random())
    claim = validate_claim(dict(id="st", text="A steadier", kind="smoother", metric="m",
                                solver="A", others=["B"], measure="excess", factor=0.5))
    r = evaluate_claims(records(curves), [claim], "paper")[0]
    e = r.effects["B"]
    assert e["mean"] == 0.0 and e["lo"] == e["hi"] == 0.0 and r.status == "inconclusive"
    assert e.get("seeds_to_decide") is None
    assert set(r.summaries["A"].values()) == {0.0} == set(r.summaries["B"].values())
    wig = {"W": {s: (x, np.sin(7 * x + s) + 0.3 * x) for s in range(3)},
           "V": {s: (x, np.cos(5 * x + s)) for s in range(3)}}
    r = evaluate_claims(records(wig), [validate_claim(dict(
        id="w", text="t", kind="smoother", metric="m", solver="W", others=["V"],
        measure="excess", after_fraction=0.0))], "paper")[0]
    for label, by_seed in wig.items():
        for s, (_xs, ys) in by_seed.items():
            want = np.abs(np.diff(ys)).sum() - abs(ys[-1] - ys[0])
            got = {str(k): v for k, v in r.summaries[label].items()}[str(s)]
            assert want > 0.1 and got == pytest.approx(want, rel=1e-12)
