"""One contract for every registered solver (the scikit-learn `check_estimator` idea).

Each solver runs on a tiny problem of its family: values are finite, the oracle counter
increases and reaches the budget, a fixed seed gives identical records, the rows are
well formed, and the solver neither prints nor writes files.
"""

import math

import numpy as np
import pytest

from drocli import registry
from drocli.cells import Cell
from drocli.runner import execute

SOLVERS = sorted(registry.entries("solver"))


def family_fixtures() -> dict:
    """family -> (data name, data params, problem name, problem params): the tiny instance
    each family's problem registers (`tiny=` in its registration)."""
    out = {}
    for pname, p in registry.entries("problem").items():
        tiny = p.extra.get("tiny")
        if tiny is not None and p.family not in out:
            dname, dparams = tiny["data"]
            out[p.family] = (dname, dparams, pname, tiny.get("params", {}))
    return out


FAMILY_FIXTURES = family_fixtures()


def _cell(name: str, seed: int = 0, epochs: float = 6.0) -> Cell:
    entry = registry.get("solver", name)
    dname, dparams, pname, pparams = FAMILY_FIXTURES[entry.family]
    return Cell(experiment="contract", solver=name, label=name, dataset=dname, seed=seed,
                data_name=dname,
                data_params=registry.resolve_params(registry.get("data", dname), dparams),
                data_seed=0, problem_name=pname,
                problem_params=registry.resolve_params(registry.get("problem", pname), pparams),
                solver_params=registry.resolve_params(entry, entry.extra.get("tiny", {})),
                budget={"epochs": epochs, "checkpoints": 6, "spacing": "linear"}, metrics=())


def test_every_family_has_a_fixture():
    fams = {registry.get("solver", s).family for s in SOLVERS}
    assert fams <= set(FAMILY_FIXTURES), fams - set(FAMILY_FIXTURES)
    assert SOLVERS, "no solver registered"


@pytest.mark.parametrize("name", SOLVERS)
def test_solver_contract(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    entry = registry.get("solver", name)
    assert entry.func.__doc__ and len(entry.func.__doc__.strip()) > 20, "docstring names the paper"
    rows, status = execute(_cell(name))
    assert status["status"] == "done", status
    assert capsys.readouterr() == ("", ""), "solvers never print"
    assert list(tmp_path.iterdir()) == [], "solvers never write files"
    steps = [r[0] for r in rows]
    calls = np.array([r[1] for r in rows])
    assert steps == sorted(steps) and calls[0] <= calls[-1]
    assert np.all(np.diff(np.unique(calls)) > 0)
    assert calls[-1] >= status["budget"] > 0
    assert len(set(steps)) >= 4, "the monitor was called at the checkpoints"
    assert all(math.isfinite(r[4]) for r in rows)
    assert all(isinstance(r[3], str) for r in rows)
    again, _ = execute(_cell(name))
    assert [r[4] for r in rows] == [r[4] for r in again], "same seed, same numbers"
    other, _ = execute(_cell(name, seed=1))
    assert [r[1] for r in other][0] == calls[0]
