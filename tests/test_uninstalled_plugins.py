"""A results folder opens without the plug-ins that made it (issue 42): an outside package
brings a solver, a data source and a claim kind; a folder run with it is then plotted,
checked and reported after the package is gone. The claim of its kind shows the verdict
recorded when the run finished, and says it is not judged afresh; installed again, the
kind judges it afresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_readme_examples import BLOCK, _section

ROOT = Path(__file__).resolve().parents[1]

SPEC = textwrap.dedent("""\
    name: outside
    title: An outside package's entries
    data: {name: noisy_line, params: {n: 40, d: 3}, seed: 0}
    problem: {name: finite_sum}
    solvers:
      - {name: plain_sgd, label: Plain, params: {step: 0.05}}
      - {name: sgd, label: SGD, params: {step: 0.01}}
    seeds: [0, 1, 2, 3, 4, 5]
    budget: {epochs: 4, checkpoints: 8}
    metrics: [loss]
    figures:
      - name: fig
        title: loss
        panels: [{metric: loss, title: loss}]
    claims:
      - {id: area, text: Plain has the smaller area, kind: area_below, metric: loss,
         solver: Plain, others: [SGD]}
      - {id: final, text: Plain ends lower, kind: final_below, metric: loss,
         solver: Plain, others: [SGD]}
    """)


def _package(site: Path) -> None:
    """mypkg (docs/plugins.md's files) installed in `site` with its entry points."""
    pkg = site / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for code, stem in BLOCK.findall(_section()):
        (pkg / f"{stem}.py").write_text(code)
    info = site / "mypkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mypkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[drocli.plugins]\nsolver.plain_sgd = mypkg.plain_sgd\n"
        "data.noisy_line = mypkg.noisy_line\nclaim.area_below = mypkg.area_below\n")


def _drocli(cwd: Path, site: Path | None, *args) -> subprocess.CompletedProcess:
    path = os.pathsep.join(str(p) for p in (site, ROOT) if p is not None)
    return subprocess.run([sys.executable, "-m", "drocli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": path})


def _run_with_package(tmp_path: Path) -> tuple[Path, Path, dict]:
    """(the package's site, the folder run with it, its verdicts.json claims)."""
    site = tmp_path / "site"
    _package(site)
    (tmp_path / "spec.yaml").write_text(SPEC)
    out = tmp_path / "res"
    res = _drocli(tmp_path, site, "run", "spec.yaml", "--out", out, "-q", "-j", "1")
    assert res.returncode == 0, res.stderr
    return site, out, json.loads((out / "verdicts.json").read_text())["claims"]


def test_a_folder_opens_after_its_package_is_uninstalled(tmp_path):
    site, out, kept = _run_with_package(tmp_path)
    assert kept["area"]["judged_by"] == "mypkg.area_below.area_below"
    assert kept["area"]["kind_description"]
    with_pkg = _drocli(tmp_path, site, "check", out, "--json")
    assert with_pkg.returncode in (0, 1), with_pkg.stderr
    fresh = {c["id"]: c for c in json.loads(with_pkg.stdout)["claims"]}
    assert "as recorded" not in fresh["area"]["detail"]          # judged afresh

    # the package is gone: nothing of it on the path
    res = _drocli(tmp_path, None, "check", out, "--json")
    assert res.returncode in (0, 1), res.stderr
    gone = {c["id"]: c for c in json.loads(res.stdout)["claims"]}
    assert gone["area"]["status"] == kept["area"]["status"] == fresh["area"]["status"]
    assert "as recorded when the run finished" in gone["area"]["detail"]
    assert "not installed here" in gone["area"]["detail"]
    assert gone["final"]["status"] == fresh["final"]["status"]   # built-in: judged afresh
    assert "as recorded" not in gone["final"]["detail"]
    res = _drocli(tmp_path, None, "plot", out)
    assert res.returncode == 0 and (out / "figures" / "fig.png").is_file(), res.stderr
    res = _drocli(tmp_path, None, "report", out, "--out", tmp_path / "report")
    assert res.returncode == 0, res.stderr
    res = _drocli(tmp_path, None, "show", out)       # provenance, then the spec as saved
    assert res.returncode == 0, res.stderr
    assert "not validated here" in res.stdout and "noisy_line" in res.stdout
    assert (out / "spec.yaml").read_text() in res.stdout
    # no verdicts kept (a folder from before): the claim is skipped and says why
    (out / "verdicts.json").unlink()
    res = _drocli(tmp_path, None, "check", out, "--json")
    gone = {c["id"]: c for c in json.loads(res.stdout)["claims"]}
    assert gone["area"]["status"] == "skipped" and "not installed" in gone["area"]["detail"]


def test_the_folder_keeps_the_per_seed_summaries_it_was_judged_on(tmp_path):
    """verdicts.json holds, per claim, the per-seed summaries behind its verdict: for a
    final_below claim each label's final loss per seed, as read from the records here
    with pandas; the outside kind's (its docs example calls `note`) are shown by check
    after the package is gone."""
    import pandas as pd

    _, out, kept = _run_with_package(tmp_path)
    df = pd.read_csv(out / "records.csv.gz")
    loss = df[df["metric"] == "loss"].sort_values(["cell", "step"])
    last = loss.groupby("cell").tail(1)
    for label in ("Plain", "SGD"):
        mine = last[last["label"] == label]
        want = {str(int(s)): float(v) for s, v in zip(mine["seed"], mine["value"],
                                                       strict=True)}
        assert kept["final"]["summaries"][label] == pytest.approx(want, rel=1e-12)
        assert len(want) == 6
    # the seed mean of the summaries is the value the claim compared
    got = kept["final"]["summaries"]["Plain"]
    assert sum(got.values()) / len(got) == pytest.approx(kept["final"]["values"]["Plain"])
    assert set(kept["area"]["summaries"]) == {"Plain", "SGD"}
    res = _drocli(tmp_path, None, "check", out, "--json")
    gone = {c["id"]: c for c in json.loads(res.stdout)["claims"]}
    assert gone["area"]["summaries"] == kept["area"]["summaries"]
