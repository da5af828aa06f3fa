"""One registry for the five plug-in kinds: solver, problem, data, figure and claim.

A plug-in is one module that registers itself with one decorator,
`@registry.register(kind, name, params=Model, ...)` (shorthands: `registry.solver(name, ...)`,
`registry.problem`, `registry.data`, `registry.figure`, `registry.claim`). `Model` is a
pydantic `Params` subclass: the entry's typed parameters with ranges, defaults and
descriptions, from which validation, `drocli list` and `drocli show` are generated
(drocli.plugins.params; its names are handed on from here for plug-ins).

The registry is lazy. It finds the module that holds a name by scanning drocli's sources for
the decorator (no import), so loading a spec imports only the modules the spec uses.
Third-party packages register modules through the entry-point group `drocli.plugins`: an
entry named `kind.name` (e.g. `solver.my_sgd = mypkg.my_sgd`) is imported when that name is
looked up; an entry with any other name is imported whenever a lookup misses or a whole kind
is listed.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from pydantic import BaseModel

from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import discovery
from drocli.plugins.discovery import ENTRY_POINT_GROUP, KINDS, PLURAL  # noqa: F401 -- re-exported
from drocli.plugins.params import (  # noqa: F401 -- the plug-in API: an entry's typed parameters
    NoParams,
    Params,
    added,
    auto,
    check_defaults,
    describe_type,
    loc_path,
    param_rows,
    resolve_params,
    validate_params,
    validation_error,
)

_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_REPLACED: dict[str, set[str]] = {k: set() for k in KINDS}    # names overridden on purpose
# names two modules register without replace=True -> the refusal; only a lookup of that name
# (a spec, `list KIND NAME`) is refused, so one clash does not block every other spec
_CLASHES: dict[str, dict[str, DrocliError]] = {k: {} for k in KINDS}
_LOADED_KINDS: set[str] = set()


# --- entries --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """A registered plug-in: its object, its parameter model and what it declares."""

    kind: str
    name: str
    func: Callable
    params: type[Params]
    description: str = ""
    family: str | None = None
    metrics: tuple[str, ...] = ()       # problems: metric names recorded (fnmatch patterns)
    preflight: Callable | None = None   # data: params -> None, raises if files are missing
    memory: Callable | None = None      # data / problem: params -> estimated peak bytes
    extra: dict = field(default_factory=dict)   # kind-specific declarations
    reference: str = ""                 # the paper's box it implements: "Alg. 1, eqs. (14)-(22)"
    replaces: str = ""                  # the module.function it overrides (replace=True)

    @property
    def summary(self) -> str:
        doc = self.description or (self.func.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @property
    def defaults(self) -> dict:
        return self.params().model_dump(mode="python")

    def records_metric(self, name: str) -> bool:
        return any(fnmatchcase(name, pat) for pat in self.metrics)


def register(kind: str, name: str, *, params: type[Params] | None = None,
             description: str = "", family: str | None = None, metrics=(),
             preflight: Callable | None = None, memory: Callable | None = None,
             reference: str = "", replace: bool = False, **extra):
    """Decorator: register `obj` as plug-in `name` of `kind` with its parameter model.

    An entry is its module and function (`origin`). A name is taken once: a second
    registration from another module is refused, naming both, unless it says
    `replace=True` (an override on purpose, which `drocli list` shows). Whichever of the two
    is imported first, the one that says `replace=True` is the entry.

    `reference` names what the entry implements in its paper ("Alg. 1, eqs. (14)-(22)",
    "docs/papers/004.md §3.4"); `drocli list solvers NAME` prints it. The model's defaults
    are validated here: an entry whose defaults fail its own model is refused.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown registry kind {kind!r}")
    model = params or NoParams
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{kind} {name!r}: params must be a pydantic model class")
    if not isinstance(reference, str):
        raise TypeError(f"{kind} {name!r}: reference must be a string")
    check_defaults(kind, name, model)

    def deco(obj):
        old = _REGISTRY[kind].get(name)
        replaces = ""
        if old is not None and old.func is not obj and origin(old.func) != origin(obj):
            if name in _REPLACED[kind] and not replace:   # the override came first: it stays
                _REGISTRY[kind][name] = dataclasses.replace(old, replaces=origin(obj))
                return obj
            if not replace or name in _REPLACED[kind]:     # two entries, or two overrides
                _CLASHES[kind][name] = DrocliError(
                    f"{kind} {name!r} is registered twice: by {origin(old.func)} and by "
                    f"{origin(obj)}", fix="rename one of them; to override the other on "
                    "purpose, register with replace=True")
                return obj
            replaces = origin(old.func)
        if replace:
            _REPLACED[kind].add(name)
        _REGISTRY[kind][name] = Entry(kind, name, obj, model, description, family,
                                      tuple(metrics), preflight, memory, dict(extra),
                                      reference.strip(), replaces)
        return obj

    return deco


def origin(obj) -> str:
    """What identifies a registered object: its module and qualified name."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def solver(name, **kw):
    return register("solver", name, **kw)


def problem(name, **kw):
    return register("problem", name, **kw)


def data(name, **kw):
    return register("data", name, **kw)


def figure(name, **kw):
    return register("figure", name, **kw)


def claim(name, **kw):
    return register("claim", name, **kw)


# --- lazy discovery (drocli/plugins/discovery.py) ----------------------------------------

def static_summaries(kind: str) -> dict[str, tuple[str | None, str]]:
    """name -> (family, one line) for `drocli list`: from the sources where the decorator's
    arguments are literals, else from the imported entry."""
    out = {}
    for name in names(kind):
        if name in _REGISTRY[kind] or len(discovery.claimants(kind, name)) > 1:
            try:
                e = get(kind, name)    # two modules claim it: the registry decides
            except DrocliError as err:
                if name not in _CLASHES[kind]:
                    raise
                out[name] = (None, f"REFUSED: {err.detail}; a spec that uses it is refused")
                continue
            out[name] = (e.family, e.summary + (f" (replaces {e.replaces})"
                                                if e.replaces else ""))
        elif name in discovery.STATIC.get(kind, {}):
            out[name] = discovery.STATIC[kind][name]
        else:
            e = get(kind, name)
            out[name] = (e.family, e.summary)
    return out


def index() -> dict[str, dict[str, str]]:
    """kind -> name -> module (drocli.plugins.discovery.index)."""
    return discovery.index()


def _import(module: str, kind: str, name: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise DrocliError(f"cannot import {module} for {kind} {name!r}: {e}",
                          fix="install the package that provides it") from None


def _load_loose() -> None:
    index()
    for module in discovery.LOOSE_PLUGINS or ():
        _import(module, "plug-in", module)


def load_kind(kind: str) -> None:
    """Import every module that registers an entry of `kind` (for listings and tests)."""
    if kind in _LOADED_KINDS:
        return
    for name in index()[kind]:
        for mod in discovery.claimants(kind, name):
            _import(mod, kind, name)
    _load_loose()
    _LOADED_KINDS.add(kind)


def load_all() -> None:
    for kind in KINDS:
        load_kind(kind)


def names(kind: str) -> list[str]:
    """Registered names of a kind, without importing their modules."""
    return sorted(set(index()[kind]) | set(_REGISTRY[kind]))


def entries(kind: str) -> dict[str, Entry]:
    load_kind(kind)
    return dict(sorted(_REGISTRY[kind].items()))


def get(kind: str, name: str, *, file: str | None = None, key: str | None = None) -> Entry:
    """The entry `name` of `kind`, importing only the module that registers it."""
    table = _REGISTRY[kind]
    found = discovery.claimants(kind, name) if isinstance(name, str) else []
    if name not in table or len(found) > 1:       # every claimant: a clash surfaces here
        for mod in found:
            _import(mod, kind, name)
        if name not in table:
            _load_loose()
    if name in _CLASHES[kind]:
        clash = _CLASHES[kind][name]
        raise DrocliError(clash.detail, file=file, key=key, fix=clash.fix)
    if name not in table:
        raise DrocliError(f"unknown {kind} {name!r}", file=file, key=key,
                          fix=did_you_mean(str(name), names(kind))
                          + f"; `drocli list {PLURAL[kind]}` shows all; a {kind} of a "
                            "plug-in package needs that package installed")
    return table[name]


def key_params(kind: str, name: str, params: dict) -> dict:
    """The resolved parameters as a cell key hashes them (see `Params.key_dict`)."""
    entry = get(kind, name)
    return entry.params.model_validate(params).key_dict()
