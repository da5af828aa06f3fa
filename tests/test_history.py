"""Issue 56: the report shows the commits that changed a folder's records and whether each
came with a run (drocli.results.history): a commit that rewrote the records while the manifest kept
naming the same run is marked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from drocli.results import history


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def test_commits_with_and_without_a_run(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    folder = tmp_path / "results" / "x"
    folder.mkdir(parents=True)
    _git(tmp_path, "init", "-q")

    def commit(rows: str, run: str, message: str):
        (folder / "records.csv").write_text(f"value\n{rows}\n")
        (folder / "manifest.json").write_text(json.dumps({"started": run, "finished": run}))
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "commit", "-qm", message)

    commit("1", "t1", "first run")
    commit("2", "t2", "a second run")
    commit("3", "t2", "numbers edited by hand")
    found = history.changes(folder)
    assert [c.with_run for c in found] == [False, True, True]
    assert [c.subject for c in found] == ["numbers edited by hand", "a second run", "first run"]
    line = history.summary(folder)
    assert line.startswith("3 commits changed the records, 1 without a run")
    assert "WITHOUT A RUN (numbers edited by hand)" in line
    assert history.changes(tmp_path / "elsewhere") == []
    assert history.summary(tmp_path / "results" / "y") is None
