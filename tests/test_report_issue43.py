"""`drocli report` items of issue 43: a dirty folder's badge is a warning, not a verdict's
colour; each effect says what it is; the multiplicity detail is in plain words; a
reach_first level every method starts past says it cannot decide; concurrent reports into
one folder keep both; a non-UTF-8 folder name; --out naming a file; SIGTERM at any point."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import call, tiny_folder


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One tiny results folder (smoke profile, figures drawn), shared: copy it to change it."""
    out = tiny_folder(tmp_path_factory.mktemp("rec"))
    assert call("plot", out) == 0
    return out


def test_dirty_badge_is_a_warning_with_its_meaning(recorded):
    """The index's 'dirty' badge has no verdict's colour (FAILS, not reproduced, ...) and
    says what it means, in a tooltip and in the legend."""
    from drocli.report import DIRTY_MEANS, STATUS_COLORS, WARN, _load, index

    page = _load(recorded)
    page.manifest = {**page.manifest, "git_commit": "0123456789abcdef", "git_dirty": True}
    text = index([page], "html")
    badge = re.search(r'<span class="badge warn" title="([^"]+)">dirty</span>', text)
    assert badge and "uncommitted" in badge.group(1)
    colours = set(re.findall(r"#[0-9a-f]{6}", WARN))
    assert "dashed" in WARN and not colours & {STATUS_COLORS[k] for k in (
        "fails", "not_reproduced", "error", "unexpectedly_holds", "inconclusive")}
    assert f".badge.warn{{{WARN}}}" in text
    assert "Warning:" in text and DIRTY_MEANS in text
    assert "uncommitted" in index([page], "md")


def _claim(**kw):
    from drocli.claims import validate_claim

    base = {"id": "c", "text": "t", "solver": "A", "others": ["B"], "metric": "loss"}
    return validate_claim({**base, **kw})


def test_each_effect_says_what_it_is_its_unit_and_sign(recorded):
    """Every claim row of a page says what its effects are (which difference, in which
    unit, which sign favours whom), generated from the claim's fields the way the kinds
    sign their differences (positive: the claimed direction)."""
    from drocli.report import _load, html_page, markdown

    page = _load(recorded)
    words = ("effect = mean over seeds of (SMD's final max_risk_train minus ALEG's), in "
             "units of max_risk_train; positive favours ALEG")
    assert page.effect_words["below_start"].startswith(words)
    assert words in markdown(page) and html.escape(words) in html_page(page)
    assert "(B's final loss minus A's)" in _claim(kind="final_below").effect_text()
    above = _claim(kind="final_below", direction="above", factor=1.05, margin=0.1,
                   others=["B", "C"]).effect_text()
    assert "(A's final loss minus 1.05 x the other's)" in above and "above 0.1" in above
    reach = _claim(kind="reach_first", level=0.5, x="time_s", factor=0.5).effect_text()
    assert "(0.5 x B's time_s at reaching the level minus A's" in reach
    assert "in time_s; positive favours A" in reach
    assert "in seconds" in _claim(kind="wall_time_below", metric=None).effect_text()
    spread = _claim(kind="spread_below").effect_text()
    assert "ln(seed std of the other's final loss / that of A's), no unit" in spread
    trend = _claim(kind="trend", across="nu", values=[0, 1]).effect_text()
    assert "gap = the other's final loss minus A's" in trend and "grows" in trend
    pooled = _claim(kind="pooled", others=[], value=0.05).effect_text()
    assert "(0.05 minus the label's mean of the final loss" in pooled


def _effect(verdict="inconclusive", others=3, confidence=0.95, **kw):
    return {"method": "paired-t", "n": 10, "threshold": 0.0, "confidence": confidence,
            "others": others, "mean": 0.1, "lo": -0.1, "hi": 0.3, "hi_refute": 0.4,
            "verdict": verdict, **kw}


def test_the_multiple_comparison_rule_is_in_plain_words_with_its_numbers(recorded):
    """'refuted against any one at 0.9833 (Bonferroni over 3)' became words a new user
    reads, the numbers kept; no page, check line or test text says 'Bonferroni'."""
    from drocli.claims import ClaimResult
    from drocli.claims.judge import effects_text
    from drocli.report import _claim_note, _load, markdown

    effects = {o: _effect() for o in ("B", "C", "D")}
    plain = ("refuted if it fails against any one of its 3 comparisons (each tested at "
             "98.33% confidence, so that all 3 together keep 95%)")
    c = ClaimResult("c", "t", "final_below", "inconclusive", "", effects=effects)
    assert plain in _claim_note(c, "paired-t 95% over 10 seeds")
    assert plain in effects_text(effects)
    nine = {f"B @ nu={i}": _effect(others=9) for i in range(9)}
    assert "any one of its 9 comparisons (each tested at 99.44% confidence" in \
        effects_text(nine)
    assert "Bonferroni" not in effects_text({"B": _effect(others=1)})
    assert "Bonferroni" not in markdown(_load(recorded))
    test = _claim(kind="final_below", others=["B", "C", "D"]).test_text()
    assert "Bonferroni" not in test and "all 3 together keep 95%" in test
    trend = _claim(kind="trend", across="nu", values=[0, 1, 2]).test_text()
    assert "Bonferroni" not in trend and "together keep 95%" in trend


def _reach_records(shift: float = 0.0, seeds: int = 6):
    """Falling lines 1 - x/100 (A) and 1 - x/200 (B) on x = 0..100 per seed, A's x shifted
    by `shift` (a stage it pays first)."""
    import numpy as np
    import pandas as pd

    x = np.linspace(0, 100, 11)
    rows = []
    for label, slope, dx in (("A", 100, shift), ("B", 200, 0.0)):
        for s in range(seeds):
            for k, xi in enumerate(x):
                rows.append(dict(experiment="e", cell=f"{label}-{s}", solver=label.lower(),
                                 label=label, dataset="d", seed=s, step=k,
                                 oracle_calls=xi + dx, time_s=(xi + dx) * 1e-3, metric="m",
                                 value=1 - xi / slope + 0.001 * s))
    return pd.DataFrame(rows)


def test_a_level_every_method_starts_past_says_it_cannot_decide():
    """reach_first with a level above every start: every method 'reaches' it at its first
    point, no number of seeds decides; the verdict stays inconclusive and says so, with
    the fix, in check's line and on the report's claim row. A claim that decides anyway
    (the solver's curve starts later) keeps its verdict and gets no such words."""
    from drocli.claims import evaluate_claims
    from drocli.report import comparisons, decision_note

    base = {"id": "r", "text": "t", "kind": "reach_first", "metric": "m", "solver": "A",
            "others": ["B"]}
    (r,) = evaluate_claims(_reach_records(), [{**base, "level": 1.5}], "paper")
    why = "cannot decide: every method starts below the level 1.5; lower the level"
    assert r.status == "inconclusive" and why in r.detail
    assert decision_note(r) == why
    assert "seeds to decide" not in comparisons(r)[0][2]
    (r,) = evaluate_claims(_reach_records(), [{**base, "level": 1.5, "direction": "above"}],
                           "paper")
    assert "cannot decide: neither A nor B reaches the level" in r.detail   # nor this one
    (r,) = evaluate_claims(_reach_records(), [{**base, "level": 0.5}], "paper")
    assert r.status == "holds" and "cannot decide" not in r.detail          # a real level
    (r,) = evaluate_claims(_reach_records(shift=50), [{**base, "level": 1.5}], "paper")
    assert r.status == "fails" and "cannot decide" not in r.detail         # decided anyway
    rec = _reach_records()
    rec["value"] = 0.2 + rec["oracle_calls"] / 1000        # rising curves, all start above
    (r,) = evaluate_claims(rec, [{**base, "level": 0.1, "direction": "above"}], "paper")
    assert "every method starts above the level 0.1; raise the level" in decision_note(r)


def test_out_naming_a_file_is_refused_in_one_line(recorded, tmp_path, capsys):
    """`report --out FILE` exits 2 with one line naming the path, saying it is a file and
    giving the fix (it said 'File exists'); the file is left as it was."""
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    assert call("report", recorded, "--out", target) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(target) in err[0] and "is a file" in err[0]
    assert "give --out a folder" in err[0] and "File exists" not in err[0]
    assert target.read_text() == "mine"


def test_a_results_folder_named_with_a_non_utf8_byte(recorded, tmp_path):
    """A folder named with the byte 0xff (not UTF-8): report works (it exited 3 on a
    UnicodeEncodeError); the page is named with the same bytes, its name is shown escaped
    (res\\xff) and every link percent-encodes those bytes, so it resolves."""
    import os
    from urllib.parse import unquote_to_bytes

    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/res\xff"))
    shutil.copytree(recorded, odd)
    rep = tmp_path / "report"
    assert call("check", odd) in (0, 1)
    assert call("report", odd, "--out", rep) == 0
    assert (rep / odd.name).with_suffix(".md").is_file()
    index_md = (rep / "index.md").read_text(encoding="utf-8")
    assert "[res\\\\xff](res%FF.md)" in index_md
    index_html = (rep / "index.html").read_text(encoding="utf-8")
    assert ">res\\xff</a>" in index_html
    page = (rep / f"{odd.name}.html").read_text(encoding="utf-8")
    srcs = re.findall(r'(?:src|href)="([^"]+)"', page + index_html)
    assert any("%FF" in s for s in srcs)
    for src in srcs:
        if src.startswith("#"):                 # a claim's details, within the page
            assert f'id="{src[1:]}"' in page, src
            continue
        assert os.path.exists(os.fsencode(rep) + b"/" + unquote_to_bytes(src)), src
    readme = tmp_path / "README.md"
    from drocli.report import BEGIN, END

    readme.write_text(f"{BEGIN}\n{END}\n")
    assert call("report", odd, "--out", rep, "--readme", readme) == 0
    assert "res\\\\xff" in readme.read_text(encoding="utf-8")


BARRIER = """
import sys, time
from pathlib import Path
import drocli.report.folder as r     # where write() looks up _load and _write

meet, me, others = Path(sys.argv.pop(1)), sys.argv.pop(1), int(sys.argv.pop(1))
load = r._load

def _load(d):
    page = load(d)
    (meet / me).touch()                 # both reports have started before either writes
    deadline = time.monotonic() + 120
    while len(list(meet.iterdir())) < others and time.monotonic() < deadline:
        time.sleep(0.02)
    return page

r._load = _load
from drocli.cli import main
main()
"""


def test_concurrent_reports_into_one_folder_keep_both(recorded, tmp_path):
    """Two `report --out DIR` at once, each of another folder: both pages stay and the index
    lists both (the later one used to prune the earlier one's page as no longer reported).
    One report after the other still replaces it (the dropped folder's page goes)."""
    import json
    import os
    import subprocess
    import sys

    a, b, rep, meet = (tmp_path / n for n in ("a", "b", "report", "meet"))
    for d in (a, b):
        shutil.copytree(recorded, d)
    meet.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(BARRIER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, str(driver), str(meet), d.name, "2", "report",
                               str(d), "--out", str(rep)], env=env, stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, text=True) for d in (a, b)]
    for p in procs:
        err = p.communicate(timeout=300)[1]
        assert p.returncode == 0, err
    for name in ("a", "b"):
        assert (rep / f"{name}.md").is_file() and (rep / f"{name}.html").is_file()
        assert list((rep / name).glob("*.png"))
        assert f"[{name}]({name}.md)" in (rep / "index.md").read_text()
        assert f'href="{name}.html"' in (rep / "index.html").read_text()
    assert "2 results folders" in (rep / "index.md").read_text()
    assert json.loads((rep / ".drocli-report.json").read_text())["pages"] == ["a", "b"]
    assert call("report", b, "--out", rep) == 0               # after: b alone
    assert not (rep / "a.md").exists() and "[a](a.md)" not in (rep / "index.md").read_text()


SLOW = """
import atexit, sys, time
from pathlib import Path
import drocli.report.folder as r     # where write() looks up _load and _write

marks, phase = Path(sys.argv.pop(1)), sys.argv.pop(1)
load, write = r._load, r._write

def wait(name, seconds):
    (marks / name).touch()              # the test sends SIGTERM once it sees this
    time.sleep(seconds)

def _load(d):
    page = load(d)
    if phase == "load":
        wait(phase, 60)
    return page

def _write(path, text):
    if phase == "page" and path.name == "b.md":
        wait(phase, 60)
    if phase == "index" and path.name == "index.html":   # index.md new, index.html not yet
        wait(phase, 3)
    write(path, text)

r._load, r._write = _load, _write
if phase == "exit":                     # the command is over, Python shutting down
    atexit.register(wait, phase, 60)
from drocli.cli import main
main()
"""


@pytest.mark.parametrize("phase", ["load", "page", "index", "exit"])
def test_sigterm_at_any_point_stops_in_one_line_and_leaves_a_whole_index(recorded, tmp_path,
                                                                          phase):
    """SIGTERM while judging, while writing a page, between the two index pages, and while
    Python shuts down after the command: exit 143 with one line (it could die silently at
    the end), and the index (both formats, and the list) is the old one or the new one,
    never half of each."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    a, b, rep, marks = (tmp_path / n for n in ("a", "b", "report", "marks"))
    for d in (a, b):
        shutil.copytree(recorded, d)
    marks.mkdir()
    assert call("report", a, "--out", rep) == 0               # the old index: a alone
    driver = tmp_path / "driver.py"
    driver.write_text(SLOW)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, str(driver), str(marks), phase, "report", str(b),
                             "--out", str(rep)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (marks / phase).exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("drocli: stopped by SIGTERM"), err
    md, page = (rep / "index.md").read_text(), (rep / "index.html").read_text()
    listed = json.loads((rep / ".drocli-report.json").read_text())["pages"]
    new = phase in ("index", "exit")
    assert ("[b](b.md)" in md) == new and ("[a](a.md)" in md) != new, md
    assert ('href="b.html"' in page) == new and ('href="a.html"' in page) != new
    assert listed == (["b"] if new else ["a"])
    assert md.rstrip().splitlines()[-1].startswith("| **total** |")
    assert page.rstrip().endswith("</html>")
