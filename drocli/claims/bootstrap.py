"""Seed bootstrap for claims on seed-mean curves, where seed-by-seed pairing does not apply.

A claim such as "the mean curve of A reaches 1e-10 before B's" is a statement about seed-mean
curves: the mean of per-seed reach times is another quantity. Its uncertainty is estimated by
resampling seeds with replacement (Efron's percentile bootstrap): each draw averages the
resampled seeds' curves (on the label's common grid, a NaN at a point if any resampled seed is
NaN there) and recomputes the statistic. Labels that ran the same seeds are resampled with the
same seed indices (a paired bootstrap); otherwise each label independently. The draws are
seeded, so a verdict is reproducible. With fewer than `MIN_SEEDS` seeds the percentile
interval cannot reach its nominal coverage (with 3 seeds, one draw in nine repeats a single
seed): it is shown, and the verdict is inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from drocli.claims.judge import interval_verdict

DRAWS = 2000
MIN_SEEDS = 5
RNG_SEED = 20240


def resample_weights(n_seeds: int, draws: int = DRAWS, seed: int = RNG_SEED) -> np.ndarray:
    """(draws x n_seeds) weights: how often each seed is drawn, divided by n_seeds."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_seeds, size=(draws, n_seeds))
    w = np.zeros((draws, n_seeds))
    np.add.at(w, (np.arange(draws)[:, None], idx), 1.0)
    return w / n_seeds


def mean_curves(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted seed means of (n_seeds x n_grid) curves for each weight row; NaN where a seed
    with positive weight is NaN (as the plotted mean: NaN propagates)."""
    finite = np.isfinite(values)
    m = weights @ np.where(finite, values, 0.0)
    bad = (weights > 0).astype(float) @ (~finite).astype(float) > 0
    m[bad] = np.nan
    return m


def curve_draws(aggs: dict, stat: Callable[[np.ndarray, np.ndarray], float],
                draws: int = DRAWS) -> tuple[dict[str, np.ndarray], int]:
    """label -> the statistic on `draws` bootstrap mean curves, and the smallest seed count.

    `aggs` maps label -> Aggregate (grid, values, seeds). Same seed tuples: paired draws.
    """
    seed_sets = {tuple(a.seeds) for a in aggs.values()}
    paired = len(seed_sets) == 1
    out = {}
    for k, (label, agg) in enumerate(aggs.items()):
        n = len(agg.seeds)
        w = resample_weights(n, draws, RNG_SEED if paired else RNG_SEED + k)
        curves = mean_curves(agg.values, w) if n else np.full((draws, 0), np.nan)
        out[label] = np.array([stat(agg.grid, c) for c in curves], dtype=float)
    return out, min((len(a.seeds) for a in aggs.values()), default=0)


def difference(a, b, direction: str, factor: float):
    """Signed so that > 0 is the claimed direction; NaN (diverged) counts as the worst value,
    and two worst values tie."""
    worst = math.inf if direction == "below" else -math.inf
    a = np.where(np.isnan(a), worst, a)
    b = np.where(np.isnan(b), worst, b)
    with np.errstate(invalid="ignore"):
        fb = np.where(np.isfinite(b), factor * b, b)
        d = fb - a if direction == "below" else a - fb
    return np.where(np.isnan(d), 0.0, d)


def bootstrap_effects(point: dict[str, float], draws: dict[str, np.ndarray], n_seeds: int,
                      solver: str, others: list[str], *, direction: str = "below",
                      margin: float = 0.0, factor: float = 1.0,
                      confidence: float = 0.95, unit: str = "seed") -> dict[str, dict]:
    """Per other label: the effect on the seed-mean curves (signed, > 0 = claimed direction),
    its percentile interval over the bootstrap draws, and the verdict against `margin`:
    holds (interval above it), not_reproduced (below it), else inconclusive."""
    out = {}
    alpha = 1.0 - confidence
    for o in others:
        mean = float(difference(np.float64(point[solver]), np.float64(point[o]), direction,
                                factor))
        d = difference(draws[solver], draws[o], direction, factor)
        e = {"method": "bootstrap", "unit": unit, "n": int(n_seeds), "unpaired": 0,
             "threshold": float(margin), "confidence": confidence,
             "mean": mean, "lo": None, "hi": None, "verdict": "inconclusive"}
        if n_seeds >= 2:
            e["lo"] = float(np.quantile(d, alpha / 2, method="lower"))
            e["hi"] = float(np.quantile(d, 1 - alpha / 2, method="higher"))
        if n_seeds >= MIN_SEEDS:
            e["verdict"] = interval_verdict(e["lo"], e["hi"], margin)
        else:                  # the interval is shown, but too few draws to judge on it
            e["why"] = (f"{n_seeds} {unit}(s): a bootstrap verdict needs at least "
                        f"{MIN_SEEDS}")
        out[o] = e
    return out
