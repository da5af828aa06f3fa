"""A profile that runs some of a spec's cases draws the panels it has, not "no data" panels
for the others (issue 57), and says which it left out; a paper run is drawn as specified."""

from __future__ import annotations

import pandas as pd

from drocli.figures.plots.scatter import ScatterSpec
from drocli.figures.render import drop_empty_panels


def _records(settings=("rotation",)):
    rows = []
    for s in settings:
        for label in ("A", "B"):
            for metric, v in (("acc", 60.0), ("parity", 20.0)):
                rows.append(dict(experiment="e", cell=f"{label}-{s}", solver=label.lower(),
                                 label=label, dataset="d", seed=0, step=0, oracle_calls=1,
                                 time_s=0.0, metric=metric, value=v, setting=s))
    return pd.DataFrame(rows)


SPEC = ScatterSpec(kind="scatter", name="f", x="parity", y="acc", caption="Accuracy.",
                   layout=(1, 3), panels=[{"filter": {"setting": s}, "title": s}
                                          for s in ("rotation", "C=2", "C=5")])


def test_the_panels_without_records_are_left_out_and_named():
    got = drop_empty_panels(_records(), SPEC)
    assert [p.title for p in got.panels] == ["rotation"]
    assert got.layout == (1, 1)
    assert got.caption.startswith("Accuracy.") and "setting=C=2" in got.caption \
        and "setting=C=5" in got.caption


def test_a_run_with_every_case_keeps_the_figure_as_it_is():
    assert drop_empty_panels(_records(("rotation", "C=2", "C=5")), SPEC) is SPEC


def test_a_figure_with_no_matching_panel_is_left_to_matches_nothing():
    assert drop_empty_panels(_records(("other",)), SPEC) is SPEC
