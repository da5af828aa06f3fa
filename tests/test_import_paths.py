"""Every import path the plug-in docs give still imports (issue 58): the modules moved into
stage subpackages, and `drocli.registry` and `drocli.monitor` stay as aliases of the modules
they name. Also: no drocli source names an old top-level path, so an alias is only ever a
door for plug-in authors."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import drocli

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "docs" / "plugins.md", ROOT / "README.md"]
FROM = re.compile(r"^from (drocli(?:\.\w+)*) import ([\w, ]+)$", re.M)
DOTTED = re.compile(r"(?<![\w./])(drocli(?:\.\w+)+)")


def _imports() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for m in FROM.finditer(doc.read_text(encoding="utf-8")):
            out += [(m.group(1), n.strip()) for n in m.group(2).split(",") if n.strip()]
    return sorted(set(out))


def _dotted() -> list[str]:
    names = set()
    for doc in DOCS:
        names |= set(DOTTED.findall(doc.read_text(encoding="utf-8")))
    return sorted(names)


@pytest.mark.parametrize("module,name", _imports(), ids=lambda v: str(v))
def test_every_documented_from_import_works(module, name):
    mod = importlib.import_module(module)
    assert hasattr(mod, name) or importlib.import_module(f"{module}.{name}")


@pytest.mark.parametrize("dotted", _dotted())
def test_every_documented_dotted_name_resolves(dotted):
    """A module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return
    pytest.fail(f"{dotted} does not import")


@pytest.mark.parametrize("alias,target", sorted(drocli.ALIASES.items()))
def test_an_alias_is_the_module_it_names(alias, target):
    assert importlib.import_module(alias) is importlib.import_module(target)


def test_no_drocli_source_uses_an_alias():
    old = "|".join(re.escape(a) for a in drocli.ALIASES)
    pat = re.compile(rf"^\s*(from ({old}) import|import ({old})\b)", re.M)
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "drocli").rglob("*.py")
            if pat.search(p.read_text(encoding="utf-8"))]
    assert hits == []


def test_the_top_level_shows_the_stages():
    """At most 14 entries beside __init__.py and __main__.py (issue 58)."""
    top = [p.name for p in (ROOT / "drocli").iterdir()
           if p.name not in ("__init__.py", "__main__.py", "__pycache__")]
    assert len(top) <= 14, sorted(top)
