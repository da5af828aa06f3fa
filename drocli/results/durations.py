"""Compute time as a results folder records it: the cells' wall times (`cells.*.wall_s` in
the manifest) and their sum in words, and the check that a number read back from a
manifest is a finite one. Shared by the manifest, the report and `drocli list
experiments`, which must not load the report's machinery to print a cost."""

from __future__ import annotations

import math


def finite_number(v) -> bool:
    """A finite number that is not a bool: a status read back, or a forged manifest, may
    hold any JSON (10**400 too)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:          # an int past the float range
        return False


def wall_times(cells) -> list[float]:
    """The cells' recorded wall times: finite, not negative numbers (a forged or broken
    manifest's other entries are skipped)."""
    if not isinstance(cells, dict):
        return []
    return [float(st["wall_s"]) for st in cells.values()
            if isinstance(st, dict) and finite_number(st.get("wall_s")) and st["wall_s"] >= 0]


def span(seconds: float) -> str:
    """'42.5 s', '3 min 07 s', '2 h 05 min' (a non-finite sum as it is)."""
    if not math.isfinite(seconds):             # forged times summed past the float range
        return f"{seconds} s"
    if seconds < 60:
        return f"{seconds:.3g} s"
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"
