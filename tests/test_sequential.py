"""Group-sequential verdicts keep their error rates when the claims are judged at every look
of a plan (drocli.claims.sequential), under nulls of every shape the per-seed summaries
take: continuous, heavy-tailed, two basins, 0/1 outcomes, a level reached or never (the
summaries of issue 39's lumpy nulls, where the fixed-n t-interval alone gave up to 19 %
false verdicts). The default run is short; `-m slow` runs 1,000 folders per setting.

Each simulated folder holds one final value per (label, seed, panel); the labels are
exchangeable (the same law, a shared seed effect) or the solver is better by exactly the
claim's size, where neither verdict may exceed its rate either."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from drocli.claims import evaluate_claims
from drocli.claims.sequential import nominal_levels, spent

NOMINAL = 0.025
LOOKS = [10, 20, 40]
PLAN = {"looks": LOOKS, "order": list(range(LOOKS[-1]))}
LAWS = ("normal", "heavy", "two_basin", "zero_one", "reach_never")


def bound(reps: int) -> float:
    return NOMINAL + 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / reps)


def draw(rng, law: str, size) -> np.ndarray:
    """Per-seed summaries of one label (before the shared seed effect)."""
    if law == "normal":
        return rng.standard_normal(size)
    if law == "heavy":                       # Student t with 1.5 degrees of freedom
        return rng.standard_t(1.5, size)
    if law == "two_basin":                   # a run ends in one of two basins
        return np.where(rng.random(size) < 0.5, 0.0, 1.0) + 1e-9 * rng.standard_normal(size)
    if law == "zero_one":
        return (rng.random(size) < 0.5).astype(float)
    if law == "reach_never":                 # x at a level, censored at the horizon 1
        x = rng.uniform(0.3, 1.0, size)
        return np.where(rng.random(size) < 0.5, x, 1.0)
    raise ValueError(law)


def folder(rng, law: str, labels: list[str], panels: int, shift: float = 0.0) -> pd.DataFrame:
    """Final values (step 1) of every label, seed and panel; the solver A is lower by
    `shift`; a shared seed effect only for the continuous laws (it cancels in the paired
    differences and would make the lumpy ones continuous)."""
    n = LOOKS[-1]
    rows = []
    for p in range(panels):
        shared = rng.standard_normal(n) if law in ("normal", "heavy") else np.zeros(n)
        for label in labels:
            v = shared + draw(rng, law, n) - (shift if label == "A" else 0.0)
            for s in range(n):
                cell = f"{label}-{s}-{p}"
                rows.append((cell, label, s, p, 0, 9.0))
                rows.append((cell, label, s, p, 1, float(v[s])))
    df = pd.DataFrame(rows, columns=["cell", "label", "seed", "panel", "step", "value"])
    df["oracle_calls"] = df["step"]
    df["metric"] = "m"
    return df


def claims(others: list[str], margin: float = 0.0) -> list[dict]:
    base = {"text": "sim", "kind": "final_below", "metric": "m", "solver": "A",
            "others": others, "margin": margin}
    return [{**base, "id": "one", "filter": {"panel": 0}},
            {**base, "id": "all3", "panels": [{"panel": p} for p in range(3)]},
            {**base, "id": "most", "panels": [{"panel": p} for p in range(3)],
             "panels_needed": 2}]


def rates(law: str, n_others: int, reps: int, seed: int, shift: float = 0.0,
          margin: float = 0.0) -> dict:
    rng = np.random.default_rng([seed, n_others, LAWS.index(law)])
    others = [f"B{j}" for j in range(n_others)]
    cl = claims(others, margin)
    out = {c["id"]: [0, 0, 0.0] for c in cl}       # false holds, false fails, seeds used
    for _ in range(reps):
        df = folder(rng, law, ["A", *others], 3, shift)
        for r in evaluate_claims(df, cl, "paper", plan=PLAN):
            out[r.id][0] += r.status == "holds"
            out[r.id][1] += r.status == "fails"
            out[r.id][2] += r.look["seeds"]
    return {k: (h / reps, f / reps, n / reps) for k, (h, f, n) in out.items()}


def _check(law, n_others, reps, seed, **kw):
    got = rates(law, n_others, reps, seed, **kw)
    over = {k: v[:2] for k, v in got.items() if max(v[:2]) > bound(reps)}
    assert not over, (f"{law}, {n_others} other(s), looks {LOOKS}: false (HOLDS, FAILS) "
                      f"rates above {bound(reps):.3f}: {over}")
    return got


def test_boundaries_spend_exactly_alpha():
    """The nominal levels make the first crossing of a Brownian motion's standardized
    values at the looks happen with probability alpha (simulated, 400,000 paths), each
    look spending at most its increment of the spending function."""
    from scipy.special import ndtri

    t = (0.25, 0.5, 1.0)
    z = np.array([ndtri(1 - p) for p in nominal_levels(t, NOMINAL)])
    rng = np.random.default_rng(0)
    b = np.cumsum(rng.standard_normal((400_000, 3)) * np.sqrt(np.diff((0.0, *t))), axis=1)
    crossed = b / np.sqrt(t) >= z
    first = crossed.any(axis=1).mean()
    assert abs(first - NOMINAL) < 3 * math.sqrt(NOMINAL / 400_000) + 2e-4
    assert nominal_levels(t, NOMINAL)[0] == pytest.approx(spent(0.25, NOMINAL))
    assert list(nominal_levels(t, NOMINAL)) == sorted(nominal_levels(t, NOMINAL))


@pytest.mark.parametrize("law", LAWS)
def test_null_at_every_look(law):
    _check(law, 1, 60, seed=1)


@pytest.mark.parametrize("law", ["normal", "zero_one"])
def test_null_at_every_look_four_others(law):
    _check(law, 4, 40, seed=2)


def test_effect_equal_to_the_size_keeps_both_rates():
    """The solver better by exactly the declared size (margin 0.5): neither HOLDS nor a
    refutation beyond the nominal rate."""
    _check("normal", 1, 60, seed=3, shift=0.5, margin=0.5)


def test_clear_effect_decides_early():
    """1.5 sd better than one other: HOLDS in nearly every folder, mostly at the first
    look (10 seeds)."""
    got = rates("normal", 1, 30, seed=4, shift=1.5 * math.sqrt(2))
    held, _, seeds = got["one"]
    assert held >= 0.95 and seeds < 15


@pytest.mark.slow
@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("n_others", [1, 4])
def test_null_at_every_look_many(law, n_others):
    _check(law, n_others, 1000, seed=5)


@pytest.mark.slow
@pytest.mark.parametrize("law", ["normal", "heavy", "reach_never"])
def test_effect_equal_to_the_size_many(law):
    _check(law, 1, 1000, seed=6, shift=0.5, margin=0.5)


def test_a_looks_rows_are_the_seeds_named_as_text_and_shared_by_claims():
    """rows_of_seeds keeps the rows whose seed, as text, is among the look's (the order of
    the rows and their index kept), and evaluate_claims' per-metric split hands the claims
    of one metric the same rows for the same look instead of copying them per claim."""
    import pandas as pd

    from drocli.claims import _ByMetric, rows_of_seeds

    rows = pd.DataFrame({"seed": [3, 10, 3, 7, 10, 1], "metric": ["m"] * 6,
                         "value": range(6)}, index=[5, 4, 3, 2, 1, 0])
    want = frozenset({"3", "10", "99"})
    got = rows_of_seeds(rows, want)
    assert got.equals(rows[rows["seed"].astype(str).isin(want)])
    assert list(got.index) == [5, 4, 3, 1]
    split = _ByMetric(rows)
    first = split.of_seeds(rows, want)
    assert first.equals(got) and split.of_seeds(rows, frozenset(want)) is first
    assert not split.of_seeds(rows, frozenset({"7"})).equals(first)
