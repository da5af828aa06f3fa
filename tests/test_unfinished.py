"""Issue 56: cells that did not finish are never judged as if they had. A cell stopped at
its wall limit keeps its partial rows in its cell file, not in the records; `run` says so
on its last line and exits 4, `--dry-run` lists it as not done, the same command runs it
again, and `check` leaves each claim that compares it NOT JUDGED, naming the cell (exit 4
when the claim is marked reproduced)."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from drocli.claims import unfinished
from drocli.plugins import registry
from drocli.results.records import read_records
from tests.conftest import TINY_SPEC, call


def _slow_gdro(problem, params, rng, monitor):
    """Steps of 0.05 s on a GDRO problem, calling the monitor between them: far slower than
    the 3 s limit, so the monitor stops it with the rows recorded so far."""
    w, q = problem.zero_point()
    while monitor(w, q):
        time.sleep(0.05)
        problem.sample_oracle(w, rng.integers(problem.N, size=1))
        w = w + 1e-3
    return w, q


@pytest.fixture
def slow_spec(tmp_path):
    """TINY_SPEC with ALEG replaced by `_slow_gdro`: its cells time out with partial rows."""
    family = registry.get("solver", "smd").family
    registry.solver("unf_slow", family=family, description="toy: slow steps",
                    reference="none")(_slow_gdro)
    raw = yaml.safe_load(TINY_SPEC)
    raw["solvers"][1] = {"name": "unf_slow", "label": "ALEG"}
    raw["budget"]["max_time_s"] = 3   # SMD's cells finish well inside it, even under load
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(raw))
    yield spec
    registry._REGISTRY["solver"].pop("unf_slow", None)


def test_cells_past_their_limit_are_loud_and_unjudged(slow_spec, tmp_path, capsys):
    out = tmp_path / "res"
    assert call("run", slow_spec, "--out", out, "-q", "--backend", "fork") == 4
    got = capsys.readouterr()
    last = got.out.strip().splitlines()[-1]
    assert last.startswith("records: ") and "2 stopped at their wall limit of 4 cells" in last
    assert "re-run the same command" in last
    assert got.err.count("timeout: stopped at its limit of 3 s") == 2
    man = json.loads((out / "manifest.json").read_text())
    timed = [st for st in man["cells"].values() if st["status"] == "timeout"]
    assert len(timed) == 2 and all(st["where"]["dataset"] for st in timed)
    from drocli.results.records import read_cell

    kept = [read_cell(out, cid) for cid, st in man["cells"].items()
            if st["status"] == "timeout"]
    assert all(st["status"] == "timeout" and rows for st, rows in kept)  # partial rows kept
    df = read_records(out)
    assert set(df["label"]) == {"SMD"}               # partial curves never enter the records

    assert call("run", slow_spec, "--out", out, "--dry-run") == 0
    dry = capsys.readouterr()
    assert "2 that did not finish" in dry.err
    states = sorted(line.split()[1] for line in dry.out.splitlines())
    assert states == ["done", "done", "timeout", "timeout"]

    assert call("check", out) == 4
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "below_start" in x)
    assert line.startswith("NOT JUDGED (cells did not finish)")
    assert "ALEG seed 0" in line and "ALEG seed 1" in line and "timeout" in line
    assert "not judged (cells did not finish)" in text.splitlines()[-1]
    assert call("check", out, "--json", "--no-cache") == 4
    claim = json.loads(capsys.readouterr().out)["claims"][0]
    assert claim["status"] == "incomplete" and claim["effects"] == {}

    assert call("run", slow_spec, "--out", out) == 4        # the same command runs them again
    assert "2 to run" in capsys.readouterr().err


def test_an_unjudged_claim_marked_not_reproduced_does_not_fail_check(slow_spec, tmp_path,
                                                                      capsys):
    raw = yaml.safe_load(slow_spec.read_text())
    raw["claims"][0]["reproduced"] = False
    raw["claims"][0]["cause"] = {"kind": "genuine", "note": "marked so that check exits 0 here"}
    slow_spec.write_text(yaml.safe_dump(raw))
    out = tmp_path / "res"
    assert call("run", slow_spec, "--out", out, "-q", "--backend", "fork") == 4
    capsys.readouterr()
    assert call("check", out) == 0
    assert "NOT JUDGED" in capsys.readouterr().out


def _claim(**kw):
    from drocli.claims import validate_claim

    return validate_claim({"id": "c", "text": "t", "kind": "final_below", "metric": "m",
                           "solver": "A", "others": ["B"], **kw})


MISSING = [{"cell": "x1", "label": "A", "seed": 3, "status": "timeout", "error": "limit",
            "where": {"dataset": "d", "setting": "C=2"}},
           {"cell": "x2", "label": "Z", "seed": 3, "status": "failed", "error": "boom",
            "where": {"dataset": "d", "setting": "C=5"}}]


@pytest.mark.parametrize("kw, hit", [
    ({}, ["x1"]),                                             # its label, no filter
    ({"filter": {"setting": "C=2"}}, ["x1"]),
    ({"filter": {"setting": ["C=5", "rotation"]}}, []),        # another setting
    ({"panels": [{"setting": "C=5"}, {"setting": "rotation"}]}, []),
    ({"panels": [{"setting": "C=2"}, {"setting": "C=5"}]}, ["x1"]),
    ({"solver": "Z", "others": ["B"]}, ["x2"]),
])
def test_a_claim_needs_the_unfinished_cells_of_its_labels_filter_and_panels(kw, hit):
    assert [st["cell"] for st in unfinished.needed(_claim(**kw), MISSING)] == hit


def test_old_manifests_without_where_count_by_label():
    bare = [{k: v for k, v in MISSING[0].items() if k != "where"}]
    assert unfinished.needed(_claim(filter={"setting": "C=5"}), bare) == bare


def test_the_claim_line_names_at_most_four_cells():
    many = [{**MISSING[0], "cell": f"x{i}", "seed": i} for i in range(7)]
    text = unfinished.describe(many)
    assert text.count("(timeout: limit)") == 4 and "and 3 more" in text
    assert "A seed 0, setting=C=2" in text


def test_a_long_cell_is_never_silent_in_a_log(slow_spec, tmp_path, capsys, monkeypatch):
    """stderr not a terminal, no -q: a heartbeat line every DROCLI_HEARTBEAT_S seconds."""
    monkeypatch.setenv("DROCLI_HEARTBEAT_S", "0.5")
    assert call("run", slow_spec, "--out", tmp_path / "res", "--backend", "fork") == 4
    beats = [x for x in capsys.readouterr().err.splitlines() if "cells done after" in x]
    assert len(beats) >= 3                                  # two cells of 3 s each
    assert any("running: ALEG seed" in x and "%)" in x for x in beats), beats
    assert all(x.startswith("drocli: ") and " of 4 cells" in x for x in beats)


def test_the_heartbeat_line_names_the_running_cells(tmp_path):
    from drocli.run.progress import Watcher, _clock

    (tmp_path / "c1").write_text("0.4000")
    (tmp_path / "c2").write_text("0.1000")
    w = Watcher(None, tmp_path, names={"c1": "ALEG seed 0"}, total=5)
    w.done("c2")
    line = w.line()
    assert line.startswith("drocli: 1 of 5 cells done after 0s; running: ALEG seed 0 (40%)")
    assert _clock(250) == "4m10s" and _clock(3725) == "1h02m" and _clock(35) == "35s"
    beating = Watcher(None, tmp_path, 0.05, beat=(got := []).append, every=0.1, total=5)
    with beating:
        time.sleep(0.5)
    assert got and all("of 5 cells done" in x for x in got)


def test_the_bar_counts_whole_cells_while_its_rate_counts_fractions(tmp_path):
    """Issue 57: the bar showed "2.13/8"."""
    import io

    from drocli.run.progress import Watcher, cell_bar

    out = io.StringIO()
    bar = cell_bar(8, file=out)
    (tmp_path / "c3").write_text("0.1300")
    w = Watcher(bar, tmp_path)
    w.finished |= {"c1", "c2"}
    w.refresh()
    bar.close()
    shown = out.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert " 2/8 cells " in shown and "2.13" not in shown and bar.n == 2.13
