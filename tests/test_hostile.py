"""Hostile input: a results folder belongs to its experiment, parsing is bounded, OS errors
are the user's to fix (exit 2, one line with the path), and nothing already written is lost.
The cases are the ones of the issue "Nothing lost, nothing escapes"."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import call, names_file

SPECS = Path(__file__).resolve().parents[1] / "experiments"


def snapshot(folder: Path) -> dict:
    """path -> sha1 of every file under `folder` (what must not change)."""
    return {str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line_exit_2(code, capsys, *words) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, err
    return err


@pytest.fixture
def done_run(tiny_spec, tmp_path):
    """A finished run of the tiny spec (experiment `tiny`)."""
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    return out


def test_refuses_a_folder_that_is_not_drocli(tiny_spec, tmp_path, capsys):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "records.csv").write_text("my,own\n1,2\n")
    (user / "spec.yaml").write_text("precious: true\n")
    before = snapshot(user)
    for extra in ([], ["--force"]):
        code = call("run", tiny_spec, "--profile", "smoke", "--out", user, "-q", *extra)
        one_line_exit_2(code, capsys, str(user), "not a drocli results folder", "fix:")
        assert snapshot(user) == before


def test_refuses_another_experiments_folder(done_run, tiny_spec, tmp_path, capsys):
    other = tmp_path / "other.yaml"
    other.write_text(tiny_spec.read_text().replace("name: tiny", "name: other"))
    before = snapshot(done_run)
    for extra in ([], ["--force"]):
        code = call("run", other, "--profile", "smoke", "--out", done_run, "-q", *extra)
        one_line_exit_2(code, capsys, "belongs to experiment 'tiny'", "fix:")
        assert snapshot(done_run) == before
    assert call("check", done_run) in (0, 1)              # still checks (verdicts) and plots
    assert call("plot", done_run) == 0


def test_same_experiment_resumes_and_force_reruns(done_run, tiny_spec, capsys):
    mark = (done_run / ".drocli.json").read_text()
    assert '"experiment": "tiny"' in mark
    before = snapshot(done_run)
    assert call("run", tiny_spec, "--profile", "smoke", "--out", done_run) == 0
    assert "all 4 cells done and records current" in capsys.readouterr().err
    assert snapshot(done_run) == before                     # a resumed run rewrites nothing
    assert call("run", tiny_spec, "--profile", "smoke", "--out", done_run, "--force") == 0
    assert (done_run / ".drocli.json").read_text() == mark


def test_adopts_a_results_folder_written_before_marks(done_run, tiny_spec):
    (done_run / ".drocli.json").unlink()                  # as folders recorded earlier
    assert call("run", tiny_spec, "--profile", "smoke", "--out", done_run, "-q") == 0
    assert (done_run / ".drocli.json").exists()


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_out_on_a_file(where, tiny_spec, tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    out = f if where == "file" else f / "sub"
    code = call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q")
    one_line_exit_2(code, capsys, "file")
    assert f.read_text() == "x"


def test_files_get_the_users_umask(tiny_spec, tmp_path):
    old = os.umask(0o022)
    try:
        out = tmp_path / "res"
        assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    finally:
        os.umask(old)
    for name in ("records.csv.gz", "manifest.json", "spec.yaml", ".drocli.json"):
        assert (out / name).stat().st_mode & 0o777 == 0o644, name


@pytest.mark.parametrize("value", ['"5-2"', '"a-b"', "[]", "[1, 1]", "0", "100000"])
def test_empty_or_unbounded_seeds_refused_at_load(value, tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--set", f"seeds={value}", "-q")
    one_line_exit_2(code, capsys, "seeds")
    assert not out.exists()


@pytest.mark.parametrize("override,key", [
    ("data.grid={dim: []}", "data.grid"), ("problem.grid={radius: []}", "problem.grid"),
    ("solvers.0.grid={gamma_w: []}", "solvers[0].grid")])
def test_a_grid_key_without_values_refused_at_load(override, key, tiny_spec, tmp_path, capsys):
    """An empty sweep makes no cells (the spec once reached the run and failed there, exit 3,
    found by the fuzzer): refused at load, naming the key."""
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--profile", "smoke", "--out", out, "--set", override, "-q")
    one_line_exit_2(code, capsys, key, "lists no values", "fix:")
    assert not out.exists()


@pytest.mark.parametrize("override,key", [
    ("seeds=[-1, 2]", "seeds[0]"), ("seeds=[0, -5]", "seeds[1]"), ("seeds=[0, 1e30]", "seeds[1]"),
    ("seeds=[true, 2]", "seeds"), ("seeds=[0.5, 1]", "seeds[0]"),
    ('seeds="99999999999999999999-100000000000000000000"', "seeds[0]"),
    ("tuning={source: [x.yaml], seeds: [3, -3]}", "tuning.seeds[1]")])
def test_bad_seeds_in_a_list_refused_at_load(override, key, tiny_spec, tmp_path, capsys):
    """Negative seeds failed cell by cell (SeedSequence), after the folder was written."""
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--set", override, "-q")
    one_line_exit_2(code, capsys, f": {key}: ", "seeds are integers >= 0")
    assert not out.exists()


@pytest.mark.parametrize("budget,word", [
    ("{oracle_calls: 2000000000001, checkpoints: 8}", "DROCLI_MAX_ORACLE_CALLS=2000000000001"),
    ("{oracle_calls: 3e15, checkpoints: 8}", "DROCLI_MAX_ORACLE_CALLS=3000000000000000"),
    ("{epochs: 5e6, checkpoints: 8}", "DROCLI_MAX_EPOCHS=5000000")])
def test_absurd_budgets_refused_at_load(budget, word, tiny_spec, tmp_path, capsys,
                                        monkeypatch):
    """A budget of 1e30 epochs failed in every cell (an int overflow); refused at load with
    the limit and how to raise it, which then works."""
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--set", f"budget={budget}", "-q")
    one_line_exit_2(code, capsys, "budget.", "past the limit", word)
    assert not out.exists()
    var, value = word.split("=")
    monkeypatch.setenv(var, "1e31")
    assert call("show", tiny_spec, "--set", f"budget={budget}") == 0
    monkeypatch.setenv(var, "many")
    one_line_exit_2(call("show", tiny_spec, "--set", f"budget={budget}"), capsys, var)


@pytest.mark.parametrize("budget", ["{oracle_calls: 1e30, checkpoints: 8}",
                                    "{epochs: 1e30, checkpoints: 8}"])
def test_budgets_past_the_counter_refused_whatever_the_limit(budget, tiny_spec, tmp_path,
                                                             capsys, monkeypatch):
    monkeypatch.setenv("DROCLI_MAX_ORACLE_CALLS", "1e40")
    monkeypatch.setenv("DROCLI_MAX_EPOCHS", "1e40")
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--set", f"budget={budget}", "-q")
    one_line_exit_2(code, capsys, "budget.", "largest budget", "a typo?")
    assert not out.exists()


@pytest.mark.parametrize("name", ["../../escape", "a/b", "/tmp/x", "..", ".hidden", "a\nb",
                                  "smoke\n", ""])
@pytest.mark.parametrize("where", ["profiles", "default_profile", "--profile"])
def test_profile_names_are_one_safe_path_component(name, where, tiny_spec, tmp_path, capsys,
                                                   monkeypatch):
    """results/<spec>-<profile>: a profile named ../../escape wrote a results folder outside
    results/. Refused at load, in the spec and on the command line; nothing written."""
    import json

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    text = tiny_spec.read_text()
    args = []
    if where == "profiles":
        text = text.replace("profiles:\n", f"profiles:\n  {json.dumps(name)}: {{seeds: 1}}\n")
        args = ["--profile", name] if name else []
    elif where == "default_profile":
        text += f"default_profile: {json.dumps(name)}\n"
    else:
        args = ["--profile", name]
    spec = work / "spec.yaml"
    spec.write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = call("run", spec, "-q", *args)
    one_line_exit_2(code, capsys, "profile", "safe path component")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sorted(p.name for p in work.iterdir()) == ["spec.yaml"]


@pytest.mark.parametrize("label", ["SMD {nope}", "SMD {gamma_q", "SMD {0}"])
def test_bad_label_templates_refused_at_load(label, tiny_spec, tmp_path, capsys):
    """A swept entry's label template naming an unknown field, or malformed (it was a
    KeyError, exit 3, at expansion)."""
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "-q", "--set", f"solvers.SMD.label={label!r}",
                "--set", "solvers.SMD.grid={gamma_q: [0.1, 0.2]}")
    one_line_exit_2(code, capsys, "label")
    assert not out.exists()


BOMB = """\
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
"""


@pytest.mark.parametrize("place", ["unused_profile", "seeds"])
def test_yaml_alias_bomb_is_refused_fast(place, tiny_spec, tmp_path, capsys):
    text = tiny_spec.read_text()
    lines = BOMB.splitlines()
    if place == "unused_profile":
        bomb = "\n".join(["x_anchors:", *("  " + ln for ln in lines),
                          "  f: [*e, *e, *e, *e, *e, *e, *e, *e, *e]"])
    else:
        bomb = "\n".join(["x_anchors:", *("  " + ln for ln in lines)]).replace(
            "&a [x, x, x, x, x, x, x, x, x, x]", "&a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]")
        text = text.replace("seeds:", "seeds: *e\nold_seeds:")
    spec = tmp_path / "bomb.yaml"
    spec.write_text(bomb + "\n" + text)
    out = tmp_path / "res"
    t0 = time.perf_counter()
    code = call("run", spec, "--out", out, "-q")
    err = one_line_exit_2(code, capsys, str(spec))
    assert time.perf_counter() - t0 < 30 and len(err) < 400
    assert "alias" in err or "nodes" in err
    assert not out.exists()


DEEP = 30_000


@pytest.mark.parametrize("where", ["seeds", "unknown_key", "profile"])
def test_deeply_nested_yaml_is_refused(where, tiny_spec, tmp_path, capsys):
    """YAML nested tens of thousands deep was a RecursionError (exit 3)."""
    text = tiny_spec.read_text()
    if where == "seeds":
        text = text.replace("seeds: [0, 1]", "seeds: " + "[" * DEEP + "0" + "]" * DEEP)
    elif where == "unknown_key":
        text += "x_deep: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n"
    else:
        text = text.replace("smoke: {budget.epochs: 2}", "smoke: {x: " + "[" * DEEP + "]" * DEEP
                            + "}")
    spec = tmp_path / "deep.yaml"
    spec.write_text(text)
    out = tmp_path / "res"
    code = call("run", spec, "--out", out, "-q")
    one_line_exit_2(code, capsys, str(spec), "nested more than 50 levels", "fix:")
    assert not out.exists()


@pytest.mark.parametrize("override,word", [
    ("seeds=" + "[" * DEEP + "0" + "]" * DEEP, "nested more than 50 levels"),
    ("data.params.x=" + "{a: " * DEEP + "1" + "}" * DEEP, "nested more than 50 levels"),
    ("solvers" + ".a" * DEEP + "=1", "more than 50 dotted parts"),
    ("cases.c" + ".a" * DEEP + "=1", "more than 50 dotted parts")])
def test_deeply_nested_set_values_and_keys_are_refused(override, word, tiny_spec, tmp_path,
                                                       capsys):
    out = tmp_path / "res"
    for cmd in (["run", tiny_spec, "--out", out, "-q"], ["show", tiny_spec]):
        code = call(*cmd, "--set", override)
        err = one_line_exit_2(code, capsys, word, "fix:")
        assert len(err) < 400, err
    assert not out.exists()


def test_deeply_nested_profile_keys_are_refused(tiny_spec):
    from drocli.errors import DrocliError
    from drocli.spec import read_yaml, resolve

    raw = read_yaml(tiny_spec)
    raw["profiles"]["smoke"] = {"budget" + ".a" * DEEP: 1}
    with pytest.raises(DrocliError, match="more than 50 dotted parts"):
        resolve(raw, file=str(tiny_spec), profile="smoke")


def test_deeply_nested_json_in_a_results_folder(done_run, tiny_spec, capsys):
    """A manifest nested 100,000 deep is refused (exit 2); such a cell file reads as
    unfinished (not exit 3)."""
    deep = "[" * 100_000 + "]" * 100_000
    cell = sorted((done_run / "cells").glob("*.json"))[0]
    cell.write_text(deep)
    manifest = (done_run / "manifest.json").read_text()
    (done_run / "manifest.json").write_text(deep)
    one_line_exit_2(call("check", done_run), capsys, "manifest.json", "fix:")
    (done_run / "manifest.json").write_text(manifest)
    from drocli.results.records import read_cell

    assert read_cell(done_run, cell.stem) == (None, None)
    assert call("run", tiny_spec, "--profile", "smoke", "--out", done_run, "-q") == 0
    assert call("run", tiny_spec, "--profile", "smoke", "--out", done_run, "-q", "--force") == 0
    assert cell.read_text().startswith("{")


def test_long_error_lines_are_capped(tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "--set", "seeds=[" + "a, " * 3000 + "b]", "-q")
    err = one_line_exit_2(code, capsys, "seeds")
    assert len(err) <= 320 and "[...]" in err and "(fix:" in err


MEMORY_FIX = ("(fix: lower data.params.n_train, use fewer jobs (-j), or pass "
              "--skip-memory-check if you know better)")


@pytest.mark.parametrize("override,key,fix", [
    ("data.params.n_train=1e8", "data.params.n_train", MEMORY_FIX),
    ("metrics=[max_risk_trian]", "metrics[0]", "(fix: did you mean 'max_risk_train'"),
    ("solvers.ALEG.params.gama_w=1", "solvers[0].params.gama_w", "(fix: did you mean"),
])
def test_a_long_spec_path_keeps_the_key_and_the_fix(override, key, fix, tmp_path, capsys):
    """A checkout at a long path: the error line loses the middle of the path, never the
    key path or the fix (the cap cut them)."""
    deep = tmp_path.joinpath(*[f"a_long_folder_of_a_checkout_{i:02d}" for i in range(10)],
                             "experiments")
    deep.mkdir(parents=True)
    spec = deep / "gdro_synthetic.yaml"
    spec.write_text((SPECS / "gdro_synthetic.yaml").read_text())
    assert len(str(spec)) > 300
    out = tmp_path / "out"
    code = call("run", spec, "--out", out, "--set", override, "-q")
    err = one_line_exit_2(code, capsys, f": {key}: ", fix)
    assert names_file(err, spec) and "\u2026/" in err, err
    assert len(err) <= 330 and err.endswith(")"), err
    assert not out.exists()


def test_a_long_os_error_path_keeps_the_fix():
    from drocli.cli import os_error_line

    path = "/" + "/".join(f"folder_{i:03d}" for i in range(60)) + "/records.csv.gz"
    line = os_error_line(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path))
    assert len(line) <= 300 and "/records.csv.gz: " in line and "/folder_000/" in line
    assert line.endswith("(fix: free disk space, or give --out on another disk; re-running "
                         "resumes)")


@pytest.mark.parametrize("option,value", [("--rtol", "nan"), ("--atol", "nan"),
                                          ("--rtol", "inf"), ("--atol", "-inf"),
                                          ("--rtol", "-0.1"), ("--atol", "-1e-9")])
def test_check_refuses_tolerances_that_are_not_numbers_or_negative(option, value, done_run,
                                                                    capsys):
    """NaN compares false, so `--rtol nan` printed MATCHES against any reference."""
    before = snapshot(done_run)
    code = call("check", done_run, "--reference", done_run, f"{option}={value}")
    one_line_exit_2(code, capsys, option, "finite number >= 0")
    assert snapshot(done_run) == before


@pytest.mark.parametrize("jobs", ["0", "-2", "-100"])
def test_bad_job_counts_refused_before_writing(jobs, tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q", "-j", jobs)
    one_line_exit_2(code, capsys, "-j", "fix:")
    assert not out.exists()


def test_absurd_job_counts_refused_before_writing(tiny_spec, tmp_path, capsys):
    """-j had no upper limit (-j 100000 was taken as is). Up to 4 per core is accepted: each
    job is a local process running one CPU-bound cell."""
    limit = 4 * (os.cpu_count() or 1)
    out = tmp_path / "res"
    for jobs in (limit + 1, 100_000, 10 ** 30):
        code = call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q", "-j", jobs)
        one_line_exit_2(code, capsys, "-j/--jobs", "4 per core", f"give -j {limit} or fewer")
        assert not out.exists()
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-j", limit,
                "--dry-run") == 0


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", ""])
def test_bad_dask_timeout_refused_naming_the_variable(value, tiny_spec, tmp_path, capsys,
                                                      monkeypatch):
    monkeypatch.setenv("DROCLI_DASK_TIMEOUT", value)
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q", "--backend", "dask",
                "--scheduler", "tcp://127.0.0.1:1")
    one_line_exit_2(code, capsys, "DROCLI_DASK_TIMEOUT", "fix:")
    assert not out.exists()


def test_labels_spelled_like_missing_values_stay_labels(tiny_spec, tmp_path, capsys):
    """Labels NA, nan, None, null (and a data label null) were read back from the records as
    NaN, and check crashed (exit 3); they are names."""
    from drocli.results.records import read_records

    spec = tmp_path / "na.yaml"
    text = tiny_spec.read_text().replace("label: SMD}", "label: NA}").replace(
        "label: ALEG}", "label: nan}\n  - {name: aleg, label: None, params: {gamma_w: 0.05}}"
        "\n  - {name: smd, label: 'null', params: {gamma_w: 0.05}}").replace(
        "solver: ALEG", "solver: nan").replace("others: [SMD]", "others: [NA, None, 'null']")
    spec.write_text(text.replace("  seed: 0\n", "  seed: 0\n  label: 'NULL'\n", 1))
    out = tmp_path / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    df = read_records(out)
    assert sorted(df["label"].unique()) == ["NA", "None", "nan", "null"]
    assert set(df["dataset"]) == {"NULL"} and not df[["label", "dataset"]].isna().any().any()
    capsys.readouterr()
    assert call("check", out, "--reference", out) in (0, 1)
    got = capsys.readouterr()
    assert "below_start" in got.out and "MATCHES" in got.out and "error" not in got.err, got
    assert call("plot", out) == 0


@pytest.mark.parametrize("where,value", [("solvers.SMD.label", r'"S\0MD"'),
                                         ("solvers.SMD.label", r'"S\nMD"'),
                                         ("solvers.SMD.label", r'"S\e[31mMD"'),
                                         ("solvers.SMD.label", r'"S\u2028MD"'),
                                         ("data.label", r'"gdro\tdata"'),
                                         ("cases", r'{"a\0": {seeds: 2}}')])
def test_control_characters_in_labels_refused_at_load(where, value, tiny_spec, tmp_path,
                                                      capsys):
    out = tmp_path / "res"
    code = call("run", tiny_spec, "--out", out, "-q", "--set", f"{where}={value}")
    one_line_exit_2(code, capsys, str(tiny_spec), "control character", "printable")
    assert not out.exists()


def test_binary_and_huge_specs(tmp_path, capsys):
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_exit_2(call("run", binary, "-q"), capsys, "UTF-8")
    huge = tmp_path / "huge.yaml"
    huge.write_text("# " + "x" * 2_000_000 + "\nname: x\n")
    one_line_exit_2(call("run", huge, "-q"), capsys, "too large")


def _drocli(*args, cwd=None, timeout=120, stdout=None, preexec_fn=None):
    """drocli in a subprocess that must finish within `timeout` seconds (a FIFO or a device
    that is waited on fails the test instead of hanging it): (exit code, stderr)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "drocli", *map(str, args)], cwd=cwd,
                          stdin=subprocess.DEVNULL, stdout=stdout or subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)
    return proc.returncode, proc.stderr.strip()


def _special(path: Path, kind: str) -> None:
    """Make `path` a FIFO, a folder, or a symlink to a character device."""
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(f"/dev/{kind}")


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom"])
def test_a_special_file_as_the_spec_is_refused_not_read(kind, tmp_path):
    """A FIFO blocked run and show forever; /dev/zero exhausted memory (exit 3)."""
    spec = tmp_path / "spec.yaml"
    _special(spec, kind)
    out = tmp_path / "res"
    for args in (["run", spec, "--out", out, "-q"], ["show", spec]):
        code, err = _drocli(*args)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert str(spec) in err and "not a regular file" in err and "fix:" in err, err
    assert not out.exists()


@pytest.mark.parametrize("name,kind", [("records.csv.gz", "fifo"), ("records.csv.gz", "zero"),
                                       ("records.csv.gz", "urandom"), ("spec.yaml", "fifo"),
                                       ("spec.yaml", "zero"), ("manifest.json", "fifo"),
                                       ("manifest.json", "urandom")])
def test_special_files_in_a_results_folder_are_refused_not_read(name, kind, done_run):
    """check and plot blocked on a FIFO records.csv.gz, spec.yaml or manifest.json, and read
    /dev/zero until memory ran out. Refused with the path; a re-run replaces the file."""
    _special(done_run / name, kind)
    before = snapshot(done_run)
    for cmd in ("check", "plot"):
        code, err = _drocli(cmd, done_run)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert str(done_run / name) in err and "not a regular file" in err, err
        assert "re-run" in err, err
    assert snapshot(done_run) == before
    assert not (done_run / "figures").exists()


def test_a_run_replaces_special_files_in_its_folder(done_run, tiny_spec):
    for name, kind in (("records.csv.gz", "fifo"), ("manifest.json", "zero")):
        _special(done_run / name, kind)
    cell = next((done_run / "cells").glob("*.json"))
    _special(cell, "fifo")                                # read as unfinished: run again
    code, err = _drocli("run", tiny_spec, "--profile", "smoke", "--out", done_run, "-q")
    assert code == 0, err
    assert all(p.is_file() and not p.is_symlink()
               for p in (done_run / "records.csv.gz", done_run / "manifest.json", cell))
    assert call("check", done_run) in (0, 1)


@pytest.mark.parametrize("code_,word", [(errno.ENOSPC, "disk space"),
                                        (errno.EROFS, "read-only"),
                                        (errno.EACCES, "permissions"),
                                        (errno.EFBIG, "file-size limit")])
def test_os_errors_are_exit_2_with_path_and_fix(code_, word, tiny_spec, tmp_path, capsys,
                                               monkeypatch):
    """Disk full, a read-only or unwritable folder, a file-size limit: the user's to fix."""
    from drocli.results import records

    target = tmp_path / "res" / "records.csv.gz"

    def fail(path, text):
        raise OSError(code_, os.strerror(code_), str(target))

    monkeypatch.setattr(records, "atomic_write_text", fail)
    code = call("run", tiny_spec, "--profile", "smoke", "--out", tmp_path / "res", "-q")
    one_line_exit_2(code, capsys, str(target), word)


def _edit_records(out: Path, how: str) -> None:
    """Corrupt the records: the text inside the gzip (re-compressed), or the gzip itself."""
    import gzip

    path = out / "records.csv.gz"
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode()
    lines = text.splitlines(keepends=True)
    if how == "cut_in_half":
        path.write_bytes(raw[: len(raw) // 2])                # a cut download / copy
        return
    if how == "text_cut_in_half":
        text = text[: len(text) // 2]
    elif how == "duplicated_rows":
        text += "".join(lines[1:4])
    elif how == "non_numeric":
        head, first = lines[0], lines[1].rstrip("\n").split(",")
        first[head.rstrip("\n").split(",").index("value")] = "abc"
        text = head + ",".join(first) + "\n" + "".join(lines[2:])
    elif how == "row_dropped":
        text = "".join(lines[:-1])
    elif how == "binary":
        path.write_bytes(b"\x00\x01\x02" * 100 + b"\n")
        return
    elif how == "empty":
        text = ""
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


@pytest.mark.parametrize("how", ["cut_in_half", "text_cut_in_half", "duplicated_rows",
                                 "non_numeric", "row_dropped", "binary", "empty"])
def test_check_and_plot_refuse_corrupted_records(how, done_run, capsys):
    _edit_records(done_run, how)
    for cmd in ("check", "plot"):
        one_line_exit_2(call(cmd, done_run), capsys, "records.csv.gz", "fix:")


def test_foreign_rows_refused_and_unfinished_cells_reported(done_run, capsys):
    import json

    man = json.loads((done_run / "manifest.json").read_text())
    del man["records_rows"], man["records_sha256"]           # as a folder edited by hand
    cells = man["cells"]
    first = sorted(cells)[0]
    cells[first]["status"] = "failed"
    (done_run / "manifest.json").write_text(json.dumps(man))
    assert call("check", done_run) == 4           # a claim marked reproduced cannot be judged
    captured = capsys.readouterr()
    verdicts = [ln for ln in captured.out.splitlines() if ln.strip()]
    assert verdicts and all(f"incomplete: {len(cells) - 1} of {len(cells)} cells" in ln
                            for ln in verdicts)
    del cells[first]
    (done_run / "manifest.json").write_text(json.dumps(man))
    one_line_exit_2(call("check", done_run), capsys, "not in the manifest")


def test_check_without_claims_says_so(tiny_spec, tmp_path, capsys):
    spec = tmp_path / "noclaims.yaml"
    text = tiny_spec.read_text()
    spec.write_text(text.split("claims:")[0] + "profiles:" + text.split("profiles:")[1])
    out = tmp_path / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    capsys.readouterr()
    assert call("check", out) == 0
    assert "no claims" in capsys.readouterr().out


# --- data files: checked once, in the parent, before anything is written ---------------------

def _npz(tmp_path, **overrides):
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = {"X_train": rng.standard_normal((30, 4)),
              "y_train": np.where(rng.random(30) < 0.5, -1.0, 1.0),
              "g_train": np.repeat([0, 1, 2], 10)}
    arrays.update(overrides)
    path = tmp_path / "data.npz"
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


def _nan_x():
    import numpy as np

    X = np.ones((30, 4))
    X[3, 2] = np.nan
    return X


NPZ_CASES = {
    "missing_array": ({"g_train": None}, "g_train"),
    "wrong_shape": ({"y_train": "short"}, "y_train"),
    "object_array": ({"X_train": "object"}, "data.npz"),
    "nan_features": ({"X_train": "nan"}, "X_train"),
    "inf_labels": ({"y_train": "inf"}, "y_train"),
    "zero_rows": ({"X_train": "empty"}, "X_train"),
    "huge_group_index": ({"g_train": "huge"}, "g_train"),
    "group_skipped": ({"g_train": "skip"}, "g_train"),
}


@pytest.mark.parametrize("case", list(NPZ_CASES))
def test_malformed_npz_refused_before_writing(case, tiny_spec, tmp_path, capsys):
    import numpy as np

    change, word = NPZ_CASES[case]
    (name, how), = change.items()
    value = {None: None, "short": np.ones(7), "object": np.array([{"a": 1}] * 30, dtype=object),
             "nan": _nan_x(), "inf": np.r_[np.full(29, 1.0), np.inf],
             "empty": np.zeros((0, 4)), "huge": np.r_[np.zeros(29), 1e12],
             "skip": np.repeat([0, 2, 3], 10)}[how]
    path = _npz(tmp_path, **{name: value})
    spec = tmp_path / "npz.yaml"
    spec.write_text(tiny_spec.read_text().replace(
        "name: gdro_synthetic\n  params: {groups: 3, dim: 6, n_train: 40, n_test: 40, "
        "label_noise: 0.1}", f"name: npz\n  params: {{path: {path}}}"))
    assert "name: npz" in spec.read_text()
    out = tmp_path / "res"
    one_line_exit_2(call("run", spec, "--profile", "smoke", "--out", out, "-q"), capsys,
                    str(path), word, "fix:")
    assert not out.exists()


@pytest.mark.parametrize("content", ["1 1:nan 2:0.5\n-1 1:0.2 2:0.1\n", ""])
def test_malformed_libsvm_refused(content, tmp_path, capsys):
    folder = tmp_path / "libsvm"
    folder.mkdir()
    (folder / "bad").write_text(content)
    spec = Path(__file__).resolve().parents[1] / "experiments" / "as_lsvrg_fig6.yaml"
    out = tmp_path / "res"
    code = call("run", spec, "--profile", "smoke", "--out", out, "-q",
                "--set", "data.name=libsvm",
                "--set", f"data.params={{name: bad, path: {folder}, n_features: 2}}")
    one_line_exit_2(code, capsys, "bad")
    assert not out.exists()


def test_truncated_idx_and_gzip_bomb_refused(tmp_path, capsys):
    import gzip

    from drocli.data import idx

    root = Path(__file__).resolve().parents[1] / "experiments"
    mnist = tmp_path / "mnist"
    mnist.mkdir()
    for name in idx.IMAGE_NAMES:
        (mnist / name).write_bytes(idx.idx_header((10, 28, 28)) + bytes(100))   # truncated
    out = tmp_path / "res"
    code = call("run", root / "omd_tch_fl_mnist.yaml", "--profile", "smoke", "--out", out,
                "-q", "--set", "data.name=mnist", "--set", f"data.params={{path: {mnist}}}")
    one_line_exit_2(code, capsys, "truncated IDX")
    assert not out.exists()
    cifar = tmp_path / "cifar"
    cifar.mkdir()
    bomb = gzip.compress(bytes(300 << 20), compresslevel=1)     # 300 MiB of zeros, ~300 KB
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (cifar / name).write_bytes(bomb)
    code = call("run", root / "omd_tch_fl_cifar10.yaml", "--profile", "smoke", "--out", out,
                "-q", "--set", "data.name=cifar10", "--set", f"data.params={{path: {cifar}}}")
    one_line_exit_2(code, capsys, "MiB")
    assert not out.exists()


class Hung(BaseException):
    """Raised in a test that waited too long (not an Exception: the CLI does not catch it)."""


@contextlib.contextmanager
def bounded(seconds: float = 30, memory: int = 2 << 30):
    """In-process code that must end within `seconds` and grow its address space by at most
    `memory` bytes: a FIFO waited on or /dev/zero read whole fails the test (Hung, or a
    MemoryError, which the CLI reports as exit 3) instead of hanging it or the machine."""
    import resource
    import signal

    def fire(signum, frame):
        raise Hung(f"still running after {seconds} s")

    size = int(next(ln.split()[1] for ln in Path("/proc/self/status").read_text().splitlines()
                    if ln.startswith("VmSize:"))) * 1024
    limits = resource.getrlimit(resource.RLIMIT_AS)
    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    resource.setrlimit(resource.RLIMIT_AS, (size + memory, limits[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limits)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# where each file-backed data source looks for its file (under $DROCLI_DATA unless the
# params give a path: "{tmp}" is the test's folder) and the params that make it look there
DATA_FILES = {
    "npz": ("{tmp}/data.npz", {"path": "{tmp}/data.npz"}),
    "libsvm": ("libsvm/w8a", {}),
    "libsvm_pair": ("libsvm/a1a.t", {}),            # the train file a1a is a good one
    "mnist5k": ("{tmp}/mnist_5k.csv.gz", {"path": "{tmp}/mnist_5k.csv.gz"}),
    "mnist": ("mnist/train-images-idx3-ubyte", {}),
    "fashion_mnist": ("fashion_mnist/train-images-idx3-ubyte", {}),
    "fashion_bin": ("fashion_mnist/t10k-labels-idx1-ubyte", {}),
    "cifar10": ("cifar10/data_batch_1", {}),
    "cifar100": ("cifar100/train", {}),
}


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
@pytest.mark.parametrize("source", list(DATA_FILES))
def test_special_data_files_are_refused_not_read(source, kind, data_home, tmp_path):
    """A FIFO where a data file should be blocked the loader for ever (npz, libsvm and
    mnist5k opened it themselves), /dev/zero was read until memory ran out, and the image
    loaders said "not found". Each is refused with its path, without opening it."""
    from drocli.errors import DrocliError
    from tests.conftest import plugin

    where, params = DATA_FILES[source]
    target = Path(where.format(tmp=tmp_path)) if "{tmp}" in where else data_home / where
    target.parent.mkdir(parents=True, exist_ok=True)
    if source == "libsvm_pair":
        (target.parent / "a1a").write_text("+1 1:1\n-1 2:1\n")
    _special(target, kind)
    params = {k: v.format(tmp=tmp_path) for k, v in params.items()}
    with bounded(), pytest.raises(DrocliError) as err:
        plugin("data", source)(params)
    line = err.value.line()
    assert str(target) in line and "not a regular file" in line and "fix:" in line, line


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("source,spec", [("npz", None), ("libsvm", "as_lsvrg_fig6.yaml"),
                                         ("mnist5k", "omd_tch_fl_mnist.yaml"),
                                         ("mnist", "omd_tch_fl_mnist.yaml")])
def test_special_data_files_exit_2_before_writing(source, spec, kind, data_home, tiny_spec,
                                                  tmp_path, capsys):
    where, params = DATA_FILES[source]
    target = Path(where.format(tmp=tmp_path)) if "{tmp}" in where else data_home / where
    target.parent.mkdir(parents=True, exist_ok=True)
    _special(target, kind)
    given = ", ".join(f"{k}: {v.format(tmp=tmp_path)}" for k, v in params.items())
    out = tmp_path / "res"
    with bounded():
        code = call("run", SPECS / spec if spec else tiny_spec, "--profile", "smoke", "--out",
                    out, "-q", "--set", f"data.name={source}", "--set",
                    f"data.params={{{given}}}")
    one_line_exit_2(code, capsys, str(target), "not a regular file", "fix:")
    assert not out.exists()


@pytest.mark.parametrize("name", ["MANIFEST", "data.npy"])
def test_special_files_in_the_data_cache_are_a_miss(name, data_home, tmp_path):
    """A FIFO in the cache of decoded arrays blocked every later load; it is a miss now,
    rebuilt from the data file."""
    from tests.conftest import plugin

    (tmp_path / "t").write_text("+1 1:1\n-1 2:1\n")
    load = plugin("data", "libsvm")
    params = {"name": "t", "path": str(tmp_path), "n_features": 2}
    first = load(params)
    entry, = (data_home / "cache" / "libsvm").iterdir()
    _special(entry / name, "fifo")
    with bounded():
        again = load(params)
    assert (again.X_train == first.X_train).all() and (again.y_train == first.y_train).all()


def test_compressed_data_files_are_read_through_the_cap(tmp_path):
    """LIBSVM files are read by drocli (sklearn opened them itself), gzip and bzip2 undone
    under the cap; an .npz counts its arrays decompressed in the memory check (a small
    compressed file of zeros is large in memory)."""
    import bz2
    import gzip

    import numpy as np

    from drocli.errors import DrocliError
    from drocli.plugins import registry
    from tests.conftest import plugin

    text = b"+1 1:0.5 2:1\n-1 2:0.25\n"
    for name, data in (("t.gz", gzip.compress(text)), ("t.bz2", bz2.compress(text))):
        (tmp_path / name).write_bytes(data)
        d = plugin("data", "libsvm")({"name": name, "path": str(tmp_path), "n_features": 2})
        assert d.X_train.tolist() == [[0.5, 1.0], [0.0, 0.25]] and d.y_train.tolist() == [1, 0]
    (tmp_path / "bad.bz2").write_bytes(b"BZh9" + bytes(50))
    with pytest.raises(DrocliError, match="bzip2"):
        plugin("data", "libsvm")({"name": "bad.bz2", "path": str(tmp_path), "n_features": 2})
    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, X_train=np.zeros((1000, 1000)))
    assert path.stat().st_size < 100_000
    assert registry.get("data", "npz").memory({"path": str(path)}) >= 16_000_000


def test_report_pages_never_overwrite_each_other(done_run, tmp_path, capsys):
    """A report page is named after its folder: two folders of one name (a/res, b/res), one
    named `index` (the report's own page) are refused before anything is written; `report
    .` is named after the folder (it wrote `.md` and spilled the figures)."""
    assert call("plot", done_run) == 0
    for sub in ("a", "b"):
        shutil.copytree(done_run, tmp_path / sub / "res")
    shutil.copytree(done_run, tmp_path / "index")
    rep = tmp_path / "report"
    capsys.readouterr()
    code = call("report", tmp_path / "a" / "res", tmp_path / "b" / "res", "--out", rep)
    one_line_exit_2(code, capsys, str(tmp_path / "a" / "res"), str(tmp_path / "b" / "res"),
                    "shares its name 'res'", "fix:")
    code = call("report", done_run, tmp_path / "index", "--out", rep)
    one_line_exit_2(code, capsys, str(tmp_path / "index"), "index.md", "fix:")
    assert not rep.exists()
    os.chdir(done_run)
    try:
        assert call("report", ".", "--out", rep) == 0
    finally:
        os.chdir(tmp_path)
    assert sorted(p.name for p in rep.iterdir()) == [".drocli-report.json", "index.html",
                                                     "index.md", "res", "res.html", "res.md",
                                                     "status.png"]
    assert "](status.png)" in (rep / "index.md").read_text()      # the index shows it


def test_report_escapes_a_folder_name(done_run, tmp_path):
    """A results folder may be called anything: its name was written raw into the pages'
    Markdown (a code span a backtick ends, a link a parenthesis ends, a table cell)."""
    import re
    from urllib.parse import unquote

    name = "x`<b>hi<b>`](javascript:alert(1)) | y"
    folder = tmp_path / name
    shutil.copytree(done_run, folder)
    assert call("plot", folder) == 0
    rep = tmp_path / "report"
    assert call("report", folder, "--out", rep) == 0
    index, page = (rep / "index.md").read_text(), (rep / f"{name}.md").read_text()
    for text in (index, page):
        assert "<b>" not in text and "](javascript:" not in text
    for html in ((rep / "index.html").read_text(), (rep / f"{name}.html").read_text()):
        assert "<b>hi" not in html and "&lt;b&gt;hi" in html
    row = next(ln for ln in index.splitlines() if "hi" in ln)
    head = next(ln for ln in index.splitlines() if ln.startswith("| results"))
    assert len(re.findall(r"(?<!\\)\|", row)) == head.count("|"), row     # no extra cell
    link = row.split("](", 1)[1].split(")", 1)[0]

    assert unquote(link) == f"{name}.md" and (rep / unquote(link)).is_file()


@pytest.mark.parametrize("where", ["figures.fig_tiny.title", "figures.0.panels.1.ylabel",
                                   "figures.0.xlabel"])
def test_bad_mathtext_in_figure_texts_refused_at_load(where, tiny_spec, tmp_path, capsys):
    """matplotlib reads a text with two $ as mathtext: `$\frac{1$` in a title or a label
    failed only when the figure was drawn, after the run (exit 3, a multi-line
    ParseException)."""
    out = tmp_path / "res"
    key = where.replace("figures.fig_tiny", "figures.0")
    code = call("run", tiny_spec, "--out", out, "-q", "--set", f"{key}='$\\frac{{1$'")
    err = one_line_exit_2(code, capsys, str(tiny_spec), "not valid mathtext", "fix:")
    assert "figures[0]." in err, err
    assert not out.exists()
    assert call("show", tiny_spec, "--set", f"{key}='cost $5, $x^2$ and \\$'") == 0


def test_bad_mathtext_in_a_label_is_exit_2_at_plot_time(tiny_spec, tmp_path, capsys):
    """A solver label is drawn in the legend: the same error at plot time is one line
    naming the folder's spec.yaml, and no figure is left half-written."""
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q",
                "--set", "solvers.SMD.label='$\\frac{1$'",
                "--set", "claims.0.others=['$\\frac{1$']") == 0
    capsys.readouterr()
    one_line_exit_2(call("plot", out), capsys, str(out / "spec.yaml"), "not valid mathtext",
                    "\\frac{1", "fix:")
    assert not list((out / "figures").iterdir())


def test_os_errors_name_the_file_or_the_stream(done_run, tiny_spec, tmp_path):
    """An OSError of a write to an open file carries no path: output to a full disk and a
    file-size limit said "(no path)". They name the stream, or the folder being written."""
    import resource

    code, err = _drocli("list", stdout=open("/dev/full", "w"))
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("drocli: error: standard output: No space left") and "fix:" in err

    def small():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    for args, folder in ((("plot", done_run), done_run / "figures"),
                         (("run", tiny_spec, "--out", tmp_path / "new", "-q"),
                          tmp_path / "new")):
        code, err = _drocli(*args, preexec_fn=small)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert f"error: {folder}: File too large" in err and "(no path)" not in err, err


def test_two_runs_at_once_on_one_folder(tiny_spec, tmp_path):
    """Two `drocli run` processes on the same folder: no row lost or duplicated, and the
    records equal a run alone (cells are written atomically, then merged)."""
    import subprocess
    import sys

    import pandas as pd

    out, alone = tmp_path / "shared", tmp_path / "alone"
    cmd = [sys.executable, "-m", "drocli", "run", str(tiny_spec), "--out", str(out), "-q"]
    procs = [subprocess.Popen(cmd, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    assert call("run", tiny_spec, "--out", alone, "-q") == 0
    assert call("run", tiny_spec, "--out", out, "-q") == 0     # the last merge sees every cell
    key = ["cell", "step", "metric"]
    a = pd.read_csv(out / "records.csv.gz").sort_values(key).reset_index(drop=True)
    b = pd.read_csv(alone / "records.csv.gz").sort_values(key).reset_index(drop=True)
    assert not a.duplicated(key).any() and len(a) == len(b)
    assert a["value"].tolist() == b["value"].tolist()
    assert call("check", out) in (0, 1)                       # validated: not exit 2


def test_a_mark_being_written_by_a_concurrent_run_is_not_a_foreign_file(tmp_path):
    """The race the test above can lose: the other run has created the folder and is
    writing its mark (atomic_write's temp file, not yet renamed). That folder is this
    experiment's to share, not a user's folder to refuse; a foreign file still is."""
    import tempfile

    from drocli.errors import DrocliError
    from drocli.results import ownership
    from drocli.results.atomic import temp_prefix

    out = tmp_path / "shared"
    out.mkdir()
    tempfile.mkstemp(prefix=temp_prefix(ownership.MARK), dir=out)
    ownership.mark(out, "tiny")
    assert ownership.owner(out) == "tiny"
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(DrocliError, match="not a drocli results folder"):
        ownership.mark(other, "tiny")


@pytest.mark.parametrize("sub", ["cells", "figures"])
def test_symlinked_subfolder_is_never_written_through(tiny_spec, tmp_path, sub, capsys):
    """A results folder whose cells/ or figures/ links elsewhere: `run --force` and `plot`
    refuse (exit 2, one line) and write nothing through the link."""
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = out / sub
    if target.exists():
        shutil.rmtree(target)
    target.symlink_to(elsewhere, target_is_directory=True)
    capsys.readouterr()
    cmd = ("run", tiny_spec, "--out", out, "--force", "-q") if sub == "cells" \
        else ("plot", out)
    assert call(*cmd) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "symbolic link" in err[0]
    assert list(elsewhere.iterdir()) == []


def test_grid_of_millions_refused_at_load(tiny_spec, tmp_path, capsys, monkeypatch):
    """A grid that multiplies into millions of cells is refused before anything expands it
    (run, --dry-run, show), with the count and the variable that raises the limit."""
    values = "[" + ", ".join(f"{i / 1e6:g}" for i in range(1, 2001)) + "]"
    args = ("--set", f"solvers.ALEG.grid.gamma_w={values}", "--set", "seeds=0-999")
    for cmd in (("run", tiny_spec, "--out", tmp_path / "x", "--dry-run", *args),
                ("show", tiny_spec, *args)):
        capsys.readouterr()
        assert call(*cmd) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "2,001,000 cells" in err[0] and "DROCLI_MAX_CELLS" in err[0]
    assert not (tmp_path / "x").exists()
    monkeypatch.setenv("DROCLI_MAX_CELLS", "abc")
    assert call("show", tiny_spec) == 2


@pytest.mark.parametrize("cells", [["a", "b"], "x", {"c1": "done"}, {"c1": {"status": 3}}])
def test_manifest_of_wrong_shape_is_refused_and_run_recovers(tiny_spec, tmp_path, cells,
                                                             capsys):
    """A manifest whose cells are not a mapping of cell id -> status: check exits 2 with
    one line naming the key; run rebuilds the folder from its cells."""
    import json

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    man = json.loads((out / "manifest.json").read_text())
    man["cells"] = cells
    (out / "manifest.json").write_text(json.dumps(man))
    capsys.readouterr()
    assert call("check", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "manifest.json" in err[0] and "cells" in err[0]
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    assert call("check", out) in (0, 1)


@pytest.mark.parametrize("rows", [[[1, 2]], [["x", 0, 0, "m", 1.0]], "rows", [[0, 0, 0, 5, 1.0]]])
def test_cell_file_with_bad_rows_reruns(tiny_spec, tmp_path, rows, capsys):
    """A cell file whose rows are not (step, calls, time, metric, value): the cell counts as
    unfinished and the next run runs it again (it exited 3, and re-runs never recovered)."""
    import json

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    (out / "records.csv.gz").unlink()
    cell = sorted((out / "cells").glob("*.json"))[0]
    doc = json.loads(cell.read_text())
    doc["rows"] = rows
    cell.write_text(json.dumps(doc))
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    assert call("check", out) in (0, 1)


# --- found by the fuzzer (tests/test_fuzz.py, round 2) ----------------------------------------

@pytest.mark.parametrize("url", ["", "http://[::1", "http://127.0.0.1:99999/",
                                 "http://127.0.0.1:abc/", "http://%zz/", "http://a b/",
                                 "ftp://127.0.0.1/", "http:127.0.0.1/", "https://"])
def test_mirror_urls_that_are_not_http_addresses_are_refused_offline(url, tmp_path, capsys,
                                                                      monkeypatch):
    """An empty --mirror fell back to the canonical address (a download from the network),
    `http://[::1` exited 3 (ValueError), a host such as `%zz` was looked up and a port past
    65535 tried. Each is refused before any folder is made or any name resolved."""
    import socket

    tried = []

    def offline(host, *args, **kwargs):
        tried.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    to = tmp_path / "data"
    code = call("data", "fetch", "libsvm", "--file", "a1a", "--mirror", url, "--to", to, "-q")
    one_line_exit_2(code, capsys, "--mirror", "is not an http(s) address", "fix:")
    assert tried == [] and not to.exists()


@pytest.mark.parametrize("args,word", [
    (["run", "{spec}", "--out", "{out}", "-j", "1e400"], "'-j' / '--jobs'"),
    (["run", "{spec}", "--out", "{out}", "-j", "two\nlines"], "'-j' / '--jobs'"),
    (["check", "{out}", "--rtol", "abc"], "'--rtol'"),
    (["run", "{spec}", "--out", "{out}", "--bogus"], "--bogus"),
    (["run"], "Missing argument 'SPEC'"),
    (["data", "fetch"], "Missing argument 'NAME'")])
def test_usage_errors_are_one_line(args, word, tiny_spec, tmp_path, capsys):
    """A value click cannot convert (`-j 1e400`, `--rtol abc`), an unknown option or a
    missing argument printed click's four lines (usage, hint, blank line, error)."""
    out = tmp_path / "res"
    code = call(*[a.format(spec=tiny_spec, out=out) for a in args])
    err = one_line_exit_2(code, capsys, word, "(fix: see `drocli ")
    assert err.endswith("--help`)"), err
    assert not out.exists()


def test_max_cells_of_inf_is_no_limit(tiny_spec, tmp_path, monkeypatch, capsys):
    """DROCLI_MAX_CELLS=inf (a number > 0, as the budget limits take it) exited 3 with
    OverflowError (int(inf)); it lifts the limit."""
    monkeypatch.setenv("DROCLI_MAX_CELLS", "inf")
    assert call("show", tiny_spec) == 0
    assert call("run", tiny_spec, "--out", tmp_path / "res", "--dry-run") == 0
    capsys.readouterr()
    monkeypatch.setenv("DROCLI_MAX_CELLS", "nan")
    one_line_exit_2(call("show", tiny_spec), capsys, "DROCLI_MAX_CELLS")


@pytest.mark.parametrize("body", ["[0]", "5", "'x'", "[[0]]"])
@pytest.mark.parametrize("chosen", [True, False])
def test_a_profile_that_is_not_a_mapping_is_refused(body, chosen, tiny_spec, tmp_path, capsys):
    """`profiles: {smoke: [0]}` exited 3 (AttributeError: .items()) when smoke was chosen."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(tiny_spec.read_text().replace("smoke: {budget.epochs: 2}", f"smoke: {body}"))
    out = tmp_path / "res"
    code = call("run", spec, "--out", out, "-q", *(["--profile", "smoke"] if chosen else []))
    one_line_exit_2(code, capsys, str(spec), "profiles.smoke", "not a mapping", "fix:")
    assert not out.exists()


@pytest.mark.parametrize("where", ["spec", "set"])
def test_lone_surrogates_in_yaml_are_refused(where, tiny_spec, tmp_path, capsys):
    """A YAML escape of a lone surrogate (`"\\udbc9\\udfa0"`, a JSON-style pair) made a string
    that is not text: the run wrote it into its folder and `plot` exited 3 in matplotlib."""
    out = tmp_path / "res"
    args = ["--set", 'figures.0.xlabel="x\\udbc9\\udfa0"'] if where == "set" else []
    spec = tiny_spec
    if where == "spec":
        spec = tmp_path / "surrogate.yaml"
        spec.write_text(tiny_spec.read_text().replace("title: Tiny\n", 'title: "x\\ud800"\n'))
    code = call("run", spec, "--profile", "smoke", "--out", out, "-q", *args)
    one_line_exit_2(code, capsys, "lone surrogate U+D", "fix:")
    assert not out.exists()


@pytest.mark.parametrize("name,where", [("x" * 101, "name"), ("x" * 300, "name"),
                                        ("x" * 300, "figures.0.name"),
                                        ("x" * 300, "default_profile")])
def test_names_too_long_for_a_file_name_are_refused_at_load(name, where, tiny_spec, tmp_path,
                                                             capsys, monkeypatch):
    """An experiment named with 300 characters failed at mkdir (results/<name>-smoke: File
    name too long) after `results/` was made; names that become file names are at most 100
    characters, checked at load."""
    monkeypatch.chdir(tmp_path)
    text = tiny_spec.read_text()
    if where == "default_profile":
        text = text.replace("smoke: {budget.epochs: 2}", f"{name}: {{budget.epochs: 2}}")
        text += f"default_profile: {name}\n"
    spec = tmp_path / "long.yaml"
    spec.write_text(text)
    args = ["--set", f"{where}={name}"] if where != "default_profile" else []
    code = call("run", spec, "-q", *args)
    one_line_exit_2(code, capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.yaml", "tiny.yaml"]


@pytest.mark.parametrize("edit", [
    {"git_commit": 1234567}, {"git_from": ["x"]}, {"n_jobs": "four", "cpus": "abc"},
    {"n_jobs": None, "cpus": float("inf")}, {"n_jobs": True, "cpus": [2]}, {"drocli": None},
    {"profile": None, "host": {"a": 1}}])
def test_report_of_a_folder_with_forged_manifest_fields(edit, done_run, tmp_path):
    """report exited 3 on provenance fields of another type than drocli writes: a commit
    that is a number (`commit[:12]`), `git_from` a list, a job or CPU count that is text or
    inf (`int(par)`)."""
    import json

    man = json.loads((done_run / "manifest.json").read_text())
    man.update(edit)
    (done_run / "manifest.json").write_text(json.dumps(man))
    rep = tmp_path / "rep"
    assert call("report", done_run, "--out", rep) == 0
    assert (rep / "res.html").is_file() and (rep / "res.md").is_file()


def test_report_of_a_saved_spec_without_its_profile(done_run, tmp_path):
    """A saved spec.yaml without `profile:` (cut, or written by hand) exited 3 in the
    report's HTML (html.escape(None)); the profile shows as unknown."""
    path = done_run / "spec.yaml"
    path.write_text("".join(ln for ln in path.read_text().splitlines(keepends=True)
                            if not ln.startswith("profile:")))
    rep = tmp_path / "rep"
    assert call("report", done_run, "--out", rep) == 0
    assert "<th>profile</th><td>?</td>" in (rep / "res.html").read_text()


@pytest.mark.parametrize("fixed", [{"a": 1}, 5, ["2026-01-01"], None, "not a time"])
def test_check_of_a_claim_registered_at_a_forged_time(fixed, done_run, capsys):
    """A manifest whose claim entry has the right hash and a `fixed` time that is not text
    exited 3 in check (`entry['fixed'][:16]`); the claim is judged post hoc."""
    import json

    man = json.loads((done_run / "manifest.json").read_text())
    man["claims"]["below_start"]["fixed"] = fixed
    (done_run / "manifest.json").write_text(json.dumps(man))
    assert call("check", done_run, "--json") in (0, 1)
    claim, = json.loads(capsys.readouterr().out)["claims"]
    assert claim["registration"]["status"] == "post_hoc", claim
