"""`${dotted.path}` in a spec's texts, filled from the resolved spec (issue 57): a title or
caption that names a setting says what the run used, not what the paper profile used
(mero_synthetic's smoke run is d = 256, not 1024). Filled after the profile, `--set`, and
`-s`/`-d` are applied, so the saved spec.yaml holds the filled text; the paper profile's text
is unchanged where its values are the ones written before."""

from __future__ import annotations

import re

from drocli.errors import DrocliError
from drocli.spec.overrides import _child

PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")


def _value(raw: dict, dotted: str, file: str, key: str) -> str:
    node = raw
    for part in dotted.split("."):
        try:
            k = _child(node, part, dotted, file) if isinstance(node, list) else part
        except DrocliError:
            k = None
        if k is None or not isinstance(node, (dict, list)) or \
                (isinstance(node, dict) and k not in node):
            raise DrocliError(f"${{{dotted}}} names no value of the spec", file=file, key=key,
                              fix="name a dotted path of the spec, e.g. ${data.params.dim} "
                                  "or ${budget.epochs}")
        node = node[k]
    if isinstance(node, bool) or node is None:
        return str(node).lower()
    if isinstance(node, float):
        return f"{node:g}"
    if isinstance(node, (dict, list)):
        raise DrocliError(f"${{{dotted}}} is a {type(node).__name__}, not one value", file=file,
                          key=key, fix="name a single number or text")
    return str(node)


def _fill(text, raw: dict, file: str, key: str):
    if not isinstance(text, str) or "${" not in text:
        return text
    return PLACEHOLDER.sub(lambda m: _value(raw, m.group(1), file, key), text)


def fill(raw: dict, file: str) -> None:
    """Fill the placeholders of the spec's title and description and of each figure's title,
    caption and panel titles, in place."""
    for k in ("title", "description"):
        if k in raw:
            raw[k] = _fill(raw[k], raw, file, k)
    for i, fig in enumerate(raw.get("figures") or []):
        if not isinstance(fig, dict):
            continue
        for k in ("title", "caption"):
            if k in fig:
                fig[k] = _fill(fig[k], raw, file, f"figures[{i}].{k}")
        for j, panel in enumerate(fig.get("panels") or []):
            if isinstance(panel, dict) and "title" in panel:
                panel["title"] = _fill(panel["title"], raw, file,
                                       f"figures[{i}].panels[{j}].title")
