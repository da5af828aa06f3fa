"""Where each plug-in lives, found by reading sources (no plug-in import).

`index()` scans the plug-in packages for the registry's calls and maps kind -> name ->
module; `STATIC` keeps each entry's family and one-line description where the call's
arguments are literals, so `drocli list` prints a listing without importing a plug-in, nor
pydantic. Third-party modules come from the `drocli.plugins` entry points; their sources are
scanned the same way when they can be found without importing them. The registry
(drocli/plugins/registry.py) imports a module when one of its names is looked up.

Every form the registry supports is found: `@registry.solver("x")`,
`@registry.register("solver", "x")`, `from drocli.plugins.registry import solver` then
`@solver("x")`, aliases (`from drocli import registry as r`, `import drocli.plugins.registry`),
keyword arguments, a name held by a module constant, and a call that is not a decorator
(`registry.solver("x")(f)`). A file in the common form (`from drocli import registry` and
`@registry.KIND("literal"` calls only) is read with a regular expression; any other file
that mentions the registry is parsed (`ast`). A registration whose kind or name is not a
literal cannot be indexed: its module is imported whenever a lookup misses or a kind is
listed (as an entry point without a `kind.name`), so discovery never misses an entry.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

KINDS = ("solver", "problem", "data", "figure", "claim")
PLURAL = {"solver": "solvers", "problem": "problems", "data": "data", "figure": "figures",
          "claim": "claims"}
ENTRY_POINT_GROUP = "drocli.plugins"
# packages scanned for built-in plug-ins, relative to drocli/
_SCAN = ("solvers", "problems", "data", "figures/plots", "claims")
_DECORATOR = re.compile(
    r"@(?:registry\.)?(?:(solver|problem|data|figure|claim)\(\s*|register\(\s*[\"']"
    r"(solver|problem|data|figure|claim)[\"']\s*,\s*)(?:[\"']([A-Za-z0-9_.+-]+)[\"']|([A-Z_][A-Z0-9_]*))")

INDEX: dict[str, dict[str, str]] | None = None      # kind -> name -> module
STATIC: dict[str, dict[str, tuple[str | None, str]]] = {}   # kind -> name -> (family, summary)
CLAIMANTS: dict[str, dict[str, list[str]]] = {}   # kind -> name -> every module registering it
LOOSE_PLUGINS: list[str] | None = None  # modules to import when a lookup misses: entry points
#                                          without a kind.name, registrations not literal
_NAMES_IMPORT = re.compile(r"^from drocli(?:\.plugins)?\.registry import (\([^)]*\)|[^\n]*)", re.M)
# the registry module's own path and its alias for plug-in authors (drocli/__init__.py)
_REGISTRY = ("drocli.plugins.registry", "drocli.registry")
_REGISTRY_PARENT = ("drocli.plugins", "drocli")
_KIND_USE = re.compile(r"\bregistry\.(?:solver|problem|data|figure|claim|register)\b")
_SHORTHANDS = frozenset(KINDS)


class Found(NamedTuple):
    """One registration found in a source: kind and name (None when not a literal), and
    (family, one line) when the description is a literal."""

    kind: str | None
    name: str | None
    static: tuple[str | None, str] | None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _constant(text: str, ident: str) -> str | None:
    """The string a module-level constant is assigned (`NAME = "mnist5k"`)."""
    m = re.search(rf"^{ident}\s*=\s*[\"']([A-Za-z0-9_.+-]+)[\"']", text, re.M)
    return m.group(1) if m else None


_LITERALS = r"""((?:\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'))+)"""


def _call_text(text: str, start: int) -> str:
    """The decorator call's argument text from `start` to its closing parenthesis."""
    depth, i, quote = 1, start, None
    while i < len(text) and depth:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        i += 1
    return text[start:i]


def _static_summary(text: str, start: int) -> tuple[str | None, str] | None:
    """(family, first line of the description) read from the decorator's literal arguments,
    so `drocli list` needs no plug-in import; None when the description is not a literal."""
    import ast

    call = _call_text(text, start)
    m = re.search(r"\bdescription\s*=" + _LITERALS, call)
    if not m:
        return None
    try:
        desc = ast.literal_eval("(" + m.group(1) + ")")
        fam = re.search(r"\bfamily\s*=" + _LITERALS, call)
        family = ast.literal_eval("(" + fam.group(1) + ")") if fam else None
    except (ValueError, SyntaxError):
        return None
    return family, desc.strip().splitlines()[0] if desc.strip() else ""


def _simple(text: str) -> bool:
    """The file uses the registry only as `from drocli import registry` (or
    `from drocli.plugins import registry`) plus
    `registry.<attr>` (and imports no registering function by name), and every
    registration call is one the regular expression reads (a mention in backticks,
    `@registry.figure(kind, ...)` in a docstring, is prose)."""
    uses = text.count("registry.") + sum(text.count(f"\nfrom {p} import registry\n")
                                         for p in _REGISTRY_PARENT)
    for m in _NAMES_IMPORT.finditer(text):    # `from drocli.plugins.registry import Params, auto`
        names = {n.split(" as ")[0].strip() for n in m.group(1).strip("()").split(",")}
        if names & {*KINDS, "register", "*"}:
            return False
        uses += 1
    if text.count("registry") != uses:
        return False
    calls = {m.start() for m in _KIND_USE.finditer(text) if text[m.start() - 2:m.start()]
             != "`@"}
    matched = {m.start() + 1 for m in _DECORATOR.finditer(text) if m.group(0).startswith(
        "@registry.")}
    return calls <= matched


def scan_regex(text: str) -> list[Found]:
    """Registrations of a file in the common form, read with the regular expression."""
    out = []
    for m in _DECORATOR.finditer(text):
        kind = m.group(1) or m.group(2)
        name = m.group(3) or _constant(text, m.group(4))
        out.append(Found(kind, name, _static_summary(text, m.end())))
    return out


def scan_ast(text: str, filename: str = "<source>") -> list[Found]:
    """Registrations of a file in any form the registry supports, read from its syntax
    tree: every call of `register` or a kind shorthand reached through the registry module
    under any import or alias."""
    import ast

    tree = ast.parse(text, filename)
    modules = set(_REGISTRY)            # dotted names bound to the registry module
    funcs: dict[str, str] = {}          # local name -> "register" or a kind
    consts: dict[str, str] = {}         # module-level NAME = "literal"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in (*_REGISTRY_PARENT, *_REGISTRY):
            for a in node.names:
                if node.module in _REGISTRY_PARENT and a.name == "registry":
                    modules.add(a.asname or "registry")
                elif node.module in _REGISTRY and (
                        a.name in _SHORTHANDS or a.name == "register"):
                    funcs[a.asname or a.name] = a.name
                elif node.module in _REGISTRY and a.name == "*":
                    funcs.update({k: k for k in (*KINDS, "register")})
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _REGISTRY:
                    modules.add(a.asname or a.name)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    consts[t.id] = node.value.value

    def dotted(n) -> str | None:
        if isinstance(n, ast.Name):
            return n.id
        if isinstance(n, ast.Attribute):
            head = dotted(n.value)
            return f"{head}.{n.attr}" if head else None
        return None

    def text_of(n) -> str | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return n.value
        if isinstance(n, ast.Name):
            return consts.get(n.id)
        return None

    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        what = None
        if isinstance(node.func, ast.Name):
            what = funcs.get(node.func.id)
        elif isinstance(node.func, ast.Attribute) and dotted(node.func.value) in modules and \
                (node.func.attr in _SHORTHANDS or node.func.attr == "register"):
            what = node.func.attr
        if what is None:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        args = list(node.args)
        if what == "register":
            kind_node = args.pop(0) if args else kw.get("kind")
            kind = text_of(kind_node) if kind_node is not None else None
            kind = kind if kind in KINDS else None
        else:
            kind = what
        name_node = args[0] if args else kw.get("name")
        name = text_of(name_node) if name_node is not None else None
        static = None
        desc = kw.get("description")
        if isinstance(desc, ast.Constant) and isinstance(desc.value, str):
            fam = kw.get("family")
            family = fam.value if isinstance(fam, ast.Constant) and \
                isinstance(fam.value, str) else None
            if fam is None or family is not None:
                d = desc.value.strip()
                static = (family, d.splitlines()[0] if d else "")
        out.append(Found(kind, name, static))
    return out


def scan(text: str, filename: str = "<source>") -> list[Found] | None:
    """The registrations of one source file (None: it does not mention the registry)."""
    if "registry" not in text:
        return None
    return scan_regex(text) if _simple(text) else scan_ast(text, filename)


def _add(claims, found: list[Found], module: str, loose: list[str]) -> None:
    for f in found:
        if f.kind is None or f.name is None:
            if module not in loose:
                loose.append(module)
            continue
        _claim(claims, f.kind, f.name, module)
        if f.static is not None:
            STATIC.setdefault(f.kind, {}).setdefault(f.name, f.static)


def _claim(claims, kind: str, name: str, module: str) -> None:
    mods = claims[kind].setdefault(name, [])
    if module not in mods:
        mods.append(module)


def claimants(kind: str, name: str) -> list[str]:
    """Every module found registering `name` of `kind` (drocli's first): a lookup imports
    them all, so that two registrations of one name meet in the registry, which refuses
    the second or applies an override (`replace=True`), whichever is imported first."""
    index()
    return list(CLAIMANTS.get(kind, {}).get(name, ()))


def index() -> dict[str, dict[str, str]]:
    """kind -> name -> module, from drocli's sources and the `drocli.plugins` entry points."""
    global INDEX, LOOSE_PLUGINS, CLAIMANTS
    if INDEX is not None:
        return INDEX
    claims: dict[str, dict[str, list[str]]] = {k: {} for k in KINDS}
    loose: list[str] = []
    root = Path(__file__).resolve().parents[1]     # drocli/
    for sub in _SCAN:
        for path in sorted((root / sub).rglob("*.py")):
            found = scan(path.read_text(encoding="utf-8"), str(path))
            if found:
                _add(claims, found, _module_name(path, root), loose)
    for ep in _plugin_entry_points():
        kind, _, name = ep.name.partition(".")
        module = ep.value.split(":")[0].strip()
        found = _scan_module(module)
        if found:
            _add(claims, found, module, loose)
        if kind in KINDS and name:
            _claim(claims, kind, name, module)
        elif found is None and module not in loose:
            loose.append(module)
    # a name's module is the first found registering it (drocli's before the entry points)
    INDEX = {k: {n: mods[0] for n, mods in v.items()} for k, v in claims.items()}
    CLAIMANTS, LOOSE_PLUGINS = claims, loose
    return INDEX


def _scan_module(module: str) -> list[Found] | None:
    """The registrations in an entry-point module's source, found without importing it
    (None when its source cannot be read that way: it is imported on a missed lookup)."""
    import importlib.util

    if "." in module:       # finding a submodule would import its parents
        return None
    try:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec else None
        if not origin or not origin.endswith(".py"):
            return None
        return scan(Path(origin).read_text(encoding="utf-8"), origin) or []
    except (ImportError, ValueError, OSError, SyntaxError):
        return None


def _plugin_entry_points():
    from importlib.metadata import entry_points

    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # a broken third-party distribution must not break drocli
        return []
