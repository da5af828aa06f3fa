"""One registry for the five plug-in kinds: solver, problem, data, figure and claim.

A plug-in is one module that registers itself with one decorator,
`@registry.register(kind, name, params=Model, ...)` (shorthands: `registry.solver(name, ...)`,
`registry.problem`, `registry.data`, `registry.figure`, `registry.claim`). `Model` is a
pydantic `Params` subclass: the entry's typed parameters with ranges, defaults and
descriptions, from which validation, `drocli list` and `drocli show` are generated.

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
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from drocli import discovery
from drocli.discovery import ENTRY_POINT_GROUP, KINDS, PLURAL  # noqa: F401 -- re-exported
from drocli.errors import DrocliError, did_you_mean

_REGISTRY: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
_REPLACED: dict[str, set[str]] = {k: set() for k in KINDS}    # names overridden on purpose
_LOADED_KINDS: set[str] = set()


# --- parameter models -----------------------------------------------------------------------

class Params(BaseModel):
    """Base of every plug-in's parameter model: unknown keys and NaN/inf are refused.

    A field that may be infinite says so with `Field(allow_inf_nan=True)`. A field whose value
    is computed when left out is declared with `auto(...)`: its default is None.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_default=False)

    @model_validator(mode="before")
    @classmethod
    def _legacy_auto(cls, data):
        """Specs written before the typed contract said "automatic" with a magic value (0):
        read it as None."""
        if not isinstance(data, dict):
            return data
        for name, f in cls.model_fields.items():
            legacy = (f.json_schema_extra or {}).get("auto") if isinstance(
                f.json_schema_extra, dict) else None
            if legacy is not None and name in data and _same(data[name], legacy):
                data = {**data, name: None}
        return data

    def key_dict(self) -> dict:
        """The parameters as the cell key hashes them: None of an `auto` field is written as
        its legacy value, and a field declared with `added` is left out while it holds its
        default, so the ids and random streams of recorded runs do not change."""
        out = self.model_dump(mode="python")
        for name, f in type(self).model_fields.items():
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            if out.get(name) is None and extra.get("auto") is not None:
                out[name] = extra["auto"]
            if "added" in extra and name in out and out[name] == f.default:
                del out[name]
        return out


def _same(a, b) -> bool:
    """a is the legacy sentinel b (0 == 0.0, "" == ""; a bool is never a sentinel)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(b, str):
        return isinstance(a, str) and a == b
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b


def auto(description: str, legacy: float | int | str = 0, **constraints) -> Any:
    """A field that is computed when left out (default None). `legacy` is the magic value older
    specs used for "automatic"; it is still read as None and keeps cell ids stable."""
    return Field(None, description=description, json_schema_extra={"auto": legacy},
                 **constraints)


def added(default: Any, description: str, **constraints) -> Any:
    """A field added to a plug-in after runs were recorded: at its default it stays out of the
    cell key (ids and random streams as before); another value enters the key."""
    return Field(default, description=description, json_schema_extra={"added": True},
                 **constraints)


class NoParams(Params):
    """No parameters."""


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
                raise DrocliError(f"{kind} {name!r} is registered twice: by {origin(old.func)}"
                                  f" and by {origin(obj)}",
                                  fix="rename one of them; to override the other on purpose, "
                                      "register with replace=True")
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


def default_values(model: type[BaseModel]) -> dict:
    """The defaults of a model's fields as plain input (nested models dumped), so they can be
    validated like a value a spec gives; required fields are left out."""
    out = {}
    for fname, f in model.model_fields.items():
        if f.is_required():
            continue
        v = f.get_default(call_default_factory=True)
        out[f.alias or fname] = v.model_dump(mode="python") if isinstance(v, BaseModel) else v
    return out


def check_defaults(kind: str, name: str, model: type[BaseModel]) -> None:
    """Refuse a parameter model whose defaults fail its own validation (pydantic does not
    validate defaults): one line naming the entry, the field and why."""
    try:
        model.model_validate(default_values(model))
    except ValidationError as e:
        bad = [x for x in e.errors() if x.get("type") != "missing"]
        if not bad:
            return
        err = bad[0]
        where = loc_path(err.get("loc", ())) or "(model)"
        shown = repr(err.get("input"))
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise DrocliError(f"{kind} {name!r}: the default of {where} fails its own model: "
                          f"{err.get('msg', 'invalid')} (default {shown})",
                          fix="give the field a default its constraints accept") from None


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


# --- lazy discovery (drocli/discovery.py) --------------------------------------------------

def static_summaries(kind: str) -> dict[str, tuple[str | None, str]]:
    """name -> (family, one line) for `drocli list`: from the sources where the decorator's
    arguments are literals, else from the imported entry."""
    out = {}
    for name in names(kind):
        if name in _REGISTRY[kind] or len(discovery.claimants(kind, name)) > 1:
            e = get(kind, name)        # two modules claim it: the registry decides
            out[name] = (e.family, e.summary + (f" (replaces {e.replaces})"
                                                if e.replaces else ""))
        elif name in discovery.STATIC.get(kind, {}):
            out[name] = discovery.STATIC[kind][name]
        else:
            e = get(kind, name)
            out[name] = (e.family, e.summary)
    return out


def index() -> dict[str, dict[str, str]]:
    """kind -> name -> module (drocli.discovery.index)."""
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
    if name not in table:
        raise DrocliError(f"unknown {kind} {name!r}", file=file, key=key,
                          fix=did_you_mean(str(name), names(kind))
                          + f"; `drocli list {PLURAL[kind]}` shows all")
    return table[name]


# --- validation -----------------------------------------------------------------------------

_UNION_TAGS = frozenset({"float", "int", "str", "bool", "none", "list", "dict", "tuple",
                         "function-after", "function-before", "function-wrap",
                         "function-plain", "literal", "is-instance"})


def loc_path(loc) -> str:
    """A pydantic error location as a spec key path: ('solvers', 2, 'params') ->
    'solvers[2].params'."""
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p in _UNION_TAGS or "[" in str(p):
            continue   # a union member's or a validator's tag, not a key
        else:
            out += ("." if out else "") + str(p)
    return out


def _fix_for(model: type[BaseModel], field_name: str | None, err: dict) -> str:
    f = model.model_fields.get(field_name) if field_name else None
    hint = ""
    if f is not None:
        hint = describe_type(f)
        if f.description:
            hint += f" - {f.description.split('. ')[0].rstrip('.')}"
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return did_you_mean(str(err["loc"][-1]), model.model_fields)
    return f"expected {hint}" if hint else "see `drocli list`"


def validation_error(e: ValidationError, model: type[BaseModel], *, file: str | None,
                     prefix: str, what: str = "") -> DrocliError:
    """The first error of `e` as a one-line DrocliError naming the full key path."""
    errs = e.errors()
    err = next((x for x in errs if x.get("type") == "extra_forbidden"), errs[0])
    sub = loc_path(err.get("loc", ()))
    key = f"{prefix}.{sub}" if sub and prefix else (sub or prefix)
    top = next((p for p in err.get("loc", ()) if isinstance(p, str)), None)
    if err.get("type") == "extra_forbidden":
        msg = f"{what} has no parameter {err['loc'][-1]!r}" if what else \
            f"unknown key {err['loc'][-1]!r}"
    else:
        msg = err.get("msg", "invalid value")
        if "input" in err and err.get("type") != "missing":
            shown = repr(err["input"])
            msg += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    return DrocliError(msg, file=file, key=key or None, fix=_fix_for(model, top, err))


def validate_params(entry: Entry, given: dict | None, *, file: str | None = None,
                    key: str | None = None) -> Params:
    """`given` checked against the entry's model; DrocliError names the key path."""
    given = given if given is not None else {}
    if not isinstance(given, dict):
        raise DrocliError(f"expected a mapping of parameters, got {type(given).__name__}",
                          file=file, key=key, fix="write `params: {name: value, ...}`")
    try:
        return entry.params.model_validate(given)
    except ValidationError as e:
        raise validation_error(e, entry.params, file=file, prefix=key or "params",
                               what=f"{entry.kind} {entry.name!r}") from None


def resolve_params(entry: Entry, given: dict | None, *, file: str | None = None,
                   key: str | None = None) -> dict:
    """Defaults overlaid with `given`, validated: the dict a plug-in receives."""
    return validate_params(entry, given, file=file, key=key).model_dump(mode="python")


def key_params(kind: str, name: str, params: dict) -> dict:
    """The resolved parameters as a cell key hashes them (see `Params.key_dict`)."""
    entry = get(kind, name)
    return entry.params.model_validate(params).key_dict()


# --- descriptions for `drocli list` ----------------------------------------------------------

_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def describe_type(f) -> str:
    """A field's type and range in words, e.g. 'float > 0' or 'one of decay, constant'."""
    ann = f.annotation
    text = _type_text(ann)
    for meta in f.metadata:
        for attr, sym in _BOUNDS:
            v = getattr(meta, attr, None)
            if v is not None:
                text += f" {sym} {v:g}" if isinstance(v, (int, float)) else f" {sym} {v}"
    return text


def _type_text(ann) -> str:
    import types
    import typing

    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_text(a) for a in args if a is not type(None)]
        text = " or ".join(parts)
        return text + (" or null" if type(None) in args else "")
    if origin in (list, tuple):
        return f"list of {_type_text(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if origin is typing.Annotated:
        return _type_text(args[0])
    return getattr(ann, "__name__", str(ann))


def param_rows(model: type[BaseModel]) -> list[tuple[str, str, str, str]]:
    """(name, type and range, default, description) of every field of a parameter model."""
    rows = []
    for name, f in model.model_fields.items():
        if f.is_required():
            default = "required"
        else:
            d = f.get_default(call_default_factory=True)
            extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
            default = "auto" if d is None and "auto" in extra else _show(d)
        rows.append((name, describe_type(f), default, f.description or ""))
    return rows


def _show(v) -> str:
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, BaseModel):
        return str(v.model_dump())
    return repr(v) if isinstance(v, str) else str(v)
