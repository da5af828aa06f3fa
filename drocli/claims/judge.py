"""Shared judging helpers of the claim kinds: better-than with NaN as worst, per-seed or
seed-mean comparisons with a one-line detail, final values and seed curves per label."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:     # pandas and the aggregation load when a claim is judged, not when a
    import pandas as pd  # spec (and its claim models) is loaded


class SkipClaim(Exception):
    """Raised by a kind when the records do not allow judging the claim."""


def _worst(direction: str) -> float:
    return math.inf if direction == "below" else -math.inf


def _clean(v: float, direction: str) -> float:
    v = float(v)
    return v if not math.isnan(v) else _worst(direction)


def _beats(a: float, b: float, direction: str = "below", margin: float = 0.0,
           factor: float = 1.0) -> bool:
    """a better than b: a < factor*b - margin (below), a > factor*b + margin (above)."""
    a, b = _clean(a, direction), _clean(b, direction)
    if direction == "below":
        return bool(a < (b * factor if math.isfinite(b) else b) - margin)
    return bool(a > (b * factor if math.isfinite(b) else b) + margin)


def fmt_values(values, digits: int = 4) -> list[str]:
    """Numbers with `digits` significant digits, more if needed to tell distinct ones apart."""
    vals = [float(v) for v in values]
    finite = [v for v in vals if math.isfinite(v)]
    d = digits
    while d < 12:
        shown = {f"{v:.{d}g}" for v in set(finite)}
        if len(shown) == len(set(finite)):
            break
        d += 1

    def one(v):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.{d}g}"

    return [one(v) for v in vals]


def _seed_list(seeds) -> str:
    seeds = list(seeds)
    s = ",".join(str(_plain(v)) for v in seeds[:12])
    return ("seed " if len(seeds) == 1 else "seeds ") + s + (",..." if len(seeds) > 12 else "")


def _plain(v):
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return int(v)
    return v.item() if isinstance(v, np.generic) else v


def _relation(solver: str, sval: float, others: dict[str, float], ok: dict[str, bool],
              op: str, fmt: Callable[[list], list[str]] = fmt_values, unit: str = "",
              scale: str = "") -> str:
    """'A 1.2 < B 1.5, C 1.7' or 'A 1.2 < B 1.5; NOT < C 1.1'."""
    shown = fmt([sval, *others.values()])
    o_txt = dict(zip(others, shown[1:], strict=True))
    good = ", ".join(f"{scale}{n} {o_txt[n]}{unit}" for n in others if ok[n])
    bad = ", ".join(f"{scale}{n} {o_txt[n]}{unit}" for n in others if not ok[n])
    parts = ([f"{op} {good}"] if good else []) + ([f"NOT {op} {bad}"] if bad else [])
    return f"{solver} {shown[0]}{unit} " + "; ".join(parts)


CONFIDENCE = 0.95


def paired_effects(stats: dict[str, pd.Series], solver: str, others: list[str], *,
                   direction: str = "below", margin: float = 0.0, factor: float = 1.0,
                   confidence: float = CONFIDENCE) -> dict[str, dict]:
    """Per other label: the paired differences d_s over the seeds both have, signed so that
    d > 0 is the claimed direction (below: factor*other - solver; above: solver -
    factor*other), their mean and its two-sided t-interval at `confidence`, and the
    statistical verdict against the threshold `margin`: holds (interval above it),
    not_reproduced (interval below it), inconclusive (it contains the threshold, or fewer than
    two finite pairs). Seeds where a value diverged are counted, not paired; a seed where only
    the solver diverged is a loss, so the verdict is then at best inconclusive."""
    from scipy.special import stdtrit  # the t quantile, without scipy.stats' 0.5 s import

    out = {}
    for o in others:
        common = [k for k in stats[solver].index if k in set(stats[o].index)]
        a = stats[solver].loc[common].to_numpy(dtype=float)
        b = stats[o].loc[common].to_numpy(dtype=float)
        d = factor * b - a if direction == "below" else a - factor * b
        ok = np.isfinite(d)
        dd = d[ok]
        lost = int((~np.isfinite(a) & np.isfinite(b)).sum())
        e = {"method": "paired-t", "n": int(ok.sum()), "unpaired": int((~ok).sum()),
             "threshold": float(margin), "confidence": confidence, "mean": None, "lo": None,
             "hi": None, "verdict": "inconclusive"}
        if dd.size:
            e["mean"] = float(dd.mean())
        if dd.size >= 2:
            half = float(stdtrit(dd.size - 1, 0.5 + confidence / 2)
                         * dd.std(ddof=1) / math.sqrt(dd.size))
            e["lo"], e["hi"] = e["mean"] - half, e["mean"] + half
            e["verdict"] = interval_verdict(e["lo"], e["hi"], margin)
        else:
            e["why"] = f"{dd.size} finite pair(s): an interval needs at least 2"
        if lost and e["verdict"] == "holds":
            e["verdict"] = "inconclusive"
            e["why"] = f"{solver} diverged on {lost} seed(s) where {o} did not"
        out[o] = e
    return out


def interval_verdict(lo: float, hi: float, threshold: float) -> str:
    """holds when the interval of the effect lies above the threshold, not_reproduced when
    below it, inconclusive when it contains it."""
    if lo > threshold:
        return "holds"
    if hi < threshold:
        return "not_reproduced"
    return "inconclusive"


def overall(effects: dict[str, dict]) -> str:
    """holds if it holds against every other, not_reproduced if against any, else
    inconclusive."""
    verdicts = [e["verdict"] for e in effects.values()]
    if verdicts and all(v == "holds" for v in verdicts):
        return "holds"
    if any(v == "not_reproduced" for v in verdicts):
        return "not_reproduced"
    return "inconclusive"


def effects_text(effects: dict[str, dict]) -> str:
    """'paired-t 95 %: B +0.012 [0.004, 0.020] holds; C ... -> inconclusive'."""
    if not effects:
        return ""
    first = next(iter(effects.values()))
    conf, method = first["confidence"], first.get("method", "paired-t")
    parts = []
    for o, e in effects.items():
        thr = f" vs threshold {e['threshold']:g}" if e["threshold"] else ""
        if e["lo"] is None:
            shown = f"{e['mean']:+.3g}" if e["mean"] is not None else "n/a"
            parts.append(f"{o} {shown} (no interval: {e.get('why', 'n = ' + str(e['n']))})")
        else:
            parts.append(f"{o} {e['mean']:+.3g} [{e['lo']:+.3g}, {e['hi']:+.3g}]{thr} "
                         f"{e['verdict'].replace('_', ' ')}")
            if e.get("why"):
                parts[-1] += f" ({e['why']})"
        if e["unpaired"]:
            parts[-1] += f" ({e['unpaired']} diverged pair(s) left out)"
    n = max(e["n"] for e in effects.values())
    return (f"{method} {conf:.0%} over {n} {first.get('unit', 'seed')}(s): " + "; ".join(parts)
            + f" -> {overall(effects).replace('_', ' ')}")


def _judge(claim, stats: dict[str, pd.Series], *, direction: str = "below",
           margin: float = 0.0, factor: float = 1.0, fmt=fmt_values, unit: str = "",
           prefix: str = "", mean_curve_of: list | None = None,
           draws: tuple[dict, int] | None = None, censor: float | None = None):
    """Compare per-seed statistics (label -> Series indexed by seed) of solver vs others.

    Returns (holds, detail, values, effects): the point comparison, its line, the seed means
    shown, and the statistical effects (paired t over seeds; for seed-mean curves
    (`mean_curve_of`), the seed bootstrap `draws` = (label -> draws, seed count)). `censor`
    replaces an infinite statistic (a level never reached) by the horizon for the effects.
    """
    op = "<" if direction == "below" else ">"
    scale = f"{factor:g} x " if factor != 1.0 else ""
    solver, others = claim.solver, claim.others
    if claim.seedwise:
        common = set(stats[solver].index)
        for o in others:
            common &= set(stats[o].index)
        seeds = sorted(common, key=lambda s: (str(type(s)), s))
        if not seeds:
            have = "; ".join(f"{k}: {_seed_list(v.index)}" for k, v in stats.items())
            raise SkipClaim(f"no seed common to all labels ({have})")
        means = {k: float(v.loc[seeds].mean(skipna=False)) for k, v in stats.items()}
        failures = []
        for s in seeds:
            sv = float(stats[solver].loc[s])
            for o in others:
                ov = float(stats[o].loc[s])
                if not _beats(sv, ov, direction, margin, factor):
                    a, b = fmt([sv, ov])
                    failures.append(f"seed {_plain(s)}: {solver} {a}{unit} vs {scale}{o} "
                                    f"{b}{unit}")
        ok = {o: all(_beats(float(stats[solver].loc[s]), float(stats[o].loc[s]), direction,
                            margin, factor) for s in seeds) for o in others}
        line = _relation(solver, means[solver], {o: means[o] for o in others}, ok, op, fmt,
                         unit, scale)
        dropped = {k: sorted(set(v.index) - set(seeds)) for k, v in stats.items()}
        dropped_txt = "; ".join(f"{k} also has {_seed_list(v)}" for k, v in dropped.items()
                                if v)
        tail = f"mean over {_seed_list(seeds)}; "
        tail += ("holds for each seed" if not failures else
                 "fails at " + "; ".join(failures[:3])
                 + (f"; +{len(failures) - 3} more" if len(failures) > 3 else ""))
        if dropped_txt:
            tail += f"; compared on common seeds only ({dropped_txt})"
        holds = not failures
    else:
        means = {k: float(v.mean(skipna=False)) if len(v) else math.nan
                 for k, v in stats.items()}
        ok = {o: _beats(means[solver], means[o], direction, margin, factor) for o in others}
        line = _relation(solver, means[solver], {o: means[o] for o in others}, ok, op, fmt,
                         unit, scale)
        if mean_curve_of is not None:
            tail = f"seed-mean curves over {_seed_list(mean_curve_of)}"
        else:
            seeds = sorted(set().union(*[set(v.index) for v in stats.values()]),
                           key=lambda s: (str(type(s)), s))
            tail = f"seed means over {_seed_list(seeds)}"
        holds = all(ok.values())
    if margin:
        tail += f"; margin {margin:g}"
    conf = claim.confidence
    if mean_curve_of is None:           # per-seed values: paired differences apply
        st = stats if censor is None else {k: v.clip(upper=censor) for k, v in stats.items()}
        effects = paired_effects(st, solver, others, direction=direction, margin=margin,
                                 factor=factor, confidence=conf)
    else:                               # seed-mean curves: bootstrap over seeds
        from drocli.claims.bootstrap import bootstrap_effects

        boot, n_seeds = draws
        point = means
        if censor is not None:
            boot = {k: np.minimum(v, censor) for k, v in boot.items()}
            point = {k: min(v, censor) for k, v in means.items()}
        effects = bootstrap_effects(point, boot, n_seeds, solver, others,
                                    direction=direction, margin=margin, factor=factor,
                                    confidence=conf)
    tail += "; " + effects_text(effects)
    return holds, f"{prefix}{line} ({tail})", means, effects


def _final_stats(data: dict[str, pd.DataFrame], claim, column: str = "value"
                 ) -> dict[str, pd.Series]:
    import pandas as pd

    from drocli.aggregate import final_values

    out = {}
    for label, rows in data.items():
        fv = final_values(rows, what=f"claims[{claim.id}] ({label})")
        s = pd.Series(fv[column].to_numpy(dtype=float), index=fv["seed"].to_numpy())
        out[label] = s.where(np.isfinite(s))
    return out


def _curves(data: dict[str, pd.DataFrame], claim):
    """label -> (per-seed curves, seed-mean aggregate with NaN propagated)."""
    from drocli.aggregate import aggregate, seed_curves

    x = claim.x or "oracle_calls"
    out = {}
    for label, rows in data.items():
        what = f"claims[{claim.id}] ({label})"
        out[label] = (seed_curves(rows, x=x, what=what),
                      aggregate(rows, x=x, band="none", nan="propagate", what=what))
    return out


def _curve_stats(claim, data, stat: Callable[[np.ndarray, np.ndarray], float],
                 curves=None) -> tuple[dict[str, pd.Series], list | None, tuple | None]:
    """label -> Series(seed -> stat(x, y)); with per_seed false, one entry ('mean') for the
    seed-mean curve on the common grid. Also returns the seeds of the mean curves and the
    seed-bootstrap draws of the statistic (both None seed by seed)."""
    import pandas as pd

    from drocli.claims.bootstrap import curve_draws

    out, seeds = {}, set()
    curves = curves or _curves(data, claim)
    for label, (per_seed, agg) in curves.items():
        if claim.seedwise:
            out[label] = pd.Series({c.seed: stat(c.x, c.y) for c in per_seed}, dtype=float)
        else:
            out[label] = pd.Series({"mean": stat(agg.grid, agg.center)}, dtype=float)
            seeds |= set(agg.seeds)
    if claim.seedwise:
        return out, None, None
    draws = curve_draws({k: agg for k, (_, agg) in curves.items()}, stat)
    return out, sorted(seeds, key=lambda s: (str(type(s)), s)), draws


