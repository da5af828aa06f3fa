"""Provenance items of issue 43: manifests record the CPU model, the BLAS kernel family and
the load average when the run starts, and each cell's load at its start; `drocli show
RESULTS_DIR` and the report show them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import TINY_SPEC, call


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One tiny results folder (smoke profile), shared: copy it to change it."""
    root = tmp_path_factory.mktemp("prov")
    spec = root / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    out = root / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    return out


def test_manifest_records_cpu_blas_and_load(recorded):
    man = json.loads((recorded / "manifest.json").read_text())
    assert isinstance(man["cpu_model"], str) and man["cpu_model"].strip()
    assert len(man["load_avg"]) == 3 and all(x >= 0 for x in man["load_avg"])
    assert any(b.get("architecture") for b in man["blas"]), man["blas"]   # OpenBLAS kernel
    for st in man["cells"].values():
        assert st["load_1m"] >= 0, st


def test_cpu_model_falls_back_to_platform_processor(monkeypatch):
    from drocli import records

    def missing(*a, **k):
        raise FileNotFoundError("/proc/cpuinfo")

    monkeypatch.setattr(records, "open", missing, raising=False)
    monkeypatch.setattr(records.platform, "processor", lambda: "x86_64")
    assert records.cpu_model() == "x86_64"
    monkeypatch.setattr(records.platform, "processor", lambda: "")
    assert records.cpu_model() is None
    monkeypatch.setattr(records.os, "getloadavg", missing)
    assert records.load_avg() is None


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
    assert yaml.safe_load(out) == yaml.safe_load((recorded / "spec.yaml").read_text())
    assert call("show", recorded, "--profile", "smoke") == 2      # a folder takes no overrides


def test_report_page_shows_cpu_blas_and_load(recorded, tmp_path):
    rep = tmp_path / "rep"
    assert call("report", recorded, "--out", rep) == 0
    md = (rep / "res.md").read_text()
    for row in ("| CPU |", "| BLAS |", "| load |"):
        assert row in md, row


def test_old_manifest_stays_readable(recorded, tmp_path, capsys):
    """A folder recorded before these fields (no CPU model, load) still shows and reports."""
    old = tmp_path / "res"
    shutil.copytree(recorded, old)
    man = json.loads((old / "manifest.json").read_text())
    for k in ("cpu_model", "load_avg"):
        del man[k]
    for st in man["cells"].values():
        del st["load_1m"]
    (old / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert call("show", old) == 0
    out = capsys.readouterr().out
    assert "# CPU: ? (not recorded)" in out and "# BLAS: " in out
    assert call("report", old, "--out", tmp_path / "rep") == 0


def test_machine_rows_of_old_or_forged_manifests():
    """Fields an old manifest lacks show as not recorded; forged ones never fail."""
    from drocli.report import machine_rows

    rows = dict(machine_rows({}))
    assert rows["CPU"] == "? (not recorded)" and rows["BLAS"] == "not recorded"
    assert "load" not in rows
    odd = dict(machine_rows({"cpu_model": {"a": "\n"}, "blas": [1, {"num_threads": [2]}],
                             "load_avg": ["x", 1], "cells": {"a": {"load_1m": 10 ** 400}}}))
    assert "load" not in odd and "\n" not in odd["CPU"]
