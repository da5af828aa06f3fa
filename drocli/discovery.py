"""Where each built-in plug-in lives, found by reading drocli's sources (no plug-in import).

`index()` scans the plug-in packages for the registry's decorators and maps kind -> name ->
module; `STATIC` keeps each entry's family and one-line description where the decorator's
arguments are literals, so `drocli list` prints a listing without importing a plug-in, nor
pydantic. Third-party modules come from the `drocli.plugins` entry points. The registry
(drocli/registry.py) imports a module when one of its names is looked up.
"""

from __future__ import annotations

import re
from pathlib import Path

KINDS = ("solver", "problem", "data", "figure", "claim")
PLURAL = {"solver": "solvers", "problem": "problems", "data": "data", "figure": "figures",
          "claim": "claims"}
ENTRY_POINT_GROUP = "drocli.plugins"
# packages scanned for built-in plug-ins, relative to drocli/
_SCAN = ("solvers", "problems", "data", "plots", "claims")
_DECORATOR = re.compile(
    r"@(?:registry\.)?(?:(solver|problem|data|figure|claim)\(\s*|register\(\s*[\"']"
    r"(solver|problem|data|figure|claim)[\"']\s*,\s*)(?:[\"']([A-Za-z0-9_.+-]+)[\"']|([A-Z_][A-Z0-9_]*))")

INDEX: dict[str, dict[str, str]] | None = None      # kind -> name -> module
STATIC: dict[str, dict[str, tuple[str | None, str]]] = {}   # kind -> name -> (family, summary)
LOOSE_PLUGINS: list[str] | None = None              # entry-point modules without a kind.name


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


def index() -> dict[str, dict[str, str]]:
    """kind -> name -> module, from drocli's sources and the `drocli.plugins` entry points."""
    global INDEX, LOOSE_PLUGINS
    if INDEX is not None:
        return INDEX
    idx: dict[str, dict[str, str]] = {k: {} for k in KINDS}
    root = Path(__file__).resolve().parent
    for sub in _SCAN:
        for path in sorted((root / sub).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "register(" not in text and "@registry." not in text:
                continue
            for m in _DECORATOR.finditer(text):
                kind = m.group(1) or m.group(2)
                name = m.group(3) or _constant(text, m.group(4))
                if name:
                    idx[kind].setdefault(name, _module_name(path, root))
                    static = _static_summary(text, m.end())
                    if static is not None:
                        STATIC.setdefault(kind, {}).setdefault(name, static)
    loose = []
    for ep in _plugin_entry_points():
        kind, _, name = ep.name.partition(".")
        if kind in KINDS and name:
            idx[kind].setdefault(name, ep.value.split(":")[0])
        else:
            loose.append(ep.value.split(":")[0])
    INDEX, LOOSE_PLUGINS = idx, loose
    return idx


def _plugin_entry_points():
    from importlib.metadata import entry_points

    try:
        return list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception:  # a broken third-party distribution must not break drocli
        return []
