"""Claims judged as the runs stand at one point of another axis (`until`, issue 55), on
records whose truth is known from their construction: the value at the point is computed
independently with numpy's interpolation, and the claim's verdict follows the axis."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from drocli.claims import evaluate_claims, validate_claim
from tests.conftest import TINY_SPEC, call

OC = np.arange(0, 904, 7.0)          # oracle calls at each checkpoint (not multiples of 3)
RATE = {"A": 3.0, "B": 1.0}          # oracle calls per iteration
SLOPE = {"A": 0.01, "B": 0.008}      # gap = 10 - slope * iteration + offset
SEEDS = range(6)


def _offset(label, seed):
    return (0.013 if label == "A" else 0.021) * seed


def _records():
    rows = []
    for label in ("A", "B"):
        for seed in SEEDS:
            it = OC / RATE[label]
            gap = 10.0 - SLOPE[label] * it + _offset(label, seed)
            for k, (oc, i, g) in enumerate(zip(OC, it, gap, strict=True)):
                base = dict(experiment="e", cell=f"{label}-{seed}", solver=label.lower(),
                            label=label, dataset="d", seed=seed, step=k, oracle_calls=oc,
                            time_s=oc * 1e-3)
                rows.append({**base, "metric": "gap", "value": g})
                rows.append({**base, "metric": "iteration", "value": i})
    return pd.DataFrame(rows)


def _claim(**kw):
    base = dict(id="c", text="A ends below B", kind="final_below", metric="gap", solver="A",
                others=["B"])
    return validate_claim({**base, **kw})


def _truth(label, seed, at):
    """The gap at iteration `at`, by numpy's own interpolation of the recorded checkpoints."""
    it = OC / RATE[label]
    return float(np.interp(at, it, 10.0 - SLOPE[label] * it + _offset(label, seed)))


def test_final_values_are_taken_at_the_point_of_the_axis():
    rec = _records()
    (plain,) = evaluate_claims(rec, [_claim()], "paper")
    (at,) = evaluate_claims(rec, [_claim(until={"x": "iteration", "at": 250})], "paper")
    # at the shared budget B has run 3x the iterations and ends far below A: refuted
    assert plain.status == "fails"
    # at iteration 250 A is 0.5 below B on every seed: holds
    assert at.status == "holds", at.detail
    for label in ("A", "B"):
        want = np.mean([_truth(label, s, 250) for s in SEEDS])
        assert at.values[label] == pytest.approx(want, abs=1e-12)
    (eff,) = at.effects.values()
    assert eff["mean"] == pytest.approx(
        np.mean([_truth("B", s, 250) - _truth("A", s, 250) for s in SEEDS]), abs=1e-12)


def test_reach_first_runs_along_a_recorded_metric_up_to_the_point():
    rec = _records()
    c = validate_claim(dict(id="r", text="A reaches 8 first", kind="reach_first",
                            metric="gap", solver="A", others=["B"], level=8.0, x="iteration",
                            until={"x": "iteration", "at": 280}))
    (r,) = evaluate_claims(rec, [c], "paper")
    assert r.status == "holds", r.detail

    def first(label, seed):           # linear gap: where it crosses 8, in iterations
        return (10.0 + _offset(label, seed) - 8.0) / SLOPE[label]

    (eff,) = r.effects.values()
    want = np.mean([first("B", s) - first("A", s) for s in SEEDS])
    assert eff["mean"] == pytest.approx(want, rel=1e-9)


def test_a_level_not_reached_by_the_point_is_censored_there():
    rec = _records()
    # B crosses 7.9 after iteration 262: censored at the point 250, not at B's own end
    c = validate_claim(dict(id="r", text="A reaches 7.9 first", kind="reach_first",
                            metric="gap", solver="A", others=["B"], level=7.9,
                            x="iteration", until={"x": "iteration", "at": 250}))
    (r,) = evaluate_claims(rec, [c], "paper")
    assert r.values["B"] == np.inf or "never" in r.detail
    (eff,) = r.effects.values()
    want = np.mean([250 - (10.0 + _offset("A", s) - 7.9) / SLOPE["A"] for s in SEEDS])
    assert eff["mean"] == pytest.approx(want, rel=1e-9)


def test_a_run_that_ends_before_the_point_skips_the_claim_and_says_so():
    (r,) = evaluate_claims(_records(), [_claim(until={"x": "iteration", "at": 400})], "paper")
    assert r.status == "skipped"
    assert "end before iteration = 400" in r.detail and "raise the budget" in r.detail


def test_an_axis_that_is_neither_column_nor_metric_is_a_spec_error():
    from drocli.errors import DrocliError

    with pytest.raises(DrocliError, match="neither a records column nor a recorded metric"):
        evaluate_claims(_records(), [_claim(until={"x": "epoch", "at": 5})], "paper")


def test_until_is_part_of_the_claims_registration():
    from drocli.claims.registration import claim_hash

    assert claim_hash(_claim()) != claim_hash(_claim(until={"x": "iteration", "at": 250}))


def _spec(tmp_path, ablates) -> str:
    raw = yaml.safe_load(TINY_SPEC)
    extra = dict(raw["claims"][0], id="again", ablates=ablates)
    raw["claims"].append(extra)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def test_an_ablation_naming_no_claim_is_refused_on_load(tmp_path, capsys):
    out = tmp_path / "out"
    code = call("run", _spec(tmp_path, {"claim": "below_strat", "changes": "budget.epochs 3"}),
                "--out", out, "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert "claims[1].ablates.claim" in err and "below_start" in err, err


def test_an_ablation_keeps_its_link_in_check_json(tmp_path, capsys):
    import json

    out = tmp_path / "out"
    ablates = {"claim": "below_start", "changes": "the same claim again, as a test"}
    assert call("run", _spec(tmp_path, ablates), "--out", out, "-q") in (0, 1)
    capsys.readouterr()
    call("check", out, "--json")
    got = json.loads(capsys.readouterr().out)
    claims = got["claims"] if isinstance(got, dict) else got
    again = next(c for c in claims if c["id"] == "again")
    assert again["ablates"] == ablates
    assert "ablates" not in next(c for c in claims if c["id"] == "below_start")
