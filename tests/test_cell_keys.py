"""Recorded results keep their cells: every results folder's spec, and the shipped spec it was
run from, expand to exactly the cell ids its manifest lists, on the seeds it recorded (a
shipped spec moved to fresh seeds for a confirm study, or a folder some looks into its
sequential plan, is compared on the recorded seeds: the ids of the same settings must not
change).

A cell id and its random stream are hashes of the resolved parameters, so a change in how
parameters are resolved (a new default, an int read as a float, a renamed key) would silently
re-seed every run and orphan the recorded cells. This test is that guard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drocli.run.cells import expand
from drocli.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p for p in (ROOT / "results").iterdir() if (p / "manifest.json").exists())


def _recorded_ids(folder: Path) -> set[str]:
    return set(json.loads((folder / "manifest.json").read_text())["cells"])


def _recorded_seeds(folder: Path, saved) -> list:
    cells = json.loads((folder / "manifest.json").read_text())["cells"]
    have = {str(st.get("seed")) for st in cells.values()}
    return [s for s in saved.seed_order() if str(s) in have]


def _check(spec, folder: Path, saved) -> None:
    seeds = _recorded_seeds(folder, saved)
    ids = {c.id for c in expand(spec.model_copy(update={"seeds": seeds, "sequential": None}))}
    recorded = _recorded_ids(folder)
    if saved.sequential is None:
        assert ids == recorded
    else:                      # later looks ran only the undecided claims' solvers
        first = {c.id for c in expand(saved.model_copy(update={"sequential": None}))}
        assert recorded <= ids and first <= recorded


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_saved_spec_expands_to_recorded_cells(folder):
    spec = load_spec(folder / "spec.yaml")
    _check(spec, folder, spec)


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_shipped_spec_expands_to_recorded_cells(folder):
    saved = load_spec(folder / "spec.yaml")
    shipped = ROOT / "experiments" / f"{saved.name}.yaml"
    spec = load_spec(shipped, profile=_profile(folder, saved, shipped))
    _check(spec, folder, saved)


def _profile(folder: Path, saved, shipped: Path) -> str:
    """The profile the folder stands for: its name's suffix (results/<spec>-<profile>) when
    the shipped spec has that profile (a study kept beside its successor, e.g.
    omd_tch_fl_cifar10-table1, recorded under the profile then called paper), else the
    saved one."""
    import yaml

    suffix = folder.name[len(saved.name) + 1:] if folder.name.startswith(saved.name + "-") \
        else ""
    profiles = yaml.safe_load(shipped.read_text(encoding="utf-8")).get("profiles") or {}
    return suffix if suffix in profiles else saved.profile


def test_stream_does_not_depend_on_where_the_data_is(tmp_path):
    """The same data file in two folders: two cells (ids name the path), one random stream;
    another seed or another file name's content is another stream."""
    import dataclasses

    spec = load_spec(ROOT / "experiments" / "as_lsvrg_fig1.yaml", profile="smoke")
    cell = expand(spec)[0]
    a = dataclasses.replace(cell, data_params={**cell.data_params, "path": str(tmp_path / "a")},
                            key_forms=None)
    b = dataclasses.replace(cell, data_params={**cell.data_params, "path": "elsewhere/b"},
                            key_forms=None)
    unset = dataclasses.replace(cell, data_params={**cell.data_params, "path": ""},
                                key_forms=None)
    assert a.id != b.id
    ent = [c.seed_sequence().entropy for c in (a, b, unset)]
    assert ent[0] == ent[1] == ent[2]
    other = dataclasses.replace(a, seed=a.seed + 1)
    assert other.seed_sequence().entropy != ent[0]
