"""A results folder cannot be edited after its run without `check` saying so (issue 40):
claims added, removed or changed (profiles and marks included), a spec.yaml that is not
the registered one, records that disagree with their cell files, judged seeds that any
tuning in the repository ran, seeds and claims re-recorded from scratch, and paper folders
recorded from a dirty work tree."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess

import pytest
import yaml

from drocli.spec.lookups import spec_digest
from tests.conftest import TINY_SPEC, call


def _check(out, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = call("check", out, "--json")
    doc = json.loads(capsys.readouterr().out)
    return code, doc


def _claims(doc) -> dict:
    return {c["id"]: c for c in doc["claims"]}


def _flags(doc) -> dict:
    return {f["what"]: f for f in doc["flags"]}


@pytest.fixture
def recorded(tiny_spec, tmp_path, capsys):
    """A tiny folder with three seeds and two claims, as its run left it."""
    raw = yaml.safe_load(tiny_spec.read_text())
    raw["seeds"] = [0, 1, 2]
    raw["claims"].append({**raw["claims"][0], "id": "second", "text": "second claim"})
    tiny_spec.write_text(yaml.safe_dump(raw))
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    code, doc = _check(out, capsys)
    assert doc["flags"] == [] and code in (0, 1)
    return tiny_spec, raw, out


def _revise(spec_path, raw, out):
    spec_path.write_text(yaml.safe_dump(raw))
    assert call("run", spec_path, "--out", out, "-q") == 0       # spec revised only


def test_a_claim_moved_out_of_the_profile_after_its_run_is_flagged(recorded, capsys):
    spec_path, raw, out = recorded
    raw["claims"][1]["profiles"] = ["smoke"]          # the folder is the paper profile
    _revise(spec_path, raw, out)
    code, doc = _check(out, capsys)
    assert _claims(doc)["second"]["status"] == "skipped"
    flag = _flags(doc)["claim_profiles"]
    assert "'second'" in flag["line"] and "moved after its run" in flag["line"]


def test_a_claim_whose_profiles_or_mark_changed_is_post_hoc(recorded, capsys):
    spec_path, raw, out = recorded
    raw["claims"][0]["profiles"] = ["paper", "smoke"]      # still judged here
    raw["claims"][1]["reproduced"] = False
    raw["claims"][1]["cause"] = {"kind": "genuine",
                                 "note": "the mark changed after the run, on purpose"}
    _revise(spec_path, raw, out)
    got = _claims(_check(out, capsys)[1])
    assert got["below_start"]["registration"]["status"] == "post_hoc"   # fixed anew
    assert got["second"]["registration"]["status"] == "post_hoc"
    man = json.loads((out / "manifest.json").read_text())
    assert man["claims"]["below_start"]["earlier"][0]["profiles"] is None


def test_profiles_edited_by_hand_are_post_hoc(recorded, capsys):
    """spec.yaml's profiles edited without `run` (the manifest's registration untouched)."""
    _, _, out = recorded
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    saved["claims"][0]["profiles"] = ["paper", "smoke"]
    (out / "spec.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    reg = _claims(_check(out, capsys)[1])["below_start"]["registration"]
    assert reg["status"] == "post_hoc" and "profiles changed" in reg["why"]


def test_a_claim_removed_after_its_run_is_flagged(recorded, capsys):
    spec_path, raw, out = recorded
    del raw["claims"][1]
    _revise(spec_path, raw, out)
    man = json.loads((out / "manifest.json").read_text())
    assert man["claims"]["second"]["removed"]               # the ledger only grows
    code, doc = _check(out, capsys)
    assert "removed after its run" in _flags(doc)["claim_removed"]["line"]
    capsys.readouterr()
    call("check", out)
    text = capsys.readouterr().out
    assert any(line.startswith("FLAG") and "'second'" in line for line in text.splitlines())


def test_a_claim_added_after_its_run_is_post_hoc(recorded, capsys):
    spec_path, raw, out = recorded
    raw["claims"].append({**raw["claims"][0], "id": "third", "text": "a third claim"})
    _revise(spec_path, raw, out)
    got = _claims(_check(out, capsys)[1])
    assert got["third"]["registration"]["status"] == "post_hoc"
    assert got["below_start"]["registration"]["status"] == "preregistered"


def test_spec_and_hash_edited_together_are_caught(recorded, capsys):
    """A claim's threshold edited in spec.yaml with its registered hash made to match."""
    from drocli.claims import validate_claim
    from drocli.claims.registration import claim_hash

    _, _, out = recorded
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    saved["claims"][0]["margin"] = -10.0
    (out / "spec.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    man = json.loads((out / "manifest.json").read_text())
    man["claims"]["below_start"]["sha1"] = claim_hash(validate_claim(saved["claims"][0]))
    (out / "manifest.json").write_text(json.dumps(man))
    code, doc = _check(out, capsys)
    assert _claims(doc)["below_start"]["registration"]["status"] == "preregistered"
    flag = _flags(doc)["spec_digest"]
    assert flag["tampered"] and "edited after the run" in flag["line"]
    assert code == 1 and doc["ok"] is False
    # the same spec written back: nothing to flag
    man["spec_sha1"] = spec_digest((out / "spec.yaml").read_text())
    (out / "manifest.json").write_text(json.dumps(man))
    assert "spec_digest" not in _flags(_check(out, capsys)[1])


def test_records_that_disagree_with_their_cell_files_are_caught(recorded, capsys):
    from drocli.results.integrity import file_digest

    _, _, out = recorded
    path = out / "records.csv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    header = lines[0].split(",")
    col = header.index("value")
    row = lines[-1].split(",")
    row[col] = repr(float(row[col]) - 0.25)                 # one final value lowered
    lines[-1] = ",".join(row)
    with gzip.open(path, "wb") as fh:
        fh.write(("\n".join(lines) + "\n").encode())
    man = json.loads((out / "manifest.json").read_text())
    man["records_sha256"] = file_digest(path, "sha256")    # checksum forged to match
    (out / "manifest.json").write_text(json.dumps(man))
    code, doc = _check(out, capsys)
    flag = _flags(doc)["cell_rows"]
    assert flag["tampered"] and "1 cell(s)" in flag["line"] and code == 1


def test_judged_seeds_that_a_repository_tuning_ran_are_flagged(tmp_path, capsys):
    """No `tuning:` block: a tuning spec of the same data, problem and solver in the
    repository's experiments/tuning/ ran seed 1, which the folder judges."""
    repo = tmp_path / "repo"
    (repo / "experiments" / "tuning").mkdir(parents=True)
    raw = yaml.safe_load(TINY_SPEC)
    raw["seeds"] = [0, 1, 2]
    (repo / "experiments" / "tiny.yaml").write_text(yaml.safe_dump(raw))
    tune = {**raw, "name": "tiny_grid", "seeds": [1], "claims": [], "figures": []}
    (repo / "experiments" / "tuning" / "tiny_grid.yaml").write_text(yaml.safe_dump(tune))
    out = repo / "runs" / "tiny"
    assert call("run", repo / "experiments" / "tiny.yaml", "--out", out, "-q") == 0
    got = _claims(_check(out, capsys)[1])
    assert got["below_start"]["tuned_on"] == [1]
    # another data source's tuning does not concern it
    tune["data"] = {**tune["data"], "name": "other_source"}
    (repo / "experiments" / "tuning" / "tiny_grid.yaml").write_text(yaml.safe_dump(tune))
    assert _claims(_check(out, capsys)[1])["below_start"]["tuned_on"] == []


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    (root / "experiments").mkdir(parents=True)
    raw = yaml.safe_load(TINY_SPEC)
    raw["seeds"] = [0, 1, 2]
    (root / "experiments" / "tiny.yaml").write_text(yaml.safe_dump(raw))
    (root / ".gitignore").write_text("/results/*/cells/\n/results/*/.lock\n/runs/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "spec")
    return root, raw


def test_a_paper_folder_is_recorded_from_a_clean_tree_only(repo, capsys):
    root, raw = repo
    spec = root / "experiments" / "tiny.yaml"
    (root / "notes.txt").write_text("an untracked file counts")
    capsys.readouterr()
    assert call("run", spec, "--out", root / "results" / "tiny", "-q") == 2
    err = capsys.readouterr().err
    assert "clean work tree" in err and "notes.txt" in err and "Traceback" not in err
    assert not (root / "results").exists()                  # nothing written
    # elsewhere the run goes on and records the tree state
    assert call("run", spec, "--out", root / "runs" / "tiny", "-q") == 0
    man = json.loads((root / "runs" / "tiny" / "manifest.json").read_text())
    assert man["git_dirty"] is True and "notes.txt" in man["git_changed"]
    (root / "notes.txt").unlink()
    assert call("run", spec, "--out", root / "results" / "tiny", "-q") == 0
    man = json.loads((root / "results" / "tiny" / "manifest.json").read_text())
    assert man["git_dirty"] is False                         # its own folder does not count


def test_a_folder_re_recorded_from_scratch_keeps_when_its_seeds_were_first_seen(repo,
                                                                                 capsys):
    """The claim is reworded after seeds 0-2 were recorded and committed; the folder is
    deleted and run again with seeds 3-5 added: the reworded claim is post hoc on 0-2 and
    confirmed on 3-5 alone (the MERO case of issue 40)."""
    root, raw = repo
    spec = root / "experiments" / "tiny.yaml"
    out = root / "results" / "tiny"
    assert call("run", spec, "--out", out, "-q") == 0
    first = json.loads((out / "manifest.json").read_text())["seen"]
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "recorded")
    raw["claims"][0]["text"] = "ALEG ends below SMD (reworded)"
    raw["seeds"] = [0, 1, 2, 3, 4, 5]
    spec.write_text(yaml.safe_dump(raw))
    _git(root, "commit", "-qam", "reworded, seeds added")
    shutil.rmtree(out)
    assert call("run", spec, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    for s in ("0", "1", "2"):
        assert man["seen"]["seeds"][s] == first["seeds"][s]
    assert man["seen"]["claims"]["below_start"] == first["claims"]["below_start"]
    reg = _claims(_check(out, capsys)[1])["below_start"]["registration"]
    assert reg["status"] == "confirmed" and reg["confirmed_seeds"] == [3, 4, 5]


def test_a_claim_removed_before_a_fresh_run_is_history(recorded, capsys):
    """A confirm run on fresh seeds inherits its pilot's ledger: a claim removed before any
    of its cells ran is kept as removed but not flagged."""
    spec_path, raw, out = recorded
    del raw["claims"][1]
    raw["seeds"] = [10, 11, 12]               # every cell fresh
    spec_path.write_text(yaml.safe_dump(raw))
    assert call("run", spec_path, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["claims"]["second"]["removed"]
    code, doc = _check(out, capsys)
    assert "claim_removed" not in _flags(doc)


def test_cell_rows_compare_numbers_as_numbers():
    """A cell file's None value (legacy) matches the records' NaN; 1 matches 1.0; a
    different number or text does not."""
    from drocli.results.flags import _same

    assert _same(None, float("nan")) and _same(float("nan"), None) and _same(1, 1.0)
    assert not _same(0.5, 0.25) and not _same(None, 0.0) and not _same("m", "n")


def test_cell_rows_on_arrays_agree_with_same_field_by_field():
    """flags._Recorded compares a cell file's rows with the records on arrays; its answer
    equals `_same` field by field, cell by cell, for untouched cells and for cells with a
    value moved, a metric renamed, a row dropped, a None for a NaN, an int for a float, and
    with a text column where numbers go (the field-by-field path)."""
    import math

    import numpy as np
    import pandas as pd

    from drocli.results.flags import _Recorded, _same

    rng = np.random.default_rng(7)
    frames, files = [], {}
    for c in range(12):
        n = int(rng.integers(1, 6))
        rows = [[s, 10 * s, 0.1 * s, "m" if s % 2 else "k",
                 float(rng.normal()) if s != 2 else math.nan] for s in range(n)]
        frames.append(pd.DataFrame(rows, columns=["step", "oracle_calls", "time_s",
                                                  "metric", "value"]).assign(cell=f"c{c}"))
        files[f"c{c}"] = [list(r) for r in rows]
    # the cells' rows interleaved, each cell's in step order (as a merged table holds them)
    df = pd.concat(frames, ignore_index=True).sort_values(["step", "cell"], kind="stable")
    files["c1"][0][4] += 0.5
    files["c2"][-1][3] = "other"
    files["c3"] = files["c3"][:-1] if len(files["c3"]) > 1 else []
    files["c4"] = [[r[0], r[1], r[2], r[3], None if isinstance(r[4], float)
                    and math.isnan(r[4]) else r[4]] for r in files["c4"]]
    files["c5"] = [[int(r[0]), int(r[1]), r[2], r[3], r[4]] for r in files["c5"]]
    for frame in (df, df.astype({"value": object}).assign(
            value=lambda d: d["value"].map(lambda v: "x" if v == d["value"].iloc[0] else v))):
        rec = _Recorded(frame)
        for cid, rows in files.items():
            mine = frame[frame["cell"] == cid][["step", "oracle_calls", "time_s", "metric",
                                                "value"]].values.tolist()
            want = len(mine) == len(rows) and all(
                _same(a, b) for r, q in zip(mine, rows, strict=True)
                for a, b in zip(r, q, strict=True))
            assert rec.equal(cid, rows) == want, cid
        assert rec.numbers is None or frame is df


def _resign(out, edit):
    """spec.yaml edited by `edit(saved)` and its digest recomputed into the manifest: what
    a hand that knows the digests does."""
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    edit(saved)
    (out / "spec.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    man = json.loads((out / "manifest.json").read_text())
    man["spec_sha1"] = spec_digest((out / "spec.yaml").read_text())
    (out / "manifest.json").write_text(json.dumps(man))


def _swap_labels(saved):
    a, b = saved["solvers"][0], saved["solvers"][1]
    a["label"], b["label"] = b["label"], a["label"]


@pytest.mark.parametrize("edit, words", [
    (_swap_labels, "labels swapped after the run"),
    (lambda s: s["solvers"][1]["params"].update(gamma_w=0.02), "are not cells of spec.yaml"),
    (lambda s: s["budget"].update(epochs=5), "are not cells of spec.yaml"),
    (lambda s: s.update(seeds=[0, 1, 7]), "neither in the records nor in the manifest"),
    (lambda s: s.update(seeds=[0, 1]), "are not cells of spec.yaml"),
])
def test_spec_edits_with_their_digest_recomputed_are_flagged(recorded, capsys, edit, words):
    """Issue 56: check re-derives the cells from spec.yaml, whatever the digests say."""
    _, _, out = recorded
    _resign(out, edit)
    code, doc = _check(out, capsys)
    assert "spec_digest" not in _flags(doc)                 # the digest agrees
    lines = [f for f in doc["flags"] if f["what"] == "cells_rederived"]
    assert lines and all(f["tampered"] for f in lines)
    assert any(words in f["line"] for f in lines), lines
    assert code == 1 and doc["ok"] is False


def test_without_the_spec_s_plug_in_the_cells_are_not_re_derived_and_it_says_so(
        recorded, capsys, monkeypatch):
    from drocli.plugins import registry

    _, _, out = recorded
    monkeypatch.delitem(registry._REGISTRY["solver"], "aleg")
    capsys.readouterr()
    call("check", out, "--json", "--no-cache")
    doc = json.loads(capsys.readouterr().out)
    flag = _flags(doc)["cells_not_rederived"]
    assert not flag["tampered"] and "aleg" in flag["line"]
    assert "cells_rederived" not in _flags(doc)


def test_a_committed_folder_edited_with_its_digests_recomputed_is_flagged(repo, capsys):
    """Issue 56: records without cells/ (as committed paper folders are), a number changed
    and `records_sha256` recomputed; then `git_dirty` unset by hand on a dirty folder."""
    from drocli.results.integrity import file_digest

    root, _ = repo
    out = root / "results" / "tiny"
    assert call("run", root / "experiments" / "tiny.yaml", "--out", out, "-q") == 0
    shutil.rmtree(out / "cells")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "recorded")
    assert _check(out, capsys)[1]["flags"] == []
    path = out / "records.csv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    value = lines[0].split(",").index("value")
    cols = lines[1].split(",")
    cols[value] = repr(float(cols[value]) - 0.002)
    lines[1] = ",".join(cols)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    man = json.loads((out / "manifest.json").read_text())
    man["records_sha256"] = file_digest(path, "sha256")
    (out / "manifest.json").write_text(json.dumps(man))
    code, doc = _check(out, capsys)
    flag = _flags(doc)["manifest_edited"]
    assert flag["tampered"] and "records_sha256" in flag["line"] and code == 1
    # a folder recorded dirty, committed so, then marked clean by hand
    _git(root, "checkout", "-q", "--", "results")
    man = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**man, "git_dirty": True}))
    _git(root, "commit", "-qam", "a dirty folder moved in")
    code, doc = _check(out, capsys)
    assert not _flags(doc)["dirty_tree"]["tampered"] and "manifest_edited" not in _flags(doc)
    (out / "manifest.json").write_text(json.dumps({**man, "git_dirty": False}))
    flag = _flags(_check(out, capsys)[1])["manifest_edited"]
    assert "git_dirty" in flag["line"]


def test_a_claims_profiles_edited_by_hand_with_the_digest_recomputed_is_flagged(recorded,
                                                                                capsys):
    """Issue 56: the registered `profiles` are part of the registration: spec.yaml skipping
    a claim the ledger registered for the folder's profile is an edit, whatever the digest."""
    _, _, out = recorded
    _resign(out, lambda s: s["claims"][1].update(profiles=["smoke"]))
    code, doc = _check(out, capsys)
    assert _claims(doc)["second"]["status"] == "skipped"
    flag = _flags(doc)["claim_profiles"]
    assert flag["tampered"] and "edited after the run" in flag["line"] and code == 1


def test_new_manifests_digest_the_records_with_sha256_and_sha1_ones_still_read(recorded,
                                                                               capsys):
    import hashlib

    _, _, out = recorded
    man = json.loads((out / "manifest.json").read_text())
    raw = (out / "records.csv.gz").read_bytes()
    assert man["records_sha256"] == hashlib.sha256(raw).hexdigest()
    assert "records_sha1" not in man
    del man["records_sha256"]                          # as a manifest written before
    man["records_sha1"] = hashlib.sha1(raw).hexdigest()
    (out / "manifest.json").write_text(json.dumps(man))
    assert _check(out, capsys)[1]["flags"] == []
    man["records_sha1"] = hashlib.sha1(raw + b"x").hexdigest()
    (out / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert call("check", out) == 2
    assert "differs from what the run wrote" in capsys.readouterr().err
