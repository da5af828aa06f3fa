"""Claim kind `trend`: the solver's advantage over another label changes across panels in
the stated way ("the gap grows with nu", "the largest improvement at the bottom row").

Per seed and panel, the gap is the signed difference of the two labels' final values (> 0:
the solver better). The trend is judged on per-seed differences of gaps between panels: for
`increasing`, each panel against the next; for `largest_last`, every panel against the
last. Each such difference gets the paired t of `drocli.claims.inference`: the claim holds
when every difference (for every other label) is positive beyond the noise
(intersection-union), and is refuted when any one is negative at the Bonferroni level over
all of them.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.claims.base import ClaimBase, Scalar
from drocli.claims.inference import diverged_guard, family, note, paired_t, signed_difference
from drocli.claims.judge import SkipClaim, _final_stats, effects_text, fmt_values
from drocli.plugins import registry


class Trend(ClaimBase):
    """The solver's gap over each other label, across ordered panels."""

    kind: Literal["trend"]
    across: str = Field(description="the records column whose values are the panels")
    values: list[Scalar] = Field(min_length=2, description="the panels' values, in the "
                                 "order the trend runs")
    shape: Literal["increasing", "largest_last"] = Field(
        "increasing", description="increasing: the gap grows from each panel to the next; "
        "largest_last: the gap at the last panel exceeds the gap at every other")
    direction: Literal["below", "above"] = Field(
        "below", description="better = lower (below) or higher (above) metric values")
    margin: float = Field(0.0, description="each gap difference must exceed this")

    def quantity(self) -> str:
        better = "higher" if self.direction == "above" else "lower"
        return (f"per-seed gap in final {self.metric} by which {self.solver} is {better} than "
                f"each of {', '.join(self.others)}, at {self.across} = "
                + ", ".join(map(str, self.values)))

    def effect_text(self) -> str:
        gap = (f"{self.solver}'s final {self.metric} minus the other's"
               if self.direction == "above" else
               f"the other's final {self.metric} minus {self.solver}'s")
        return (f"effect = mean over seeds of (gap at the later panel minus gap at the "
                f"earlier one), gap = {gap}, in units of {self.metric}; positive: the gap "
                f"grows as claimed; a comparison holds when its whole interval lies above "
                f"{self.margin:g}")

    def test_text(self) -> str:
        how = ("grows from each panel to the next" if self.shape == "increasing" else
               "is larger at the last panel than at every other")
        return (f"{self.quantity()}: the gap {how}"
                + (f" by more than {self.margin:g}" if self.margin > 0 else "")
                + f"; paired t on the per-seed differences of gaps at {self.confidence:.0%},"
                " holding only if it holds for every pair and other, refuted if any one "
                "fails (each such test stricter, so that all together keep "
                f"{self.confidence:.0%})" + self.panels_clause())


def _pairs(claim: Trend) -> list[tuple]:
    v = claim.values
    if claim.shape == "increasing":
        return list(zip(v[:-1], v[1:], strict=True))
    return [(a, v[-1]) for a in v[:-1]]


@registry.claim("trend", params=Trend,
                description="the solver's gap over others changes across panels as stated",
                tiny={"across": "dataset", "values": ["tiny", "tiny2"]})
def trend(claim: Trend, data):
    """Gap (solver better > 0) of final values per seed and panel; judged on the per-seed
    differences of gaps between panels."""
    import pandas as pd

    from drocli.results.aggregate import apply_filter

    where = f"claims[{claim.id}]"
    per: dict = {}
    for v in claim.values:
        sub = {label: apply_filter(rows, {claim.across: v}, where=f"{where}.across")
               for label, rows in data.items()}
        empty = [label for label, rows in sub.items() if rows.empty]
        if empty:
            raise SkipClaim(f"no rows at {claim.across}={v} for {', '.join(empty)}")
        per[v] = _final_stats(sub, claim)
        note(per[v], suffix=f" @ {claim.across}={v}")
    pairs = _pairs(claim)
    k = family(claim, len(pairs) * len(claim.others))
    effects, values, lines, holds = {}, {}, [], True
    for o in claim.others:
        gaps = {}
        for v in claim.values:
            s, b = per[v][claim.solver], per[v][o]
            common = [x for x in s.index if x in set(b.index)]
            gaps[v] = pd.Series(signed_difference(s.loc[common].to_numpy(dtype=float),
                                                  b.loc[common].to_numpy(dtype=float),
                                                  claim.direction), index=common)
            values[f"{o} gap @ {claim.across}={v}"] = float(gaps[v].mean())
        shown = fmt_values([float(gaps[v].mean()) for v in claim.values])
        lines.append(f"gap {o} - {claim.solver} by {claim.across}: "
                     + ", ".join(f"{v}: {t}" for v, t in zip(claim.values, shown,
                                                              strict=True)))
        for a, b in pairs:
            common = [x for x in gaps[a].index if x in set(gaps[b].index)]
            d = gaps[b].loc[common].to_numpy() - gaps[a].loc[common].to_numpy()
            ok = np.isfinite(d)
            e = paired_t(d[ok], threshold=claim.margin, confidence=claim.confidence, k=k)
            e["unpaired"] = int((~ok).sum())
            for v in (a, b):                  # a divergence in either panel guards both sides
                e = diverged_guard(e, per[v][claim.solver], per[v][o], claim.solver, o)
            effects[f"{o}: gap({b}) - gap({a})"] = e
            mean = float(np.mean(d[ok])) if ok.any() else math.nan
            holds &= bool(mean > claim.margin)
    word = "grows along" if claim.shape == "increasing" else "is largest at the last of"
    detail = (f"{'; '.join(lines)} (the gap {word} {claim.across} = "
              f"{', '.join(map(str, claim.values))}; " + effects_text(effects) + ")")
    return holds, detail, values, effects
