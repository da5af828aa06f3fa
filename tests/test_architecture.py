"""One direction (issue 30): drocli's modules import each other without a circle.

The graph is read from the sources with `ast`: an edge A -> B for each `import B` /
`from B import x` statement in A (relative imports resolved; `from P import m` names the
module P.m when m is a module, else P). Two graphs are checked:

- at import: the statements that run when A is imported, i.e. those at module level,
  including inside module-level `if` / `try` / `with` blocks and class bodies;
- with deferred imports: every statement, those inside functions too, so that moving an
  import into a function cannot hide a circle.

Not counted: imports under `if TYPE_CHECKING:` (never run), the parent packages Python
initialises before a module, and plug-ins the registry imports by name (discovery).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "drocli"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The drocli modules an import statement names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")[: len(module.split(".")) - node.level + is_package]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix
                 for a in node.names]
    out = set()
    for name in names:
        while name and name not in MODULES:       # `import drocli.x.y` of a name in x
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(module: str, deferred: bool) -> set[str]:
    """The drocli modules `module` imports (at import, or also inside functions)."""
    path = MODULES[module]
    found: set[str] = set()

    def visit(nodes, in_function: bool) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if deferred or not in_function:
                    found.update(_targets(module, path.name == "__init__.py", node))
            elif isinstance(node, ast.If) and _type_checking(node):
                visit(node.orelse, in_function)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(ast.iter_child_nodes(node), True)
            else:
                visit(ast.iter_child_nodes(node), in_function)

    visit(ast.parse(path.read_text(), str(path)).body, False)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _explain(graph: dict[str, set[str]], comps: list[list[str]]) -> str:
    return "; ".join(" / ".join(f"{m} -> {', '.join(sorted(graph[m] & set(c)))}" for m in c)
                     for c in comps)


@pytest.mark.parametrize("deferred", [False, True], ids=["at_import", "with_deferred"])
def test_no_import_circle(deferred):
    graph = {m: imports(m, deferred) for m in MODULES}
    found = cycles(graph)
    assert not found, "import circles: " + _explain(graph, found)


def test_every_module_imports():
    """Every module imports (a circle at import time would fail here too)."""
    for name in MODULES:
        importlib.import_module(name)


def test_the_graph_sees_a_circle():
    """The reader finds deferred and relative imports, and the check reports a circle."""
    assert "drocli.plugins.registry" in imports("drocli.run.cells", deferred=False)
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("from . import plotting\nfrom .plots import curves\n")
    got = set().union(*(_targets("drocli.figures.render", False, n) for n in tree.body))
    assert got == {"drocli.figures.plotting", "drocli.figures.plots.curves"}
