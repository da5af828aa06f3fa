"""Paper claims as data, evaluated on records; and numeric comparison with reference records.

A claim (`claims:` in the spec, validated by `ClaimSpec`) names a kind, a metric, the
claimed-better label (`solver`) and the labels it beats (`others`). Each kind is a small
pure function over the records, registered in `CLAIM_KINDS` with the extra fields it
accepts; `@claim_kind(...)` adds more. Conventions shared by every kind:

- "better" means lower (`direction: below`, the default) or higher (`direction: above`);
- a NaN/inf (diverged) value is the worst possible one, so a diverged solver never wins
  and a diverged other always loses; seed means propagate NaN;
- `per_seed: true` compares seed by seed on the seeds every label has (all must hold);
  `false` compares seed means. Default: true for `final_below`, false for the rest;
- curve kinds use the seed curves interpolated on their common grid (`drocli.aggregate`).

Statuses: holds, fails, not_reproduced (claim marked `reproduced: false` that indeed does
not hold; `reproduced: [paper]` marks it reproduced on the listed profiles only),
unexpectedly_holds (marked not reproduced but holds; reported, never a failure), skipped
(profile not listed, labels or rows missing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from drocli.aggregate import aggregate, apply_filter, final_values, seed_curves
from drocli.errors import DrocliError, did_you_mean

STATUSES = ("holds", "fails", "not_reproduced", "unexpectedly_holds", "skipped")
COMMON_FIELDS = frozenset({"id", "text", "kind", "metric", "solver", "others", "per_seed",
                           "profiles", "reproduced", "filter"})

Scalar = str | int | float | bool


# --- registry -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ClaimKind:
    """A claim kind: its function, the kind-specific fields it accepts, its defaults."""

    name: str
    func: Callable
    fields: frozenset = frozenset()
    needs_metric: bool = True
    per_seed_default: bool = False
    validate: Callable | None = None
    doc: str = ""


CLAIM_KINDS: dict[str, ClaimKind] = {}


def claim_kind(name: str, fields=(), needs_metric: bool = True, per_seed_default: bool = False,
               validate: Callable | None = None):
    """Decorator: register `func(claim, data) -> (holds, detail)` as claim kind `name`.

    `data` maps each label (solver first, then others) to its rows (filtered, metric only
    when the claim has one). Raise `SkipClaim(reason)` when the claim cannot be judged.
    """

    def deco(func):
        CLAIM_KINDS[name] = ClaimKind(name, func, frozenset(fields), needs_metric,
                                      per_seed_default, validate,
                                      (func.__doc__ or "").strip().splitlines()[0])
        return func

    return deco


class SkipClaim(Exception):
    """Raised by a kind when the records do not allow judging the claim."""


# --- spec ---------------------------------------------------------------------------------

class ClaimSpec(BaseModel):
    """One claim of the paper, as data."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    text: str
    kind: str
    metric: str | None = None
    solver: str
    others: list[str] = Field(default_factory=list)   # at least one, except `pooled` + value
    per_seed: bool | None = None            # None: the kind's default
    profiles: list[str] | None = None       # None: every profile
    reproduced: bool | list[str] = True     # a list: the profiles on which it reproduces
    filter: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)
    # kind-specific
    margin: float | None = None             # final_below, best_below
    direction: Literal["below", "above"] | None = None   # final_below, best_below, reach_first
    x: str | None = None                    # reach_first, best_below, smoother
    level: float | None = None              # reach_first
    level_fraction: float | None = Field(default=None, gt=0, le=1)   # reach_first
    after_fraction: float | None = Field(default=None, ge=0, lt=1)   # smoother
    measure: Literal["tv", "excess"] | None = None                    # smoother
    factor: float | None = Field(default=None, gt=0)                  # wall_time_below
    statistic: Literal["mean", "max", "min", "median"] | None = None  # pooled
    value: float | None = None                                        # pooled

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v):
        if v not in CLAIM_KINDS:
            raise ValueError(f"unknown claim kind {v!r}; {did_you_mean(v, CLAIM_KINDS)}")
        return v

    @model_validator(mode="after")
    def _kind_fields(self):
        kind = CLAIM_KINDS[self.kind]
        given = {k for k in self.model_fields_set
                 if k not in COMMON_FIELDS and getattr(self, k) is not None}
        extra = sorted(given - kind.fields)
        if extra:
            accepted = ", ".join(sorted(kind.fields)) or "none"
            raise ValueError(f"field(s) {', '.join(extra)} not used by kind {self.kind!r} "
                             f"(its own fields: {accepted})")
        if kind.needs_metric and not self.metric:
            raise ValueError(f"kind {self.kind!r} needs `metric`")
        if not self.others and not (self.kind == "pooled" and self.value is not None):
            raise ValueError("`others` must list at least one label to compare with "
                             "(kind pooled with `value` compares with a number instead)")
        if self.solver in self.others:
            raise ValueError(f"solver {self.solver!r} is also listed in others")
        if len(set(self.others)) != len(self.others):
            raise ValueError(f"others lists a label twice: {self.others}")
        if kind.validate is not None:
            kind.validate(self)
        return self

    @property
    def labels(self) -> list[str]:
        return [self.solver, *self.others]

    @property
    def seedwise(self) -> bool:
        return CLAIM_KINDS[self.kind].per_seed_default if self.per_seed is None \
            else self.per_seed


@dataclass
class ClaimResult:
    id: str
    text: str
    kind: str
    status: str
    detail: str
    reproduced: bool = True
    values: dict = field(default_factory=dict)   # label -> compared number (seed mean)

    @property
    def failed(self) -> bool:
        return self.status == "fails"

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "kind": self.kind, "status": self.status,
                "detail": self.detail, "reproduced": self.reproduced,
                "values": {k: _json_num(v) for k, v in self.values.items()}}


def _json_num(v):
    v = float(v)
    return v if math.isfinite(v) else str(v)


# --- evaluation ---------------------------------------------------------------------------

def evaluate_claims(records: pd.DataFrame, claims: list, profile: str) -> list[ClaimResult]:
    """Evaluate every claim (ClaimSpec or dict) on the records for the given profile.

    A metric absent from the records is a spec error (DrocliError); labels absent from the
    records (e.g. a profile that runs fewer solvers) make the claim `skipped`.
    """
    specs = [c if isinstance(c, ClaimSpec) else ClaimSpec.model_validate(c) for c in claims]
    ids = [c.id for c in specs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise DrocliError(f"claim ids must be unique, repeated: {', '.join(dup)}",
                          key="claims")
    return [evaluate_claim(records, c, profile) for c in specs]


def evaluate_claim(records: pd.DataFrame, claim: ClaimSpec, profile: str) -> ClaimResult:
    reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
        else profile in claim.reproduced

    def result(status, detail, values=None):
        return ClaimResult(claim.id, claim.text, claim.kind, status, detail, reproduced,
                           dict(values or {}))

    if claim.profiles is not None and profile not in claim.profiles:
        return result("skipped", f"profile {profile!r} not in {claim.profiles}")
    where = f"claims[{claim.id}]"
    if claim.metric is not None:
        metrics = sorted(map(str, records["metric"].dropna().unique()))
        if claim.metric not in metrics:
            raise DrocliError(f"claim {claim.id!r}: unknown metric {claim.metric!r}; metrics in "
                              f"the records: {', '.join(metrics) or '(none)'}",
                              key=f"{where}.metric", fix=did_you_mean(claim.metric, metrics))
    rows = apply_filter(records, claim.filter, where=f"{where}.filter")
    if claim.metric is not None:
        rows = rows[rows["metric"] == claim.metric]
    lab = rows["label"].astype(str)
    data = {label: rows[lab == label] for label in claim.labels}
    missing = [label for label, d in data.items() if d.empty]
    if missing:
        have = sorted(set(lab))
        what = f" with metric {claim.metric!r}" if claim.metric else ""
        filt = f" after filter {claim.filter}" if claim.filter else ""
        return result("skipped", f"label(s) missing from the records{what}{filt}: "
                      f"{', '.join(missing)} (present: {', '.join(have) or 'none'})")
    try:
        holds, detail, values = CLAIM_KINDS[claim.kind].func(claim, data)
    except SkipClaim as exc:
        return result("skipped", str(exc))
    if reproduced:
        status = "holds" if holds else "fails"
    else:
        status = "unexpectedly_holds" if holds else "not_reproduced"
    return result(status, detail, values)


# --- comparison helpers -------------------------------------------------------------------

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


def _judge(claim: ClaimSpec, stats: dict[str, pd.Series], *, direction: str = "below",
           margin: float = 0.0, factor: float = 1.0, fmt=fmt_values, unit: str = "",
           prefix: str = "", mean_curve_of: list | None = None):
    """Compare per-seed statistics (label -> Series indexed by seed) of solver vs others.

    Returns (holds, detail, values) where values are the seed means that are shown.
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
    return holds, f"{prefix}{line} ({tail})", means


def _final_stats(data: dict[str, pd.DataFrame], claim: ClaimSpec, column: str = "value"
                 ) -> dict[str, pd.Series]:
    out = {}
    for label, rows in data.items():
        fv = final_values(rows, what=f"claims[{claim.id}] ({label})")
        s = pd.Series(fv[column].to_numpy(dtype=float), index=fv["seed"].to_numpy())
        out[label] = s.where(np.isfinite(s))
    return out


def _curves(data: dict[str, pd.DataFrame], claim: ClaimSpec):
    """label -> (per-seed curves, seed-mean aggregate with NaN propagated)."""
    x = claim.x or "oracle_calls"
    out = {}
    for label, rows in data.items():
        what = f"claims[{claim.id}] ({label})"
        out[label] = (seed_curves(rows, x=x, what=what),
                      aggregate(rows, x=x, band="none", nan="propagate", what=what))
    return out


def _curve_stats(claim: ClaimSpec, data, stat: Callable[[np.ndarray, np.ndarray], float],
                 curves=None) -> tuple[dict[str, pd.Series], list | None]:
    """label -> Series(seed -> stat(x, y)); with per_seed false, one entry ('mean') for the
    seed-mean curve on the common grid. Also returns the seeds of the mean curves (or None)."""
    out, seeds = {}, set()
    for label, (per_seed, agg) in (curves or _curves(data, claim)).items():
        if claim.seedwise:
            out[label] = pd.Series({c.seed: stat(c.x, c.y) for c in per_seed}, dtype=float)
        else:
            out[label] = pd.Series({"mean": stat(agg.grid, agg.center)}, dtype=float)
            seeds |= set(agg.seeds)
    return out, (None if claim.seedwise else sorted(seeds, key=lambda s: (str(type(s)), s)))


# --- kinds --------------------------------------------------------------------------------

@claim_kind("final_below", fields=("margin", "direction"), per_seed_default=True)
def final_below(claim: ClaimSpec, data):
    """Value at each cell's last checkpoint: solver below every other (minus margin)."""
    direction = claim.direction or "below"
    return _judge(claim, _final_stats(data, claim), direction=direction,
                  margin=claim.margin or 0.0)


def _first_reach(x: np.ndarray, y: np.ndarray, level: float, direction: str) -> float:
    """First x where y reaches level (linear between checkpoints); inf if never."""
    with np.errstate(invalid="ignore"):
        hit = (y <= level) if direction == "below" else (y >= level)
    hit &= np.isfinite(y)
    if not hit.any():
        return math.inf
    k = int(np.argmax(hit))
    if k == 0 or not np.isfinite(y[k - 1]) or y[k] == y[k - 1]:
        return float(x[k])
    t = (level - y[k - 1]) / (y[k] - y[k - 1])
    return float(x[k - 1] + min(max(t, 0.0), 1.0) * (x[k] - x[k - 1]))


def _validate_reach(claim: ClaimSpec):
    if (claim.level is None) == (claim.level_fraction is None):
        raise ValueError("kind 'reach_first' needs exactly one of `level` (absolute) or "
                         "`level_fraction` (in (0, 1])")


def _fmt_budget(values) -> list[str]:
    return ["never" if math.isinf(float(v)) or math.isnan(float(v)) else f"{float(v):.3g}"
            for v in values]


@claim_kind("reach_first", fields=("level", "level_fraction", "direction", "x"),
            validate=_validate_reach)
def reach_first(claim: ClaimSpec, data):
    """The solver reaches `level` at a smaller x than every other (others may never)."""
    direction = claim.direction or "below"
    x = claim.x or "oracle_calls"
    curves = _curves(data, claim)
    if claim.level is not None:
        level = float(claim.level)
        how = f"{level:g}"
    else:
        start = float(curves[claim.solver][1].center[0]) if len(
            curves[claim.solver][1].center) else math.nan
        finals = []
        for label in claim.labels:
            fv = final_values(data[label], what=f"claims[{claim.id}] ({label})")
            finals.append(float(fv["value"].mean(skipna=False)))
        finals = [f for f in finals if math.isfinite(f)]
        if not math.isfinite(start) or not finals:
            raise SkipClaim(f"cannot derive the level: start of {claim.solver} is {start:g}, "
                            f"finite final means: {len(finals)}")
        best = min(finals) if direction == "below" else max(finals)
        level = start - claim.level_fraction * (start - best)
        s, b, lv = fmt_values([start, best, level])
        how = (f"{lv} (= start {s} - {claim.level_fraction:g} x (start - best final "
               f"{b}))")
    stats, mean_of = _curve_stats(claim, data,
                                  lambda xs, ys: _first_reach(xs, ys, level, direction),
                                  curves=curves)
    # reaching earlier is "below" in x, whatever the direction of the metric
    holds, detail, means = _judge(claim, {k: v.fillna(math.inf) for k, v in stats.items()},
                                  direction="below", fmt=_fmt_budget, mean_curve_of=mean_of,
                                  prefix=f"first {x} with {claim.metric} "
                                         f"{'<=' if direction == 'below' else '>='} {how}: ")
    if not math.isfinite(means[claim.solver]):
        holds = False
        detail += f"; {claim.solver} never reaches it"
    return holds, detail, means


@claim_kind("best_below", fields=("margin", "direction", "x"))
def best_below(claim: ClaimSpec, data):
    """Best value over checkpoints (min, or max with direction above): solver better."""
    direction = claim.direction or "below"

    def best(_x, y):
        y = y[np.isfinite(y)]
        if not len(y):
            return math.nan
        return float(y.min() if direction == "below" else y.max())

    stats, mean_of = _curve_stats(claim, data, best)
    return _judge(claim, stats, direction=direction, margin=claim.margin or 0.0,
                  mean_curve_of=mean_of,
                  prefix=f"best {'min' if direction == 'below' else 'max'}: ")


@claim_kind("smoother", fields=("after_fraction", "x", "measure"))
def smoother(claim: ClaimSpec, data):
    """Total variation of the curve after `after_fraction` of its x-range: solver lower."""
    frac = 0.2 if claim.after_fraction is None else claim.after_fraction
    measure = claim.measure or "tv"

    def tv(x, y):
        if not len(x):
            return math.nan
        m = x >= x[0] + frac * (x[-1] - x[0])
        w = y[m]
        if len(w) < 2 or not np.all(np.isfinite(w)):
            return math.nan      # diverged: worst
        total = float(np.abs(np.diff(w)).sum())
        return total - abs(float(w[-1] - w[0])) if measure == "excess" else total

    name = "total variation" if measure == "tv" else "excess variation (TV - |net change|)"
    stats, mean_of = _curve_stats(claim, data, tv)
    return _judge(claim, stats, mean_curve_of=mean_of, prefix=f"{name} after {frac:g} of x: ")


@claim_kind("wall_time_below", fields=("factor",), needs_metric=False)
def wall_time_below(claim: ClaimSpec, data):
    """Solver wall time (time_s at the last checkpoint) below factor x every other's."""
    stats = _final_stats(data, claim, column="time_s")
    return _judge(claim, stats, factor=claim.factor or 1.0, unit=" s",
                  fmt=lambda vs: [f"{float(v):.3g}" for v in vs], prefix="wall time: ")


@claim_kind("pooled", fields=("statistic", "value", "margin", "direction"))
def pooled(claim: ClaimSpec, data):
    """A statistic (mean, max, ...) of the final values pooled over every cell that passes
    the filter (all seeds and swept settings, e.g. all preferences): solver below each other
    label, or, with `value`, every listed label below that number."""
    direction = claim.direction or "below"
    stat = claim.statistic or "mean"
    op = "<" if direction == "below" else ">"
    vals = {}
    for label, rows in data.items():
        order = [c for c in ("cell", "step", "oracle_calls") if c in rows.columns]
        last = rows.sort_values(order, kind="stable").groupby("cell", sort=False).tail(1)
        v = pd.to_numeric(last["value"], errors="coerce").to_numpy(dtype=float)
        v = np.where(np.isfinite(v), v, _worst(direction))
        vals[label] = (getattr(np, stat)(v), v.size)
    n_txt = ", ".join(f"{k}: {n}" for k, (_, n) in vals.items())
    tail = f"{stat} over final values of all cells ({n_txt})"
    if claim.value is not None:
        ok = {k: _beats(s, claim.value, direction, claim.margin or 0.0) for k, (s, _) in
              vals.items()}
        shown = fmt_values([s for s, _ in vals.values()])
        parts = [f"{k} {t} {op if ok[k] else 'NOT ' + op} {claim.value:g}"
                 for (k, t) in zip(vals, shown, strict=True)]
        return all(ok.values()), f"{'; '.join(parts)} ({tail})", \
            {k: s for k, (s, _) in vals.items()}
    sv = vals[claim.solver][0]
    others = {o: vals[o][0] for o in claim.others}
    ok = {o: _beats(sv, ov, direction, claim.margin or 0.0) for o, ov in others.items()}
    if claim.margin:
        tail += f"; margin {claim.margin:g}"
    return all(ok.values()), f"{_relation(claim.solver, sv, others, ok, op)} ({tail})", \
        {k: s for k, (s, _) in vals.items()}


# --- reporting ----------------------------------------------------------------------------

TAGS = {"holds": "HOLDS", "fails": "FAILS", "not_reproduced": "NOT REPRODUCED (expected)",
        "unexpectedly_holds": "UNEXPECTEDLY HOLDS (marked not reproduced)",
        "skipped": "SKIPPED"}


def format_result(r: ClaimResult) -> str:
    """One line: `HOLDS  id: detail`."""
    return f"{TAGS.get(r.status, r.status.upper())}  {r.id}: {r.detail}"


# --- reference comparison -----------------------------------------------------------------

KEY = ("label", "dataset", "seed", "metric")
# columns never used to tell cells apart in compare_reference
STANDARD_EXTRA_SKIP = ("experiment", "cell", "solver", "step", "oracle_calls", "time_s",
                       "value", "status", *KEY)


def _finals_by_key(df: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    order = [c for c in ("cell", "step", "oracle_calls") if c in df.columns]
    last = df.sort_values(order, kind="stable").groupby(["cell", "metric"], sort=False).tail(1)
    out = pd.DataFrame({k: last[k].map(_key_text) if k in last.columns else ""
                        for k in (*KEY, *extra)})
    out["value"] = pd.to_numeric(last["value"], errors="coerce").to_numpy(dtype=float)
    return out.reset_index(drop=True)


def _key_text(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | float | np.integer | np.floating):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(v)


def compare_reference(records: pd.DataFrame, reference: pd.DataFrame, rtol: float = 1e-4,
                      atol: float = 1e-9, rtol_by_label: dict | None = None) -> list[str]:
    """Compare the final value of every (label, dataset, seed, metric) with a reference.

    Match: |value - ref| <= atol + r * |ref|, r = max(rtol, rtol_by_label[label]) (the spec's
    `reference_rtol`); NaN matches NaN only. Returns one line per
    mismatch or per key present on one side only; an empty list means all match. When a
    key names several cells (a swept parameter sharing a label), the parameter columns
    that tell them apart are added to the key.
    """
    common = [c for c in records.columns
              if c in reference.columns and c not in STANDARD_EXTRA_SKIP]
    extra: list[str] = []
    for df in (records, reference):
        if "cell" not in df.columns:
            continue
        per_key = df.groupby([k for k in KEY if k in df.columns], dropna=False)["cell"]
        if (per_key.nunique() > 1).any():
            cells = df.groupby("cell").first()
            for c in common:
                if c not in KEY and c not in extra and c in cells.columns and \
                        cells.groupby([k for k in KEY if k in cells.columns and k != "metric"],
                                      dropna=False)[c].nunique(dropna=False).gt(1).any():
                    extra.append(c)
    cur = _finals_by_key(records, extra)
    ref = _finals_by_key(reference, extra)
    keys = [*KEY, *extra]
    lines = []
    for name, df in (("records", cur), ("reference", ref)):
        dup = df[df.duplicated(keys, keep=False)]
        if not dup.empty:
            k = dup.iloc[0]
            lines.append(f"ambiguous key in {name}: {_key_str(k, keys)} names "
                         f"{int(df.duplicated(keys, keep=False).sum())} final values")
    cur = cur.drop_duplicates(keys)
    ref = ref.drop_duplicates(keys)
    merged = cur.merge(ref, on=keys, how="outer", suffixes=("", "_ref"), indicator=True)
    merged = merged.sort_values(keys, kind="stable")
    for _, row in merged.iterrows():
        key = _key_str(row, keys)
        a, b = float(row["value"]), float(row["value_ref"])
        if row["_merge"] == "left_only":
            lines.append(f"not in reference: {key} (value {a:.6g})")
        elif row["_merge"] == "right_only":
            lines.append(f"missing from records: {key} (reference {b:.6g})")
        elif math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                lines.append(f"{key}: {a:.6g} vs reference {b:.6g} (one is NaN)")
        else:
            r = max(rtol, (rtol_by_label or {}).get(str(row["label"]), 0.0))
            if abs(a - b) > atol + r * abs(b):
                rel = abs(a - b) / abs(b) if b else math.inf
                lines.append(f"{key}: {a:.8g} vs reference {b:.8g} (abs diff "
                             f"{abs(a - b):.2g}, rel diff {rel:.2g} > rtol {r:g}, atol {atol:g})")
    return lines


def _key_str(row, keys) -> str:
    parts = [str(row[k]) if k != "seed" else f"seed {row[k]}" for k in KEY]
    parts += [f"{k}={row[k]}" for k in keys if k not in KEY]
    return " / ".join(parts)
