"""One name, one entry (issue 42): an entry is its module and function; a second module
registering a taken name is refused wherever that name is used, naming both (issue 57: and
only there); overriding a built-in needs
`replace=True`, which `list` shows; `list`, `run` and the contract suite resolve a name the
same way, whichever module is imported first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from drocli.errors import DrocliError
from drocli.plugins import registry

ROOT = Path(__file__).resolve().parents[1]

SOLVE = '''\
from drocli.plugins import registry


@registry.solver("{name}", family="finite_sum", description="{desc}", reference="none"{extra})
def solve(problem, params, rng, monitor):
    """A solver of {module}."""
'''


def _package(tmp: Path, dist: str, modules: dict[str, str]) -> None:
    """An installed outside distribution: its modules and `drocli.plugins` entry points."""
    for mod, text in modules.items():
        (tmp / f"{mod}.py").write_text(text)
    info = tmp / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[drocli.plugins]\n" + "".join(f"{m} = {m}\n" for m in modules))


def _drocli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "drocli", *args], capture_output=True,
                          text=True, cwd=tmp, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{tmp}{os.pathsep}{ROOT}"})


def _solver(module: str, name: str, extra: str = "") -> str:
    return SOLVE.format(name=name, desc=f"{name} from {module}", module=module, extra=extra)


def test_two_packages_with_one_name_are_refused_naming_both(tmp_path):
    """Two functions both called `solve`, in two packages, under one name: the name is
    refused wherever it is used, naming both; nothing else is blocked (issue 57)."""
    from tests.conftest import TINY_SPEC

    _package(tmp_path, "pkg_a", {"pkg_a": _solver("pkg_a", "dup_solver")})
    _package(tmp_path, "pkg_b", {"pkg_b": _solver("pkg_b", "dup_solver")})
    res = _drocli(tmp_path, "list", "solvers", "dup_solver")
    assert res.returncode == 2, res.stdout + res.stderr
    line = res.stderr.strip()
    assert "Traceback" not in line and len(line.splitlines()) == 1, line
    assert "pkg_a.solve" in line and "pkg_b.solve" in line and "replace=True" in line
    res = _drocli(tmp_path, "list", "solvers")        # the listing names the clash
    assert res.returncode == 0, res.stderr
    row = next(r for r in res.stdout.splitlines() if "dup_solver" in r)
    assert "REFUSED" in row and "pkg_a.solve" in row and "pkg_b.solve" in row, row
    assert any(r.split()[:1] == ["aleg"] for r in res.stdout.splitlines())
    (tmp_path / "tiny.yaml").write_text(TINY_SPEC)   # a spec that does not use the name
    res = _drocli(tmp_path, "show", "tiny.yaml")
    assert res.returncode == 0, res.stderr
    bad = TINY_SPEC.replace("{name: smd, label: SMD}", "{name: dup_solver, label: SMD}")
    (tmp_path / "bad.yaml").write_text(bad)            # and one that does
    res = _drocli(tmp_path, "show", "bad.yaml")
    assert res.returncode == 2 and "pkg_a.solve" in res.stderr and "bad.yaml" in res.stderr


def test_a_built_in_is_not_shadowed_without_replace(tmp_path):
    _package(tmp_path, "pkg_c", {"pkg_c": _solver("pkg_c", "sgd")})
    res = _drocli(tmp_path, "list", "solvers", "sgd")
    assert res.returncode == 2 and "drocli.solvers" in res.stderr and "pkg_c.solve" in \
        res.stderr, res.stderr


def test_an_override_says_so_and_every_path_uses_it(tmp_path):
    """replace=True: `list` shows what it replaces; the registry, the contract suite's
    selection and a spec's lookup all get the override, whichever module loads first."""
    _package(tmp_path, "pkg_d", {"pkg_d": _solver("pkg_d", "sgd", ", replace=True")})
    res = _drocli(tmp_path, "list", "solvers", "sgd")
    assert res.returncode == 0, res.stderr
    assert "defined in: pkg_d.solve" in res.stdout
    assert "replaces: drocli.solvers" in res.stdout
    res = _drocli(tmp_path, "list", "solvers")
    assert res.returncode == 0 and "replaces drocli.solvers" in res.stdout, res.stdout
    code = textwrap.dedent("""\
        import json, importlib
        from drocli import testing
        from drocli.plugins import registry
        importlib.import_module("{first}")
        e = registry.get("solver", "sgd")
        picked = [n for k, n in testing.selected_entries("solver", module="pkg_d")]
        print(json.dumps([e.func.__module__, e.replaces, picked]))
        """)
    import os

    for first in ("pkg_d", "drocli.solvers.finite_sum.sgd"):
        out = subprocess.run([sys.executable, "-c", code.format(first=first)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
        assert out.returncode == 0, out.stderr
        module, replaces, picked = json.loads(out.stdout)
        assert module == "pkg_d" and replaces.startswith("drocli.solvers"), first
        assert picked == ["sgd"]


def test_registration_in_process_names_both_origins():
    def solve(problem, params, rng, monitor):
        """Another solve."""

    registry.get("solver", "sgd")
    registry.solver("sgd", family="finite_sum", description="x")(solve)
    try:
        with pytest.raises(DrocliError, match=r"registered twice: by drocli\.solvers.*"
                                              r"test_registry_clash"):
            registry.get("solver", "sgd")
        assert registry._REGISTRY["solver"]["sgd"].func is not solve
    finally:
        registry._CLASHES["solver"].pop("sgd", None)
    assert registry.get("solver", "sgd").func is not solve
