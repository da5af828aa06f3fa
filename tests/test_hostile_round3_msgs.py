"""Round 3 of hostile inputs (issue 43): a gzip bomb as the records, OSErrors without a path,
forged manifest fields, symbolic link loops, and distributed's version filter (its table in
a run: tests/test_cluster.py). Each ends in one line naming the file and the fix, exit 2,
with bounded memory and nothing written."""

from __future__ import annotations

import hashlib
import json
import os
import tracemalloc
import zlib
from pathlib import Path

import pytest

from tests.conftest import call
from tests.test_hostile import one_line_exit_2

BOMB_MIB = 256          # what the bomb decompresses to; about 1 MiB as records.csv.gz
MAX_PEAK = 96 << 20     # what reading it may cost (the old code held all 256 MiB, twice)


@pytest.fixture
def done_run(tiny_spec, tmp_path):
    """A finished run of the tiny spec."""
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    return out


def _bomb(fill: bytes = b"\0", mib: int = BOMB_MIB) -> bytes:
    """A gzip file of `mib` MiB of `fill` (zeros, or line ends), built block by block."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = fill * (1 << 20)
    return b"".join([*(z.compress(block) for _ in range(mib)), z.flush()])


def _peak(fn) -> tuple:
    """(fn(), the most memory Python held meanwhile, in bytes)."""
    tracemalloc.start()
    try:
        return fn(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _plant(folder: Path, bomb: bytes, *, seal: bool) -> None:
    """The bomb as the folder's records; with `seal`, a manifest forged to match it (its
    checksum; the row count kept)."""
    (folder / "records.csv.gz").write_bytes(bomb)
    if seal:
        man = json.loads((folder / "manifest.json").read_text())
        man["records_sha256"] = hashlib.sha256(bomb).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(man))


@pytest.mark.parametrize("command", ["check", "plot", "report"])
def test_a_gzip_bomb_as_records_is_refused_by_its_checksum_first(command, done_run, tmp_path,
                                                                 capsys):
    """The manifest's checksum is checked on the compressed bytes, before decompressing:
    the old code gunzipped the bomb (a 4 MB one: 70 s and 4 GB, or exit 3 MemoryError)."""
    assert call("check", done_run) in (0, 1)          # everything imported, then measured
    capsys.readouterr()
    _plant(done_run, _bomb(), seal=False)
    rep = tmp_path / "rep"
    args = [command, done_run, *(["--out", rep] if command != "check" else [])]
    code, peak = _peak(lambda: call(*args))
    one_line_exit_2(code, capsys, str(done_run / "records.csv.gz"), "checksum", "fix:")
    assert peak < MAX_PEAK, peak
    assert not rep.exists() and not (done_run / "figures").exists()


@pytest.mark.parametrize("fill,words", [(b"\0", "holds a line of more than"),
                                        (b"\n", "more than its rows can take")])
def test_a_gzip_bomb_with_a_forged_manifest_is_stopped_early(fill, words, done_run, capsys):
    """A manifest forged to seal the bomb: gunzipping stops at a line longer than any row
    (zeros) or past what the manifest's rows can take (line ends), memory bounded."""
    assert call("check", done_run) in (0, 1)
    capsys.readouterr()
    _plant(done_run, _bomb(fill), seal=True)
    code, peak = _peak(lambda: call("check", done_run))
    one_line_exit_2(code, capsys, str(done_run / "records.csv.gz"), words, "fix:")
    assert peak < MAX_PEAK, peak


def test_a_forged_bomb_is_stopped_when_run_adopts_recorded_cells(done_run, tiny_spec,
                                                                 capsys):
    """`run` adopting a recorded folder's cells (no cell files, one more seed) reads the
    records: the forged bomb is refused there too, in bounded memory."""
    import shutil

    shutil.rmtree(done_run / "cells")
    _plant(done_run, _bomb(), seal=True)
    more = tiny_spec.with_name("more.yaml")
    more.write_text(tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    code, peak = _peak(lambda: call("run", more, "--profile", "smoke", "--out", done_run,
                                    "-q"))
    one_line_exit_2(code, capsys, str(done_run / "records.csv.gz"), "fix:")
    assert peak < MAX_PEAK, peak


def test_a_gzip_bomb_as_a_recorded_tunings_manifest_is_not_expanded(tmp_path):
    """experiments/tuning/records/*/manifest.json.gz (at most 8 MiB) was gunzipped whole by
    `check` and `report` (which look for the seeds a tuning ran): now at most 8 MiB."""
    from drocli.results.tuning_records import _recorded_seeds

    folder = tmp_path / "experiments" / "tuning" / "records" / "t"
    folder.mkdir(parents=True)
    (folder / "spec.yaml").write_text("name: t\n")
    (folder / "manifest.json.gz").write_bytes(_bomb(b" "))
    seeds, peak = _peak(lambda: _recorded_seeds(folder / "spec.yaml"))
    assert seeds == set() and peak < MAX_PEAK, peak


def test_intact_records_still_read(done_run, capsys):
    """The checksum and the bounds pass what `run` wrote."""
    from drocli.results.integrity import read_checked

    df, completeness = read_checked(done_run)
    assert len(df) == json.loads((done_run / "manifest.json").read_text())["records_rows"]
    assert completeness.complete


@pytest.mark.parametrize("value,shown", [("ROWS", "the text 'ROWS'"), (60.5, "60.5"),
                                         (-1, "-1"), (True, "True"), ([60], "a list")])
def test_a_manifest_row_count_that_is_not_a_number_of_rows(value, shown, done_run, capsys):
    """records_rows as the text "60" (the right count) was refused as "has 60 rows, the
    manifest says 60"."""
    path = done_run / "manifest.json"
    man = json.loads(path.read_text())
    rows = str(man["records_rows"])
    man["records_rows"] = rows if value == "ROWS" else value
    shown = shown.replace("ROWS", rows)
    path.write_text(json.dumps(man))
    for cmd in ("check", "plot"):
        err = one_line_exit_2(call(cmd, done_run), capsys, str(path), "records_rows",
                              f"is {shown}, not a number of rows", "fix:")
        assert "the manifest says" not in err


def test_a_manifest_checksum_that_is_not_one(done_run, capsys):
    path = done_run / "manifest.json"
    man = json.loads(path.read_text())
    man["records_sha256"] = 12345
    path.write_text(json.dumps(man))
    one_line_exit_2(call("check", done_run), capsys, str(path), "records_sha256",
                    "not a SHA-256 checksum")
    man["records_sha256"] = "ab" * 20                   # a SHA-1's length: not one either
    path.write_text(json.dumps(man))
    one_line_exit_2(call("check", done_run), capsys, str(path), "records_sha256",
                    "(64 hex digits)")


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
def test_an_unreadable_spec_or_folder_file_is_named(done_run, capsys):
    """A read that fails on the open file (EIO: /proc/self/mem stats as an empty regular
    file) printed "Input/output error" without the path."""
    one_line_exit_2(call("run", "/proc/self/mem"), capsys, "/proc/self/mem: Input/output "
                    "error", "give a regular file")
    spec = done_run / "spec.yaml"
    spec.unlink()
    spec.symlink_to("/proc/self/mem")
    one_line_exit_2(call("check", done_run), capsys, str(spec), "Input/output error", "fix:")


def test_symbolic_link_loops_are_named_as_such(tiny_spec, tmp_path, capsys, monkeypatch):
    """`ln -s loop loop` as a spec, a results folder or --out (or a path under one) was
    "file not found", "results folder not found" or "File exists"."""
    monkeypatch.chdir(tmp_path)
    Path("loop").symlink_to("loop")
    word = "is a symbolic link loop (ELOOP"
    for args in (["run", "loop"], ["show", "loop"], ["check", "loop"], ["plot", "loop"],
                 ["report", "loop", "--out", "rep"], ["run", tiny_spec, "--out", "loop"]):
        one_line_exit_2(call(*args), capsys, "loop: " + word, "make the link point")
    one_line_exit_2(call("run", "loop/x.yaml"), capsys, "loop/x.yaml: lies under loop, which "
                    + word)
    assert sorted(os.listdir(tmp_path)) == ["loop", "tiny.yaml"]


def test_version_warnings_are_quiet_only_while_a_client_is_held():
    """The filter is dropped with the client (the process's warnings as before)."""
    import warnings

    pytest.importorskip("dask.distributed")
    from distributed.versions import VersionMismatchWarning

    from drocli.run.backends import _Quiet

    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with _Quiet():
            warnings.warn(VersionMismatchWarning("Mismatched versions found\n\n+---+"),
                          stacklevel=1)
        assert not seen
        warnings.warn(VersionMismatchWarning("Mismatched versions found"), stacklevel=1)
        assert len(seen) == 1
    assert warnings.filters == before


def test_a_gzip_bomb_without_a_manifest_is_stopped_by_its_ratio(done_run, capsys):
    """No manifest to bound the rows: gunzipping stops at 64 MiB plus 100 times the
    compressed size (tidy records compress 9-10x). A 1 GiB bomb of line ends (1 MB
    compressed) was read whole by the old code (bounded at 4 GiB only)."""
    from drocli.results.records import MAX_RATIO, ROWS_SLACK

    assert call("check", done_run) in (0, 1)
    capsys.readouterr()
    (done_run / "manifest.json").unlink()
    bomb = _bomb(b"\n", 1024)
    _plant(done_run, bomb, seal=False)
    code, peak = _peak(lambda: call("check", done_run))
    one_line_exit_2(code, capsys, str(done_run / "records.csv.gz"), "a records file of its "
                    "size holds", "fix:")
    assert peak < ROWS_SLACK + MAX_RATIO * len(bomb) + (32 << 20) < (1 << 30) // 4, peak
