"""A study kept as a profile (`judge_as`): a previous study's values run as the profile
`table1` are judged by the same claims and marks as the paper profile, not skipped."""

from __future__ import annotations

import json

import yaml

from tests.conftest import TINY_SPEC, call


def _spec(tmp_path, judge_as):
    raw = yaml.safe_load(TINY_SPEC)
    raw["claims"][0]["profiles"] = ["paper"]
    body = {"budget.epochs": 2}
    if judge_as is not None:
        body["judge_as"] = judge_as
    raw["profiles"]["old"] = body
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _statuses(out, capsys):
    capsys.readouterr()
    call("check", out, "--json", "--no-cache")
    return {c["id"]: c["status"] for c in json.loads(capsys.readouterr().out)["claims"]}


def test_a_profile_judged_as_paper_judges_the_papers_claims(tmp_path, capsys):
    out = tmp_path / "old"
    assert call("run", _spec(tmp_path, "paper"), "--profile", "old", "--out", out, "-q") == 0
    assert _statuses(out, capsys)["below_start"] != "skipped"
    assert yaml.safe_load((out / "spec.yaml").read_text())["judge_as"] == "paper"


def test_without_it_the_claim_is_skipped_there(tmp_path, capsys):
    out = tmp_path / "old"
    assert call("run", _spec(tmp_path, None), "--profile", "old", "--out", out, "-q") == 0
    assert _statuses(out, capsys)["below_start"] == "skipped"
    assert "judge_as" not in yaml.safe_load((out / "spec.yaml").read_text())


def test_judge_as_names_a_profile(tmp_path, capsys):
    out = tmp_path / "old"
    assert call("run", _spec(tmp_path, "papr"), "--profile", "old", "--out", out, "-q") == 2
    err = capsys.readouterr().err
    assert "profiles.old.judge_as" in err and "paper" in err and not out.exists()
