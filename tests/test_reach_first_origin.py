"""`reach_first` with `x_from: first` (issue 55): x counted from each run's first record, as
a figure whose axis starts after a stage every method shares (MERO's stage 1) counts it.
Records are built so that each label reaches the level at a known x past a shared offset."""

from __future__ import annotations

import numpy as np
import pandas as pd

from drocli.claims import evaluate_claims, validate_claim

X0 = 1_000_000.0                          # the shared stage's gradients
REACH = {"A": 40.0, "B": 50.0}           # x past X0 at which each falls to 0.5


def _records(seeds=range(8)):
    rows = []
    for label, at in REACH.items():
        for seed in seeds:
            xs = X0 + np.arange(0.0, 201.0, 1.0)
            at_s = at + seed                 # the seeds differ a little, B stays 10 behind
            d = xs - X0
            ys = np.where(d <= at_s, 1.0 - 0.5 * d / at_s, 0.5 - 1e-4 * (d - at_s))
            for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
                rows.append(dict(experiment="e", cell=f"{label}-{seed}", solver=label.lower(),
                                 label=label, dataset="d", seed=seed, step=k, oracle_calls=x,
                                 time_s=x * 1e-6, metric="m", value=y))
    return pd.DataFrame(rows)


def _claim(**kw):
    return validate_claim(dict(id="c", text="A converges faster", kind="reach_first",
                               metric="m", solver="A", others=["B"], level=0.5,
                               factor=0.95, **kw))


def test_a_shared_offset_no_longer_swamps_the_factor():
    rec = _records()
    (from_zero,) = evaluate_claims(rec, [_claim()], "paper")
    (from_first,) = evaluate_claims(rec, [_claim(x_from="first")], "paper")
    # from 0: A must reach by 0.95 x (1e6 + 50), 5e4 before its own 1e6 + 40: refuted
    assert from_zero.status == "fails", from_zero.detail
    # from the first record: 40 + s against 0.95 x (50 + s): holds on every seed
    assert from_first.status == "holds", from_first.detail
    e = from_first.effects["B"]
    truth = np.mean([0.95 * (50 + s) - (40 + s) for s in range(8)])
    assert abs(e["mean"] - truth) < 1e-6


def test_shared_counts_every_label_from_where_all_have_started():
    """A records one checkpoint inside the shared stage (at the start value), B does not:
    counted from each run's first record A is charged that checkpoint; `shared` counts both
    from X0, where every compared run has started."""
    rec = _records()
    early = rec[(rec.label == "A") & (rec.step == 0)].copy()
    early["oracle_calls"] -= 60.0
    early["step"] = -1
    rec = pd.concat([early, rec], ignore_index=True)
    (first,) = evaluate_claims(rec, [_claim(x_from="first")], "paper")
    (shared,) = evaluate_claims(rec, [_claim(x_from="shared")], "paper")
    assert first.status == "fails", first.detail          # A: 100 + s against 0.95 (50 + s)
    assert shared.status == "holds", shared.detail
    truth = np.mean([0.95 * (50 + s) - (40 + s) for s in range(8)])
    assert abs(shared.effects["B"]["mean"] - truth) < 1e-6
