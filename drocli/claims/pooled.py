"""Claim kind `pooled`: a statistic of the final values pooled over every cell that passes
the filter (all seeds and swept settings), solver better than each other label, or every
listed label better than a number.

A max or min is a statement about every recorded run, judged exactly. A mean or median is
judged on a bootstrap over the pooled cells (the runs are the sampling unit), like the other
kinds' intervals."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from drocli import registry
from drocli.claims import ClaimBase
from drocli.claims.judge import _beats, _relation, _worst, effects_text, fmt_values


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
    direction = claim.direction
    stat = claim.statistic
    op = "<" if direction == "below" else ">"
    vals, finals = {}, {}
    for label, rows in data.items():
        order = [c for c in ("cell", "step", "oracle_calls") if c in rows.columns]
        last = rows.sort_values(order, kind="stable").groupby("cell", sort=False).tail(1)
        import pandas as pd

        v = pd.to_numeric(last["value"], errors="coerce").to_numpy(dtype=float)
        v = np.where(np.isfinite(v), v, _worst(direction))
        vals[label] = (getattr(np, stat)(v), v.size)
        finals[label] = v
    n_txt = ", ".join(f"{k}: {n}" for k, (_, n) in vals.items())
    tail = f"{stat} over final values of all cells ({n_txt})"
    if claim.value is not None:
        ok = {k: _beats(s, claim.value, direction, claim.margin) for k, (s, _) in
              vals.items()}
        shown = fmt_values([s for s, _ in vals.values()])
        parts = [f"{k} {t} {op if ok[k] else 'NOT ' + op} {claim.value:g}"
                 for (k, t) in zip(vals, shown, strict=True)]
        effects = _cell_bootstrap(claim, finals, vals)
        if effects:
            tail += "; " + effects_text(effects)
        return all(ok.values()), f"{'; '.join(parts)} ({tail})", \
            {k: s for k, (s, _) in vals.items()}, effects
    sv = vals[claim.solver][0]
    others = {o: vals[o][0] for o in claim.others}
    ok = {o: _beats(sv, ov, direction, claim.margin) for o, ov in others.items()}
    if claim.margin:
        tail += f"; margin {claim.margin:g}"
    effects = _cell_bootstrap(claim, finals, vals)
    if effects:
        tail += "; " + effects_text(effects)
    return all(ok.values()), f"{_relation(claim.solver, sv, others, ok, op)} ({tail})", \
        {k: s for k, (s, _) in vals.items()}, effects


def _cell_bootstrap(claim: Pooled, finals: dict[str, np.ndarray], vals: dict) -> dict:
    """Bootstrap over cells of a pooled mean or median (empty for max / min: exact)."""
    if claim.statistic in ("max", "min"):
        return {}
    from drocli.claims.bootstrap import DRAWS, RNG_SEED, bootstrap_effects

    rng = np.random.default_rng(RNG_SEED)
    fn = getattr(np, claim.statistic)
    draws = {k: fn(v[rng.integers(0, v.size, size=(DRAWS, v.size))], axis=1)
             for k, v in finals.items()}
    point = {k: s for k, (s, _) in vals.items()}
    if claim.value is not None:         # each label against the number
        const = np.full(DRAWS, float(claim.value))
        return {k: bootstrap_effects({k: point[k], "value": claim.value},
                                     {k: draws[k], "value": const}, finals[k].size, k,
                                     ["value"], direction=claim.direction, unit="cell",
                                     margin=claim.margin, confidence=claim.confidence)["value"]
                for k in finals}
    n = min(v.size for v in finals.values())
    return bootstrap_effects(point, draws, n, claim.solver,
                             claim.others, direction=claim.direction, margin=claim.margin,
                             confidence=claim.confidence, unit="cell")
