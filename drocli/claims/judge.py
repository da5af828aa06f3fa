"""Shared judging helpers of the claim kinds: better-than with NaN as worst, per-seed or
seed-mean comparisons with a one-line detail, final values and seed curves per label."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from drocli.claims.inference import CONFIDENCE, family, interval_verdict, note, paired_effects

__all__ = ["CONFIDENCE", "interval_verdict", "paired_effects", "overall", "effects_text",
           "SkipClaim", "fmt_values", "note"]

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


def overall(effects: dict[str, dict]) -> str:
    """holds if it holds against every other (intersection-union), not_reproduced if it is
    refuted against any (each refutation already at the Bonferroni level), else
    inconclusive."""
    verdicts = [e["verdict"] for e in effects.values()]
    if verdicts and all(v == "holds" for v in verdicts):
        return "holds"
    if any(v == "not_reproduced" for v in verdicts):
        return "not_reproduced"
    return "inconclusive"


def seeds_to_decide(effects: dict[str, dict]) -> float:
    """About how many seeds would decide an inconclusive claim if its estimates were the
    truth (80 % power per comparison, `inference.seeds_to_decide`): a refutation needs one
    comparison refuted (the fewest seeds among those estimated below their threshold),
    HOLDS needs every one to hold (the most seeds, impossible while any estimate is below).
    inf: no number of seeds would; nan: not estimated (no interval, or the seed spread's
    sign-flip test). With `panels_needed` it is a rough guide."""
    open_ = [e for e in effects.values() if "seeds_to_decide" in e]
    if not open_:
        return math.nan
    need = [math.inf if e["seeds_to_decide"] is None else e["seeds_to_decide"]
            for e in open_]
    below = [n for e, n in zip(open_, need, strict=True) if e["mean"] < e["threshold"]]
    refute = min(below, default=math.inf)
    hold = math.inf if below or any(
        e.get("lo") is None and e.get("p_holds") is None for e in effects.values()) else max(
        need + [e["n"] for e in effects.values() if e["verdict"] == "holds"])
    return min(refute, hold)


def effects_text(effects: dict[str, dict]) -> str:
    """'paired-t 95 % over 10 seed(s): B +0.012 [+0.004, +0.020] holds; C ... ->
    inconclusive'; a sign-flip effect shows its exact p-values instead of an interval."""
    if not effects:
        return ""
    first = next(iter(effects.values()))
    conf, method = first["confidence"], first.get("method", "paired-t")
    parts = []
    for o, e in effects.items():
        thr = f" vs threshold {e['threshold']:g}" if e["threshold"] else ""
        verdict = _word(e["verdict"])
        if e.get("p_holds") is not None:
            parts.append(f"{o} {e['mean']:+.3g} (p = {e['p_holds']:.3g} for, "
                         f"{e['p_refutes']:.3g} against) {verdict}")
        elif e["lo"] is None:
            shown = f"{e['mean']:+.3g}" if e["mean"] is not None else "n/a"
            parts.append(f"{o} {shown} (no interval: {e.get('why', 'n = ' + str(e['n']))})")
            continue
        else:
            parts.append(f"{o} {e['mean']:+.3g} [{e['lo']:+.3g}, {e['hi']:+.3g}]{thr} "
                         f"{verdict}")
        if e.get("why"):
            parts[-1] += f" ({e['why']})"
        if e.get("unpaired"):
            parts[-1] += f" ({e['unpaired']} diverged pair(s) left out)"
    n = max(e["n"] for e in effects.values())
    multi = f"; {refute_words(effects)}" if refute_words(effects) else ""
    return (f"{method} {conf:.0%} over {n} {first.get('unit', 'seed')}(s){multi}: "
            + "; ".join(parts) + f" -> {_word(overall(effects))}")


def refute_words(effects: dict[str, dict]) -> str:
    """How a claim of k > 1 comparisons is refuted, in plain words with its numbers (the
    Bonferroni rule of `inference`): 'refuted if it fails against any one of its 3
    comparisons (each tested at 98.33% confidence, so that all 3 together keep 95%)'."""
    if not effects:
        return ""
    conf = next(iter(effects.values()))["confidence"]
    k = max(len(effects), max(e.get("others", 1) for e in effects.values()))
    if k <= 1:
        return ""
    return (f"refuted if it fails against any one of its {k} comparisons (each tested at "
            f"{100 * (1 - (1 - conf) / k):.4g}% confidence, so that all {k} together keep "
            f"{conf:.0%})")


def _word(verdict: str) -> str:
    """The statistical verdict in words: holds, refuted, inconclusive (the claim's status,
    HOLDS / FAILS / NOT REPRODUCED, also depends on its mark)."""
    return {"not_reproduced": "refuted"}.get(verdict, verdict.replace("_", " "))


def _judge(claim, stats: dict[str, pd.Series], *, direction: str = "below",
           margin: float = 0.0, factor: float = 1.0, fmt=fmt_values, unit: str = "",
           prefix: str = "", mean_stats: dict[str, float] | None = None,
           mean_seeds: list | None = None, censor: float | None = None):
    """Compare per-seed statistics (label -> Series indexed by seed) of solver vs others.

    Returns (holds, detail, values, effects): the point comparison (seed by seed, or on the
    statistic of the seed-mean curves `mean_stats` when the claim is about mean curves),
    its line, the values shown, and the paired-t effects of the per-seed statistics
    (`drocli.claims.inference`). `censor` replaces an infinite statistic (a level never
    reached) by the horizon for the effects; a seed where both labels of a pair never reach
    it is left out of that pair.
    """
    op = "<" if direction == "below" else ">"
    scale = f"{factor:g} x " if factor != 1.0 else ""
    solver, others = claim.solver, claim.others
    if claim.seedwise or mean_stats is None:
        common = set(stats[solver].index)
        for o in others:
            common &= set(stats[o].index)
        seeds = sorted(common, key=lambda s: (str(type(s)), s))
        if not seeds:
            have = "; ".join(f"{k}: {_seed_list(v.index)}" for k, v in stats.items())
            raise SkipClaim(f"no seed common to all labels ({have})")
    if claim.seedwise:
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
        if mean_stats is not None:
            means = dict(mean_stats)
            tail = f"seed-mean curves over {_seed_list(mean_seeds or [])}"
        else:
            means = {k: float(v.mean(skipna=False)) if len(v) else math.nan
                     for k, v in stats.items()}
            tail = f"seed means over {_seed_list(seeds)}"
        ok = {o: _beats(means[solver], means[o], direction, margin, factor) for o in others}
        line = _relation(solver, means[solver], {o: means[o] for o in others}, ok, op, fmt,
                         unit, scale)
        holds = all(ok.values())
    if margin:
        tail += f"; margin {margin:g}"
    if mean_stats is not None:
        tail += "; effect = per-seed statistic"
    st = stats if censor is None else {k: v.clip(upper=censor) for k, v in stats.items()}
    effects = paired_effects(st, solver, others, direction=direction, margin=margin,
                             factor=factor, confidence=claim.confidence,
                             k=family(claim, len(others)),
                             both_never=None if censor is None else stats)
    tail += "; " + effects_text(effects)
    return holds, f"{prefix}{line} ({tail})", means, effects


def _final_stats(data: dict[str, pd.DataFrame], claim, column: str = "value"
                 ) -> dict[str, pd.Series]:
    import pandas as pd

    from drocli.results.aggregate import final_values

    out = {}
    for label, rows in data.items():
        fv = final_values(rows, what=f"claims[{claim.id}] ({label})")
        s = pd.Series(fv[column].to_numpy(dtype=float), index=fv["seed"].to_numpy())
        out[label] = s.where(np.isfinite(s))
    return out


def _curves(data: dict[str, pd.DataFrame], claim):
    """label -> (per-seed curves, seed-mean aggregate with NaN propagated)."""
    from drocli.errors import DrocliError
    from drocli.results.aggregate import aggregate, seed_curves

    x = claim.x or "oracle_calls"
    out = {}
    for label, rows in data.items():
        what = f"claims[{claim.id}] ({label})"
        try:
            agg = aggregate(rows, x=x, band="none", nan="propagate", what=what)
        except DrocliError as e:
            # seeds whose x ranges do not overlap (time_s: one seed's stage 1 outlasting
            # another's whole run when the machine's load changes) have no seed-mean curve;
            # the verdict is judged on the per-seed statistics, which need none
            if "do not overlap" not in str(e):
                raise
            agg = None
        out[label] = (seed_curves(rows, x=x, what=what), agg)
    return out


def _curve_stats(claim, data, stat: Callable[[np.ndarray, np.ndarray], float],
                 curves=None) -> tuple[dict[str, pd.Series], dict | None, list | None]:
    """label -> Series(seed -> stat(x, y)) of each seed's curve (what the verdict is judged
    on); with per_seed false also the statistic of each label's seed-mean curve on its
    common grid (the point comparison) and the seeds of those means (else None, None)."""
    import pandas as pd

    out, means, seeds = {}, {}, set()
    curves = curves or _curves(data, claim)
    for label, (per_seed, agg) in curves.items():
        out[label] = pd.Series({c.seed: stat(c.x, c.y) for c in per_seed}, dtype=float)
        if not claim.seedwise and agg is not None:
            means[label] = float(stat(agg.grid, agg.center))
            seeds |= set(agg.seeds)
    if claim.seedwise or any(agg is None for _, agg in curves.values()):
        return out, None, None      # no seed-mean curve for some label: per-seed only
    return out, means, sorted(seeds, key=lambda s: (str(type(s)), s))


# --- public API for claim kinds (issue 30) ------------------------------------------------------
# Outside claim kinds use these names; the underscore names above stay as they are.
judge = _judge                  # compare per-seed statistics: (holds, detail, values, effects)
final_stats = _final_stats      # label -> Series(seed -> value at the cell's last checkpoint)
seed_curves = _curves           # label -> (per-seed curves, seed-mean aggregate)
curve_stats = _curve_stats      # label -> Series(seed -> stat(x, y)) of each seed's curve
__all__ += ["judge", "final_stats", "seed_curves", "curve_stats"]
