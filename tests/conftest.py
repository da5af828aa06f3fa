"""Shared fixtures: tiny specs and problems for each solver family."""

from __future__ import annotations

import math
import os
import tempfile
import textwrap
from pathlib import Path

import pytest

# Caches (ground-truth R_i^*, decoded data files) go to a per-session folder, never to the
# user's cache; subprocesses started by the tests inherit it.
os.environ.setdefault("DROCLI_DATA", tempfile.mkdtemp(prefix="drocli-test-data-"))
# `check` judges afresh in tests (tests/test_check_cache.py turns its answer cache on).
os.environ["DROCLI_CACHE"] = "off"

TINY_SPEC = textwrap.dedent("""\
    name: tiny
    title: Tiny GDRO
    data:
      name: gdro_synthetic
      params: {groups: 3, dim: 6, n_train: 40, n_test: 40, label_noise: 0.1}
      seed: 0
    problem:
      name: gdro
      params: {loss: logistic, radius: 10.0}
    solvers:
      - {name: smd, label: SMD}
      - {name: aleg, label: ALEG}
    seeds: [0, 1]
    budget: {epochs: 4, checkpoints: 8}
    metrics: [max_risk_train, max_risk_test]
    figures:
      - name: fig_tiny
        title: Tiny
        panels:
          - {metric: max_risk_train, title: train}
          - {metric: max_risk_test, title: test}
    claims:
      - id: below_start
        text: ALEG ends below SMD
        kind: final_below
        metric: max_risk_train
        solver: ALEG
        others: [SMD]
        per_seed: false
        reproduced: true
    profiles:
      smoke: {budget.epochs: 2}
    """)


def call(*args) -> int:
    """Run the CLI in-process; its exit code (0 when it returns)."""
    from drocli.cli import main

    try:
        main([str(a) for a in args])
    except SystemExit as e:
        return e.code
    return 0


def names_file(err: str, path) -> bool:
    """The error line `err` names `path`: whole, or (a long path) shortened in its middle as
    error lines shorten it (`/tmp/long/\u2026/experiments/x.yaml`): its start and its end,
    the file name included, kept."""
    import re

    p = str(path)
    if p in err:
        return True
    for m in re.finditer(r"(\S*)\u2026(/\S*)", err):
        head, tail = m.group(1), m.group(2).rstrip(":")
        if head and p.startswith(head) and p.endswith(tail) and tail.endswith(Path(p).name):
            return True
    return False


class StepMonitor:
    """Minimal monitor: a fixed oracle budget, chunks of up to 50 steps, no recording."""

    def __init__(self, problem, budget):
        self.problem, self.budget = problem, budget

    def __call__(self, *point, **named):
        return self.problem.oracle_calls < self.budget

    def steps_until_due(self, cost):
        return max(1, min(50, math.ceil((self.budget - self.problem.oracle_calls) / cost)))


def load_source(name, params=None, seed=0):
    """A registered data source's output for params overlaid on its defaults."""
    from drocli.plugins import registry

    entry = registry.get("data", name)
    return entry.func(registry.resolve_params(entry, dict(params or {})), seed)


@pytest.fixture
def data_home(tmp_path, monkeypatch) -> Path:
    """An empty $DROCLI_DATA of the test's own (the cache never lands in ~/.cache)."""
    home = tmp_path / "drocli_data"
    home.mkdir()
    monkeypatch.setenv("DROCLI_DATA", str(home))
    monkeypatch.delenv("DROCLI_NO_CACHE", raising=False)
    return home


def tiny_folder(root: Path) -> Path:
    """A tiny results folder (TINY_SPEC at the smoke profile) run into root/res."""
    spec = root / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    out = root / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    return out


@pytest.fixture
def tiny_spec(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_SPEC)
    return path


def plugin(kind: str, name: str):
    """A plug-in's function called as the runner calls it: params resolved over its
    defaults by its model (so bad values raise DrocliError, as at load time)."""
    from drocli.plugins import registry

    entry = registry.get(kind, name)

    def resolve(params):
        return registry.resolve_params(entry, dict(params or {}))

    if kind == "data":
        return lambda params=None, seed=0: entry.func(resolve(params), seed)
    if kind == "problem":
        return lambda data, params=None: entry.func(data, resolve(params))
    return lambda problem, params, rng, monitor: entry.func(problem, resolve(params), rng,
                                                            monitor)
