"""Seed aggregation shared by plots and claims: records -> seed curves -> common-grid bands.

The records of one (label, metric) hold one curve per seed. Seeds do not share an x-grid
(solvers overshoot checkpoints a little, stage-1 costs shift the start), so each seed's
curve is interpolated, linearly in x, on a common grid: the union of the seeds' x points
between the largest start and the smallest end. Because every seed curve is piecewise
linear between its checkpoints, the mean on that union grid is exact, not an approximation.

A diverged seed (its last recorded value is NaN or inf) does not cut the grid short: the
grid is bounded by the seeds that finished, and the diverged seed counts as missing (NaN)
past its last finite point. `nan="omit"` then aggregates the remaining seeds (plots, which
say how many seeds diverged); `nan="propagate"` makes the aggregate NaN wherever any seed
is (claims, so that a diverged solver never looks good).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from drocli.errors import DrocliError, did_you_mean

# Columns every records.csv has (the records contract); any other column is a parameter.
STANDARD_COLUMNS = ("experiment", "cell", "solver", "label", "dataset", "seed", "step",
                    "oracle_calls", "time_s", "metric", "value")
BANDS = ("std", "quantile", "none")


@dataclass(frozen=True)
class SeedCurve:
    """One seed's curve: x strictly increasing, y float (NaN where not finite)."""

    seed: object
    cell: str
    x: np.ndarray
    y: np.ndarray

    @property
    def diverged(self) -> bool:
        return bool(len(self.y)) and not np.all(np.isfinite(self.y))

    @property
    def complete(self) -> bool:
        """True when the last recorded value is finite (the run did not end diverged)."""
        return bool(len(self.y)) and bool(np.isfinite(self.y[-1]))


@dataclass(frozen=True)
class Aggregate:
    """Seed curves of one (label, metric) on a common grid, with a center line and a band.

    `values` is (n_seeds x n_grid), NaN where a seed is undefined; `n_finite` counts the
    seeds with a finite value at each grid point; `diverged` lists the seeds whose curve
    holds a non-finite value.
    """

    grid: np.ndarray
    center: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    values: np.ndarray
    n_finite: np.ndarray
    seeds: tuple
    band: str
    diverged: tuple = ()
    curves: tuple = field(default=(), repr=False)

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)


# --- selecting rows -----------------------------------------------------------------------

def as_text(column: pd.Series) -> pd.Series:
    """The column as text for comparisons: unchanged when it already holds only strings
    (the records' identity columns are read as Python str objects), else `astype(str)`.
    Converting a text column again costs about as much as reading it (pandas 3 validates
    every element), and `check` compares the label and filter columns once per claim."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        if pd.api.types.infer_dtype(column.cat.categories, skipna=False) == "string":
            return column
    elif pd.api.types.is_string_dtype(column) and (
            column.dtype != object or pd.api.types.infer_dtype(column, skipna=False)
            == "string"):
        return column
    return column.astype(str)


def apply_filter(records: pd.DataFrame, filt: Mapping | None, where: str = "filter"
                 ) -> pd.DataFrame:
    """Keep the rows whose column equals the value (or is in the list) for every key.

    A filter value given as a string is matched against a numeric column as a number, so
    YAML's `1e-3` (read as a string) still selects `0.001`. Unknown column -> DrocliError.
    `seed: first` keeps the smallest seed in the records: a figure of one run (as a paper
    draws its first seed) whatever seeds a profile or study runs.
    """
    if not filt:
        return records
    mask = np.ones(len(records), dtype=bool)
    for col, want in filt.items():
        if col not in records.columns:
            raise DrocliError(f"filter column {col!r} is not in the records", key=where,
                              fix=did_you_mean(col, map(str, records.columns)))
        wanted = list(want) if isinstance(want, list | tuple | set) else [want]
        column = records[col]
        if col == "seed" and wanted == ["first"] and len(column):
            wanted = [_first(column)]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            wanted = [_as_number(v) for v in wanted]
            mask &= np.isclose(column.to_numpy(dtype=float)[:, None],
                               np.asarray(wanted, dtype=float)[None, :],
                               rtol=1e-12, atol=0.0).any(axis=1)
        else:
            mask &= as_text(column).isin([str(v) for v in wanted]).to_numpy()
    return records[mask]


def metric_as_x(records: pd.DataFrame, x: str, source: pd.DataFrame | None = None
                ) -> pd.DataFrame:
    """`records` with a column `x` holding the value of metric `x` at the same cell and step.

    For an x-axis that a solver records as a metric (e.g. `iteration`, which costs no oracle
    call): every row gets the value the metric `x` has at its (cell, step); rows whose
    checkpoint lacks it get NaN (dropped as x by `seed_curves`). Unchanged when `x` already
    is a column or is not a metric in the records. `source`: the records the metric is read
    from when `records` holds other metrics only (a claim's rows, split by metric).
    """
    source = records if source is None else source
    if x in records.columns or not {"metric", "cell", "step", "value"} <= set(source.columns):
        return records
    sel = as_text(source["metric"]) == x
    if not sel.any():
        return records
    piv = source.loc[sel, ["cell", "step", "value"]].drop_duplicates(["cell", "step"],
                                                                      keep="last")
    piv = piv.rename(columns={"value": x})
    piv[x] = pd.to_numeric(piv[x], errors="coerce").astype(float)
    out = records.merge(piv, on=["cell", "step"], how="left", sort=False)
    out.index = records.index
    return out


def _first(seeds: pd.Series):
    """The smallest seed: numerically when every seed is a number, else as text."""
    values = pd.unique(seeds.dropna())
    nums = pd.to_numeric(pd.Series(values), errors="coerce")
    return values[int(nums.to_numpy().argmin())] if nums.notna().all() else min(map(str, values))


def _as_number(v):
    if isinstance(v, bool):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.nan


def _check_one_cell_per_seed(rows: pd.DataFrame, what: str) -> None:
    seed_code, seeds = pd.factorize(rows["seed"])
    cell_code, cells = pd.factorize(rows["cell"])
    if len(np.unique(seed_code.astype(np.int64) * len(cells) + cell_code)) == len(seeds):
        return                                   # one cell per seed (the common case)
    counts = rows.groupby("seed", sort=False)["cell"].nunique()
    bad = counts[counts > 1]
    seed = bad.index[0]
    sub = rows[rows["seed"] == seed]
    varying = [c for c in sub.columns
               if c not in ("cell", "step", "oracle_calls", "time_s", "value", "experiment")
               and sub.groupby("cell")[c].first().nunique(dropna=False) > 1]
    vary = "; ".join(f"{c} takes {sorted(map(str, sub[c].unique()))}" for c in varying[:4])
    raise DrocliError(
        f"{what}: {int(bad.iloc[0])} cells share seed {seed!r}"
        + (f" ({vary})" if vary else ""),
        fix="add a `filter:` selecting one of them, or give the configurations distinct labels")


def seed_curves(rows: pd.DataFrame, x: str = "oracle_calls", what: str = "curve"
                ) -> list[SeedCurve]:
    """One curve per seed from the rows of a single (label, metric), sorted by seed.

    Points are sorted by x (then step); a repeated x keeps the later checkpoint; rows
    with a missing x are dropped; non-finite values become NaN.
    """
    if rows.empty:
        return []
    for col in ("metric", "label"):
        if col in rows.columns and rows[col].nunique() > 1:
            raise ValueError(f"{what}: seed_curves wants one {col}, got "
                             f"{sorted(map(str, rows[col].unique()))}")
    if x not in rows.columns:
        raise DrocliError(f"{what}: x column {x!r} is not in the records",
                          fix=did_you_mean(x, map(str, rows.columns)))
    _check_one_cell_per_seed(rows, what)
    keys = [x, "step"] if "step" in rows.columns else [x]
    if not all(pd.api.types.is_numeric_dtype(rows[k]) for k in keys):
        return _seed_curves_sorted(rows, x, ["seed", *keys])
    # one sort of the whole frame on numpy arrays (seed, then x, then step, stable), then a
    # slice per seed: a pandas groupby with per-group conversions cost ~0.5 ms per seed,
    # and check takes the curves of every label and panel of every claim
    seed_code, seeds = pd.factorize(rows["seed"], sort=True)
    seeds = pd.Index(seeds).tolist()       # Python scalars, as groupby's keys are
    xs_all = rows[x].to_numpy(dtype=float, na_value=np.nan)
    ys_all = pd.to_numeric(rows["value"], errors="coerce").to_numpy(dtype=float)
    cells = rows["cell"].to_numpy()
    sort_keys = [rows[k].to_numpy(dtype=float, na_value=np.nan) for k in reversed(keys)]
    order = np.lexsort((*sort_keys, seed_code))
    order = order[seed_code[order] >= 0]             # groupby leaves a missing seed out
    starts = np.flatnonzero(np.r_[True, seed_code[order][1:] != seed_code[order][:-1]])
    out = []
    for a, b in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        idx = order[a:b]
        out += _one_curve(seeds[seed_code[idx[0]]], str(cells[idx[0]]), xs_all[idx],
                          ys_all[idx])
    return out


def _seed_curves_sorted(rows: pd.DataFrame, x: str, order: list[str]) -> list[SeedCurve]:
    """seed_curves where x or step is not a numeric column: pandas sorts the raw values."""
    out = []
    data = rows.sort_values(order, kind="stable")
    for seed, sub in data.groupby("seed", sort=True):
        xs = pd.to_numeric(sub[x], errors="coerce").to_numpy(dtype=float)
        ys = pd.to_numeric(sub["value"], errors="coerce").to_numpy(dtype=float)
        out += _one_curve(seed, str(sub["cell"].iloc[0]), xs, ys)
    return out


def _one_curve(seed, cell: str, xs: np.ndarray, ys: np.ndarray) -> list[SeedCurve]:
    """A seed's points, sorted by x: missing x dropped, the later of repeated x kept,
    non-finite values as NaN ([] when no x is left)."""
    keep = np.isfinite(xs)
    xs, ys = xs[keep], ys[keep]
    if not len(xs):
        return []
    last = np.r_[xs[1:] != xs[:-1], True]      # keep the later of repeated x values
    xs, ys = xs[last], ys[last]
    return [SeedCurve(seed, cell, xs, np.where(np.isfinite(ys), ys, np.nan))]


def final_values(rows: pd.DataFrame, what: str = "final values") -> pd.DataFrame:
    """One row per cell: its last checkpoint (largest step, then largest x), sorted by seed.

    Columns kept: cell, seed, step, oracle_calls, time_s, value (those present).
    """
    if rows.empty:
        return rows.iloc[0:0]
    _check_one_cell_per_seed(rows, what)
    # the last row of each cell in (cell, step, oracle_calls) order, on numpy arrays: the
    # pandas sort and groupby cost ~20 ms per call, and check calls this per label and panel
    cell_code = pd.factorize(rows["cell"], sort=True)[0]
    keys = [rows[c].to_numpy() for c in ("oracle_calls", "step") if c in rows.columns]
    order = np.lexsort((*keys, cell_code))
    ends = order[np.r_[cell_code[order][1:] != cell_code[order][:-1], True]]
    cols = [c for c in ("cell", "seed", "step", "oracle_calls", "time_s", "value")
            if c in rows.columns]
    out = rows[cols].iloc[ends].sort_values("seed", kind="stable").reset_index(drop=True)
    out["value"] = pd.to_numeric(out["value"], errors="coerce").astype(float)
    out.loc[~np.isfinite(out["value"].to_numpy()), "value"] = np.nan
    return out


# --- grid and interpolation ---------------------------------------------------------------

def common_grid(curves: list[SeedCurve], max_points: int | None = None,
                what: str = "curve", disjoint_ok: bool = False) -> np.ndarray:
    """Union of the seeds' x points from the largest start to the smallest end.

    Start and end are taken over the seeds that finished (last value finite), or over all
    seeds when none did. With `max_points`, an evenly thinned subset (ends kept). Seeds
    whose x ranges do not overlap (time_s when the machine's load changed between cells)
    are an error, or with `disjoint_ok` span the whole union.
    """
    if not curves:
        return np.empty(0)
    ref = [c for c in curves if c.complete] or list(curves)
    lo = max(float(c.x[0]) for c in ref)
    hi = min(float(c.x[-1]) for c in ref)
    if lo > hi and disjoint_ok:
        lo = min(float(c.x[0]) for c in ref)
        hi = max(float(c.x[-1]) for c in ref)
    if lo > hi:
        raise DrocliError(f"{what}: the seed curves do not overlap in x "
                          f"(largest start {lo:g} > smallest end {hi:g})")
    pts = np.concatenate([c.x for c in curves] + [np.array([lo, hi])])
    grid = np.unique(pts[(pts >= lo) & (pts <= hi)])
    if max_points is not None and len(grid) > max_points >= 2:
        idx = np.unique(np.round(np.linspace(0, len(grid) - 1, max_points)).astype(int))
        grid = grid[idx]
    return grid


def interpolate(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Linear interpolation of (x, y) at `grid`; NaN outside [x0, x_end] and next to NaNs.

    A grid point that hits an x exactly returns that y even if a neighbour is NaN.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    grid = np.asarray(grid, dtype=float)
    out = np.full(grid.shape, np.nan)
    if not len(x):
        return out
    idx = np.searchsorted(x, grid, side="right") - 1
    inside = (idx >= 0) & (grid <= x[-1])
    i = idx[inside]
    g = grid[inside]
    exact = x[i] == g
    j = np.minimum(i + 1, len(x) - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(exact, 0.0, (g - x[i]) / np.where(j > i, x[j] - x[i], 1.0))
        val = np.where(exact, y[i], y[i] + t * (y[j] - y[i]))
    out[inside] = val
    return out


# --- aggregation --------------------------------------------------------------------------

def _stats(values: np.ndarray, band: str, nan: str, ddof: int, quantiles: tuple):
    finite = np.isfinite(values)
    n = finite.sum(axis=0)
    if nan == "propagate":
        usable = finite.all(axis=0)
    else:
        usable = n > 0
    center = np.full(values.shape[1], np.nan)
    lo = center.copy()
    hi = center.copy()
    if not usable.any():
        return center, lo, hi, n
    v = values[:, usable]
    f = finite[:, usable]
    k = n[usable]
    if band == "quantile":
        vm = np.where(f, v, np.nan)
        c = np.nanmedian(vm, axis=0)
        ql = np.nanquantile(vm, quantiles[0], axis=0)
        qh = np.nanquantile(vm, quantiles[1], axis=0)
    else:
        c = np.where(f, v, 0.0).sum(axis=0) / k
        if band == "std":
            ss = np.where(f, (v - c) ** 2, 0.0).sum(axis=0)
            sd = np.where(k > ddof, np.sqrt(ss / np.maximum(k - ddof, 1)), 0.0)
            ql, qh = c - sd, c + sd
        else:
            ql = qh = c
    center[usable], lo[usable], hi[usable] = c, ql, qh
    return center, lo, hi, n


def aggregate(rows: pd.DataFrame, x: str = "oracle_calls", band: str = "std",
              nan: str = "omit", ddof: int = 1, quantiles: tuple = (0.25, 0.75),
              max_points: int | None = None, what: str = "curve",
              log: bool = False) -> Aggregate:
    """Seed curves of one (label, metric) on their common grid, with center and band.

    band: "std" -> mean and mean +- one (sample, `ddof`) std; "quantile" -> median and
    the `quantiles` (default 0.25-0.75); "none" -> mean, lo = hi = mean.
    nan: "omit" ignores missing/non-finite seeds at each grid point; "propagate" makes
    the point NaN if any seed is. With one usable seed the band has zero width.
    log: the statistics live on the log scale (a log axis): "std" gives the geometric mean
    exp(mean log y) and the band times / divided by the geometric std exp(std log y);
    quantiles are taken of log y (the same points). Values <= 0 have no log and count
    as missing. Center and band are then always > 0. `values` keeps the raw values.
    """
    if band not in BANDS:
        raise ValueError(f"band must be one of {BANDS}, got {band!r}")
    if nan not in ("omit", "propagate"):
        raise ValueError(f"nan must be 'omit' or 'propagate', got {nan!r}")
    curves = seed_curves(rows, x=x, what=what)
    # wall time is the one x along which seeds may not overlap without anything being wrong
    # (one seed's stage 1 outlasting another's run when the machine's load changes): with
    # nan="omit" (figures) they are averaged where they are recorded; otherwise, and with
    # "propagate" (claims: no seed-mean curve), disjoint seeds are an error
    disjoint_ok = nan == "omit" and x == "time_s"
    grid = common_grid(curves, max_points=max_points, what=what, disjoint_ok=disjoint_ok)
    values = (np.vstack([interpolate(c.x, c.y, grid) for c in curves]) if curves
              else np.empty((0, 0)))
    ref = [c for c in curves if c.complete] or list(curves)
    if disjoint_ok and ref and max(float(c.x[0]) for c in ref) > min(float(c.x[-1])
                                                                      for c in ref):
        # disjoint wall-time ranges: at every second each seed shows what it had then, its
        # first recorded value before it (a two-stage method's output during stage 1 is its
        # start) and its last after it ended, so the mean never jumps as seeds come and go
        for k, c in enumerate(curves):
            if len(c.x):
                values[k, grid < c.x[0]] = c.y[0]
                values[k, grid > c.x[-1]] = c.y[-1]
    if curves and log:
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
        center, lo, hi, n = _stats(logs, band, nan, ddof, quantiles)
        center, lo, hi = np.exp(center), np.exp(lo), np.exp(hi)
    elif curves:
        center, lo, hi, n = _stats(values, band, nan, ddof, quantiles)
    else:
        center, lo, hi, n = (np.empty(0), np.empty(0), np.empty(0), np.empty(0, dtype=int))
    return Aggregate(grid=grid, center=center, lo=lo, hi=hi, values=values, n_finite=n,
                     seeds=tuple(c.seed for c in curves), band=band,
                     diverged=tuple(c.seed for c in curves if c.diverged),
                     curves=tuple(curves))
