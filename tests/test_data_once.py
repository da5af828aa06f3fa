"""File-backed data loaded once per process (issue 30 item 5): the preflight, the warm-ups
and every cell of a process share one load of each data set (source, params, seed)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from drocli.plugins import registry
from drocli.run import runner, worker
from tests.conftest import TINY_SPEC, call


def _spec(tmp_path):
    """The tiny spec with data drawn per seed (3 data sets), 2 solvers: 6 cells."""
    path = tmp_path / "spec.yaml"
    text = (TINY_SPEC.replace("  seed: 0\n", "  seed: null\n", 1)
            .replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    assert text != TINY_SPEC
    path.write_text(text)
    return path


def _counted(monkeypatch, name: str = "gdro_synthetic") -> list:
    """The seeds `name`'s loader is called with in this process; the source is marked
    file-backed so that the preflight loads it too."""
    entry = registry.get("data", name)
    calls = []

    def load(params, seed):
        calls.append(seed)
        return entry.func(params, seed)

    monkeypatch.setitem(registry._REGISTRY["data"], name, dataclasses.replace(
        entry, func=load, extra={**entry.extra, "files": True}))
    worker.forget_data()
    return calls


def test_each_data_set_loaded_once_in_one_process(tmp_path, monkeypatch):
    """Every load is logged with its process, wherever the cells run (in this process, or
    in forked workers that inherit its loads): no process loads a data set twice, and
    every data set is loaded. (Counting only this process's loads passed or failed with the
    backend `auto` chose, which depended on the threads earlier tests left; the backend is
    named here.)"""
    import os

    log = tmp_path / "loads.txt"
    entry = registry.get("data", "gdro_synthetic")

    def load(params, seed):
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {seed}\n")
        return entry.func(params, seed)

    monkeypatch.setitem(registry._REGISTRY["data"], "gdro_synthetic", dataclasses.replace(
        entry, func=load, extra={**entry.extra, "files": True}))
    worker.forget_data()
    assert call("run", _spec(tmp_path), "--out", tmp_path / "res", "-q",
                "--backend", "fork") == 0      # spawned workers would not see this loader
    loads = log.read_text().split("\n")[:-1]  # 6 cells, their warm-ups and the preflight
    assert len(loads) == len(set(loads)), loads
    assert {line.split()[1] for line in loads} == {"0", "1", "2"}


def test_cells_grouped_by_data_keep_their_numbers(tmp_path, monkeypatch):
    """The runner's order (grouped by data set) changes no number; the records keep the
    spec's order."""
    spec = _spec(tmp_path)
    assert call("run", spec, "--out", tmp_path / "grouped", "-q") == 0
    monkeypatch.setattr(runner, "by_data", list)
    assert call("run", spec, "--out", tmp_path / "spec_order", "-q") == 0
    a, b = (pd.read_csv(tmp_path / d / "records.csv.gz").drop(columns="time_s")
            for d in ("grouped", "spec_order"))
    pd.testing.assert_frame_equal(a, b)


def test_by_data_groups_in_first_appearance_order(tmp_path):
    from drocli.run.cells import expand
    from drocli.spec import load_spec

    cells = expand(load_spec(_spec(tmp_path)))
    order = runner.by_data(cells)
    assert [c.data_seed for c in cells] == [0, 1, 2] * 2
    assert [c.data_seed for c in order] == [0, 0, 1, 1, 2, 2]
    assert [c.solver for c in order] == ["smd", "aleg"] * 3
    assert sorted(c.id for c in order) == sorted(c.id for c in cells)


def test_parent_drops_its_preflight_load_when_cells_run_elsewhere(tmp_path, monkeypatch):
    """loky workers start fresh, so the parent keeps nothing for them. (The backend is
    named: `auto` forks when this process runs no other thread, and forked workers do use
    the parent's load; which one `auto` chose depended on the tests run before.)"""
    calls = _counted(monkeypatch)
    assert call("run", _spec(tmp_path), "--out", tmp_path / "res", "-q", "-j", "2",
                "--backend", "loky") == 0
    assert calls == [0]                      # the preflight's; the cells load in the workers
    assert not worker._DATA_CACHE


def test_data_checked_once_per_arrays_and_still_picklable(monkeypatch):
    """check_grouped passes data it already checked with the same arrays (the loader and the
    preflight both check; at n = 1e6 each check is a pass over 800 MB), checks again when an
    array was replaced, and leaves the data picklable."""
    import pickle

    import numpy as np
    import pytest

    from drocli.data import checks
    from drocli.data.base import GroupedData
    from drocli.errors import DrocliError

    scans = []
    real = checks._check_split
    monkeypatch.setattr(checks, "_check_split", lambda *a: (scans.append(a[1]), real(*a)))
    data = GroupedData("d", np.ones((4, 2)), np.ones(4), np.array([0, 0, 1, 1]))
    checks.check_grouped(data)
    checks.check_grouped(data)
    assert scans == ["train"]
    assert pickle.loads(pickle.dumps(data)).name == "d"
    bad = np.ones((4, 2))
    bad[1, 1] = np.nan
    data.X_train = bad
    with pytest.raises(DrocliError, match="NaN"):
        checks.check_grouped(data)
