"""Slow: re-run the paper profiles that take a minute or less and compare them with the
recorded results folders, value by value (`check --reference` at the spec's tolerance) and
claim by claim (no FAILS). The default run checks the smoke profiles only; these catch a
regression that a shortened run hides. `python -m pytest -m slow -p no:cacheprovider`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drocli.spec import load_spec
from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]

# paper profiles recorded in results/ that run in about a minute or less on 2 cores
FAST_PAPER = ["as_lsvrg_fig1", "as_lsvrg_fig2", "as_lsvrg_fig3", "as_lsvrg_fig4",
              "as_lsvrg_fig6", "as_lsvrg_fig7", "zo_smd_e1", "zo_smd_e2", "gdro_synthetic",
              "omd_tch_vlmop2"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FAST_PAPER)
def test_paper_profile_matches_the_record(name, tmp_path, capsys):
    path = ROOT / "experiments" / f"{name}.yaml"
    ref = ROOT / "results" / name
    assert load_spec(path).profile == "paper" and (ref / "manifest.json").is_file()
    out = tmp_path / name
    assert call("run", path, "--out", out, "-j", "2", "-q") == 0
    capsys.readouterr()
    code = call("check", out, "--reference", ref, "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"], report["reference"]
    assert not report["reference"]["mismatches"]
    assert all(c["status"] != "fails" for c in report["claims"])
