"""Claim kind `pooled`: a statistic of the final values pooled over every cell that passes
the filter (all seeds and swept settings), solver better than each other label, or every
listed label better than a number.

The verdict, like every kind's, is judged on one summary per seed: the statistic over that
seed's cells (the settings swept within a seed are one experiment; seeds are the independent
replications), compared by the paired t of `drocli.claims.inference`. The statistic over
all cells is the point comparison shown."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from drocli.claims.base import ClaimBase
from drocli.claims.inference import family, note, paired_effects, paired_t, signed_difference
from drocli.claims.judge import _beats, _relation, _worst, effects_text, fmt_values
from drocli.plugins import registry


class Pooled(ClaimBase):
    """A statistic over the final values of all cells: solver better, or below `value`."""

    others_optional = True

    kind: Literal["pooled"]
    statistic: Literal["mean", "max", "min", "median"] = Field(
        "mean", description="the statistic of the pooled final values")
    value: float | None = Field(None, description="compare every listed label with this "
                                "number instead of with each other")
    margin: float = Field(0.0, description="must win by more than this (negative: may "
                          "lose by up to |margin|)")
    direction: Literal["below", "above"] = Field(
        "below", description="better = lower (below) or higher (above)")

    def quantity(self) -> str:
        return f"{self.statistic} of the final {self.metric} over each seed's cells"

    def effect_text(self) -> str:
        if self.value is None:
            return super().effect_text()
        diff = (f"the label's {self.quantity()} minus {self.value:g}"
                if self.direction == "above" else
                f"{self.value:g} minus the label's {self.quantity()}")
        return (f"effect = mean over seeds of ({diff}), in {self.unit()}; positive favours "
                f"the label; a comparison holds when its whole interval lies above "
                f"{self.margin:g}")

    def test_text(self) -> str:
        if self.value is None:
            return super().test_text()
        better = "higher" if self.direction == "above" else "lower"
        labels = ", ".join(self.labels)
        return (f"{self.quantity()}: each of {labels} {better} than {self.value:g}"
                + (f" by more than {self.margin:g}" if self.margin > 0 else "")
                + f"; paired t on one value per seed at {self.confidence:.0%} for each label,"
                " holding only for all" + self.panels_clause())

    @model_validator(mode="after")
    def _others_or_value(self):
        if not self.others and self.value is None:
            raise ValueError("`others` must list at least one label to compare with "
                             "(or give `value` to compare with a number)")
        return self


@registry.claim("pooled", params=Pooled,
                description="a statistic of all cells' final values: solver better")
def pooled(claim: Pooled, data):
    """A statistic (mean, max, ...) of the final values pooled over every cell that passes
    the filter (all seeds and swept settings, e.g. all preferences): solver below each other
    label, or, with `value`, every listed label below that number."""
    import pandas as pd

    direction = claim.direction
    stat = claim.statistic
    fn = getattr(np, stat)
    op = "<" if direction == "below" else ">"
    vals, per_seed = {}, {}
    for label, rows in data.items():
        order = [c for c in ("cell", "step", "oracle_calls") if c in rows.columns]
        last = rows.sort_values(order, kind="stable").groupby("cell", sort=False).tail(1)
        v = pd.to_numeric(last["value"], errors="coerce").to_numpy(dtype=float)
        v = np.where(np.isfinite(v), v, _worst(direction))
        vals[label] = (fn(v), v.size)
        seeds = last["seed"].to_numpy() if "seed" in last.columns else np.zeros(v.size)
        per_seed[label] = pd.Series({s: fn(v[seeds == s]) for s in pd.unique(seeds)},
                                    dtype=float)
    n_txt = ", ".join(f"{k}: {n}" for k, (_, n) in vals.items())
    tail = f"{stat} over final values of all cells ({n_txt}); effect = per-seed {stat}"
    if claim.value is not None:
        ok = {k: _beats(s, claim.value, direction, claim.margin) for k, (s, _) in
              vals.items()}
        shown = fmt_values([s for s, _ in vals.values()])
        parts = [f"{k} {t} {op if ok[k] else 'NOT ' + op} {claim.value:g}"
                 for (k, t) in zip(vals, shown, strict=True)]
        effects = {}
        note(per_seed)
        for k, s in per_seed.items():      # each label against the number
            d = signed_difference(s.to_numpy(), np.full(len(s), float(claim.value)),
                                  direction)
            e = paired_t(d[np.isfinite(d)], threshold=claim.margin,
                         confidence=claim.confidence, k=family(claim, len(per_seed)))
            effects[k] = {**e, "unpaired": int((~np.isfinite(d)).sum())}
        tail += "; " + effects_text(effects)
        return all(ok.values()), f"{'; '.join(parts)} ({tail})", \
            {k: s for k, (s, _) in vals.items()}, effects
    sv = vals[claim.solver][0]
    others = {o: vals[o][0] for o in claim.others}
    ok = {o: _beats(sv, ov, direction, claim.margin) for o, ov in others.items()}
    if claim.margin:
        tail += f"; margin {claim.margin:g}"
    effects = paired_effects(per_seed, claim.solver, claim.others, direction=direction,
                             margin=claim.margin, confidence=claim.confidence,
                             k=family(claim, len(claim.others)))
    tail += "; " + effects_text(effects)
    return all(ok.values()), f"{_relation(claim.solver, sv, others, ok, op)} ({tail})", \
        {k: s for k, (s, _) in vals.items()}, effects
