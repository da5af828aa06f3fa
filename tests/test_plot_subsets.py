"""Issue 56: plotting never crashes on a subset. Every figure of every shipped spec is drawn
from its smoke folder's records cut to one case and two solvers (what `run -d CASE -s A -s
B` leaves): each figure is drawn, or skipped with one line naming it when nothing of it is
left; a panel left empty says "no data"."""

from __future__ import annotations

from pathlib import Path

import pytest

from drocli.figures.plotting import plot_figures
from drocli.results.integrity import read_checked
from drocli.spec import load_saved

ROOT = Path(__file__).resolve().parent.parent
SMOKE = sorted(p for p in (ROOT / "results").glob("*-smoke") if (p / "spec.yaml").is_file())


def _subsets(df):
    """(one case and the first two labels, the last case and the last label alone)."""
    labels = list(dict.fromkeys(map(str, df["label"])))
    cases = list(dict.fromkeys(map(str, df["setting"]))) if "setting" in df.columns else [None]
    out = []
    for case, keep in ((cases[0], labels[:2]), (cases[-1], labels[-1:])):
        sub = df[df["label"].astype(str).isin(keep)]
        if case is not None:
            sub = sub[sub["setting"].astype(str) == case]
        out.append(sub)
    return out


def test_the_smoke_folders_are_found():
    assert len(SMOKE) >= 19


@pytest.mark.parametrize("folder", SMOKE, ids=[p.name for p in SMOKE])
def test_every_figure_draws_or_is_skipped_on_a_subset(folder, tmp_path):
    spec = load_saved(folder / "spec.yaml")
    df, _ = read_checked(folder)
    for i, sub in enumerate(_subsets(df)):
        skipped: list[str] = []
        out = tmp_path / str(i)
        paths = plot_figures(sub, spec.figures, out, experiment_title=spec.title,
                             context={"spec": spec, "results_dir": folder}, skipped=skipped)
        drawn = {p.stem for p in paths}
        named = {line.split()[1].rstrip(":") for line in skipped}
        assert drawn | named == {f.name for f in spec.figures if f.name not in spec._unread}
        assert not drawn & named
        assert all(p.is_file() and p.stat().st_size > 0 for p in paths)


def test_a_box_panel_without_rows_says_no_data(tmp_path):
    """The crash of issue 56 (plots/box.py zip): a box figure whose one panel keeps no row."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from drocli.figures.plots.box import BoxSpec, render

    rows = pd.DataFrame({"label": ["A", "B"] * 3, "cell": list("abcdef"), "seed": [0] * 6,
                         "setting": ["C=2"] * 6, "step": [1] * 6, "calls": [10] * 6,
                         "metric": ["acc"] * 6, "value": [0.5, 0.6, 0.4, 0.7, 0.5, 0.6],
                         "time_s": [0.1] * 6})
    spec = BoxSpec(kind="box", name="b", panels=[{"metric": "acc", "filter": {"setting": "C=2"}},
                                                 {"metric": "acc",
                                                  "filter": {"setting": "rotation"}}])
    drawn = []
    real = plt.Figure.savefig

    def keep(fig, *a, **k):
        drawn.append([t.get_text() for ax in fig.axes for t in ax.texts])
        return real(fig, *a, **k)

    plt.Figure.savefig, saved = keep, plt.Figure.savefig
    try:
        paths = render(rows, spec, tmp_path, ["png"], 50, "t", {})
    finally:
        plt.Figure.savefig = saved
    assert paths and paths[0].is_file()
    assert any("no data" in t for texts in drawn for t in texts)
