"""Round 3 of hostile inputs (issue 43): each refused in one line with exit 2 before anything
is written, or made harmless."""

from __future__ import annotations

import os

import pytest

from drocli.errors import DrocliError
from drocli.run import progress
from drocli.spec import budget_limit
from tests.conftest import call


@pytest.mark.parametrize("command", [("run", "SPEC"), ("plot", "RES"), ("report", "RES")])
def test_an_empty_out_is_refused_not_the_working_directory(tiny_spec, tmp_path, capsys,
                                                           monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    args = [tiny_spec if a == "SPEC" else tmp_path / "none" for a in command[1:]]
    before = sorted(os.listdir(tmp_path))
    assert call(command[0], *args, "--out", "") == 2
    err = capsys.readouterr().err
    assert "is empty" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(os.listdir(tmp_path)) == before


def test_an_infinite_budget_limit_is_refused(monkeypatch):
    monkeypatch.setenv("DROCLI_MAX_ORACLE_CALLS", "1e400")
    with pytest.raises(DrocliError, match="finite number"):
        budget_limit("DROCLI_MAX_ORACLE_CALLS", 1e12)


def test_progress_files_go_only_to_the_runs_own_folder(tmp_path, monkeypatch):
    """DROCLI_PROGRESS_DIR is drocli's channel to the bar: a value set from outside is not
    written to (a run clears it, and a reporter writes only under cells/.progress)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv(progress.ENV, str(elsewhere))
    assert progress.reporter("abc") is None
    own = tmp_path / "res" / "cells" / ".progress"
    own.mkdir(parents=True)
    monkeypatch.setenv(progress.ENV, str(own))
    progress.reporter("abc")(0.5)
    assert (own / "abc").read_text() == "0.5000"


def test_a_run_ignores_an_outside_progress_dir(tiny_spec, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv(progress.ENV, str(elsewhere))
    assert call("run", tiny_spec, "--out", tmp_path / "res", "-q") == 0
    assert os.listdir(elsewhere) == []
