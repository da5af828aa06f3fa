"""Property-based hostile input (hypothesis): random spec edits, `--set` values and data
files; forged results folders (manifest, saved spec, cell files, records rows) under check,
plot, report and run; hostile names (profiles, labels, cases, figure and folder names);
numeric options and environment variables; YAML nested tens of thousands deep; mirror URLs.
Invariants: never a traceback, never exit 3 (drocli's own bug) for input, exit 2 is one
line, and on exit 2 nothing in an existing results folder changes; nothing is written
outside the test's folder, and no test reaches the network.

CI runs a bounded number of examples (25 per test); the `slow` run (`pytest -m slow`) runs
each fuzzer again with 300; for a longer local run (DROCLI_FUZZ_LOG=FILE appends each outcome,
exit code and message, for a tally):
    DROCLI_FUZZ_EXAMPLES=2000 python -m pytest tests/test_fuzz.py -p no:cacheprovider
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TINY_SPEC, call
from tests.test_hostile import snapshot

EXAMPLES = int(os.environ.get("DROCLI_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])

# values a hostile user might type
SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(10 ** 15), max_value=10 ** 15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "..", "../..", "/", "a/b", "x" * 400, "é", "5-2", "0-9", "-1",
                     "1e12", ".nan", "auto", "null", "~", "{", "[", "*a", "&a",
                     "rate", "reach_first", "paper", "first", "shared", "test", "below_start"]),
    st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
KEYS = ["name", "seeds", "metrics", "data.name", "data.params.groups", "data.params.dim",
        "data.params.n_train", "data.params.label_noise", "data.grid.dim", "data.seed",
        "problem.params.radius", "problem.params.loss", "solvers.0.name",
        "solvers.0.params.gamma_w", "solvers.1.params.K", "solvers.1.label",
        "solvers.0.grid.gamma_w", "budget.epochs", "budget.checkpoints", "budget.spacing",
        "figures.0.name", "figures.0.panels.0.metric", "figures.0.layout", "claims.0.kind",
        "claims.0.metric", "claims.0.others", "claims.0.x_from", "claims.0.span",
        "claims.0.slope", "claims.0.revises", "claims.0.revises.claim", "claims.0.revises.changes",
        "claims.0.cause.kind", "claims.0.profiles", "profiles.smoke.budget.epochs",
        "profiles.smoke.judge_as", "blas_threads", "cases", "bogus"]


def run_cli(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = call(*args)
    return code, err.getvalue()


def assert_handled(code: int, err: str) -> None:
    if os.environ.get("DROCLI_FUZZ_LOG"):
        with open(os.environ["DROCLI_FUZZ_LOG"], "a") as fh:
            fh.write(f"{code}\t{err.strip()[:160]}\n")
    assert "Traceback" not in err, err
    assert code in (0, 1, 2, 4), (code, err)       # 3 would be a drocli bug; 4: cells failed
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and len(err) < 400, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished smoke run of the tiny spec: the folder no refused input may touch."""
    root = tmp_path_factory.mktemp("fuzz")
    spec = root / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    out = root / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    return spec, out


def _set_path(raw: dict, dotted: str, value) -> None:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        key = int(p) if p.isdigit() and isinstance(node, list) else p
        if isinstance(node, list):
            if not isinstance(key, int) or key >= len(node):
                return
            node = node[key]
        else:
            node = node.setdefault(key, {}) if isinstance(node, dict) else None
        if node is None or not isinstance(node, (dict, list)):
            return
    last = parts[-1]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value


@FUZZ
@given(edits=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=3))
def test_random_spec_edits(edits, recorded):
    spec, out = recorded
    raw = yaml.safe_load(TINY_SPEC)
    for key, value in edits:
        _set_path(raw, key, value)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "edited.yaml"
        try:
            path.write_text(yaml.safe_dump(raw, allow_unicode=True))
        except (yaml.YAMLError, UnicodeEncodeError):
            return
        before = snapshot(out)
        code, err = run_cli("run", path, "--profile", "smoke", "--out", out, "-q")
        assert_handled(code, err)
        if code == 2:
            assert snapshot(out) == before, err
        else:                                   # a valid edit of the same experiment: restore
            shutil.rmtree(out)
            assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0


@FUZZ
@given(key=st.sampled_from(KEYS), text=st.text(max_size=40))
def test_random_set_values(key, text, recorded):
    spec, _ = recorded
    code, err = run_cli("show", spec, "--set", f"{key}={text}")
    assert_handled(code, err)


ARRAYS = st.sampled_from(["ok", "nan", "inf", "empty", "1d", "3d", "bool", "int", "huge_g",
                          "neg_g", "frac_g", "short", "object", "missing", "classes"])


def _array(kind: str, name: str, rng) -> np.ndarray | None:
    n = 24
    base = {"X_train": rng.standard_normal((n, 3)),
            "y_train": np.where(rng.random(n) < 0.5, -1.0, 1.0),
            "g_train": np.repeat([0, 1, 2], n // 3).astype(float)}[name]
    if kind == "ok":
        return base
    if kind == "missing":
        return None
    if kind == "nan":
        return np.where(rng.random(base.shape) < 0.1, np.nan, base)
    if kind == "inf":
        return np.where(rng.random(base.shape) < 0.1, -np.inf, base)
    if kind == "empty":
        return base[:0]
    if kind == "1d":
        return base.reshape(-1)
    if kind == "3d":
        return base.reshape(base.shape + (1,))
    if kind == "bool":
        return base > 0
    if kind == "int":
        return base.astype(np.int64)
    if kind == "huge_g":
        big = base.astype(float).copy()
        big.flat[-1] = 1e15
        return big
    if kind == "neg_g":
        return -base
    if kind == "frac_g":
        return base + 0.5
    if kind == "short":
        return base[:5]
    if kind == "classes":
        return np.arange(base.shape[0], dtype=float)
    return np.array([{"x": 1}] * base.shape[0], dtype=object)


@FUZZ
@given(kx=ARRAYS, ky=ARRAYS, kg=ARRAYS)
def test_random_npz_files(kx, ky, kg, recorded, tmp_path):
    spec, _ = recorded
    rng = np.random.default_rng(0)
    arrays = {"X_train": _array(kx, "X_train", rng), "y_train": _array(ky, "y_train", rng),
              "g_train": _array(kg, "g_train", rng)}
    data = tmp_path / f"{kx}-{ky}-{kg}.npz"
    np.savez(data, **{k: v for k, v in arrays.items() if v is not None})
    path = tmp_path / f"{kx}-{ky}-{kg}.yaml"
    path.write_text(spec.read_text().replace(
        "name: gdro_synthetic\n  params: {groups: 3, dim: 6, n_train: 40, n_test: 40, "
        "label_noise: 0.1}", f"name: npz\n  params: {{path: {data}}}"))
    out = tmp_path / f"out-{kx}-{ky}-{kg}"
    code, err = run_cli("run", path, "--profile", "smoke", "--out", out, "-q")
    assert_handled(code, err)
    if code == 2:
        assert not out.exists(), err


# the same properties, longer (the `slow` run)
LONG = settings(FUZZ, max_examples=300)


@pytest.mark.slow
@LONG
@given(edits=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=3))
def test_random_spec_edits_long(edits, recorded):
    test_random_spec_edits.hypothesis.inner_test(edits, recorded)


@pytest.mark.slow
@LONG
@given(key=st.sampled_from(KEYS), text=st.text(max_size=40))
def test_random_set_values_long(key, text, recorded):
    test_random_set_values.hypothesis.inner_test(key, text, recorded)


# --- round 2 (issue 27): forged results folders, names, numeric options, deep nesting,
# mirror URLs. Each example works in a folder of its own (`_Confined`): a command changes
# nothing in it outside the folders it may write, and creates nothing at ESCAPE (the absolute
# path the hostile names point at); on exit 2 the folder it was given is unchanged.

ESCAPE = "/tmp/drocli-fuzz-escape"


class _Confined:
    """A fresh folder `base/a/b/c` (deep, so that `../../..` stays inside `base`) with an
    empty `work/` the commands run in; `tree(*allowed)` is what a command must not change."""

    def __enter__(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.base = Path(self._tmp.name)
        self.root = self.base / "a" / "b" / "c"
        self.work = self.root / "work"
        self.work.mkdir(parents=True)
        self._cwd = os.getcwd()
        os.chdir(self.work)
        return self

    def __exit__(self, *exc):
        os.chdir(self._cwd)
        self._tmp.cleanup()
        for p in Path(ESCAPE).parent.glob(Path(ESCAPE).name + "*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        return False

    def tree(self, *allowed: Path) -> dict:
        """path -> sha1 ("dir" for a folder) of everything under the folder but `allowed`,
        and of whatever exists at ESCAPE."""
        import hashlib

        found = [*self.base.rglob("*"), *Path(ESCAPE).parent.glob(Path(ESCAPE).name + "*")]
        return {str(p): "dir" if p.is_dir() else hashlib.sha1(p.read_bytes()).hexdigest()
                for p in found if not any(p == a or a in p.parents for a in allowed)}


def run_checked(where: _Confined, folder: Path | None, *args, allowed=()) -> tuple[int, str]:
    """run_cli(*args), handled; on exit 2 `folder` (when given) is unchanged; nothing is
    written outside `folder` and `allowed`."""
    roots = [p for p in (folder, *allowed) if p is not None]
    before = snapshot(folder) if folder is not None and folder.is_dir() else None
    outside = where.tree(*roots)
    code, err = run_cli(*args)
    assert_handled(code, err)
    if code == 2 and folder is not None:
        assert (snapshot(folder) if folder.is_dir() else None) == before, err
    assert where.tree(*roots) == outside, (args, err)
    return code, err


# hostile names: missing-value spellings, path parts, control characters, markup
NAMES = st.one_of(
    st.sampled_from(["NA", "nan", "NaN", "None", "null", "NULL", "", " ", ".", "..", "../x",
                     "../../x", "../../../../x", "a/b", ESCAPE, "~", "-", "--help", "*",
                     "a\x00b", "a\nb", "x\r", "\x1b[31mred", "a\u2028b", "tab\there",
                     "<script>alert(1)</script>", "`x`", "a|b", "[x](javascript:alert(1))",
                     "$\\frac{1$", "$x$", "{0}", "{nope}", "x" * 300, "CON", "é", "index",
                     "smoke", "paper", "\ufeffbom", "%s%n", "'\"", "#", "&a", "*a"]),
    st.text(max_size=10))

# JSON values a forger writes: wrong shapes, strings where mappings are, huge numbers
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(),
              st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
              st.sampled_from([10 ** 400, -(10 ** 400), 2 ** 63, 2 ** 64, -1, 0]),
              st.floats(allow_nan=True, allow_infinity=True), NAMES),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)

MANIFEST_PATHS = ["", "cells", "cells.*", "cells.*.status", "cells.*.label", "cells.*.seed",
                  "cells.*.error", "cells.*.at", "cells.*.new", "claims", "claims.below_start",
                  "claims.below_start.sha1", "claims.below_start.fixed", "claims.new",
                  "records_rows", "records_sha256", "experiment", "profile", "started",
                  "finished", "spec_sha1", "run_key", "n_jobs", "backend", "blas_threads",
                  "drocli", "git_commit", "git_dirty", "python", "platform", "host", "cpus",
                  "packages", "packages.numpy", "blas", "blas.0", "blas.0.num_threads",
                  "blas.0.architecture", "cpu_model", "load_avg", "load_avg.0",
                  "cells.*.wall_s", "cells.*.load_1m"]
CELL_PATHS = ["", "rows", "rows.0", "rows.0.0", "rows.0.1", "rows.0.2", "rows.0.3",
              "rows.0.4", "rows.-1", "status", "label", "seed", "cell", "oracle_calls",
              "budget", "solver_time_s", "wall_s", "load_1m", "at", "error"]
SPEC_PATHS = [*KEYS, "title", "figures.0.title", "figures.0.caption", "claims.0.id",
              "claims.0.text", "claims.0.solver", "solvers.0.label", "data.label",
              "profile", "default_profile", "profiles", "figures", "claims", "solvers",
              "data", "problem", "budget"]
RECORD_COLUMNS = ["experiment", "cell", "solver", "label", "dataset", "seed", "step",
                  "oracle_calls", "time_s", "metric", "value"]

# one forgery: (file, how, where, value)
#   manifest / cell / spec: set `where` to value, or delete it, or cut or garble the text
#   records: set a field of a row, drop / duplicate / add a row; resealed or not
FORGERIES = st.one_of(
    st.tuples(st.just("manifest"), st.sampled_from(["set", "del", "cut", "huge"]),
              st.sampled_from(MANIFEST_PATHS), JSON_VALUES),
    st.tuples(st.just("cell"), st.sampled_from(["set", "del", "cut"]),
              st.sampled_from(CELL_PATHS), JSON_VALUES),
    st.tuples(st.just("spec"), st.sampled_from(["set", "del", "cut"]),
              st.sampled_from(SPEC_PATHS), st.one_of(VALUES, NAMES)),
    st.tuples(st.just("records"), st.sampled_from(["set", "drop", "dup", "add"]),
              st.tuples(st.integers(0, 80), st.sampled_from(RECORD_COLUMNS)),
              st.one_of(NAMES, SCALARS.map(str))))


def _edit(doc, dotted: str, value, delete: bool):
    """`doc` with the value at the dotted path (`*` the first key, -1 the last item)
    replaced, or deleted; a path that is not there is added where it can be."""
    if not dotted:
        return value
    node, parts = doc, dotted.split(".")
    for p in parts[:-1]:
        if isinstance(node, dict) and node:
            node = node[next(iter(node))] if p == "*" else node.get(p)
        elif isinstance(node, list) and node and p.lstrip("-").isdigit():
            node = node[int(p) % len(node)]
        else:
            return doc
    last = parts[-1]
    if isinstance(node, dict):
        last = next(iter(node), last) if last == "*" else last
        if delete:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and node and last.lstrip("-").isdigit():
        if delete:
            del node[int(last) % len(node)]
        else:
            node[int(last) % len(node)] = value
    return doc


def _seal(folder: Path) -> None:
    """Make the manifest hold the records' current row count and checksum (a forger who
    knows the format)."""
    import gzip
    import json

    from drocli.results.integrity import file_digest

    try:
        man = json.loads((folder / "manifest.json").read_text())
    except ValueError:                                  # cut by an earlier forgery
        return
    if not isinstance(man, dict):
        return
    text = gzip.decompress((folder / "records.csv.gz").read_bytes()).decode("utf-8", "replace")
    man["records_rows"] = max(0, len(text.splitlines()) - 1)
    man["records_sha256"] = file_digest(folder / "records.csv.gz", "sha256")
    (folder / "manifest.json").write_text(json.dumps(man))


def _forge(folder: Path, forgery, seal: bool) -> bool:
    """Apply one forgery to a copy of a results folder; False when it cannot be written."""
    import csv
    import gzip
    import json

    what, how, where, value = forgery
    if what == "records":
        path = folder / "records.csv.gz"
        try:
            rows = list(csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode(),
                                               newline="")))
        except (csv.Error, UnicodeDecodeError):       # garbled by an earlier forgery
            return False
        if len(rows) < 2:
            return False
        i = 1 + where[0] % (len(rows) - 1)
        if how == "set":
            if len(rows[i]) <= RECORD_COLUMNS.index(where[1]):
                return False
            rows[i][RECORD_COLUMNS.index(where[1])] = value
        elif how == "drop":
            del rows[i]
        elif how == "dup":
            rows.insert(i, list(rows[i]))
        else:
            rows.insert(i, [value] * (where[0] % 13))
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        try:
            data = buf.getvalue().encode()
        except UnicodeEncodeError:                    # a lone surrogate
            return False
        path.write_bytes(gzip.compress(data, mtime=0))
        if seal:
            _seal(folder)
        return True
    path = {"manifest": folder / "manifest.json", "spec": folder / "spec.yaml",
            "cell": min((folder / "cells").glob("*.json"))}[what]
    text = path.read_text()
    if how == "cut":
        path.write_text(text[: len(text) * (len(repr(value)) * 37 % 100) // 100])
        return True
    if how == "huge":                                 # past Python's int-string limit
        path.write_text(text.replace('"n_jobs": 1', '"n_jobs": 1' + "0" * 5000))
        return True
    try:
        doc = yaml.safe_load(text) if what == "spec" else json.loads(text)
    except (yaml.YAMLError, ValueError):                # cut by an earlier forgery
        return False
    doc = _edit(doc, where, value, how == "del")
    try:
        if what == "spec":
            path.write_text(yaml.safe_dump(doc, allow_unicode=True))
        else:
            path.write_text(json.dumps(doc, ensure_ascii=False))
    except (yaml.YAMLError, UnicodeEncodeError, ValueError):
        return False
    if seal and what == "manifest":
        _seal(folder)
    return True


@FUZZ
@given(forgeries=st.lists(FORGERIES, min_size=1, max_size=3), seal=st.booleans())
def test_random_forged_results_folders(forgeries, seal, recorded):
    """check --reference (both ways: the claims and the reference read), plot (when the
    spec or the records are forged: what it draws; 1 s a figure), and report on a forged
    copy of a results folder, and a resuming run when a cell file was forged."""
    spec, out = recorded
    kept = snapshot(out)
    with _Confined() as where:
        forged, rep = where.root / "res", where.root / "rep"
        shutil.copytree(out, forged)
        if not all([_forge(forged, f, seal) for f in forgeries]):
            return
        run_checked(where, forged, "check", forged, "--reference", out)
        run_checked(where, forged, "check", out, "--reference", forged)
        if any(f[0] in ("spec", "records") for f in forgeries):
            run_checked(where, forged, "plot", forged)
        code, err = run_checked(where, forged, "report", forged, "--out", rep, allowed=[rep])
        if code == 2:
            assert not rep.exists(), err
        if any(f[0] == "cell" for f in forgeries):
            run_checked(where, forged, "run", spec, "--profile", "smoke", "--out", forged, "-q")
    assert snapshot(out) == kept


def _named_spec(raw: dict, place: str, name: str, how: str) -> tuple[dict, list[str]]:
    """The tiny spec with `name` at `place`, given in the spec or with --set: (raw spec,
    extra arguments of `run`)."""
    import json

    args = ["--profile=smoke"]
    q = json.dumps(name)
    sets = []
    if place == "profile":
        raw["profiles"][name] = {"budget.epochs": 2}
        args = [f"--profile={name}"]
    elif place == "default_profile":
        raw["profiles"][name] = {"budget.epochs": 2}
        raw["default_profile"] = name
        args = []
    elif place == "case":
        raw["cases"] = {name: {"data.params.label_noise": 0.2}}
    elif place in ("solvers.0.label", "solvers.1.label"):     # the claim follows the label
        claim = "claims.0.others" if place == "solvers.0.label" else "claims.0.solver"
        value = [name] if claim.endswith("others") else name
        sets = [(place, q), (claim, json.dumps(value))]
    else:
        sets = [(place, q)]
    if how == "set":
        args += [f"--set={k}={v}" for k, v in sets]
    else:
        for k, v in sets:
            _set_path(raw, k, json.loads(v))
    return raw, args


def _assert_inert(rep: Path) -> None:
    """The report's pages hold no markup from the names: no script, no javascript: link
    (a Markdown link in .md, an href in .html)."""
    for page in rep.rglob("*.md") if rep.exists() else ():
        text = page.read_text()
        assert "<script" not in text and "](javascript:" not in text, page
    for page in rep.rglob("*.html") if rep.exists() else ():
        text = page.read_text().lower()
        assert "<script" not in text and "href=\"javascript:" not in text, page


NAME_PLACES = ["profile", "default_profile", "case", "solvers.0.label", "solvers.1.label",
               "data.label", "name", "title", "figures.0.name", "figures.0.title",
               "figures.0.caption", "figures.0.xlabel", "figures.0.panels.0.title",
               "claims.0.id", "claims.0.text"]


@FUZZ
@given(place=st.sampled_from(NAME_PLACES), name=NAMES, how=st.sampled_from(["spec", "set"]))
def test_random_names(place, name, how, recorded):
    """A hostile name in the spec or in --set: refused at load, or run into results/ under
    the work folder and then checked, plotted and reported, without escaping."""
    raw = yaml.safe_load(TINY_SPEC)
    del raw["figures"][0]["panels"][1]                # one panel: half the drawing time
    raw, args = _named_spec(raw, place, name, how)
    with _Confined() as where:
        path = where.root / "named.yaml"
        try:
            path.write_text(yaml.safe_dump(raw, allow_unicode=True))
        except (yaml.YAMLError, UnicodeEncodeError):
            return
        variant = any(a.startswith("--set") for a in args)    # a variant: runs/, not results/
        results, rep = where.work / ("runs" if variant else "results"), where.root / "rep"
        code, err = run_checked(where, results, "run", path, "-q", *args)
        if code == 2:
            assert not results.exists(), err
            return
        out, = (m.parent for m in results.rglob("manifest.json"))
        run_checked(where, results, "check", out, "--reference", out)
        run_checked(where, results, "plot", out)
        run_checked(where, results, "report", out, "--out", rep, allowed=[rep])
        _assert_inert(rep)


@FUZZ
@given(name=NAMES)
def test_random_folder_names_in_report(name, recorded):
    """A results folder may be called anything a file system allows: the report's pages
    escape its name, and are written into --out only."""
    _, out = recorded
    if (not name or "/" in name or "\x00" in name or name in (".", "..")
            or len(name.encode("utf-8", "surrogatepass")) > 255):
        return
    with _Confined() as where:
        folder, rep = where.root / name, where.root / "rep"
        try:
            shutil.copytree(out, folder)
        except (OSError, UnicodeEncodeError):
            return
        code, err = run_checked(where, folder, "report", folder, "--out", rep, allowed=[rep])
        if code == 2:
            assert not rep.exists(), err
            return
        _assert_inert(rep)


NUMBERS = st.one_of(
    st.sampled_from(["0", "-0", "1", "-1", "2", "8", "9", "1e400", "-1e400", "1e-400", "nan",
                     "-nan", "inf", "-inf", "Infinity", "0x10", "1_000", " 5", "5 ", "",
                     " ", "abc", "\uff11", "\u0663", "9" * 40, "+3", "3.0", "--", "-j",
                     "1e30", "1,5", "0.0001", "\x00"]),
    st.integers(min_value=-(10 ** 40), max_value=10 ** 40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8))
OPTIONS = ["--jobs", "--rtol", "--atol", "DROCLI_DASK_TIMEOUT", "DROCLI_DASK_NO_WORKER_TIMEOUT",
           "DROCLI_MAX_CELLS", "DROCLI_MAX_ORACLE_CALLS", "DROCLI_MAX_EPOCHS"]


@contextlib.contextmanager
def _environ(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


@FUZZ
@given(option=st.sampled_from(OPTIONS), value=NUMBERS)
def test_random_numeric_options(option, value, recorded):
    """-j, check's tolerances and the numeric environment variables: a number in range or
    one line; the finished folder is untouched either way (a run of it resumes, so a good
    value does not wait on the dask scheduler address, where nothing listens)."""
    spec, out = recorded
    if "\x00" in value and option.startswith("DROCLI_"):
        return                                  # the environment cannot hold a NUL
    kept = snapshot(out)
    with _Confined() as where:
        if option == "--jobs":
            run_checked(where, out, "run", spec, "--profile", "smoke", "--out", out, "-q",
                        f"--jobs={value}")
        elif option.startswith("--"):
            run_checked(where, out, "check", out, "--reference", out, f"{option}={value}")
        elif "DASK" in option:
            with _environ(option, value):
                run_checked(where, out, "run", spec, "--profile", "smoke", "--out", out,
                            "-q", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1")
        else:
            with _environ(option, value):
                run_checked(where, None, "show", spec)
                run_checked(where, None, "run", spec, "--out", where.root / "dry", "--dry-run")
    assert snapshot(out) == kept


def _nested(depth: int, shape: list[str], leaf: str, style: str, indent: int) -> str:
    """A YAML value nested `depth` deep: flow lists and mappings in the order of `shape`,
    or a block list (`- - - leaf`) on one line."""
    if style == "block":
        return "\n" + " " * (indent + 2) + "- " * depth + leaf
    opens = [("[" if shape[i % len(shape)] == "list" else "{k: ") for i in range(depth)]
    closes = ["]" if o == "[" else "}" for o in reversed(opens)]
    return "".join(opens) + leaf + "".join(closes)


DEPTHS = st.one_of(st.integers(min_value=1, max_value=60_000),
                   st.sampled_from([49, 50, 51, 52, 100, 1000, 30_000, 60_000]))
SHAPES = st.lists(st.sampled_from(["list", "dict"]), min_size=1, max_size=3)
LEAVES = st.sampled_from(["0", "1", "x", "''", "[]", "{}", "null", "1e30"])
DEEP_KEYS = ["seeds", "x_deep", "data.params.groups", "data.params", "profiles.smoke",
             "profiles.smoke.seeds", "solvers.0.params", "solvers.0.params.gamma_w",
             "figures.0.panels", "claims.0.others", "cases", "budget.epochs", "metrics",
             "title"]


@FUZZ
@given(depth=DEPTHS, shape=SHAPES, leaf=LEAVES, style=st.sampled_from(["flow", "block"]),
       key=st.sampled_from(DEEP_KEYS))
def test_random_deep_nesting_in_spec_files(depth, shape, leaf, style, key, recorded):
    raw = yaml.safe_load(TINY_SPEC)
    _set_path(raw, key, "__DEEP__")
    text = yaml.safe_dump(raw, allow_unicode=True)
    if "__DEEP__" not in text:
        return
    line = next(ln for ln in text.splitlines() if "__DEEP__" in ln)
    indent = len(line) - len(line.lstrip(" -"))
    text = text.replace("__DEEP__", _nested(depth, shape, leaf, style, indent), 1)
    with _Confined() as where:
        path, res = where.root / "deep.yaml", where.root / "res"
        path.write_text(text)
        code, err = run_checked(where, res, "run", path, "--profile", "smoke", "--out", res,
                                "-q")
        if code == 2:
            assert not res.exists(), err
        if depth > 60:
            assert code == 2, err


@FUZZ
@given(depth=DEPTHS, shape=SHAPES, leaf=LEAVES, key=st.sampled_from(KEYS),
       dotted=st.integers(min_value=0, max_value=60_000))
def test_random_deep_nesting_in_set_values(depth, shape, leaf, key, dotted, recorded):
    spec, _ = recorded
    override = key + ".a" * (dotted if dotted > 40 else 0) + "=" + _nested(
        depth, shape, leaf, "flow", 0)
    with _Confined() as where:
        res = where.root / "res"
        run_checked(where, None, "show", spec, "--set", override)
        code, err = run_checked(where, res, "run", spec, "--profile", "smoke", "--out", res,
                                "-q", "--set", override)
        if code == 2:
            assert not res.exists(), err
        if depth > 60 or dotted > 60:
            assert code == 2, err


def _no_network(monkeypatch) -> list:
    """Name resolution allowed for the loopback only (where nothing listens on port 1);
    every other attempt is recorded and refused."""
    import socket

    tried, real = [], socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        if host not in ("127.0.0.1", "::1", "localhost"):
            tried.append(host)
            raise socket.gaierror(socket.EAI_NONAME, "no network in the fuzzer")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    return tried


SCHEMES = st.sampled_from(["http", "https", "HTTP", "ftp", "file", "javascript", "data",
                           "gopher", "ws", "hxxp", "", " http", "http ", "h\x00ttp", "1http",
                           "mailto", "\u0127ttp"])
SEPARATORS = st.sampled_from(["://", ":", ":/", ":///", "//", "", ": //", ":\\\\"])
HOSTS = st.sampled_from(["127.0.0.1:1", "[::1]:1", "localhost:1", "", " ", "127.0.0.1:1 ",
                         "127.0.0.1 :1", "127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:abc",
                         "[::1", "::1]", "[::1]:x", "127.0.0.1:1\x00", "127.0.0.1:1\n",
                         "user@127.0.0.1:1", "user:pw@127.0.0.1:1", "%zz", "127.0.0.1:1%20",
                         "\u2028", "127.0.0.1:1\t"])


MIRROR_SOURCES = st.sampled_from(["libsvm", "mnist", "fashion_mnist", "cifar10", "cifar100"])
MIRROR_URLS = st.one_of(
    st.tuples(SCHEMES, SEPARATORS, HOSTS,
              st.text(max_size=12).map(lambda t: "/" + t if t else t)).map("".join),
    st.text(max_size=30).filter(lambda t: "://" not in t),
    st.sampled_from(["", " ", "-", "--help", "x y", "http://", "https://",
                     "http:// 127.0.0.1:1", "//127.0.0.1:1/"]))


@FUZZ
@given(source=MIRROR_SOURCES, url=MIRROR_URLS)
def test_random_mirror_urls(source, url, monkeypatch):
    """`drocli data fetch NAME --mirror URL`: anything but an http(s) address is refused
    before any connection, and one on the loopback's closed port fails at once; exit 2, one
    line, the target folder left as it was."""
    import time

    tried = _no_network(monkeypatch)
    with _Confined() as where:
        to = where.root / "data"
        t0 = time.perf_counter()
        code, err = run_checked(where, None, "data", "fetch", source, "--mirror", url, "--to",
                                to, "-q")
        assert code == 2, err
        assert not to.exists() and tried == [] and time.perf_counter() - t0 < 10, (tried, err)


@pytest.mark.slow
@LONG
@given(forgeries=st.lists(FORGERIES, min_size=1, max_size=3), seal=st.booleans())
def test_random_forged_results_folders_long(forgeries, seal, recorded):
    test_random_forged_results_folders.hypothesis.inner_test(forgeries, seal, recorded)


@pytest.mark.slow
@LONG
@given(place=st.sampled_from(NAME_PLACES), name=NAMES, how=st.sampled_from(["spec", "set"]))
def test_random_names_long(place, name, how, recorded):
    test_random_names.hypothesis.inner_test(place, name, how, recorded)


@pytest.mark.slow
@LONG
@given(name=NAMES)
def test_random_folder_names_in_report_long(name, recorded):
    test_random_folder_names_in_report.hypothesis.inner_test(name, recorded)


@pytest.mark.slow
@LONG
@given(option=st.sampled_from(OPTIONS), value=NUMBERS)
def test_random_numeric_options_long(option, value, recorded):
    test_random_numeric_options.hypothesis.inner_test(option, value, recorded)


@pytest.mark.slow
@LONG
@given(depth=DEPTHS, shape=SHAPES, leaf=LEAVES, style=st.sampled_from(["flow", "block"]),
       key=st.sampled_from(DEEP_KEYS))
def test_random_deep_nesting_in_spec_files_long(depth, shape, leaf, style, key, recorded):
    test_random_deep_nesting_in_spec_files.hypothesis.inner_test(depth, shape, leaf, style,
                                                                 key, recorded)


@pytest.mark.slow
@LONG
@given(depth=DEPTHS, shape=SHAPES, leaf=LEAVES, key=st.sampled_from(KEYS),
       dotted=st.integers(min_value=0, max_value=60_000))
def test_random_deep_nesting_in_set_values_long(depth, shape, leaf, key, dotted, recorded):
    test_random_deep_nesting_in_set_values.hypothesis.inner_test(depth, shape, leaf, key,
                                                                 dotted, recorded)


@pytest.mark.slow
@LONG
@given(source=MIRROR_SOURCES, url=MIRROR_URLS)
def test_random_mirror_urls_long(source, url, monkeypatch):
    test_random_mirror_urls.hypothesis.inner_test(source, url, monkeypatch)
