"""The ranges a curves panel shows. y-limits cover the curves inside the x-range shown,
bands included unless they would more than double the curves' range (a seed about to
diverge), and may leave out the first 2 % of the x-range when it would squash the rest; a
linear count or time axis starts at 0, where the run did; a log axis spanning under a
decade gets sparse, readable ticks."""

from __future__ import annotations

import math

import numpy as np

HEAD_ZOOM_FRACTION = 0.02   # y-limits may ignore the first 2% of the x-range ...
SQUASH_RATIO = 2.0          # ... when including it would more than double the y-range
BAND_SPIKE = 4.0            # band points this many times their median width are spikes
MIN_TICK_GAP_IN = 0.2       # labelled ticks of a short log axis at least this far apart


def _x_limits(curves: list, logx: bool, given) -> tuple[float, float] | None:
    """The x-range drawn: the panel's `xlim` where it gives one, else the curves' range
    with a 1 % margin at the end. On a linear axis with x >= 0 (counts, seconds) it starts
    at 0, where the run started: curves that begin later (after a stage 1) show it."""
    lo = hi = None
    if curves:
        x0 = min(float(c[2][0]) for c in curves)
        x1 = max(float(c[2][-1]) for c in curves)
        if x1 > x0:
            if logx:                   # 1 %: a marker on the first checkpoint shows whole
                lo, hi = x0 / (x1 / x0) ** 0.01, x1 * (x1 / x0) ** 0.01
            else:
                lo, hi = (0.0 if x0 > 0 else x0), x1 + 0.01 * (x1 - min(x0, 0.0))
    if given is not None:
        lo = given[0] if given[0] is not None else lo
        hi = given[1] if given[1] is not None else hi
    if lo is None or hi is None or not lo < hi:
        return None
    return float(lo), float(hi)


def _cut(g, lo, hi, ylim, xlim, logy: bool, after: float) -> bool:
    """A band reaching beyond the y-limits (by 1 % of the axis) inside the x-range drawn,
    after `after` (the start the y-limits may leave out, not a cut band)."""
    m = _from(g, after)
    if xlim is not None:
        m &= (g >= xlim[0]) & (g <= xlim[1])
    lo, hi = np.asarray(lo, float)[m], np.asarray(hi, float)[m]
    a, b = ylim
    if logy:
        slack = (b / a) ** 0.01
        return bool(np.any(lo[np.isfinite(lo)] < a / slack) or
                    np.any(hi[np.isfinite(hi)] > b * slack))
    slack = 0.01 * (b - a)
    return bool(np.any(lo[np.isfinite(lo)] < a - slack) or
                np.any(hi[np.isfinite(hi)] > b + slack))


def _log_ticks(lo: float, hi: float, height_in: float) -> list[float]:
    """Labelled ticks of a log axis spanning under a decade: the densest of 1-9, {1, 2, 3,
    5, 7}, {1, 2, 5}, {1, 3}, {1} times a power of ten whose labels stay MIN_TICK_GAP_IN
    apart (0.07, 0.08, 0.09, 0.1 crowd a short axis; 0.07, 0.1, 0.2 do not)."""
    decades = math.log10(hi / lo)
    e0, e1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    best = []
    for mant in ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0 ** e for e in range(e0, e1 + 1) for m in mant]
        vals = sorted(v for v in vals if lo <= v <= hi)
        if len(vals) < 2:
            continue
        gap = min(np.diff(np.log10(vals))) / decades * height_in
        best = vals
        if gap >= MIN_TICK_GAP_IN:
            return vals
    return best or [lo, hi]


def _from(g: np.ndarray, after: float) -> np.ndarray:
    """g >= after, a point on the boundary (2 % of 2e6 is 40000.000000000004) included."""
    return (g >= after) | np.isclose(g, after, rtol=1e-9, atol=0.0)


def _head_cut(x0: float, x1: float, logx: bool) -> float:
    """The x before which the start may be left out of the y-limits (HEAD_ZOOM_FRACTION of
    the x-range; of the log range on a log x-axis)."""
    if logx and x0 > 0:
        return x0 * (x1 / x0) ** HEAD_ZOOM_FRACTION
    return x0 + HEAD_ZOOM_FRACTION * (x1 - x0)


def auto_ylim(bands: list[tuple], logy: bool = False, pad: float = 0.05,
              logx: bool = False, xlim: tuple | None = None,
              info: dict | None = None) -> tuple[float, float] | None:
    """y-limits enclosing the curves drawn, padded by `pad` of the range.

    `bands` holds (grid, lo, hi) or (grid, lo, hi, center) per curve; only points inside
    `xlim` count (the x-range drawn: a run going on past it does not stretch the axis).
    If the first 2% of the x-range (e.g. the start value ln 2) would more than double the
    range, it is left out so the curves are not squashed (2% of the log range on a log
    x-axis; `info["head"]` is then the x before which points were left out, else -inf).
    Given the centers, the bands may not squash the curves either: when they
    would more than double the curves' y-range (SQUASH_RATIO; the range floored at the
    widest median band), band points wider than BAND_SPIKE times their curve's median
    width (seeds about to diverge) are left out, and the bands are cut at half the curves'
    range beyond them; the figure notes the bands cut. Log scale: computed on log10 of
    the positive values. None when there is nothing finite.
    """
    pts = []
    for b in bands:
        g, lo, hi = (np.asarray(a, dtype=float) for a in b[:3])
        c = np.asarray(b[3], dtype=float) if len(b) > 3 else None
        if xlim is not None:
            m = (g >= xlim[0]) & (g <= xlim[1])
            g, lo, hi, c = g[m], lo[m], hi[m], (c[m] if c is not None else None)
        if len(g):
            pts.append((g, lo, hi, c))
    if not pts:
        return None
    x0 = min(float(g[0]) for g, *_ in pts)
    x1 = max(float(g[-1]) for g, *_ in pts)

    def axis(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan) if logy else v

    def span(after: float | None):
        curves = []
        for g, lo, hi, c in pts:
            m = np.ones(len(g), bool) if after is None else _from(g, after)
            curves.append((axis(lo[m]), axis(hi[m]), None if c is None else axis(c[m])))
        vals = np.concatenate([np.concatenate([lo, hi] + ([c] if c is not None else []))
                               for lo, hi, c in curves])
        vals = vals[np.isfinite(vals)]
        if not len(vals):
            return None
        full = (float(vals.min()), float(vals.max()))
        cen = np.concatenate([c for _, _, c in curves if c is not None] or [np.empty(0)])
        cen = cen[np.isfinite(cen)]
        if not len(cen):
            return full
        widths = []
        for lo, hi, _ in curves:
            w = hi - lo
            w = w[np.isfinite(w)]
            widths.append(float(np.median(w)) if len(w) else 0.0)
        c0, c1 = float(cen.min()), float(cen.max())
        cspan = max(c1 - c0, max(widths))
        if cspan <= 0 or full[1] - full[0] <= SQUASH_RATIO * cspan:
            return full
        lows, highs = [c0], [c1]
        for (lo, hi, _), med in zip(curves, widths, strict=True):
            w = hi - lo
            keep = np.isfinite(w) & (w <= BAND_SPIKE * max(med, 0.01 * cspan))
            if keep.any():
                lows.append(float(lo[keep].min()))
                highs.append(float(hi[keep].max()))
        reach = (SQUASH_RATIO - 1) / 2 * cspan
        return max(min(lows), c0 - reach), min(max(highs), c1 + reach)

    full = span(None)
    if full is None:
        return None
    head = _head_cut(x0, x1, logx)
    tail = span(head) if x1 > x0 else None
    lo, hi = full
    if info is not None:
        info["head"] = -np.inf
    if tail is not None and (full[1] - full[0]) > SQUASH_RATIO * (tail[1] - tail[0]):
        lo, hi = tail
        if info is not None:
            info["head"] = head
    r = hi - lo
    if r <= 0:
        r = abs(hi) * 0.1 if hi != 0 else 1.0
    lo, hi = lo - pad * r, hi + pad * r
    return (10 ** lo, 10 ** hi) if logy else (lo, hi)
