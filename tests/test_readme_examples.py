"""The examples of docs/plugins.md (linked from the README's "Adding a plug-in": a solver, a
data source, two claim kinds, an outside plug-in) work
as written: each python block (headed `# mypkg/<file>.py`) is written into a package, its
entries register, pass `drocli.testing`'s contract, and the package's own test file runs the
suite on them; the claim kinds judge records."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from drocli import testing
from drocli.plugins import registry

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(# mypkg/(\w+)\.py\n.*?)```", re.S)


def _section() -> str:
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    return text[text.index("## Adding a solver"):text.index("## More")]


@pytest.fixture
def mypkg(tmp_path, monkeypatch):
    """The README's files as package `mypkg`, imported; its entries removed afterwards."""
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    files = {}
    for code, stem in BLOCK.findall(_section()):
        (pkg / f"{stem}.py").write_text(code)
        files[stem] = code
    monkeypatch.syspath_prepend(str(tmp_path))
    before = {k: set(registry._REGISTRY[k]) for k in registry.KINDS}
    mods = {stem: importlib.import_module(f"mypkg.{stem}") for stem in files
            if not stem.startswith("test_")}
    yield files, mods
    for k in registry.KINDS:        # only mypkg's: built-ins first loaded meanwhile stay
        for name in set(registry._REGISTRY[k]) - before[k]:
            module = getattr(registry._REGISTRY[k][name].func, "__module__", "") or ""
            if module == "mypkg" or module.startswith("mypkg."):
                del registry._REGISTRY[k][name]
    for m in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        del sys.modules[m]


def test_readme_has_the_five_examples():
    stems = [s for _, s in BLOCK.findall(_section())]
    assert stems == ["plain_sgd", "noisy_line", "area_below", "wins_most", "test_contract"]
    section = _section()
    assert "drocli.plugins" in section and "solver.plain_sgd = mypkg.plain_sgd" in section
    for private in ("_judge", "_curve_stats", "_final_stats", "registry._"):
        assert private not in section, "the examples use the public API only"


def test_readme_examples_register_and_pass_the_contract(mypkg):
    files, mods = mypkg
    picked = testing.selected_entries(module="mypkg")
    assert picked == [("solver", "plain_sgd"), ("data", "noisy_line"),
                      ("claim", "area_below"), ("claim", "wins_most")]
    for kind, name in picked:
        testing.check_entry(kind, name, time_limit_s=60)
    assert registry.get("solver", "plain_sgd").reference.startswith("Robbins")
    # the package's own test file, as pytest would run it
    ns: dict = {}
    exec(compile(files["test_contract"], "mypkg/test_contract.py", "exec"), ns)
    test = ns["test_drocli_contract"]
    mark = next(m for m in test.pytestmark if m.name == "parametrize")
    checks = mark.args[1]
    assert len(checks) >= 10
    for check in checks:
        test(check)


def test_readme_data_source_loads(mypkg):
    data = mypkg[1]["noisy_line"].load({"n": 20, "d": 2, "noise": 0.0}, seed=3)
    assert data.X_train.shape == (20, 2)
    assert np.allclose(data.y_train, data.X_train.sum(axis=1))


def test_readme_claim_kind_judges_records(mypkg):
    import pandas as pd

    from drocli.claims import evaluate_claim, validate_claim

    rows = []
    for label, level in (("fast", 1.0), ("slow", 2.0)):
        for seed in range(6):            # a verdict needs 6 seeds (exact sign-flip)
            for step, x in enumerate((0, 10, 20)):
                rows.append({"cell": f"{label}{seed}", "label": label, "seed": seed,
                             "step": step, "oracle_calls": x,
                             "time_s": 0.0, "metric": "loss",
                             "value": level + 0.01 * seed * level + (2 - step)})
    claim = validate_claim({"id": "auc", "text": "fast has the smaller area",
                            "kind": "area_below", "metric": "loss", "solver": "fast",
                            "others": ["slow"]})
    res = evaluate_claim(pd.DataFrame(rows), claim, "paper")
    assert res.status == "holds", res.detail
    assert res.values["fast"] < res.values["slow"]


def _finals(wins: int, seeds: int):
    """Records of labels fast and slow whose final loss has fast below slow on `wins` of
    `seeds` seeds (slow below on the rest)."""
    import pandas as pd

    rows = []
    for seed in range(seeds):
        final = {"fast": 1.0, "slow": 2.0} if seed < wins else {"fast": 2.0, "slow": 1.0}
        for label, last in final.items():
            for step, x in enumerate((0, 10, 20)):
                rows.append({"cell": f"{label}{seed}", "label": label, "seed": seed,
                             "step": step, "oracle_calls": x, "time_s": 0.0,
                             "metric": "loss", "value": last + (2 - step) + 0.01 * seed})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("wins", "seeds", "status"), [
    (8, 8, "holds"), (7, 8, "holds"), (6, 8, "fails"), (5, 5, "holds"), (4, 4, "skipped")])
def test_readme_sign_test_kind_judges_records(mypkg, wins, seeds, status):
    from drocli.claims import evaluate_claim, validate_claim

    claim = validate_claim({"id": "most", "text": "fast ends lower on most seeds",
                            "kind": "wins_most", "metric": "loss", "solver": "fast",
                            "others": ["slow"]})
    res = evaluate_claim(_finals(wins, seeds), claim, "paper")
    assert res.status == status, res.detail
    assert res.effects == {}            # no effects: the point verdict decides
    if status != "skipped":
        need = {8: 7, 5: 5}[seeds]
        assert f"below slow on {wins} of {seeds} seeds (needs {need})" in res.detail
        assert res.point_status == status


def test_readme_sign_test_threshold_is_the_exact_binomial_tail(mypkg):
    from math import comb

    wins_needed = mypkg[1]["wins_most"].wins_needed
    for n in range(0, 25):
        for alpha in (0.05, 0.025, 0.01):
            w = wins_needed(n, alpha)
            tail = [sum(comb(n, k) for k in range(j, n + 1)) / 2 ** n for j in range(n + 2)]
            if w is None:
                assert tail[n] > alpha
            else:
                assert tail[w] <= alpha < tail[w - 1]


def test_the_readmes_spec_excerpt_loads_as_written(tmp_path):
    """The README's short spec is a spec: it loads and expands into cells."""
    from drocli.run.cells import expand
    from drocli.spec import load_spec

    text = (ROOT / "README.md").read_text()
    start = text.index("## Spec format")
    block = text[text.index("```yaml", start) + len("```yaml"):]
    path = tmp_path / "readme_spec.yaml"
    path.write_text(block[:block.index("```")])
    spec = load_spec(path, profile="smoke")
    assert spec.name == "gdro_synthetic" and spec.claims[0].id == "aleg_lowest"
    assert len(expand(spec)) == 2 * 10
