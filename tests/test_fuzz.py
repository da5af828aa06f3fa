"""Property-based hostile input (hypothesis): random spec edits, `--set` values and data
files. Invariants: never a traceback, never exit 3 (drocli's own bug) for input, and on
exit 2 nothing in an existing results folder changes.

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
                     "1e12", ".nan", "auto", "null", "~", "{", "[", "*a", "&a"]),
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
        "claims.0.metric", "claims.0.others", "profiles.smoke.budget.epochs", "blas_threads",
        "cases", "bogus"]


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
    assert code in (0, 1, 2), (code, err)          # 3 would be a drocli bug
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
