"""A claim judged on the runs as they stand at one point of another axis (`until`).

A paper plots its curves against its own x-axis, often iterations, and stops at its own
horizon (T = 5000 iterations). drocli's budgets are counted in oracle calls, which methods
spend at different rates per iteration, so "the final value" at a shared budget is not the
paper's "final value". `until: {x: iteration, at: 5000}` judges the claim on every run cut
at x = 5000: the rows up to it, and one row interpolated at exactly x = 5000 (linear in x
between the two checkpoints around it, as the figure draws it). x may be a records column
(oracle_calls, time_s) or a metric the solver records at every checkpoint (iteration).

A run that ends before x = at has no value there: the claim is skipped and says which runs
and how far they got, so that the budget is raised rather than a shorter run compared.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.plugins.registry import Params


class Until(Params):
    """Judge the runs as they stand at `x` = `at` (drocli.claims.window)."""

    x: str = Field(min_length=1, description="the axis: a records column (oracle_calls, "
                   "time_s) or a metric recorded at every checkpoint (iteration)")
    at: float = Field(gt=0, description="the point of that axis the runs are judged at, "
                      "e.g. the paper's horizon")

    def words(self) -> str:
        return f"as the runs stand at {self.x} = {self.at:g}"


def attach(rows, source, x: str):
    """`rows` with a column `x` holding the value that metric `x` has in `source` (all the
    records) at the same cell and step (`aggregate.metric_as_x`); unchanged when `x` is
    already a column."""
    from drocli.errors import DrocliError
    from drocli.results.aggregate import as_text, metric_as_x

    if x in rows.columns:
        return rows
    if "metric" not in source.columns or not (as_text(source["metric"]) == x).any():
        raise DrocliError(f"axis {x!r} is neither a records column nor a recorded metric",
                          key="claims.until.x",
                          fix="name a column (oracle_calls, time_s) or a metric in `metrics:`")
    return metric_as_x(rows, x, source)


def cut(rows, x: str, at: float, what: str):
    """The rows of one label up to x = at, each cell ending in a row interpolated at exactly
    x = at. SkipClaim when a cell ends before it."""
    import pandas as pd

    from drocli.claims.judge import SkipClaim
    from drocli.results.aggregate import _as_number

    if rows.empty:
        return rows
    order = rows.sort_values(["cell", "step"], kind="stable")
    xs = pd.to_numeric(order[x], errors="coerce").to_numpy(float)
    cells = order["cell"].to_numpy()
    keep = np.zeros(len(order), dtype=bool)
    extra, short = [], []
    bounds = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg = xs[a:b]
        ok = np.isfinite(seg)
        inside = ok & (seg <= at)
        keep[a:b] = inside
        past = np.flatnonzero(ok & (seg > at))
        if not past.size:
            if not (ok & np.isclose(seg, at, rtol=1e-12, atol=0)).any():
                last = seg[ok].max() if ok.any() else float("nan")
                short.append((order["seed"].iloc[a], last))
            continue
        j = a + int(past[0])
        before = np.flatnonzero(inside)
        if before.size and np.isclose(seg[before[-1]], at, rtol=1e-12, atol=0):
            continue                        # a checkpoint at exactly x = at
        row = order.iloc[j].copy()
        if before.size:
            i = a + int(before[-1])
            t = (at - xs[i]) / (xs[j] - xs[i])
            for col in ("value", "oracle_calls", "time_s"):
                if col in order.columns and col != x:
                    lo, hi = _as_number(order[col].iloc[i]), _as_number(order[col].iloc[j])
                    row[col] = lo + t * (hi - lo)
        row[x] = at
        extra.append(row)
    if short:
        seeds = ", ".join(f"seed {s} ends at {x} {v:g}" for s, v in short[:4])
        raise SkipClaim(f"{what}: {len(short)} run(s) end before {x} = {at:g} ({seeds}"
                        f"{', ...' if len(short) > 4 else ''}): raise the budget so that "
                        "every run gets there")
    out = order[keep]
    if extra:
        out = pd.concat([out, pd.DataFrame(extra).astype(order.dtypes.to_dict())],
                        ignore_index=False)
    return out.sort_values(["cell", "step"], kind="stable")
