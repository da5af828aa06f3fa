"""Looks that can never decide a claim (drocli.claims.decidable, issue 55): named from the
plan alone, and checked against the verdict code itself on the clearest possible data."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from tests.conftest import TINY_SPEC, call


def _claim(others: int, kind: str = "final_below"):
    from drocli.claims import validate_claim

    labels = [f"B{i}" for i in range(others)]
    return validate_claim({"id": "c", "text": "t", "kind": kind, "metric": "m",
                           "solver": "A", "others": labels})


@pytest.mark.parametrize("looks", [[3, 6, 9, 12], [10, 20, 40], [10, 20, 30]])
@pytest.mark.parametrize("others", [1, 3, 4])
def test_named_looks_are_those_the_verdict_code_cannot_decide(looks, others):
    """At each look: every difference far above the threshold (the strongest evidence a
    look can have) holds exactly where the hold side is not named, and every one far below
    is refuted exactly where the refutation side is not named."""
    from drocli.claims.decidable import undecidable_looks
    from drocli.claims.inference import paired_t
    from drocli.claims.sequential import at_look

    claim = _claim(others)
    named = {j: which for j, _, which in undecidable_looks(claim, looks)}
    rng = np.random.default_rng(0)
    for j, n in enumerate(looks):
        d = 10 + rng.normal(0, 0.1, n)
        with at_look(looks, j):
            up = paired_t(d, k=others)["verdict"]
            down = paired_t(-d, k=others)["verdict"]
        blocked = named.get(j + 1)
        assert (up == "holds") == (blocked not in ("holds", "either side")), (j, n, up)
        assert (down == "not_reproduced") == (blocked not in ("refutes", "either side")), \
            (j, n, down)


def test_the_spread_pairs_its_seeds():
    from drocli.claims.decidable import undecidable_looks

    spread = _claim(1, "spread_below")
    assert [(j, w) for j, _, w in undecidable_looks(spread, [10, 20, 40])] == \
        [(1, "either side")]          # 5 pairs: 2^-5 above every level at look 1
    assert undecidable_looks(_claim(1), [10, 20, 40]) == []


def test_dry_run_and_check_plan_say_so(tmp_path, capsys):
    raw = yaml.safe_load(TINY_SPEC)
    raw["seeds"] = [0, 1, 2]
    raw["sequential"] = {"looks": [3, 6, 9, 12], "pool": "3-11"}
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = tmp_path / "out"
    assert call("run", spec, "--out", out, "--dry-run") == 0
    err = capsys.readouterr().err
    assert "plan: below_start: look 1 (3 seeds): cannot decide; look 2 (6 seeds)" in err
    assert call("run", spec, "--out", out, "-q") == 0
    capsys.readouterr()
    call("check", out, "--plan", "--no-cache")
    assert "PLAN     below_start: look 1 (3 seeds): cannot decide" in capsys.readouterr().out


def test_comparisons_no_seed_count_can_decide_are_counted_apart():
    """0 against 0 and a level neither label reaches read 'cannot decide: ...', and such a
    claim is CANNOT DECIDE in the summary, not INCONCLUSIVE (nor NOT REPRODUCED)."""
    from drocli.claims import evaluate_claims, format_result, summary_counts
    from drocli.claims.inference import CANNOT_DECIDE, paired_t
    from tests.test_verdict_null import _reach_records

    e = paired_t(np.zeros(12))
    assert e["verdict"] == "inconclusive" and e["why"].startswith(CANNOT_DECIDE)
    assert not str(paired_t(np.full(12, 0.5), threshold=0.2).get("why", "")).startswith(
        CANNOT_DECIDE)                                          # a clear 0.5 > 0.2 holds
    never = _reach_records({"A": [None] * 8, "B": [None] * 8})
    claim = {"id": "r", "text": "t", "metric": "m", "solver": "A", "others": ["B"],
             "kind": "reach_first", "level": 0.5, "factor": 0.8}
    (r,) = evaluate_claims(never, [claim], "paper")
    assert r.status == "inconclusive" and r.cannot_decide
    assert "neither A nor B reaches the level" in r.effects["B"]["why"]
    assert format_result(r).startswith("CANNOT DECIDE  r:")
    counts = summary_counts([r])
    assert counts["cannot_decide"] == 1 and counts["inconclusive"] == 0
