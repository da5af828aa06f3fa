"""Slow: re-run the paper profiles that take a minute or less and compare them with the
recorded results folders, value by value (`check --reference` at the spec's tolerance) and
claim by claim (the record's verdicts; a spec with a sequential plan runs its looks with
`--until-decided`). The default run checks the smoke profiles only; these catch a
regression that a shortened run hides. `python -m pytest -m slow -p no:cacheprovider`.

Each run uses the OpenBLAS kernel family its record was computed with (OPENBLAS_CORETYPE, in
a subprocess): rounding-sensitive runs (e.g. BSA, stocBiO in svrb_fig1_digits) differ between
kernel families, which is not a regression; skipped when this CPU cannot run that family."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drocli.results.reference import blas_kernels
from drocli.spec import load_spec
from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]

# paper profiles recorded in results/ that run in about a minute or less on 2 cores
FAST_PAPER = ["as_lsvrg_fig1", "as_lsvrg_fig2", "as_lsvrg_fig3", "as_lsvrg_fig4",
              "as_lsvrg_fig6", "as_lsvrg_fig7", "zo_smd_e1", "zo_smd_e2", "gdro_synthetic",
              "omd_tch_vlmop2", "svrb_fig1_digits"]
# the CPU flag each OpenBLAS kernel family needs
KERNEL_FLAGS = {"Haswell": "avx2", "Zen": "avx2", "SkylakeX": "avx512f",
                "Cooperlake": "avx512_bf16", "SapphireRapids": "amx_tile"}


def kernel_env(ref: Path) -> dict:
    """The environment that runs OpenBLAS with the record's kernels (skip if impossible)."""
    arch = (blas_kernels(ref) or "").split("/")[0]
    env = dict(os.environ)
    if not arch:
        return env
    flags = Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else []
    if KERNEL_FLAGS.get(arch) not in flags:
        pytest.skip(f"{ref.name} was computed with OpenBLAS {arch} kernels, which this CPU "
                    "cannot run")
    env["OPENBLAS_CORETYPE"] = arch
    return env


@pytest.mark.slow
@pytest.mark.parametrize("name", FAST_PAPER)
def test_paper_profile_matches_the_record(name, tmp_path, capsys):
    path = ROOT / "experiments" / f"{name}.yaml"
    ref = ROOT / "results" / name
    assert load_spec(path).profile == "paper" and (ref / "manifest.json").is_file()
    out = tmp_path / name
    plan = ["--until-decided"] if load_spec(path).sequential else []
    subprocess.run([sys.executable, "-m", "drocli", "run", str(path), "--out", str(out),
                    "-j", "2", "-q", *plan], env=kernel_env(ref), check=True)
    capsys.readouterr()
    call("check", out, "--reference", ref, "--json")
    report = json.loads(capsys.readouterr().out)
    assert not report["reference"]["mismatches"], report["reference"]
    # the same verdicts as the record's (a claim the record refutes, marked reproduced, is a
    # finding, not a regression): judged afresh on the recorded folder
    call("check", ref, "--json", "--no-cache")
    recorded = {c["id"]: c["status"] for c in json.loads(capsys.readouterr().out)["claims"]}
    assert {c["id"]: c["status"] for c in report["claims"]} == recorded
