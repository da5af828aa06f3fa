"""`drocli check` replays a kept answer only for the same bytes, options and drocli."""

import gzip
import shutil
from pathlib import Path

import pytest

from drocli.cli import checking  # where `check` looks up _judge
from drocli.results import check_cache
from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "results" / "as_lsvrg_fig1-smoke"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DROCLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))   # the key, per test
    dst = tmp_path / "fig1"
    shutil.copytree(RECORDED, dst, ignore=shutil.ignore_patterns("figures"))
    return dst


def _no_judging(*args):
    raise AssertionError("judged again although the answer was kept")


def test_same_bytes_replay_the_same_answer(folder, monkeypatch, capsys):
    assert call("check", folder) == 0
    first = capsys.readouterr()
    assert "HOLDS" in first.out or "INCONCLUSIVE" in first.out
    monkeypatch.setattr(checking, "_judge", _no_judging)
    assert call("check", folder) == 0
    again = capsys.readouterr()
    assert (again.out, again.err) == (first.out, first.err)


def test_exit_code_and_stderr_are_replayed(folder, monkeypatch, capsys):
    monkeypatch.setattr(checking, "_judge", lambda *a: (["FAILS  x"], ["drocli: note"], 1))
    assert call("check", folder) == 1
    monkeypatch.setattr(checking, "_judge", _no_judging)
    assert call("check", folder) == 1
    out = capsys.readouterr()
    assert out.out == "FAILS  x\nFAILS  x\n" and out.err == "drocli: note\ndrocli: note\n"


@pytest.mark.parametrize("change", ["records", "spec", "manifest", "options", "no-cache",
                                    "reference", "path"])
def test_any_change_judges_afresh(folder, monkeypatch, change, capsys):
    assert call("check", folder) == 0
    judged = []
    real = checking._judge
    monkeypatch.setattr(checking, "_judge", lambda *a: judged.append(a) or real(*a))
    args = ["check", folder]
    if change == "records":       # same rows, other gzip bytes: the key is the bytes read
        rec = folder / "records.csv.gz"
        rec.write_bytes(gzip.compress(gzip.decompress(rec.read_bytes()), mtime=1))
    elif change == "spec":
        with open(folder / "spec.yaml", "a") as fh:
            fh.write("# edited\n")
    elif change == "manifest":
        man = folder / "manifest.json"
        man.write_text(man.read_text() + "\n")
    elif change == "options":
        args.append("--json")
    elif change == "no-cache":
        args.append("--no-cache")
    elif change == "reference":
        args += ["--reference", RECORDED]
    elif change == "path":        # same bytes under another name: the answer prints the path
        args = ["check", shutil.copytree(folder, folder.parent / "copy")]
    code = call(*args)
    assert len(judged) == 1, "the change was not noticed"
    if change == "manifest":     # the records checksum still matches: same verdicts
        assert code == 0


def test_errors_are_not_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DROCLI_CACHE", str(tmp_path / "cache"))
    assert call("check", tmp_path / "missing") == 2
    assert call("check", tmp_path / "missing") == 2
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.json"))


def test_unwritable_cache_only_costs_speed(folder, monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DROCLI_CACHE", str(blocker))
    assert call("check", folder) == 0
    assert call("check", folder) == 0
    out = capsys.readouterr().out
    half = len(out) // 2
    assert out[:half] == out[half:]


def test_corrupt_entry_is_ignored(folder, capsys):
    assert call("check", folder) == 0
    first = capsys.readouterr().out
    for path in check_cache.cache_dir().glob("*.json"):
        path.write_text('{"key": "other", "out": "forged", "err": "", "code": 0}')
    assert call("check", folder) == 0
    assert capsys.readouterr().out == first


def test_off_switch(monkeypatch):
    for value in ("off", "0", ""):
        monkeypatch.setenv("DROCLI_CACHE", value)
        assert check_cache.cache_dir() is None


def test_forged_answer_is_not_replayed(folder, tmp_path, monkeypatch, capsys):
    """Whoever can write the cache folder cannot make check print MATCHES / exit 0 for a
    folder it did not judge: the answer's tag is an HMAC under a key kept elsewhere."""
    import json

    ref = tmp_path / "ref"
    shutil.copytree(folder, ref)
    import pandas as pd

    df = pd.read_csv(ref / "records.csv.gz", keep_default_na=False, dtype={"label": str})
    df.loc[df.index[-1], "value"] = float(df["value"].iloc[-1]) * 2 + 1
    df.to_csv(ref / "records.csv.gz", index=False)
    man = json.loads((ref / "manifest.json").read_text())
    for key in ("records_sha256", "records_sha1", "records_rows"):
        man.pop(key, None)
    (ref / "manifest.json").write_text(json.dumps(man))
    assert call("check", folder, "--reference", ref) == 1          # a real mismatch
    capsys.readouterr()
    (entry,) = (tmp_path / "cache" / "check").glob("*.json")
    forged = json.loads(entry.read_text())
    forged.update(out="MATCHES  reference (forged)\n", err="", code=0)
    entry.write_text(json.dumps(forged))
    assert call("check", folder, "--reference", ref) == 1          # judged afresh
    assert "forged" not in capsys.readouterr().out
    key = tmp_path / "config" / "drocli" / "cache.key"
    assert key.stat().st_mode & 0o777 == 0o600
    key.chmod(0o644)                                               # not private: no cache
    judged, real = [], checking._judge
    monkeypatch.setattr(checking, "_judge", lambda *a: judged.append(a) or real(*a))
    assert call("check", folder) in (0, 1) and call("check", folder) in (0, 1)
    assert len(judged) == 2
