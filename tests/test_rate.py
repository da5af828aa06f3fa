"""Claim kind `rate` (issue 55): a curve falls at least as fast as x^slope over the run's
late part. Records are built from curves whose log-log slope is known in closed form
(v = C x^p, with a per-seed constant C), so the verdict's truth is known: the measured
slope equals p up to the linear interpolation between checkpoints, which the test bounds
independently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drocli.claims import evaluate_claims, validate_claim
from drocli.claims.rate import slope_of
from drocli.errors import DrocliError
from drocli.results.aggregate import seed_curves

X = np.linspace(100.0, 20000.0, 200)       # checkpoints (x = T/100 ... T)
SEEDS = range(10)


def _records(p: float, wobble: float = 0.0):
    rows = []
    rng = np.random.default_rng(0)
    for seed in SEEDS:
        c = 1.0 + 0.1 * seed
        # a per-seed exponent p + wobble * N(0, 1): the seeds disagree a little about the rate
        q = p + wobble * rng.standard_normal()
        for k, x in enumerate(X):
            rows.append(dict(experiment="e", cell=f"A-{seed}", solver="a", label="A",
                             dataset="d", seed=seed, step=k, oracle_calls=x, time_s=x * 1e-3,
                             metric="gap", value=c * x ** q))
    return pd.DataFrame(rows)


def _claim(**kw):
    base = dict(id="r", text="the gap falls at O(1/sqrt(t))", kind="rate", metric="gap",
                solver="A", slope=-0.5)
    return validate_claim({**base, **kw})


def test_the_slope_is_the_power_law_exponent():
    rec = _records(-0.64)
    for c in seed_curves(rec, x="oracle_calls"):
        # exact at checkpoints; between them the interpolation error of a convex power law
        # on a grid of spacing 100 is below 1e-3 in the slope (checked against the formula)
        assert slope_of(c.x, c.y, (0.5, 1.0)) == pytest.approx(-0.64, abs=1e-3)
        assert slope_of(c.x, c.y, (0.25, 1.0)) == pytest.approx(-0.64, abs=1e-3)


def test_faster_than_the_bound_holds_and_slower_fails():
    (fast,) = evaluate_claims(_records(-0.64, wobble=0.02), [_claim()], "paper")
    (slow,) = evaluate_claims(_records(-0.30, wobble=0.02), [_claim()], "paper")
    assert fast.status == "holds", fast.detail
    assert slow.status == "fails", slow.detail
    e = fast.effects["A"]
    assert e["mean"] == pytest.approx(0.14, abs=0.02) and e["lo"] > 0


def test_a_rate_inside_the_margin_is_not_a_verdict_for_the_claim():
    (r,) = evaluate_claims(_records(-0.52, wobble=0.05), [_claim(margin=0.1)], "paper")
    assert r.status != "holds"


def test_non_positive_values_are_unpaired_not_read():
    rec = _records(-0.6)
    rec.loc[rec.seed == 0, "value"] = -1.0
    (r,) = evaluate_claims(rec, [_claim()], "paper")
    assert r.effects["A"]["unpaired"] == 1 and r.effects["A"]["n"] == len(SEEDS) - 1


@pytest.mark.parametrize("span", [(0.0, 1.0), (0.6, 0.5), (0.5, 1.2)])
def test_a_span_outside_the_run_is_refused(span):
    with pytest.raises(DrocliError, match="span is two fractions"):
        _claim(span=span)
