"""The test each claim runs, in words generated from its fields (the report prints it beside
the spec's own text): every shipped claim's sentence names what the code compares."""

import glob

import pytest

from drocli.claims import validate_claim
from drocli.spec import load_spec

CLAIMS = [(f, c) for f in sorted(glob.glob("experiments/*.yaml"))
          for c in load_spec(f).claims]


@pytest.mark.parametrize("spec, claim", CLAIMS, ids=[f"{f}:{c.id}" for f, c in CLAIMS])
def test_every_shipped_claim_names_what_it_compares(spec, claim):
    text = claim.test_text()
    assert claim.solver in text
    for other in claim.others:
        assert other in text
    if claim.metric:
        assert claim.metric in text
    procedure = "sign-flip" if claim.kind == "spread_below" else "paired t"
    assert procedure in text
    if claim.panels:
        assert f"{len(claim.panels)} panels" in text


def _claim(**kw):
    base = {"id": "c", "text": "t", "solver": "A", "others": ["B", "C"], "metric": "loss"}
    return validate_claim({**base, **kw})


def test_the_fields_change_the_words():
    assert _claim(kind="final_below").test_text() == (
        "final loss: A lower than B, C; paired t on one value per seed at 95%; holds only "
        "if it holds against all 2, refuted if it fails against any one (each such test "
        "stricter, so that all 2 together keep 95%)")
    t = _claim(kind="final_below", direction="above", factor=1.05, margin=0.1,
               others=["B"], confidence=0.9).test_text()
    assert t == ("final loss: A higher than 1.05 x B by more than 0.1; paired t on one value "
                 "per seed at 90%")
    t = _claim(kind="reach_first", level_fraction=0.9, x="time_s").test_text()
    assert t.startswith("first time_s at which loss falls to 90% of the way")
    assert "A earlier than B, C" in t
    t = _claim(kind="final_below", others=["B"], panels=[{"nu": 0}, {"nu": 1}, {"nu": 2}],
               panels_needed=2).test_text()
    assert t.endswith("judged in each of 3 panels, holding in at least 2")
    t = _claim(kind="pooled", others=[], value=0.05, statistic="max").test_text()
    assert t.startswith("max of the final loss over each seed's cells: each of A lower than 0.05")
    t = _claim(kind="trend", others=["B"], across="nu", values=[0, 1],
               shape="increasing").test_text()
    assert "at nu = 0, 1: the gap grows from each panel to the next" in t
    assert "excess variation" in _claim(kind="smoother", measure="excess").test_text()
    assert "time_s at the last checkpoint" in _claim(kind="wall_time_below",
                                                     metric=None).test_text()


def test_a_kind_that_does_not_name_its_quantity_is_not_called_final():
    from typing import Literal

    from drocli.claims import ClaimBase

    class Area(ClaimBase):
        kind: Literal["area"]

    c = Area(id="a", text="t", kind="area", metric="loss", solver="A", others=["B"])
    assert c.test_text().startswith("the area summary of loss per seed: A lower than B")
