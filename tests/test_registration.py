"""Claims fixed before their runs: `run` registers each claim's hash, `check` reports a claim
changed after its records as post hoc until seeds run after the change confirm it, and
flags claims judged on the seeds tuning used (drocli.claims.registration)."""

from __future__ import annotations

import json

import yaml

from drocli.claims import validate_claim
from drocli.claims.registration import assess, claim_hash, register
from tests.conftest import call

CLAIM = {"id": "c", "text": "A below B", "kind": "final_below", "metric": "m",
         "solver": "A", "others": ["B"]}


def test_hash_covers_the_test_not_the_citation_or_defaults():
    base = validate_claim(CLAIM)
    assert claim_hash(base) == claim_hash(validate_claim({**CLAIM, "margin": 0.0}))
    cited = {**CLAIM, "source": {"where": "Sec. 1", "quote": "A is below B in the end."}}
    assert claim_hash(base) == claim_hash(validate_claim(cited))
    for change in ({"margin": 0.1}, {"text": "A lower"}, {"reproduced": False},
                   {"direction": "above"}, {"others": ["B", "C"]}, {"confidence": 0.9}):
        assert claim_hash(validate_claim({**CLAIM, **change})) != claim_hash(base), change


def test_register_keeps_the_time_an_unchanged_claim_was_fixed():
    a = validate_claim(CLAIM)
    first = register(None, [a], at="2026-01-01T00:00:00+00:00")
    again = register(first, [a], at="2026-02-01T00:00:00+00:00")
    assert again["c"]["fixed"] == "2026-01-01T00:00:00+00:00"
    changed = register(first, [validate_claim({**CLAIM, "margin": 0.1})],
                       at="2026-02-01T00:00:00+00:00")
    assert changed["c"]["fixed"] == "2026-02-01T00:00:00+00:00"


def test_assess_by_cell_times():
    a = validate_claim(CLAIM)
    man = {"claims": register(None, [a], at="2026-01-02T00:00:00+00:00"),
           "cells": {"x0": {"seed": 0, "at": "2026-01-01T00:00:00+00:00"},
                     "y0": {"seed": 0, "at": "2026-01-03T00:00:00+00:00"},
                     "x1": {"seed": 1, "at": "2026-01-03T00:00:00+00:00"},
                     "y1": {"seed": 1, "at": "2026-01-03T00:00:00+00:00"}}}
    got = assess(man, a, {"x0": 0, "y0": 0, "x1": 1, "y1": 1})
    assert got["status"] == "post_hoc" and got["confirmed_seeds"] == [1]   # x0 ran before
    assert assess(man, a, {"x1": 1, "y1": 1})["status"] == "preregistered"
    assert assess({}, a, {"x1": 1})["status"] == "post_hoc"                # not registered
    edited = validate_claim({**CLAIM, "margin": 0.1})
    assert assess(man, edited, {"x1": 1})["why"] == "changed after it was registered"


def _check_json(out, capsys) -> dict:
    capsys.readouterr()
    code = call("check", out, "--json")
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    return {c["id"]: c for c in doc["claims"]} | {"_summary": doc["summary"]}


def test_claim_changed_after_its_run_is_post_hoc_until_fresh_seeds(tiny_spec, tmp_path,
                                                                    capsys):
    out = tmp_path / "res"
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["claims"].append({**raw["claims"][0], "id": "second", "text": "second claim"})
    raw["seeds"] = [0, 1, 2]
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    assert set(man["claims"]) == {"below_start", "second"}
    assert all(st.get("at") for st in man["cells"].values())
    got = _check_json(out, capsys)
    assert got["below_start"]["registration"]["status"] == "preregistered"

    # the claim's threshold is changed after its records: post hoc, the other untouched
    raw["claims"][1]["margin"] = -0.5
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", out, "-q") == 0          # spec revised only
    got = _check_json(out, capsys)
    assert got["second"]["registration"]["status"] == "post_hoc"
    assert got["below_start"]["registration"]["status"] == "preregistered"
    assert got["_summary"]["post_hoc"] >= 1
    capsys.readouterr()
    call("check", out)
    text = capsys.readouterr().out
    assert "[POST HOC]" in text and "post hoc: changed" not in text   # fixed after the runs
    assert text.strip().splitlines()[-1].startswith("SUMMARY  2 claim(s):")

    # re-running the same seeds (same cells, same numbers) does not confirm it
    assert call("run", tiny_spec, "--out", out, "-q", "--force") == 0
    assert _check_json(out, capsys)["second"]["registration"]["status"] == "post_hoc"

    # fresh seeds run after the change confirm it: judged on those seeds alone
    raw["seeds"] = [0, 1, 2, 3, 4, 5]
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    got = _check_json(out, capsys)
    reg = got["second"]["registration"]
    assert reg["status"] == "confirmed" and reg["confirmed_seeds"] == [3, 4, 5]
    assert got["second"]["effects"]["SMD"]["n"] == 3
    assert got["below_start"]["registration"]["status"] == "preregistered"


def test_an_interrupted_first_run_keeps_its_claims_fixed_before_its_cells(
        tiny_spec, tmp_path, capsys, monkeypatch):
    """A run interrupted before its manifest (Ctrl-C, kill) leaves cell files stamped with
    the time they finished; the claims it fixed before them are kept in cells/.claims,
    so the resumed run does not date them after those cells (they read as post hoc, judged
    on the later seeds only: found on re_rsvrb_fig2_digits, 2026-11-26)."""
    from drocli.run import runner

    out = tmp_path / "res"
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["seeds"] = [0, 1, 2]
    tiny_spec.write_text(yaml.safe_dump(raw))
    real = runner._run_pending

    def interrupted(pending, *args):
        real(pending[:2], *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_run_pending", interrupted)
    assert call("run", tiny_spec, "--out", out, "-q") != 0
    assert not (out / "manifest.json").exists()
    assert len([p for p in (out / "cells").glob("*.json") if p.name[0] != "."]) == 2
    assert (out / "cells" / ".claims").is_file()
    monkeypatch.setattr(runner, "_run_pending", real)
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    fixed = man["claims"]["below_start"]["fixed"]
    assert all(st["at"] > fixed for st in man["cells"].values())
    got = _check_json(out, capsys)
    assert got["below_start"]["registration"]["status"] == "preregistered"
    assert not (out / "cells" / ".claims").exists()     # the manifest holds them now


def test_claims_judged_on_tuning_seeds_are_flagged(tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["tuning"] = {"source": ["experiments/tuning/tiny_grid.yaml"], "seeds": [1, 7]}
    tiny_spec.write_text(yaml.safe_dump(raw))
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    got = _check_json(out, capsys)
    assert got["below_start"]["tuned_on"] == [1]
    capsys.readouterr()
    call("check", out)
    assert "that tuning used" in capsys.readouterr().out


def test_results_outlive_the_plugin_that_made_them(tiny_spec, tmp_path, capsys):
    """A folder made by a plug-in that is no longer installed (here: its solver renamed
    in the saved spec to a name nothing registers) still plots, checks and reports: reading
    results validates figures and claims, not the plug-ins' parameters (issue 30)."""
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    saved = out / "spec.yaml"
    raw = yaml.safe_load(saved.read_text())
    raw["solvers"][0]["name"] = "gone_plugin_solver"
    raw["solvers"][0]["params"] = {"only_it_knew": 1}
    raw["data"]["name"] = "gone_plugin_data"
    saved.write_text(yaml.safe_dump(raw, sort_keys=False))
    capsys.readouterr()
    assert call("check", out) in (0, 1)
    assert "SUMMARY" in capsys.readouterr().out
    assert call("plot", out) == 0
    assert call("report", out, "--out", tmp_path / "rep") == 0
    assert (tmp_path / "rep" / "res.md").is_file()


def test_tuning_files_read_by_libyaml_as_by_the_pure_parser(monkeypatch):
    """used_seeds parses the repository's tuning files with libyaml when PyYAML has it: the
    seeds it finds for every paper spec are those the pure-Python SafeLoader finds."""
    from pathlib import Path

    from drocli.results import tuning_records
    from drocli.spec import load_spec

    root = Path(__file__).resolve().parents[1]
    specs = [load_spec(p) for p in sorted((root / "experiments").glob("*.yaml"))[:8]]
    fast = [tuning_records.used_seeds(s, root / "results") for s in specs]
    monkeypatch.setattr(yaml, "CSafeLoader", yaml.SafeLoader, raising=False)
    slow = [tuning_records.used_seeds(s, root / "results") for s in specs]
    assert fast == slow
    assert any(fast), "no tuning file concerns these specs: the comparison is empty"
