"""A re-run with nothing to do is recognised from the manifest's run key, without loading
the spec: same spec bytes, profile, --set values and drocli source, every cell finished and
the records intact. Anything else takes the full path."""

from __future__ import annotations

import subprocess
import sys

from drocli.run import resume
from drocli.run.resume import nothing_to_do, run_key
from tests.conftest import call

PROBE = ("import sys; from drocli.cli import main\n"
         "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\n"
         "print('HEAVY', sorted(m for m in ('pydantic', 'pandas', 'numba', 'numpy')"
         " if m in sys.modules), file=sys.stderr)\n")


def _rerun(*args):
    return subprocess.run([sys.executable, "-c", PROBE, "run", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_same_run_again_loads_nothing(tiny_spec, tmp_path):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    res = _rerun(tiny_spec, "--out", out)
    assert res.returncode == 0, res.stderr
    assert "cells done and records current" in res.stderr
    assert "HEAVY []" in res.stderr                   # no spec, plug-in or pandas loaded
    assert before == {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}


def test_any_difference_takes_the_full_path(tiny_spec, tmp_path, monkeypatch):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    key = run_key(tiny_spec, None, ())
    assert nothing_to_do(out, key) is not None
    assert nothing_to_do(out, run_key(tiny_spec, "smoke", ())) is None         # profile
    assert nothing_to_do(out, run_key(tiny_spec, None, ("seeds=1",))) is None  # --set
    monkeypatch.setattr(resume, "_SOURCE", "another drocli")                   # code edited
    assert nothing_to_do(out, run_key(tiny_spec, None, ())) is None
    monkeypatch.setattr(resume, "_SOURCE", None)
    tiny_spec.write_text(tiny_spec.read_text() + "# a comment\n")             # spec edited
    assert nothing_to_do(out, run_key(tiny_spec, None, ())) is None
    rec = out / "records.csv.gz"                                               # records
    data = rec.read_bytes()
    rec.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert nothing_to_do(out, key) is None
    rec.write_bytes(data)
    assert nothing_to_do(out, key) is not None
    res = _rerun(tiny_spec, "--out", out)             # full path after the spec edit
    assert res.returncode == 0 and "pydantic" in res.stderr.split("HEAVY")[-1]


def test_force_and_unfinished_cells_take_the_full_path(tiny_spec, tmp_path):
    import json

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    key = run_key(tiny_spec, None, ())
    man = json.loads((out / "manifest.json").read_text())
    first = next(iter(man["cells"]))
    man["cells"][first]["status"] = "failed"
    (out / "manifest.json").write_text(json.dumps(man))
    assert nothing_to_do(out, key) is None
    assert nothing_to_do(tmp_path / "nowhere", key) is None


def test_recorded_folder_without_cell_files(tiny_spec, tmp_path, capsys):
    """A folder kept as in git (records, manifest, spec; no cells/): the same spec finds all
    cells done; a revised title (same cell ids) rewrites only spec.yaml and the manifest."""
    import shutil

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    shutil.rmtree(out / "cells")
    records = (out / "records.csv.gz").read_bytes()
    capsys.readouterr()
    # the same seeds through --set: another run key, so the full path decides (same cells)
    assert call("run", tiny_spec, "--set", "seeds=[0, 1]", "--out", out) == 0
    assert "cells done and records current" in capsys.readouterr().err
    revised = tmp_path / "revised.yaml"
    revised.write_text(tiny_spec.read_text().replace("title: Tiny GDRO", "title: Revised"))
    assert call("run", revised, "--out", out) == 0
    assert "spec.yaml updated" in capsys.readouterr().err
    assert "Revised" in (out / "spec.yaml").read_text()
    assert (out / "records.csv.gz").read_bytes() == records
    assert not (out / "cells").exists()


def test_revised_spec_on_a_finished_run_keeps_its_provenance(tiny_spec, tmp_path, capsys):
    """A run's folder (cell files kept) whose cells are all finished: a revised spec (same cell
    ids) rewrites spec.yaml and notes the revision; when and how the cells ran, and the
    records, stay as they were (they were overwritten by the re-run's clock and -j)."""
    import json

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q", "-j", "2") == 0
    before = json.loads((out / "manifest.json").read_text())
    records = (out / "records.csv.gz").read_bytes()
    revised = tmp_path / "revised.yaml"
    revised.write_text(tiny_spec.read_text().replace("title: Tiny GDRO", "title: Revised"))
    capsys.readouterr()
    assert call("run", revised, "--out", out, "-j", "1") == 0
    assert "spec.yaml updated" in capsys.readouterr().err
    after = json.loads((out / "manifest.json").read_text())
    for key in ("started", "finished", "n_jobs", "backend", "cells", "records_sha256"):
        assert after[key] == before[key], key
    assert after["spec_revised"]["at"] >= before["finished"]
    assert after["spec_sha1"] != before["spec_sha1"]
    assert "Revised" in (out / "spec.yaml").read_text()
    assert (out / "records.csv.gz").read_bytes() == records
    # and the revised folder is then up to date: nothing to do
    assert call("run", revised, "--out", out) == 0
    assert "records current" in capsys.readouterr().err


def test_dry_run_agrees_with_run_on_a_recorded_folder(tiny_spec, tmp_path, capsys):
    """A folder kept without its cell files (as results/ in git): --dry-run says every cell
    is done, as `run` decides, and names the folder; --force shows every cell to run."""
    import shutil

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    shutil.rmtree(out / "cells")
    capsys.readouterr()
    assert call("run", tiny_spec, "--out", out, "--dry-run") == 0
    got = capsys.readouterr()
    assert f"4 cells, 4 done, 0 to run -> {out}" in got.err
    assert got.out.count("  done  ") == 4
    assert call("run", tiny_spec, "--out", out, "--dry-run", "--force") == 0
    assert capsys.readouterr().out.count("  todo  ") == 4
    assert call("run", tiny_spec, "--out", out) == 0
    assert "all 4 cells done and records current" in capsys.readouterr().err


def test_recorded_folder_runs_only_the_new_cells(tiny_spec, tmp_path, capsys):
    """A folder kept without its cell files (as results/ in git) and a spec that adds a
    seed: only the new seed's cells run; the recorded cells keep their rows and the time
    they first ran (--dry-run says the same)."""
    import json
    import shutil

    import pandas as pd

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    before = pd.read_csv(out / "records.csv.gz")
    first = json.loads((out / "manifest.json").read_text())["cells"]
    shutil.rmtree(out / "cells")
    tiny_spec.write_text(tiny_spec.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    capsys.readouterr()
    assert call("run", tiny_spec, "--out", out, "--dry-run") == 0
    assert "6 cells, 4 done, 2 to run" in capsys.readouterr().err
    assert call("run", tiny_spec, "--out", out) == 0
    assert "6 cells, 4 already done, 2 to run" in capsys.readouterr().err
    after = pd.read_csv(out / "records.csv.gz")
    old = after[after["seed"].isin([0, 1])].reset_index(drop=True)
    pd.testing.assert_frame_equal(old[before.columns], before, check_dtype=False)
    cells = json.loads((out / "manifest.json").read_text())["cells"]
    assert all(cells[k]["at"] == v["at"] for k, v in first.items())
