"""The conventions users bring from hydra and benchopt (drocli.spec.overrides): positional
overrides, -m sweeps whose legend follows the swept value, and -s / -d selection."""

from __future__ import annotations

import pytest
import yaml

from drocli.spec.overrides import split_top
from tests.conftest import call


def _show(capsys, *args) -> dict:
    capsys.readouterr()
    assert call("show", *args) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_positional_override_equals_set(tiny_spec, capsys):
    a = _show(capsys, tiny_spec, "data.params.groups=4", "seeds=[3]")
    b = _show(capsys, tiny_spec, "--set", "data.params.groups=4", "--set", "seeds=[3]")
    assert a == b and a["data"]["params"]["groups"] == 4 and a["seeds"] == [3]


def test_multirun_sweeps_and_labels_follow(tiny_spec, tmp_path, capsys):
    spec = _show(capsys, tiny_spec, "-m", "solvers.ALEG.params.gamma_w=0.01,0.1",
                 "seeds=0,1,2")
    aleg = next(s for s in spec["solvers"] if s["label"] == "ALEG")
    assert aleg["grid"] == {"gamma_w": [0.01, 0.1]} and spec["seeds"] == [0, 1, 2]
    out = tmp_path / "mr"
    assert call("run", tiny_spec, "-m", "solvers.ALEG.params.gamma_w=0.01,0.1", "seeds=[0]",
                "--out", out, "-q") == 0
    import pandas as pd

    labels = set(pd.read_csv(out / "records.csv.gz")["label"])
    assert labels == {"SMD", "ALEG (gamma_w=0.01)", "ALEG (gamma_w=0.1)"}
    # without -m a comma is part of the value, and only parameters can be swept
    assert call("show", tiny_spec, "-m", "budget.epochs=1,2") == 2


def test_a_sweep_of_one_selected_solver_is_drawn_under_the_spec_legend(tiny_spec, tmp_path,
                                                                        capsys):
    """Issue 57: `-s ALEG -m ...` records only 'ALEG (gamma_w=...)' labels, and a figure
    whose legend names [ALEG, SMD] was skipped as having none of its labels in the records."""
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["figures"][0]["legend"] = ["ALEG", "SMD"]
    spec = tmp_path / "legend.yaml"
    spec.write_text(yaml.safe_dump(raw))
    out = tmp_path / "sweep"
    assert call("run", spec, "-s", "ALEG", "-m", "solvers.ALEG.params.gamma_w=0.01,0.1",
                "seeds=[0]", "--out", out, "-q") == 0
    capsys.readouterr()
    assert call("plot", out) == 0
    err = capsys.readouterr().err
    assert "not drawn" not in err, err
    assert (out / "figures" / "fig_tiny.png").is_file()


def test_select_solvers_and_cases(tiny_spec, tmp_path, capsys):
    spec = _show(capsys, tiny_spec, "-s", "ALEG")
    assert [s["label"] for s in spec["solvers"]] == ["ALEG"]
    assert spec["claims"] == []                   # the claim naming SMD goes with it
    assert _show(capsys, tiny_spec, "-s", "smd")["solvers"][0]["label"] == "SMD"  # by name
    assert call("show", tiny_spec, "-s", "ALGE") == 2                 # did-you-mean, exit 2
    assert "ALEG" in capsys.readouterr().err
    assert call("show", tiny_spec, "-d", "gdro_synthetic") == 0      # its one data source
    assert call("show", tiny_spec, "-d", "mnist") == 2
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["cases"] = {"a": {"data.params.groups": 3}, "b": {"data.params.groups": 4}}
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert list(_show(capsys, tiny_spec, "-d", "b")["cases"]) == ["b"]
    assert call("run", tiny_spec, "-d", "b", "-s", "SMD", "--out", tmp_path / "sel",
                "-q") == 0
    # a case's setting of an entry left out by -s goes with that entry
    raw["cases"]["b"]["solvers.ALEG.params.gamma_w"] = 0.5
    tiny_spec.write_text(yaml.safe_dump(raw))
    shown = _show(capsys, tiny_spec, "-d", "b", "-s", "SMD")
    assert shown["cases"]["b"] == {"data.params.groups": 4}
    assert _show(capsys, tiny_spec, "-d", "b")["cases"]["b"]["solvers.ALEG.params.gamma_w"] == 0.5


def test_non_override_after_spec_is_refused(tiny_spec, tmp_path, capsys):
    assert call("run", tiny_spec, "oops", "--out", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "KEY=VALUE" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("text,parts", [("a,b", ["a", "b"]), ("[1, 2],3", ["[1, 2]", "3"]),
                                        ("'x,y',z", ["'x,y'", "z"]), ("{a: 1, b: 2}",
                                                                      ["{a: 1, b: 2}"])])
def test_split_top(text, parts):
    assert split_top(text) == parts


def test_list_shows_nested_fields(capsys):
    """`drocli list figures curves` shows the keys of a figure's panels too."""
    capsys.readouterr()
    assert call("list", "figures", "curves") == 0
    out = capsys.readouterr().out
    assert "panels[].metric" in out and "panels[].filter" in out
