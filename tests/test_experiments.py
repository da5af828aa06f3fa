"""Every shipped spec: its smoke profile runs, its claims hold, and it matches the recorded results.

This is the regression check CI relies on: results/<name>-smoke/ holds the recorded smoke run.
"""

import re
from pathlib import Path

import pytest

from drocli.errors import DrocliError
from drocli.run.cells import expand
from drocli.run.runner import preflight
from drocli.spec import load_spec
from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "experiments").glob("*.yaml"))




def test_specs_exist():
    assert SPECS, "no experiment specs shipped"


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_spec_loads_in_every_profile(path):
    raw_profiles = load_spec(path).profiles
    assert "smoke" in raw_profiles, "every spec has a smoke profile (what CI runs)"
    for prof in ["paper", *raw_profiles]:
        assert load_spec(path, profile=prof).profile == prof


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_smoke_claims_and_reference(path, tmp_path, capsys):
    spec = load_spec(path, profile="smoke")
    try:
        preflight(expand(spec))
    except DrocliError as e:  # e.g. CIFAR-100, which cannot be had offline
        pytest.skip(f"data not available here: {e}")
    out = tmp_path / spec.name
    assert call("run", path, "--profile", "smoke", "--out", out, "-j", "2", "-q") == 0
    capsys.readouterr()
    assert call("plot", out) == 0
    skipped = {m.group(1) for m in re.finditer(r": figure (\S+): .*: not drawn$",
                                                capsys.readouterr().err, re.M)}
    for fig in spec.figures:
        if fig.name in skipped:         # a profile without its cases (smoke: rotation only)
            assert not (out / "figures" / f"{fig.name}.png").exists()
        elif fig.kind == "table":
            md = (out / "figures" / f"{fig.name}.md").read_text()
            assert md.count("\n|") >= 3 and (out / "figures" / f"{fig.name}.csv").exists()
        else:
            assert (out / "figures" / f"{fig.name}.png").stat().st_size > 5000
    ref = ROOT / "results" / f"{spec.name}-smoke"
    assert ref.is_dir(), f"record the smoke run: drocli run {path} --profile smoke"
    capsys.readouterr()
    code = call("check", out, "--reference", ref, "--rtol", "1e-4")
    text = capsys.readouterr().out
    assert code == 0, text


def test_a_caption_and_the_run_note_are_two_sentences():
    """Issue 57: "... over 5 seeds This run: ..." ran on without a separator."""
    from drocli.spec import run_caption

    text = run_caption("Mean over 5 seeds", "quick", [0, 1, 2])
    assert text == "Mean over 5 seeds. This run: profile quick, 3 seeds (0, 1, 2)."
    assert run_caption("Ends well.", "paper", [4]).startswith("Ends well. This run:")
    assert run_caption(None, "paper", [4]) == "This run: profile paper, 1 seed (4)."
