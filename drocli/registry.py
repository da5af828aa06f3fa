"""Registry of solvers, data sources and problems, filled by decorators at import time.

Each entry carries its default parameters; spec values are checked against them
(unknown keys and wrong types are rejected with a suggestion).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drocli.errors import DrocliError, did_you_mean

KINDS = ("solver", "data", "problem")
_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_LOADED = False


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    func: Callable
    params: dict = field(default_factory=dict)
    description: str = ""
    family: str | None = None
    accepts: dict = field(default_factory=dict)  # param -> extra accepted types, e.g. (list,)
    preflight: Callable | None = None  # data sources: params -> None, raises if files missing

    @property
    def summary(self) -> str:
        doc = self.description or (self.func.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


def register(kind: str, name: str, *, params: dict | None = None, description: str = "",
             family: str | None = None, accepts: dict | None = None,
             preflight: Callable | None = None):
    """Decorator: register `func` under (kind, name) with its default parameters.

    `accepts` maps a parameter to extra types it takes besides its default's type
    (e.g. a per-group list where the default is one float). `preflight(params)` lets a
    data source say cheaply, before any cell runs, that its files are missing.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown registry kind {kind!r}")

    def deco(func):
        if name in _REGISTRY[kind] and _REGISTRY[kind][name].func is not func:
            raise ValueError(f"{kind} {name!r} registered twice")
        _REGISTRY[kind][name] = Entry(kind, name, func, dict(params or {}), description, family,
                                      dict(accepts or {}), preflight)
        return func

    return deco


def solver(name, **kw):
    return register("solver", name, **kw)


def data(name, **kw):
    return register("data", name, **kw)


def problem(name, **kw):
    return register("problem", name, **kw)


def load_all() -> None:
    """Import every module under drocli.solvers, drocli.data and drocli.problems once."""
    global _LOADED
    if _LOADED:
        return
    for pkg_name in ("drocli.data", "drocli.problems", "drocli.solvers"):
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
            importlib.import_module(info.name)
    _LOADED = True


def entries(kind: str) -> dict[str, Entry]:
    load_all()
    return dict(sorted(_REGISTRY[kind].items()))


def get(kind: str, name: str, *, file: str | None = None, key: str | None = None) -> Entry:
    load_all()
    table = _REGISTRY[kind]
    if name not in table:
        raise DrocliError(f"unknown {kind} {name!r}", file=file, key=key,
                          fix=did_you_mean(name, table) + f" `drocli list {kind}s` shows all")
    return table[name]


def _type_ok(default: Any, value: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def resolve_params(entry: Entry, given: dict | None, *, file: str | None = None,
                   key: str | None = None) -> dict:
    """Defaults overlaid with `given`; unknown keys and wrong types raise DrocliError."""
    given = dict(given or {})
    out = dict(entry.params)
    for k, v in given.items():
        where = f"{key}.{k}" if key else k
        if k not in entry.params:
            raise DrocliError(f"{entry.kind} {entry.name!r} has no parameter {k!r}", file=file,
                              key=where, fix=did_you_mean(k, entry.params))
        default = entry.params[k]
        extra = entry.accepts.get(k, ())
        if not (_type_ok(default, v) or (extra and isinstance(v, tuple(extra)))):
            raise DrocliError(
                f"expected {type(default).__name__}, got {type(v).__name__} {v!r}",
                file=file, key=where, fix=f"give a {type(default).__name__}, e.g. {default!r}")
        if isinstance(default, float) and isinstance(v, int):
            v = float(v)
        out[k] = v
    return out
