"""The typed parameters of a plug-in: the pydantic base model every entry declares its
parameters with, their validation into one-line errors that name the spec's key path, and
their description in words for `drocli list` and `drocli show`.

Plug-ins import these names from drocli.plugins.registry, which hands them on; what an entry is and
how a name finds its module is drocli.plugins.registry's."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from drocli.errors import DrocliError, did_you_mean

# --- the base model -----------------------------------------------------------------------

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


def validate_params(entry, given: dict | None, *, file: str | None = None,
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


def resolve_params(entry, given: dict | None, *, file: str | None = None,
                   key: str | None = None) -> dict:
    """Defaults overlaid with `given`, validated: the dict a plug-in receives."""
    return validate_params(entry, given, file=file, key=key).model_dump(mode="python")


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
