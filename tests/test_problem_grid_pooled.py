"""problem.grid expands into cells (one per value, swept column), and the pooled claim kind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from drocli.claims import evaluate_claims, validate_claim
from drocli.errors import DrocliError
from drocli.run.cells import expand
from drocli.spec import Spec, load_spec

SPEC = {
    "name": "g", "data": {"name": "moo_none"},
    "problem": {"name": "vlmop2", "params": {"dim": 10}, "grid": {"pref": [0.2, 0.5, 0.8]}},
    "solvers": [{"name": "omd_tch", "label": "OMD"}], "seeds": [0, 1],
    "budget": {"epochs": 5},
}


def test_problem_grid_cells():
    cells = expand(Spec.model_validate(SPEC))
    assert len(cells) == 3 * 2
    assert sorted({c.problem_params["pref"] for c in cells}) == [0.2, 0.5, 0.8]
    assert all(c.swept == {"pref": c.problem_params["pref"]} for c in cells)
    assert len({c.id for c in cells}) == 6
    # the same settings without a grid keep the ids of a single-valued spec
    one = dict(SPEC, problem={"name": "vlmop2", "params": {"dim": 10, "pref": 0.5}})
    ids = {c.id for c in expand(Spec.model_validate(one))}
    assert ids <= {c.id for c in cells}


def _records(values: dict[str, list[float]], seeds: int = 2) -> pd.DataFrame:
    rows = []
    for label, vals in values.items():
        for k, v in enumerate(vals):
            for step, val in ((0, 9.0), (1, v)):
                rows.append({"label": label, "cell": f"{label}{k}", "seed": k % seeds,
                             "pref": k // seeds, "step": step, "oracle_calls": step,
                             "metric": "err", "value": val})
    return pd.DataFrame(rows)


def test_pooled_threshold_and_comparison():
    """Point values over all cells; verdicts on per-seed statistics (here 8 seeds x 2
    settings; a verdict needs the exact sign-flip test too, so at least 6 seeds): a
    per-seed max clearly below the number holds, clearly above fails."""
    a = [0.01, 0.02, 0.03, 0.04, 0.012, 0.022, 0.032, 0.042,
         0.011, 0.021, 0.031, 0.041, 0.013, 0.023, 0.033, 0.043]
    b = [0.1, 0.0, 0.2, np.nan, 0.1, 0.0, 0.2, 0.3,
         0.1, 0.0, 0.2, 0.3, 0.1, 0.0, 0.2, 0.3]
    df = _records({"A": a, "B": b}, seeds=8)
    claims = [
        {"id": "a_max", "text": "", "kind": "pooled", "metric": "err", "solver": "A",
         "statistic": "max", "value": 0.1},
        {"id": "a_max_strict", "text": "", "kind": "pooled", "metric": "err", "solver": "A",
         "statistic": "max", "value": -0.05},
        {"id": "a_vs_b", "text": "", "kind": "pooled", "metric": "err", "solver": "A",
         "others": ["B"]},   # mean 0.025 vs B's mean with NaN as worst (inf)
        {"id": "b_min_above", "text": "", "kind": "pooled", "metric": "err", "solver": "B",
         "statistic": "min", "value": 1.0, "direction": "above"},
    ]
    res = {r.id: r for r in evaluate_claims(df, claims, "paper")}
    assert res["a_max"].status == "holds" and res["a_max"].values["A"] == pytest.approx(0.043)
    assert res["a_max_strict"].status == "fails"
    assert res["a_vs_b"].point_status == "holds"
    e = res["a_vs_b"].effects["B"]
    assert e["unpaired"] == 1 and e["n"] == 7       # B's seed 3 diverged: left out, counted
    assert res["b_min_above"].status == "fails"


def test_pooled_mean_per_seed_paired_t():
    """A pooled mean is judged on the per-seed means (6 seeds x 2 settings): clearly
    separated -> holds; overlapping -> inconclusive; clearly the other way -> fails."""
    rng = np.random.default_rng(0)
    a = list(0.1 + 0.01 * rng.standard_normal(12))
    df = _records({"A": a, "B": list(0.2 + 0.01 * rng.standard_normal(12)),
                   "C": list(0.1 + 0.01 * rng.standard_normal(12)),
                   "D": list(0.0 + 0.01 * rng.standard_normal(12))}, seeds=6)
    base = {"text": "", "kind": "pooled", "metric": "err", "solver": "A"}
    res = {r.id: r for r in evaluate_claims(df, [
        {**base, "id": "ab", "others": ["B"]}, {**base, "id": "ac", "others": ["C"]},
        {**base, "id": "ad", "others": ["D"]}], "paper")}
    assert res["ab"].status == "holds" and res["ac"].status == "inconclusive"
    assert res["ad"].status == "fails"
    e = res["ab"].effects["B"]
    assert e["method"] == "paired-t" and e["n"] == 6 and e["lo"] < 0.1 < e["hi"]


def test_others_required_without_value():
    with pytest.raises(DrocliError, match="others"):
        validate_claim({"id": "x", "text": "", "kind": "final_below",
                                  "metric": "m", "solver": "A"})


def test_cases_are_named_overrides_swept_as_setting():
    spec = dict(SPEC, problem={"name": "vlmop2", "params": {"dim": 10}},
                cases={"left": {"problem.params.pref": 0.2},
                       "right": {"problem.params.pref": 0.8,
                                 "solvers.OMD.params.eta_theta": 0.05}})
    cells = expand(Spec.model_validate(spec))
    assert [(c.swept["setting"], c.problem_params["pref"], c.solver_params["eta_theta"])
            for c in cells[::2]] == [("left", 0.2, 0.02), ("right", 0.8, 0.05)]


def test_case_typo_names_the_case(tmp_path):
    bad = dict(SPEC, cases={"x": {"problem.params.prefs": 0.2}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(DrocliError, match=r"cases\.x"):
        load_spec(path)
