"""Figure kinds, one plug-in module each (curves, objective_space, scatter, box, table).

A kind's module declares its model (tagged by `kind`; `name`, `title`, `caption` and its own
fields) and a render function `(records, spec, out_dir, formats, dpi, experiment_title,
context) -> list[Path]`, registered with `@registry.figure(kind, params=Model)`. Models import
no matplotlib, so validating a spec stays light; render functions import it when they draw.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from drocli import registry
from drocli.errors import DrocliError

Scalar = str | int | float | bool
FilterSpec = dict[str, Scalar | list[Scalar]]


def validate_figure(raw: Any, *, file: str | None = None, key: str = "figure") -> BaseModel:
    """The model of a figure entry, chosen by its `kind` (default: curves); a tagged union
    over the registered figure kinds that imports only the kind used."""
    if isinstance(raw, BaseModel):
        return raw
    if not isinstance(raw, dict):
        raise DrocliError(f"a figure is a mapping, got {type(raw).__name__}", file=file,
                          key=key, fix="write `- {name: ..., panels: [...]}`")
    kind = raw.get("kind", "curves")
    entry = registry.get("figure", str(kind), file=file, key=f"{key}.kind")
    try:
        return entry.params.model_validate(raw)
    except ValidationError as e:
        raise registry.validation_error(e, entry.params, file=file, prefix=key) from None
