"""Claim kind `rate`: a curve falls at least at a stated rate, the reading of a theorem's
"converges at the order of O(x^slope)" (issue 55).

A rate theorem is an upper bound with an unknown constant, so no single value can test it,
and a fall between two fixed points tests it only if the curve sits on its bound at the
first point. What a bound of order x^slope does forbid is a curve that falls slower than
x^slope over the run's late part: per seed, the log-log slope of the metric between the
fractions `span` of the run's last x,

    s = log(v(b X) / v(a X)) / log(b / a),

must lie at or below `slope`. Values are read on each seed's curve linearly between its
checkpoints, as the figure draws it. The effect is `slope - s` per seed, judged by the
paired t of drocli.claims.inference against `margin` (V): positive favours the claim.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from drocli.claims.base import ClaimBase
from drocli.claims.inference import family, note, paired_t
from drocli.claims.judge import effects_text, fmt_values
from drocli.plugins import registry


class Rate(ClaimBase):
    """Each listed label's curve falls at least as fast as x^slope over the run's late part."""

    others_optional = True

    kind: Literal["rate"]
    slope: float = Field(lt=0, description="the rate's exponent: -0.5 for O(1/sqrt(x)), -1 "
                         "for O(1/x)")
    span: tuple[float, float] = Field((0.5, 1.0), description="the two points, as fractions "
                                      "of each run's last x, between which the slope is read")
    x: str = Field("oracle_calls", description="the records column the rate runs along "
                   "(oracle_calls or step)")
    margin: float = Field(0.0, description="the slope must lie below `slope` by more than "
                          "this (negative: may lie above it by up to |margin|)")

    @model_validator(mode="after")
    def _span(self):
        a, b = self.span
        if not 0 < a < b <= 1:
            raise ValueError("span is two fractions of the run, 0 < a < b <= 1")
        return self

    def quantity(self) -> str:
        a, b = self.span
        return (f"log-log slope of {self.metric} along {self.x} between {a:g} and {b:g} of "
                "the run")

    def unit(self) -> str:
        return "log-log slope"

    def effect_text(self) -> str:
        return (f"effect = mean over seeds of ({self.slope:g} minus the label's "
                f"{self.quantity()}); positive: it falls faster than x^{self.slope:g}; a "
                f"label holds when its whole interval lies above {self.margin:g}")

    def test_text(self) -> str:
        labels = ", ".join(self.labels)
        return (f"{self.quantity()}: for each of {labels}, at most {self.slope:g}"
                + (f" by more than {self.margin:g}" if self.margin > 0 else "")
                + f"; paired t on one slope per seed at {self.confidence:.0%}, holding only "
                "for all" + self.panels_clause())


def slope_of(xs: np.ndarray, ys: np.ndarray, span: tuple[float, float]) -> float:
    """One seed curve's log-log slope between the fractions `span` of its last x (x sorted,
    as drocli.results.aggregate.seed_curves gives it); nan when a value there is not
    positive and finite."""
    if len(xs) < 2:
        return float("nan")
    a, b = span[0] * xs[-1], span[1] * xs[-1]
    if a < xs[0] or a <= 0:
        return float("nan")
    va, vb = np.interp([a, b], xs, ys)
    if not (np.isfinite(va) and np.isfinite(vb) and va > 0 and vb > 0):
        return float("nan")
    return float(np.log(vb / va) / np.log(b / a))


@registry.claim("rate", params=Rate,
                description="a curve falls at least as fast as x^slope late in the run",
                tiny={"slope": -0.5})
def rate(claim: Rate, data):
    """Per seed, the log-log slope of each listed label's curve between the fractions `span`
    of its run: at most `slope` (minus `margin`), judged over the seeds."""
    import pandas as pd

    from drocli.results.aggregate import seed_curves

    slopes, effects, shown = {}, {}, {}
    for label, rows in data.items():
        curves = seed_curves(rows, x=claim.x, what=f"claims[{claim.id}] ({label})")
        slopes[label] = pd.Series({c.seed: slope_of(c.x, c.y, claim.span) for c in curves},
                                  dtype=float)
    note(slopes)
    k = family(claim, len(slopes))
    for label, s in slopes.items():
        d = claim.slope - s.to_numpy()
        fin = np.isfinite(d)
        e = paired_t(d[fin], threshold=claim.margin, confidence=claim.confidence, k=k)
        effects[label] = {**e, "unpaired": int((~fin).sum())}
        shown[label] = float(np.nanmean(s.to_numpy())) if fin.any() else float("nan")
    ok = {lab: np.isfinite(v) and claim.slope - v > claim.margin for lab, v in shown.items()}
    text = "; ".join(f"{lab} slope {t} {'<=' if ok[lab] else 'NOT <='} {claim.slope:g}"
                     for lab, t in zip(shown, fmt_values(list(shown.values())), strict=True))
    return all(ok.values()), f"{text} ({claim.quantity()}; {effects_text(effects)})", \
        shown, effects
