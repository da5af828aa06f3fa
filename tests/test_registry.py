"""The plug-in registry: one contract for every registered entry of every kind, lazy loading,
third-party entry points."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from drocli.cli.listing import describe
from drocli.plugins import discovery, registry

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = [(k, n) for k in registry.KINDS for n in registry.names(k)]


def test_source_index_matches_a_full_import():
    """The decorator scan finds exactly what importing every module registers."""
    index = registry.index()
    for pkg_name in ("drocli.data", "drocli.problems", "drocli.solvers", "drocli.figures.plots",
                     "drocli.claims"):
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
            importlib.import_module(info.name)
    for kind in registry.KINDS:
        assert set(registry._REGISTRY[kind]) == set(index[kind]), kind
        for name, entry in registry._REGISTRY[kind].items():
            assert entry.func.__module__ == index[kind][name] or \
                index[kind][name].startswith(entry.func.__module__.rsplit(".", 1)[0])


def test_every_kind_has_entries():
    for kind in registry.KINDS:
        assert registry.names(kind), kind


@pytest.mark.parametrize("kind,name", ENTRIES, ids=[f"{k}-{n}" for k, n in ENTRIES])
def test_entry_contract(kind, name):
    """Typed, described, defaults valid, unknown keys refused, discoverable."""
    e = registry.get(kind, name)
    assert e.kind == kind and e.name == name
    assert issubclass(e.params, BaseModel)
    assert e.params.model_config.get("extra") == "forbid"
    assert e.summary, "a one-line description"
    with pytest.raises(registry.DrocliError, match="no_such_param"):
        registry.validate_params(e, {"no_such_param": 1, **({"kind": name} if kind in (
            "figure", "claim") else {})})
    text = describe(kind, name)
    if kind in ("figure", "claim"):
        assert "kind" in e.params.model_fields
        return
    defaults = e.params()                        # every default is valid
    assert registry.resolve_params(e, {}) == defaults.model_dump()
    for field, info in e.params.model_fields.items():
        assert info.description, f"{kind} {name}: parameter {field} has no description"
        assert field in text
    if kind == "problem":
        assert e.metrics, "a problem declares the metrics it records"
        assert e.family
    if kind == "data":
        assert e.memory is not None, "a data source estimates its memory"
        assert int(e.memory(defaults.model_dump())) >= 0
    if kind == "solver":
        assert e.family
        doc = (e.func.__doc__ or "") + (sys.modules[e.func.__module__].__doc__ or "")
        assert e.reference or any(w in doc for w in (
            "Algorithm", "Alg.", "reconstruct", "Reconstruct", "eq.", "eqs.",
            "docs/papers/")), "declares reference= (or its docstring names its algorithm box)"


def test_solver_families_match_a_problem():
    problem_families = {registry.get("problem", n).family for n in registry.names("problem")}
    for n in registry.names("solver"):
        assert registry.get("solver", n).family in problem_families, n


def _python(code: str, env_extra: dict | None = None, cwd=ROOT) -> str:
    import os

    env = {**os.environ, **(env_extra or {})}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=cwd, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_loading_a_spec_is_lazy():
    """A spec imports only its own plug-ins, and neither numba nor matplotlib."""
    out = _python(textwrap.dedent("""\
        import json, sys
        from drocli.spec import load_spec
        load_spec("experiments/gdro_synthetic.yaml")
        print(json.dumps(sorted(m for m in sys.modules if m.startswith(("drocli.", "numba",
                                                                         "matplotlib")))))
        """))
    mods = json.loads(out)
    assert not any(m.startswith(("numba", "matplotlib")) for m in mods), mods
    solvers = {m for m in mods if m.startswith("drocli.solvers.") and m.count(".") == 3}
    assert {f"drocli.solvers.dro.{s}" for s in ("aleg", "smd", "mpvr", "al_svre")} <= solvers
    assert not solvers & {f"drocli.solvers.dro.{s}" for s in ("alem", "ermeg", "tsa")}
    assert not any(m.startswith(("drocli.solvers.fl", "drocli.problems.federated",
                                 "drocli.figures.plots.objective_space")) for m in mods)


def test_third_party_plugin_through_entry_points(tmp_path):
    """A package registers a solver through the `drocli.plugins` entry-point group."""
    (tmp_path / "toy_plugin.py").write_text(textwrap.dedent('''\
        """A toy third-party solver (Algorithm 0 of nobody): stays at zero."""
        import numpy as np
        from pydantic import Field
        from drocli.plugins import registry
        from drocli.plugins.registry import Params

        class ToyParams(Params):
            steps: int = Field(3, ge=1, description="how many do-nothing steps")

        @registry.solver("toy", params=ToyParams, family="gdro",
                         description="toy: stays at the start")
        def solve(problem, params, rng, monitor):
            """Algorithm 0: never moves."""
            return None
        '''))
    dist = tmp_path / "toy_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[drocli.plugins]\nsolver.toy = toy_plugin\n")
    out = _python(textwrap.dedent("""\
        from drocli.plugins import registry
        from drocli.cli.listing import describe
        assert "toy" in registry.names("solver")
        print(describe("solver", "toy"))
        """), {"PYTHONPATH": str(tmp_path)})
    assert "steps" in out and "int >= 1" in out


def test_static_summaries_equal_the_imported_entries():
    """`drocli list` reads family and one-line description from the decorators' literal
    arguments without importing plug-ins: they must equal the imported entries', and a
    listing imports no plug-in module (nor pandas)."""
    import subprocess
    import sys

    registry.index()
    for kind in registry.KINDS:
        static = discovery.STATIC.get(kind, {})
        assert set(static) == set(registry.names(kind)), kind
        for name, (family, summary) in static.items():
            e = registry.get(kind, name)
            assert (family, summary) == (e.family, e.summary), (kind, name)
    code = ("import sys\nfrom drocli.cli import cli\n"
            "try:\n    cli.main(args=['list'], standalone_mode=False)\n"
            "except SystemExit:\n    pass\n"
            "bad = [m for m in sys.modules if m.startswith(('drocli.solvers.', "
            "'drocli.problems.', 'drocli.data.', 'pandas', 'numba', 'matplotlib'))]\n"
            "print('IMPORTED', bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "IMPORTED []" in out, out[-500:]


def test_no_shipped_spec_loads_pandas_numba_matplotlib_or_optimizers():
    """Loading and validating any shipped spec imports none of the heavy libraries (they load
    when a cell runs, a figure is drawn or a claim is judged)."""
    out = _python(textwrap.dedent("""\
        import glob, json, subprocess, sys
        heavy = ("pandas", "numba", "matplotlib", "scipy.optimize")
        bad = {}
        for path in sorted(glob.glob("experiments/*.yaml")):
            code = ("import sys; from drocli.spec import load_spec; load_spec(%r); "
                    "print([m for m in %r if m in sys.modules])" % (path, heavy))
            got = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                 text=True).stdout.strip()
            if got != "[]":
                bad[path] = got
        print(json.dumps(bad))
        """))
    assert json.loads(out) == {}


def test_added_field_stays_out_of_the_cell_key_at_its_default():
    """A parameter added after runs were recorded keeps their ids and streams: absent from the
    key while at its default, present otherwise; `auto` fields keep their legacy form."""
    from typing import Literal

    class Before(registry.Params):
        lr: float = 0.1
        batch: int | None = registry.auto("auto batch", legacy=0)

    class After(Before):
        form: Literal["auto", "direct"] = registry.added("auto", "how to compute")

    assert After().key_dict() == Before().key_dict() == {"lr": 0.1, "batch": 0}
    assert After(form="direct").key_dict() == {"lr": 0.1, "batch": 0, "form": "direct"}
    assert After(form="direct").model_dump()["form"] == "direct"
    assert After().model_dump()["form"] == "auto"


# --- discovery cannot miss a registration (issue 30 item 2) ----------------------------------

_FORMS = '''\
"""Every way a module can register (the docstring's `@registry.solver(name)` is prose)."""
import drocli.plugins.registry
import drocli.plugins.registry as R
from drocli.plugins import registry
from drocli.plugins import registry as reg
from drocli.plugins.registry import Params, register
from drocli.plugins.registry import claim as make_claim, solver

NAME = "by_constant"


@solver("imported_shorthand", family="gdro", description="one\\ntwo")
def a(): ...


@register("problem", "imported_register")
def b(): ...


@reg.data(NAME, description="aliased module")
def c(): ...


@R.figure(name="keyword_name")
def d(): ...


@drocli.plugins.registry.register(kind="data", name="dotted_module")
def e(): ...


make_claim("not_a_decorator")(e)
registry.solver("plain_call", family="finite_sum", description="x")(a)
for n in ("x", "y"):
    registry.solver(n)(a)      # a computed name: cannot be indexed
'''


def test_scan_finds_every_registration_form():
    found = discovery.scan(_FORMS)
    got = {(f.kind, f.name) for f in found}
    assert got == {("solver", "imported_shorthand"), ("problem", "imported_register"),
                   ("data", "by_constant"), ("figure", "keyword_name"),
                   ("data", "dotted_module"), ("claim", "not_a_decorator"),
                   ("solver", "plain_call"), ("solver", None)}
    statics = {f.name: f.static for f in found}
    assert statics["imported_shorthand"] == ("gdro", "one")
    assert statics["by_constant"] == (None, "aliased module")
    assert statics["keyword_name"] is None
    assert not discovery._simple(_FORMS)


def test_regex_fast_path_agrees_with_the_syntax_tree():
    """Files in the common form are read with the regular expression; for every built-in
    plug-in file it finds exactly what the syntax tree finds."""
    root = ROOT / "drocli"
    checked = 0
    for sub in discovery._SCAN:
        for path in sorted((root / sub).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "registry" in text and discovery._simple(text):
                assert sorted(discovery.scan_regex(text)) == \
                    sorted(discovery.scan_ast(text)), path
                checked += 1
    assert checked > 50


def test_entry_point_index_equals_the_imported_registry(tmp_path):
    """Entry-point plug-ins: the index, built from their sources without importing them,
    names exactly what importing them registers, in every form; a registration whose name
    is computed makes its module one that is imported when a lookup misses."""
    (tmp_path / "ep_named.py").write_text(textwrap.dedent('''\
        """Two solvers through an imported decorator."""
        from drocli.plugins.registry import solver

        @solver("ep_one", family="gdro", description="first")
        def one(problem, params, rng, monitor):
            """Algorithm 1."""

        @solver("ep_two", family="gdro", description="second")
        def two(problem, params, rng, monitor):
            """Algorithm 2."""
        '''))
    (tmp_path / "ep_loose.py").write_text(textwrap.dedent('''\
        from drocli.plugins import registry as r

        r.register("claim", "ep_claim", description="x")(lambda claim, data: None)
        for name in ("ep_dyn_a", "ep_dyn_b"):
            r.solver(name, family="gdro", description=name)(lambda *a: None)
        '''))
    dist = tmp_path / "ep_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[drocli.plugins]\nsolver.ep_one = ep_named\nmore = ep_loose\n")
    out = _python(textwrap.dedent("""\
        import json, sys
        from drocli.plugins import discovery, registry
        idx = registry.index()
        before = {k: sorted(n for n in v if n.startswith("ep_")) for k, v in idx.items()}
        imported = [m for m in ("ep_named", "ep_loose") if m in sys.modules]
        loose = list(discovery.LOOSE_PLUGINS)
        registry.load_all()
        after = {k: sorted(n for n in registry._REGISTRY[k] if n.startswith("ep_"))
                 for k in registry.KINDS}
        print(json.dumps([before, imported, loose, after]))
        """), {"PYTHONPATH": str(tmp_path)})
    before, imported, loose, after = json.loads(out)
    assert imported == [], "the index reads the sources, it imports nothing"
    assert before["solver"] == ["ep_one", "ep_two"] and before["claim"] == ["ep_claim"]
    assert loose == ["ep_loose"]
    assert after["solver"] == ["ep_dyn_a", "ep_dyn_b", "ep_one", "ep_two"]
    for kind in registry.KINDS:       # every indexed name is registered by the import
        assert set(before[kind]) <= set(after[kind]), kind
    missed = {n for k in registry.KINDS for n in set(after[k]) - set(before[k])}
    assert missed == {"ep_dyn_a", "ep_dyn_b"}, "only the computed names, found through loose"
