"""Table, scatter and box figure kinds: numbers against direct computation on records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drocli.errors import DrocliError
from drocli.figures.plots.scatter import points
from drocli.figures.plots.table import table_frame
from drocli.figures.plotting import plot_figures, validate_figure

RNG = np.random.default_rng(0)
LABELS = ["FedAvg", "TCH"]
SETTINGS = ["rotation", "C=2"]


def make_records():
    """Per (setting, label, seed): 3 checkpoints of acc and parity; the last one counts."""
    rows, finals = [], {}
    for s in SETTINGS:
        for lab in LABELS:
            for seed in range(4):
                cell = f"{s}-{lab}-{seed}"
                acc, par = RNG.uniform(80, 95), RNG.uniform(0.5, 5)
                finals[(s, lab, seed)] = (acc, par)
                for step in range(3):
                    last = step == 2
                    for metric, v in (("acc", acc if last else 10.0),
                                      ("parity", par if last else 99.0)):
                        rows.append({"experiment": "t", "cell": cell, "solver": lab.lower(),
                                     "label": lab, "dataset": "d", "seed": seed,
                                     "step": step, "oracle_calls": step, "time_s": 0.0,
                                     "metric": metric, "value": v, "setting": s})
    return pd.DataFrame(rows), finals


def test_table_mean_std_ddof0_and_markdown(tmp_path):
    df, finals = make_records()
    spec = validate_figure({"kind": "table", "name": "t2", "rows": "setting",
                            "metrics": [{"metric": "acc", "better": "above"},
                                        {"metric": "parity", "title": "Parity"}],
                            "labels": ["TCH", "FedAvg"]})
    stats = table_frame(df, spec)
    for s in SETTINGS:
        for lab in LABELS:
            v = np.array([finals[(s, lab, k)][0] for k in range(4)])
            r = stats[(stats.row == s) & (stats.metric == "acc") & (stats.label == lab)]
            assert r["mean"].item() == pytest.approx(v.mean())
            assert r["std"].item() == pytest.approx(v.std(ddof=0))
            assert r["n"].item() == 4
    paths = plot_figures(df, [spec], tmp_path)
    md = (tmp_path / "t2.md").read_text()
    assert [p.name for p in paths] == ["t2.csv", "t2.md"]
    assert md.splitlines()[0] == "| Setting | Metric | TCH | FedAvg |"
    # the best (highest) accuracy of each setting is bold
    for s in SETTINGS:
        line = next(x for x in md.splitlines() if x.startswith(f"| {s} | acc"))
        best = max(LABELS, key=lambda lab: np.mean([finals[(s, lab, k)][0] for k in range(4)]))
        cells = line.strip("|").split("|")[2:]
        assert cells[["TCH", "FedAvg"].index(best)].strip().startswith("**")


def test_scatter_rms_and_render(tmp_path):
    df, finals = make_records()
    spec = validate_figure({"kind": "scatter", "name": "f6", "x": "parity", "y": "acc",
                            "x_stat": "rms", "markers": {"TCH": "*"},
                            "panels": [{"filter": {"setting": s}, "title": s}
                                       for s in SETTINGS]})
    pts = points(df, spec, spec.panels[1])
    par = np.array([finals[("C=2", "TCH", k)][1] for k in range(4)])
    acc = np.array([finals[("C=2", "TCH", k)][0] for k in range(4)])
    assert pts["TCH"] == pytest.approx((np.sqrt(np.mean(par ** 2)), acc.mean()))
    path = plot_figures(df, [spec], tmp_path)[0]
    assert path.stat().st_size > 10_000


def test_box_renders_and_rejects_unknown_metric(tmp_path):
    df, _ = make_records()
    spec = validate_figure({"kind": "box", "name": "f7",
                            "panels": [{"metric": "acc"}, {"metric": "parity"}]})
    assert plot_figures(df, [spec], tmp_path)[0].exists()
    bad = validate_figure({"kind": "box", "name": "f7", "panels": [{"metric": "acc_tst"}]})
    with pytest.raises(DrocliError, match="did you mean 'acc'|acc"):
        plot_figures(df, [bad], tmp_path)


def test_unknown_kind_is_a_spec_error():
    with pytest.raises(DrocliError, match="unknown figure 'scater'"):
        validate_figure({"kind": "scater", "name": "x"})


@pytest.mark.parametrize("kind", ["box", "scatter"])
def test_images_carry_no_caption(kind, tmp_path, monkeypatch):
    """Captions go beside the image (the report), for every figure kind."""
    import drocli.figures.saving as saving

    drawn = []
    monkeypatch.setattr(saving, "save_figure",
                        lambda fig, *a, **k: drawn.append(fig) or [tmp_path / "x.png"])
    df, _ = make_records()
    raw = {"box": {"kind": "box", "name": "f", "panels": [{"metric": "acc"}]},
           "scatter": {"kind": "scatter", "name": "f", "x": "parity", "y": "acc",
                       "panels": [{"title": "all"}]}}[kind]
    spec = validate_figure({**raw, "title": "T", "caption": "CAPTION WORDS"})
    plot_figures(df, [spec], tmp_path)
    (fig,) = drawn
    texts = [t.get_text() for t in fig.texts]
    texts += [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "T" in texts and not any("CAPTION" in t for t in texts)
