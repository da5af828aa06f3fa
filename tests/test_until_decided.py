"""`run --until-decided` runs the looks of a spec's sequential plan: the spec's seeds, then
the pool's, for the solvers of the claims still undecided only, until every claim is
decided or the last look is reached; `check` says which look decided each claim."""

from __future__ import annotations

import json

import yaml

from drocli.results.records import read_records
from tests.conftest import call


def _spec(tiny_spec):
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["solvers"].append({"name": "mpvr", "label": "MPVR"})
    raw["seeds"] = "0-7"
    raw["sequential"] = {"looks": [8, 16], "pool": "100-107"}
    raw["claims"] = [
        {**raw["claims"][0], "id": "easy", "text": "ALEG within 100 of MPVR",
         "others": ["MPVR"], "margin": -100.0},
        {**raw["claims"][0], "id": "close", "text": "ALEG below SMD", "others": ["SMD"]}]
    raw["profiles"] = {"smoke": {"seeds": 3, "sequential": None}}
    tiny_spec.write_text(yaml.safe_dump(raw))
    return tiny_spec


def test_looks_run_until_decided(tiny_spec, tmp_path, capsys):
    spec = _spec(tiny_spec)
    out = tmp_path / "res"
    capsys.readouterr()
    assert call("run", spec, "--out", out, "--until-decided", "-q") == 0
    df = read_records(out)
    seeds = {lab: set(df.loc[df["label"] == lab, "seed"]) for lab in ("ALEG", "SMD", "MPVR")}
    capsys.readouterr()
    assert call("check", out, "--json") in (0, 1)
    claims = {c["id"]: c for c in json.loads(capsys.readouterr().out)["claims"]}
    assert claims["easy"]["status"] == "holds" and claims["easy"]["look"]["look"] == 1
    assert seeds["MPVR"] == set(range(8))              # decided at look 1: never extended
    if claims["close"]["look"]["look"] == 2:           # undecided at look 1: its labels ran on
        assert seeds["ALEG"] == seeds["SMD"] == {*range(8), *range(100, 108)}
    else:
        assert claims["close"]["status"] != "inconclusive"
        assert seeds["SMD"] == set(range(8))
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    assert saved["seeds"] == list(range(8))            # the spec stays the committed one
    rows = len(df)
    assert call("run", spec, "--out", out, "-q") == 0  # a plain run keeps every look's cells
    assert len(read_records(out)) == rows
    capsys.readouterr()
    call("check", out)
    text = capsys.readouterr().out
    assert "decided at look 1 of 2 (8 seeds)" in text
    assert "incomplete" not in text       # cells a look did not need are not the folder's


def test_a_plan_must_fit_its_seeds(tiny_spec, tmp_path, capsys):
    raw = yaml.safe_load(_spec(tiny_spec).read_text())
    raw["sequential"]["looks"] = [5, 16]
    tiny_spec.write_text(yaml.safe_dump(raw))
    capsys.readouterr()
    assert call("run", tiny_spec, "--out", tmp_path / "x", "-q") == 2
    err = capsys.readouterr().err
    assert "first look" in err and "sequential" in err
    raw["sequential"] = {"looks": [8, 16], "pool": "3-10"}
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", tmp_path / "x", "-q") == 2
    assert "repeats seed" in capsys.readouterr().err
    raw.pop("sequential")
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", tmp_path / "x", "--until-decided", "-q") == 2
    assert "no sequential plan" in capsys.readouterr().err
    assert not (tmp_path / "x" / "records.csv.gz").exists()


def test_check_plan_names_the_next_look(tiny_spec, tmp_path, capsys):
    """`check --plan`: each undecided claim with its look, the next one and the seeds it is
    expected to need. A first look of 3 seeds decides nothing (the exact sign-flip test's
    smallest p-value is 1/8), so every claim is listed."""
    raw = yaml.safe_load(_spec(tiny_spec).read_text())
    raw["seeds"] = "0-2"
    raw["sequential"] = {"looks": [3, 16], "pool": "100-112"}
    tiny_spec.write_text(yaml.safe_dump(raw))
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0       # the first look only
    capsys.readouterr()
    call("check", out, "--plan")
    plan = [x for x in capsys.readouterr().out.splitlines() if x.startswith("PLAN")]
    never = [x for x in plan if "smallest sign-flip p-value" in x]
    lines = [x for x in plan if x not in never]
    assert len(lines) == 2 and len(never) == 2        # and look 1 is named as such
    assert all("look 1 (3 seeds): cannot decide" in x for x in never)
    for line in lines:
        assert "look 1 of 2 (3 seeds); next look at 16 seeds, last at 16" in line
        assert "seeds would decide it" in line or "no number of seeds" in line


def test_a_folder_past_its_first_look_is_revised_without_running(tiny_spec, tmp_path,
                                                                  monkeypatch, capsys):
    """A folder kept as git keeps it (no cell files) that went past its first look holds more
    seeds than `seeds`: a plain run with a revised figure title rewrites spec.yaml (noted as
    revised) and runs nothing; run again, it is up to date."""
    import shutil

    from drocli.run import worker

    spec = _spec(tiny_spec)
    out = tmp_path / "res"
    assert call("run", spec, "--out", out, "--until-decided", "-q") == 0
    if len(set(read_records(out)["seed"])) == 8:
        raw = yaml.safe_load(spec.read_text())     # decided at look 1: force a second look
        raw["claims"][1]["margin"] = 1e-9
        spec.write_text(yaml.safe_dump(raw))
        assert call("run", spec, "--out", out, "--until-decided", "-q") == 0
    assert len(set(read_records(out)["seed"])) > 8
    shutil.rmtree(out / "cells")
    before = (out / "records.csv.gz").read_bytes()
    raw = yaml.safe_load(spec.read_text())
    raw["figures"][0]["title"] = "Tiny, retitled"
    spec.write_text(yaml.safe_dump(raw))

    def no_cell(*a, **k):
        raise AssertionError("a cell ran")

    monkeypatch.setattr(worker, "run_cell", no_cell)
    assert call("run", spec, "--out", out, "-q") == 0
    assert (out / "records.csv.gz").read_bytes() == before
    assert yaml.safe_load((out / "spec.yaml").read_text())["figures"][0]["title"] == \
        "Tiny, retitled"
    man = (out / "manifest.json").read_text()
    assert "spec_revised" in json.loads(man)
    assert call("run", spec, "--out", out, "-q") == 0
    assert (out / "manifest.json").read_text() == man          # up to date: nothing rewritten
    capsys.readouterr()
    assert call("check", out) in (0, 1)
    assert "FLAG" not in capsys.readouterr().out


def _past_look_1(spec, out):
    """The folder run to its plan's end, past its first look (the close claim's margin set
    near 0 when look 1 decided it, so that look 2 runs for ALEG and SMD only)."""
    assert call("run", spec, "--out", out, "--until-decided", "-q") == 0
    if len(set(read_records(out)["seed"])) == 8:
        raw = yaml.safe_load(spec.read_text())
        raw["claims"][1]["margin"] = 1e-9
        spec.write_text(yaml.safe_dump(raw))
        assert call("run", spec, "--out", out, "--until-decided", "-q") == 0
    assert len(set(read_records(out)["seed"])) > 8


def test_a_plan_issued_again_runs_nothing(tiny_spec, tmp_path, monkeypatch, capsys):
    """Issue 56: `--until-decided` on a folder whose plan has ended runs no cell: MPVR's
    only claim was decided at look 1, so look 2's seeds are never run for it."""
    from drocli.run import worker

    spec = _spec(tiny_spec)
    out = tmp_path / "res"
    _past_look_1(spec, out)
    cells = sorted(p.name for p in (out / "cells").glob("*.json"))

    def no_cell(*a, **k):
        raise AssertionError("a cell ran")

    monkeypatch.setattr(worker, "run_cell", no_cell)
    capsys.readouterr()
    assert call("run", spec, "--out", out, "--until-decided") == 0
    assert "nothing to run" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "cells").glob("*.json")) == cells
    df = read_records(out)
    assert set(df.loc[df["label"] == "MPVR", "seed"]) == set(range(8))


def test_a_resumed_look_runs_only_what_its_claims_need(tiny_spec, monkeypatch):
    """A look begun and interrupted (the folder reached look 2): the look is run again for
    the labels of the claims still open as the folder stands, not for every label."""
    from drocli.run import runner, until_decided
    from drocli.run.cells import resolve
    from drocli.spec import load_spec

    batch = resolve(load_spec(_spec(tiny_spec)))
    asked = []

    class Done:
        unfinished, judged = [], type("J", (), {"claims": []})()

    def fake_run(batch, out, *, seeds, only, log, **kw):
        asked.append((len(seeds), sorted({c.label for c in batch.for_seeds(seeds)
                                          if only is None or only(c)})))
        return Done()

    open_ = [type("R", (), {"id": "close", "status": "inconclusive",
                            "look": {"seeds": 8}})()]
    monkeypatch.setattr(runner, "run", fake_run)
    monkeypatch.setattr(until_decided, "reached", lambda plan, out: 16)
    monkeypatch.setattr(until_decided, "open_claims", lambda out, looks: open_)
    monkeypatch.setattr(until_decided, "undecided", lambda claims, looks: [])
    until_decided.run_until_decided(batch, "unused", log=lambda m: None)
    assert asked == [(16, ["ALEG", "SMD"])]          # MPVR's claim was decided before
    open_.clear()
    asked.clear()
    until_decided.run_until_decided(batch, "unused", log=lambda m: None)
    assert asked == [(16, [])]                        # the plan ended: nothing runs


def test_a_plan_changed_after_its_first_look_is_refused(tiny_spec, tmp_path, capsys):
    """Issue 56: a plan is fixed once its first look has run; its looks or its pool changed
    afterwards exit 2 naming `sequential`, before anything is written."""
    spec = _spec(tiny_spec)
    out = tmp_path / "res"
    assert call("run", spec, "--out", out, "-q") == 0           # look 1
    man = (out / "manifest.json").read_bytes()
    raw = yaml.safe_load(spec.read_text())
    for change in ({"looks": [8, 24], "pool": "100-115"}, {"looks": [8, 16], "pool": "200-207"}):
        raw["sequential"] = change
        spec.write_text(yaml.safe_dump(raw))
        for extra in ((), ("--until-decided",)):
            capsys.readouterr()
            assert call("run", spec, "--out", out, "-q", *extra) == 2
            err = capsys.readouterr().err
            assert "sequential" in err and "new study" in err, err
            assert (out / "manifest.json").read_bytes() == man
