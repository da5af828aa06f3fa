"""Provenance items of issue 43: manifests record the CPU model, the BLAS kernel family and
the load average when the run starts, and each cell's wall time and load at its start;
`drocli show RESULTS_DIR` and the report show them; a folder's compute time is its cells'
wall times summed (it read the last run's clock: "computed 4.13 s" for 900 cells run over
four days)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import call, tiny_folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One tiny results folder (smoke profile), shared: copy it to change it."""
    return tiny_folder(tmp_path_factory.mktemp("prov"))


def test_manifest_records_cpu_blas_and_load(recorded):
    man = json.loads((recorded / "manifest.json").read_text())
    assert isinstance(man["cpu_model"], str) and man["cpu_model"].strip()
    assert len(man["load_avg"]) == 3 and all(x >= 0 for x in man["load_avg"])
    assert any(b.get("architecture") for b in man["blas"]), man["blas"]   # OpenBLAS kernel
    for st in man["cells"].values():
        assert st["wall_s"] > 0 and st["load_1m"] >= 0, st


def test_cpu_model_falls_back_to_platform_processor(monkeypatch):
    from drocli.results import provenance

    def missing(*a, **k):
        raise FileNotFoundError("/proc/cpuinfo")

    monkeypatch.setattr(provenance, "open", missing, raising=False)
    monkeypatch.setattr(provenance.platform, "processor", lambda: "x86_64")
    assert provenance.cpu_model() == "x86_64"
    monkeypatch.setattr(provenance.platform, "processor", lambda: "")
    assert provenance.cpu_model() is None
    monkeypatch.setattr(provenance.os, "getloadavg", missing)
    assert provenance.load_avg() is None


def test_show_folder_prints_provenance_then_the_saved_spec(recorded, capsys):
    capsys.readouterr()
    assert call("show", recorded) == 0
    out = capsys.readouterr().out
    man = json.loads((recorded / "manifest.json").read_text())
    lines = {ln.split(":", 1)[0]: ln for ln in out.splitlines() if ln.startswith("# ")}
    assert " ".join(man["cpu_model"].split()) in lines["# CPU"]
    arch = next(b["architecture"] for b in man["blas"] if b.get("architecture"))
    assert f"{arch} kernels" in lines["# BLAS"]
    assert f"{man['load_avg'][0]:.2f}" in lines["# load"] and "cells' starts" in lines["# load"]
    n = len(man["cells"])
    assert f"summed over {n} cells' wall times" in lines["# compute"]
    assert yaml.safe_load(out) == yaml.safe_load((recorded / "spec.yaml").read_text())
    assert call("show", recorded, "--profile", "smoke") == 2      # a folder takes no overrides


def test_report_page_shows_cpu_blas_load_and_compute(recorded, tmp_path):
    rep = tmp_path / "rep"
    assert call("report", recorded, "--out", rep) == 0
    md = (rep / "res.md").read_text()
    for row in ("| CPU |", "| BLAS |", "| load |", "| compute |", "| last run |"):
        assert row in md, row


def test_compute_is_the_sum_of_the_cells_wall_times():
    """900 cells of 12.8 s run over four days: 3 h 12 min of compute, not the last run's
    few seconds of clock; the last run says how many cells first ran in it."""
    from drocli.report import compute_clock

    cells = {f"c{i}": {"status": "done", "wall_s": 12.8,
                       "at": f"2026-11-{22 + i % 4}T10:00:00+00:00"} for i in range(900)}
    man = {"started": "2026-11-25T09:59:58+00:00", "finished": "2026-11-25T10:00:02.13+00:00",
           "n_jobs": 1, "backend": "fork", "cells": cells}
    rows = dict(compute_clock(man, {c: 10.0 for c in cells}))
    assert rows["compute"].startswith("3 h 12 min summed over 900 cells' wall times")
    assert rows["last run"].endswith("(4.13 s), -j 1 (fork): 225 of 900 cells first ran in it")
    assert rows["solver time"].startswith("2 h 30 min summed over 900 cells")


def test_compute_of_old_or_forged_manifests():
    """A manifest without wall times gives the solver time summed; cells that kept none (or
    a forged value) are left out and counted as such."""
    from drocli.report import compute_total

    old = {"cells": {"a": {"status": "done"}, "b": {"status": "done"}}}
    assert compute_total(old, {"a": 2.0, "b": 3.0}) == (
        "compute", "5 s of solver time summed over 2 cells (no wall times recorded: warm-up "
        "and evaluation excluded)")
    assert compute_total({}, {})[1].startswith("unknown")
    forged = {"cells": {"a": {"wall_s": 4.0}, "b": {"wall_s": True}, "c": {"wall_s": "9"},
                        "d": {"wall_s": 10 ** 400}, "e": {"wall_s": -1}, "f": [1],
                        "g": {"wall_s": 1e308}, "h": {"wall_s": 1e308}}}
    text = compute_total(forged, {})[1]
    assert "summed over 3 cells' wall times" in text and text.endswith("5 of 8 cells have "
                                                                        "none recorded")


def test_machine_rows_of_old_or_forged_manifests():
    """Fields an old manifest lacks show as not recorded; forged ones never fail."""
    from drocli.report import machine_rows

    rows = dict(machine_rows({}))
    assert rows["CPU"] == "? (not recorded)" and rows["BLAS"] == "not recorded"
    assert "load" not in rows
    odd = dict(machine_rows({"cpu_model": {"a": "\n"}, "blas": [1, {"num_threads": [2]}],
                             "load_avg": ["x", 1], "cells": {"a": {"load_1m": 10 ** 400}}}))
    assert "load" not in odd and "\n" not in odd["CPU"]


def test_old_manifest_stays_readable(recorded, tmp_path, capsys):
    """A folder recorded before these fields (no CPU model, load, wall times) still shows
    and reports: the compute time from the records' solver times."""
    old = tmp_path / "res"
    shutil.copytree(recorded, old)
    man = json.loads((old / "manifest.json").read_text())
    for k in ("cpu_model", "load_avg"):
        del man[k]
    for st in man["cells"].values():
        del st["wall_s"], st["load_1m"]
    (old / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert call("show", old) == 0
    out = capsys.readouterr().out
    assert "# CPU: ? (not recorded)" in out and "of solver time summed over" in out
    assert call("report", old, "--out", tmp_path / "rep") == 0


def test_resumed_recorded_folder_keeps_the_wall_times_of_its_cells(tiny_spec, tmp_path):
    """A folder kept without its cell files (as results/ in git) and a seed added: the
    cells recorded earlier keep their wall times, so the compute time sums all of them."""
    from drocli.report import compute_total
    from drocli.results.durations import span

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    first = json.loads((out / "manifest.json").read_text())["cells"]
    shutil.rmtree(out / "cells")
    tiny_spec.write_text(tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    assert all(man["cells"][k]["wall_s"] == v["wall_s"] for k, v in first.items())
    total = sum(st["wall_s"] for st in man["cells"].values())
    assert len(man["cells"]) == 6 and total > sum(v["wall_s"] for v in first.values())
    assert compute_total(man, {})[1].startswith(f"{span(total)} summed over 6 cells'")
