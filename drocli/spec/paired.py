"""Paired solver values: one value per data (or problem) panel, resolved into the cells.

Papers often tune a number per panel: "the step is 0.1 when nu = 0, 0.05 when nu = 0.5 and
0.005 when nu = 1" (paper 002 §4.1). A solver parameter says so as a table keyed by a data
or problem parameter of the spec:

    step: {nu: {0.0: 0.1, 0.5: 0.05, 1.0: 0.005}}

Tables nest for one value per grid panel ({nu: {0.0: {sigma: {0.1: 1e-4, ...}}, ...}}). The
table is spec data: `expand` pairs each cell with its entry, the solver receives a plain
number, and the cell id hashes the table as written (ids stay what they were when solvers
looked the value up themselves). `check` validates every entry a spec can reach at load.
"""

from __future__ import annotations

import math

FIX = "e.g. step: {nu: {0.0: 0.1, 0.5: 0.05}} keyed by a data or problem parameter"


class PairingError(ValueError):
    """A table that does not resolve for a panel; `path` is the key path inside the value,
    `name` the parameter whose table it is (set by `resolve`)."""

    def __init__(self, message: str, path: str, fix: str, name: str = ""):
        super().__init__(message)
        self.path, self.fix, self.name = path, fix, name


def is_table(value, panel: dict) -> bool:
    """A one-key mapping from a parameter of the panel to a mapping of its values."""
    return (isinstance(value, dict) and len(value) == 1
            and next(iter(value)) in panel and isinstance(next(iter(value.values())), dict))


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not all(
            isinstance(v, (int, float)) for v in (a, b)):
        return a == b or str(a) == str(b)
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def resolve_value(value, panel: dict, path: str = ""):
    """The entry of `value`'s (nested) table for this panel; other values unchanged."""
    while is_table(value, panel):
        by, table = next(iter(value.items()))
        have = panel[by]
        path = f"{path}.{by}" if path else by
        hits = [v for k, v in table.items() if _same(k, have)]
        if not hits:
            raise PairingError(f"no entry for {by} = {have} in the table", path,
                               f"add {have} to the table (it has {', '.join(map(str, table))})")
        value = hits[0]
    return value


def resolve(params: dict, panel: dict) -> tuple[dict, list[str]]:
    """(params with each table replaced by this panel's entry, the names that were tables)."""
    out, paired = dict(params), []
    for name, value in params.items():
        if is_table(value, panel):
            try:
                out[name] = resolve_value(value, panel)
            except PairingError as e:
                e.name = name
                raise
            paired.append(name)
    return out, paired
