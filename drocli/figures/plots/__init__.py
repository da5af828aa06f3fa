"""Figure kinds, one plug-in module each (curves, objective_space, scatter, box, table).

A kind's module declares its model (tagged by `kind`; `name`, `title`, `caption` and its own
fields) and a render function `(records, spec, out_dir, formats, dpi, experiment_title,
context) -> list[Path]`, registered with `@registry.figure(kind, params=Model)`. `context`
holds `spec` (the run's resolved spec), `results_dir` and `subset` (true when the records
may hold a subset of the solvers: a panel whose metric they lack may say "no data"). Models
import no matplotlib, so validating a spec stays light; render functions import it when they
draw.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from drocli.errors import DrocliError
from drocli.plugins import registry

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
        model = entry.params.model_validate(raw)
    except ValidationError as e:
        raise registry.validation_error(e, entry.params, file=file, prefix=key) from None
    for where, text in _texts(raw, key):
        why = mathtext_error(text)
        if why:
            raise DrocliError(f"{text!r} is not valid mathtext ({why})", file=file, key=where,
                              fix=MATH_FIX)
    return model


MATH_FIX = "write valid TeX between each pair of $, or \\$ for a dollar sign"


def _texts(node, key: str):
    """(key path, text) of every string of a figure entry but its caption (not drawn)."""
    if isinstance(node, str):
        yield key, node
    elif isinstance(node, dict):
        for k, v in node.items():
            if k != "caption":
                yield from _texts(v, f"{key}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _texts(v, f"{key}[{i}]")


def mathtext_error(text: str) -> str | None:
    """Why matplotlib cannot draw `text`, which it reads as mathtext when it holds an even
    number of unescaped $ (`$\\frac{1$` failed when the figure was drawn, after the run, as
    exit 3); None when it can. matplotlib is imported only for such a text."""
    n = text.count("$") - text.count("\\$")
    if n == 0 or n % 2:
        return None
    from matplotlib.mathtext import MathTextParser

    try:
        MathTextParser("path").parse(text)
    except ValueError as e:
        return _reason(e)
    return None


def _reason(e: ValueError) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def mathtext_failure(e: ValueError) -> str | None:
    """matplotlib's error for a text that is not valid mathtext (a solver label, or any
    text not checked at load), as `'text' is not valid mathtext (why)`; None for any other
    ValueError (raised outside matplotlib's mathtext)."""
    tb = e.__traceback__
    while tb is not None and "mathtext" not in tb.tb_frame.f_code.co_filename:
        tb = tb.tb_next
    if tb is None:
        return None
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = lines[0] if len(lines) > 1 else "?"
    return f"{text!r} is not valid mathtext ({_reason(e)})"
