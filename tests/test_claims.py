"""Claims on hand-built records whose truth is known from their construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from drocli.claims import ClaimBase, ClaimResult, evaluate_claims, format_result, validate_claim
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.results.reference import compare_reference

X0 = np.linspace(0, 100, 11)                              # seed 0 grid
X1 = np.array([0, 7, 19, 26, 38, 44, 57, 63, 78, 89, 100.0])   # seed 1: another grid


def records(curves, metric="m", dataset="d", time_rate=None, **extra):
    """Rows from {label: {seed: (x, y)}}; time_s = x * time_rate[label] (default 1e-3)."""
    rows = []
    for label, by_seed in curves.items():
        rate = (time_rate or {}).get(label, 1e-3)
        for seed, (xs, ys) in by_seed.items():
            for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
                rows.append(dict(experiment="e", cell=f"{label}-{dataset}-{seed}-{extra}",
                                 solver=label.lower(), label=label, dataset=dataset, seed=seed,
                                 step=k, oracle_calls=float(x), time_s=float(x) * rate,
                                 metric=metric, value=float(y), **extra))
    return pd.DataFrame(rows)


def expo(c, b=0.05, a=0.1):
    """a exp(-b x) + c on both seed grids, seed s shifted by 0.001 s."""
    return {s: (x, a * np.exp(-b * x) + c + 0.001 * s) for s, x in enumerate((X0, X1))}


def claim(**kw):
    base = dict(id="c1", text="ALEG ends lowest", kind="final_below", metric="m",
                solver="ALEG", others=["SMD", "MPVR"])
    base.update(kw)
    return validate_claim(base)


def one(rec, profile="paper", **kw):
    (r,) = evaluate_claims(rec, [claim(**kw)], profile)
    return r


ORDERED = records({"ALEG": expo(0.60), "SMD": expo(0.62), "MPVR": expo(0.61)})


# --- final_below ----------------------------------------------------------------------------

def test_final_below_holds_per_seed_with_numbers():
    r = one(ORDERED)
    assert r.point_status == "holds"
    final = 0.1 * np.exp(-5)
    assert r.values["ALEG"] == pytest.approx(0.60 + final + 0.0005)
    assert r.detail.startswith("ALEG 0.6012 < SMD 0.6212, MPVR 0.6112")
    assert "seeds 0,1" in r.detail and "holds for each seed" in r.detail


def test_final_below_fails_and_reproduced_false_statuses():
    r = one(ORDERED, solver="SMD", others=["ALEG", "MPVR"])
    assert r.point_status == "fails" and "NOT < ALEG" in r.detail
    assert one(ORDERED, solver="SMD", others=["ALEG"], reproduced=False).point_status == \
        "not_reproduced"
    assert one(ORDERED, reproduced=False).point_status == "unexpectedly_holds"


def test_reproduced_as_profile_list():
    # reproduced on the listed profiles only: a failure elsewhere is the expected negative
    failing = dict(solver="SMD", others=["ALEG"], reproduced=["paper"])
    assert one(ORDERED, profile="paper", **failing).point_status == "fails"
    assert one(ORDERED, profile="quick", **failing).point_status == "not_reproduced"
    assert one(ORDERED, profile="quick", reproduced=["paper"]).point_status == "unexpectedly_holds"
    assert one(ORDERED, profile="paper", reproduced=["paper"]).point_status == "holds"


def test_final_below_per_seed_vs_seed_means():
    curves = {"ALEG": expo(0.60), "SMD": expo(0.62), "MPVR": expo(0.61)}
    x, y = curves["ALEG"][1]
    curves["ALEG"][1] = (x, y + 0.015)      # seed 1: ALEG ends above MPVR, means still below
    rec = records(curves)
    r = one(rec, per_seed=True)
    assert r.point_status == "fails" and "seed 1: ALEG" in r.detail and "MPVR" in r.detail
    r = one(rec, per_seed=False)
    assert r.point_status == "holds" and "seed means" in r.detail


def test_final_below_margin_and_direction():
    assert one(ORDERED, margin=0.005).point_status == "holds"
    assert one(ORDERED, margin=0.015).point_status == "fails"      # beats MPVR by 0.01 only
    assert one(ORDERED, direction="above").point_status == "fails"
    assert one(ORDERED, solver="SMD", others=["ALEG", "MPVR"],
               direction="above").point_status == "holds"


def test_diverged_values_are_worst():
    curves = {"ALEG": expo(0.60), "SMD": expo(0.62), "MPVR": expo(0.61)}
    x, y = curves["SMD"][0]
    curves["SMD"][0] = (x[:6], np.r_[y[:5], np.nan])    # SMD seed 0 diverges, stops early
    rec = records(curves)
    assert one(rec).point_status == "holds"
    r = one(rec, solver="SMD", others=["ALEG"])
    assert r.point_status == "fails" and "nan" in r.detail
    assert one(rec, solver="SMD", others=["ALEG"], per_seed=False).point_status == "fails"


# --- reach_first ------------------------------------------------------------------------------

LINES = records({
    "ALEG": {0: (X0, 1 - X0 / 100), 1: (X1, 1 - X1 / 100)},     # 0.5 at x=50
    "SMD": {0: (X0, 1 - X0 / 200), 1: (X1, 1 - X1 / 200)},      # 0.5 at x=100
    "MPVR": {0: (X0, 1 - X0 / 1000), 1: (X1, 1 - X1 / 1000)},   # never below 0.9
})


@pytest.mark.parametrize("per_seed", [False, True])
def test_reach_first_absolute_level(per_seed):
    r = one(LINES, kind="reach_first", level=0.5, per_seed=per_seed)
    assert r.point_status == "holds", r.detail
    assert r.values["ALEG"] == pytest.approx(50)
    assert r.values["SMD"] == pytest.approx(100)
    assert r.values["MPVR"] == np.inf
    assert "ALEG 50 < SMD 100, MPVR never" in r.detail


def test_reach_first_level_fraction():
    # start 1, best final (ALEG) 0: level = 1 - 0.3 * (1 - 0) = 0.7 -> ALEG 30, SMD 60
    r = one(LINES, kind="reach_first", level_fraction=0.3)
    assert r.point_status == "holds"
    assert r.values["ALEG"] == pytest.approx(30) and r.values["SMD"] == pytest.approx(60)
    assert "m <= 0.7 (= start 1" in r.detail


def test_reach_first_solver_never_reaches_fails():
    r = one(LINES, kind="reach_first", level=0.5, solver="MPVR", others=["SMD"])
    assert r.point_status == "fails" and "never reaches" in r.detail


def test_reach_first_curve_starting_after_stage1_cost():
    xs = X0 + 50                            # ALEG pays 50 calls of stage 1 first
    rec = records({"ALEG": {0: (xs, 1 - X0 / 50)}, "SMD": {0: (X0, 1 - X0 / 200)},
                   "TSA": {0: (X0, 1 - X0 / 100)}})
    r = one(rec, kind="reach_first", level=0.5, others=["SMD"])
    assert r.point_status == "holds" and r.values["ALEG"] == pytest.approx(75)
    assert one(rec, kind="reach_first", level=0.5, others=["TSA"]).point_status == "fails"


def test_reach_first_direction_above():
    rec = records({"ALEG": {0: (X0, X0 / 100)}, "SMD": {0: (X0, X0 / 200)}})
    r = one(rec, kind="reach_first", level=0.4, direction="above", others=["SMD"])
    assert r.point_status == "holds" and r.values["ALEG"] == pytest.approx(40)


# --- best_below, smoother, wall time -------------------------------------------------------------

def test_best_below_vs_final_below():
    dip = 0.3 + 0.2 * ((X0 - 50) / 50) ** 2        # min 0.3 at x=50, ends at 0.5
    rec = records({"ALEG": {0: (X0, dip)}, "SMD": {0: (X0, 1 - 0.006 * X0)}})   # ends 0.4
    assert one(rec, others=["SMD"]).point_status == "fails"
    r = one(rec, kind="best_below", others=["SMD"])
    assert r.point_status == "holds" and r.values["ALEG"] == pytest.approx(0.3)
    assert r.values["SMD"] == pytest.approx(0.4)


def test_smoother_noisy_vs_smooth():
    x = np.linspace(0, 100, 51)
    smooth = 0.1 * np.exp(-0.05 * x) + 0.6
    zigzag = smooth + 0.01 * (-1) ** np.arange(51)
    rec = records({"MPVR": {s: (x, smooth) for s in (0, 1)},
                   "SMD": {s: (x, zigzag + 0.001 * s) for s in (0, 1)}})
    r = one(rec, kind="smoother", solver="MPVR", others=["SMD"])
    assert r.point_status == "holds"
    window = x >= 20
    assert r.values["MPVR"] == pytest.approx(smooth[window][0] - smooth[window][-1])
    assert one(rec, kind="smoother", solver="SMD", others=["MPVR"]).point_status == "fails"


def test_smoother_after_fraction_ignores_a_noisy_start():
    x = np.linspace(0, 100, 51)
    early_noise = np.where(x < 10, 0.05 * (-1) ** np.arange(51), 0.0)
    rec = records({"A": {0: (x, 0.5 + early_noise)}, "B": {0: (x, 0.5 - 0.001 * x)}})
    assert one(rec, kind="smoother", solver="A", others=["B"]).point_status == "holds"
    assert one(rec, kind="smoother", solver="A", others=["B"],
               after_fraction=0.0).point_status == "fails"
    assert one(rec, kind="smoother", solver="A", others=["B"], after_fraction=0.0,
               measure="excess").point_status == "fails"


def test_wall_time_below_and_factor():
    rec = records({"ALEG": expo(0.6), "SMD": expo(0.62)}, time_rate={"ALEG": 1.0, "SMD": 3.0})
    c = dict(kind="wall_time_below", metric=None, others=["SMD"])
    r = one(rec, **c)
    assert r.point_status == "holds" and "ALEG 100 s < SMD 300 s" in r.detail
    assert one(rec, factor=0.5, **c).point_status == "holds"
    assert one(rec, factor=0.2, **c).point_status == "fails"


# --- skipping, errors, validation ---------------------------------------------------------------

def test_skipped_profile_and_missing_labels():
    r = one(ORDERED, profiles=["paper"], profile="smoke")
    assert r.point_status == "skipped" and "smoke" in r.detail
    r = one(ORDERED, others=["SMD", "AL-SVRE"])
    assert r.point_status == "skipped" and "AL-SVRE" in r.detail and "present: ALEG" in r.detail
    assert not r.failed


def test_unknown_metric_and_filter_column_are_errors():
    with pytest.raises(DrocliError, match="max_risk"):
        one(ORDERED, metric="max_risk")
    with pytest.raises(DrocliError, match="datset"):
        one(ORDERED, filter={"datset": "d"})


def test_filter_selects_dataset():
    rec = pd.concat([records({"ALEG": expo(0.6), "SMD": expo(0.62)}, dataset="syn"),
                     records({"ALEG": expo(0.7), "SMD": expo(0.62)}, dataset="cifar")])
    with pytest.raises(DrocliError, match="dataset"):
        one(rec, others=["SMD"])
    assert one(rec, others=["SMD"], filter={"dataset": "syn"}).point_status == "holds"
    assert one(rec, others=["SMD"], filter={"dataset": "cifar"}).point_status == "fails"
    r = one(rec, others=["SMD"], filter={"dataset": "other"})
    assert r.point_status == "skipped"


def test_spec_validation():
    with pytest.raises(DrocliError, match="final_below"):
        claim(kind="final_belo")
    with pytest.raises(DrocliError, match="level"):
        claim(level=0.5)                                  # not a final_below field
    with pytest.raises(DrocliError, match="exactly one"):
        claim(kind="reach_first")
    with pytest.raises(DrocliError, match="exactly one"):
        claim(kind="reach_first", level=0.5, level_fraction=0.5)
    with pytest.raises(DrocliError):
        claim(margn=0.1)
    with pytest.raises(DrocliError, match="also listed"):
        claim(others=["ALEG"])
    with pytest.raises(DrocliError, match="metric"):
        claim(metric=None)
    with pytest.raises(DrocliError):
        claim(kind="reach_first", level_fraction=1.5)
    with pytest.raises(DrocliError, match="unique"):
        evaluate_claims(ORDERED, [claim(), claim()], "paper")


def test_registry_accepts_new_kinds():
    from typing import Literal

    class Always(ClaimBase):
        kind: Literal["always"]

    @registry.claim("always", params=Always)
    def always(c, data):
        """Always holds."""
        return True, "ok", {}

    try:
        assert one(ORDERED, kind="always").point_status == "holds"
    finally:
        del registry._REGISTRY["claim"]["always"]


def test_format_result():
    r = ClaimResult("x", "t", "final_below", "holds", "A 1 < B 2")
    assert format_result(r) == "HOLDS  x: A 1 < B 2"
    r.status = "not_reproduced"
    assert format_result(r).startswith("NOT REPRODUCED (expected)  x:")
    r.status = "fails"
    assert format_result(r).startswith("FAILS  x:")
    two_seeds = evaluate_claims(ORDERED, [claim()], "p")[0].to_dict()
    assert two_seeds["point_status"] == "holds"
    assert two_seeds["status"] == "inconclusive"       # 2 seeds: too few for a verdict


# --- reference comparison -------------------------------------------------------------------------

def test_compare_reference_identical_and_within_tolerance():
    assert compare_reference(ORDERED, ORDERED.copy()) == []
    ref = ORDERED.copy()
    ref["value"] *= 1 + 1e-6
    assert compare_reference(ORDERED, ref) == []


def test_compare_reference_reports_mismatch_and_missing_keys():
    ref = ORDERED.copy()
    last = (ref["label"] == "SMD") & (ref["seed"] == 1) & (ref["step"] == 10)
    ref.loc[last, "value"] += 0.01
    lines = compare_reference(ORDERED, ref)
    assert len(lines) == 1 and "SMD / d / seed 1 / m" in lines[0] and "rel diff" in lines[0]
    cur = ORDERED[~((ORDERED["label"] == "MPVR") & (ORDERED["seed"] == 0))]
    lines = compare_reference(cur, ORDERED)
    assert lines == [lines[0]] and lines[0].startswith("missing from records: MPVR / d / seed 0")
    lines = compare_reference(ORDERED, cur)
    assert len(lines) == 1 and lines[0].startswith("not in reference: MPVR")


def test_compare_reference_nan_and_swept_parameter():
    rec = pd.concat([records({"A": expo(0.6)}, gamma_w=0.01),
                     records({"A": expo(0.7)}, gamma_w=0.1)])
    assert compare_reference(rec, rec.copy()) == []
    ref = rec.copy()
    ref.loc[(ref["gamma_w"] == 0.1) & (ref["step"] == 10) & (ref["seed"] == 0), "value"] = np.nan
    lines = compare_reference(rec, ref)
    assert len(lines) == 1 and "gamma_w=0.1" in lines[0] and "NaN" in lines[0]
    assert compare_reference(ref, ref.copy()) == []


def test_paired_effects_t_interval_and_verdicts():
    """Paired differences over common seeds, signed toward the claim, with the two-sided
    t-interval (checked against the textbook numbers) and the three-way verdict."""
    import math

    import pandas as pd

    from drocli.claims.judge import overall, paired_effects

    solver = pd.Series([1.0, 2.0, 3.0, 9.0], index=[0, 1, 2, 3])
    other = pd.Series([2.0, 4.0, 6.0], index=[0, 1, 2])           # seed 3 unpaired
    e = paired_effects({"A": solver, "B": other}, "A", ["B"])["B"]
    # d = [1, 2, 3]: mean 2, sd 1; with 2 degrees of freedom the t CDF is
    # 1/2 + t / (2 sqrt(2 + t^2)), so t(0.975) solves t / sqrt(2 + t^2) = 0.95
    from drocli.claims.inference import critical_value, t_quantile

    t975 = math.sqrt(2 * 0.95 ** 2 / (1 - 0.95 ** 2))
    assert t_quantile(2, 0.975) == pytest.approx(t975, rel=1e-12)
    c = critical_value(3, 0.975)          # the robust multiplier: never below Student's
    assert c >= t975
    half = c / math.sqrt(3)
    assert e["n"] == 3 and e["mean"] == pytest.approx(2.0)
    assert (e["lo"], e["hi"]) == pytest.approx((2 - half, 2 + half), rel=1e-12)
    assert e["verdict"] == "inconclusive"                          # 2 - 2.48 < 0
    tight = pd.Series([2.0, 3.0, 4.01], index=[0, 1, 2])            # d = [1, 1, 1.01]
    e = paired_effects({"A": solver, "B": tight}, "A", ["B"])["B"]
    assert e["lo"] > 0 and e["verdict"] == "inconclusive"   # the t-interval alone would hold,
    assert e["p_signflip"] == 1 / 8                         # but 3 signs give p >= 1/8
    # six seeds: the same tight differences decide both ways
    six = pd.Series([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    tight6 = six + 1 + 0.01 * np.arange(6)
    assert paired_effects({"A": six, "B": tight6}, "A", ["B"])["B"]["verdict"] == "holds"
    worse = six - 1 + 0.01 * np.arange(6)
    assert paired_effects({"A": six, "B": worse}, "A", ["B"])["B"]["verdict"] == \
        "not_reproduced"
    # above, with a threshold from the paper: the interval must clear the margin
    up = paired_effects({"A": tight6, "B": six}, "A", ["B"], direction="above", margin=0.5)
    assert up["B"]["verdict"] == "holds"
    up = paired_effects({"A": tight6, "B": six}, "A", ["B"], direction="above", margin=1.5)
    assert up["B"]["verdict"] == "not_reproduced"
    nan = pd.Series([2.0, float("nan"), 4.01], index=[0, 1, 2])
    e = paired_effects({"A": solver, "B": nan}, "A", ["B"])["B"]
    assert e["n"] == 2 and e["unpaired"] == 1
    one = paired_effects({"A": solver.iloc[:1], "B": other.iloc[:1]}, "A", ["B"])["B"]
    assert one["lo"] is None and one["verdict"] == "inconclusive"   # one seed: no interval
    assert overall({"B": {"verdict": "holds"}, "C": {"verdict": "inconclusive"}}) == \
        "inconclusive"
    assert overall({"B": {"verdict": "holds"}, "C": {"verdict": "not_reproduced"}}) == \
        "not_reproduced"


def _seed_records(values: dict[str, list[float]]) -> pd.DataFrame:
    """One final value per (label, seed): a two-checkpoint curve ending at it."""
    rows = []
    for label, vals in values.items():
        for seed, v in enumerate(vals):
            for step, val in ((0, 10.0), (1, v)):
                rows.append({"label": label, "cell": f"{label}-{seed}", "seed": seed,
                             "step": step, "oracle_calls": 10 * step, "metric": "m",
                             "value": val})
    return pd.DataFrame(rows)


def test_statistical_status_paired_t_matches_scipy():
    """The status follows the paired t-interval (checked against scipy's one-sample t
    test on the differences; with more than 30 seeds the robust multiplier is Student's):
    a margin inside the noise is inconclusive, never holds."""
    from scipy import stats

    rng = np.random.default_rng(1)
    a = 1.0 + 0.1 * rng.standard_normal(40)
    clear = a + 0.5 + 0.05 * rng.standard_normal(40)   # B clearly above A
    noisy = a + 0.01 + 0.3 * rng.standard_normal(40)   # B above A by less than the noise
    df = _seed_records({"A": list(a), "B": list(clear), "C": list(noisy)})
    base = {"text": "t", "kind": "final_below", "metric": "m", "solver": "A"}
    res = {r.id: r for r in evaluate_claims(df, [
        {**base, "id": "ab", "others": ["B"]}, {**base, "id": "ac", "others": ["C"]},
        {**base, "id": "ba", "solver": "B", "others": ["A"]}], "paper")}
    assert res["ab"].status == "holds" and res["ba"].status == "fails"
    assert res["ac"].status == "inconclusive"
    for cid, other, d in (("ab", "B", clear - a), ("ac", "C", noisy - a)):
        e = res[cid].effects[other]
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
        assert e["lo"] == pytest.approx(ci.low) and e["hi"] == pytest.approx(ci.high)
        assert e["mean"] == pytest.approx(d.mean())


def test_statistical_status_threshold_and_marks():
    """The threshold (margin) is what the interval must clear; a claim marked not reproduced
    reads not_reproduced / unexpectedly_holds / inconclusive."""
    a = np.linspace(1.0, 1.9, 10)
    b = a + 0.5 + 0.01 * np.sin(np.arange(10))        # B above A by 0.5 +- 0.01
    df = _seed_records({"A": list(a), "B": list(b)})
    base = {"text": "t", "kind": "final_below", "metric": "m", "solver": "A", "others": ["B"]}
    res = {r.id: r.status for r in evaluate_claims(df, [
        {**base, "id": "m04", "margin": 0.4}, {**base, "id": "m06", "margin": 0.6},
        {**base, "id": "m05", "margin": 0.5},
        {**base, "id": "nr", "reproduced": False, "margin": 0.6},
        {**base, "id": "uh", "reproduced": False}], "paper")}
    assert res == {"m04": "holds", "m06": "fails", "m05": "inconclusive",
                   "nr": "not_reproduced", "uh": "unexpectedly_holds"}


def test_seed_mean_curve_claims_judge_per_seed_summaries():
    """reach_first on seed-mean curves: the point comparison is on the mean curves, the
    verdict on each seed's reach x (paired t): 2 seeds -> inconclusive; with 8 seeds a clear
    lead holds and its interval covers the true difference (20)."""
    rng = np.random.default_rng(5)

    def curves(shift, n):
        rows = []
        jitter = rng.uniform(-3, 3, size=(2, n))
        for j, (label, s) in enumerate((("A", 0.0), ("B", shift))):
            for seed in range(n):
                x = np.arange(0, 101, 1.0)
                y = np.exp(-(x - s - jitter[j, seed]) / 20.0)
                rows += [{"label": label, "cell": f"{label}{seed}", "seed": seed, "step": k,
                          "oracle_calls": xv, "metric": "m", "value": yv}
                         for k, (xv, yv) in enumerate(zip(x, y, strict=True))]
        return pd.DataFrame(rows)

    c = {"id": "r", "text": "t", "kind": "reach_first", "metric": "m", "solver": "A",
         "others": ["B"], "level": 0.2}
    few = evaluate_claims(curves(20.0, 2), [c], "paper")[0]
    assert few.status == "inconclusive" and few.point_status == "holds"
    many = evaluate_claims(curves(20.0, 8), [c], "paper")[0]
    e = many.effects["B"]
    assert many.status == "holds" and e["method"] == "paired-t" and e["n"] == 8
    assert e["lo"] <= 20.0 <= e["hi"]
    assert "seed-mean curves over seeds 0,1,2,3,4,5,6,7" in many.detail
    # the factor: A must reach the level before 0.5x B's x, which it does not
    half = evaluate_claims(curves(20.0, 8), [{**c, "factor": 0.5}], "paper")[0]
    assert half.status == "fails"


def test_spread_below_judges_the_std_ratio():
    rng = np.random.default_rng(3)
    z = rng.standard_normal(12)
    df = _seed_records({"A": list(1 + 0.01 * z), "B": list(1 + 0.2 * z[::-1]),
                        "C": list(1 + 0.0105 * z[::-1])})
    base = {"text": "t", "kind": "spread_below", "metric": "m", "solver": "A"}
    res = {r.id: r for r in evaluate_claims(df, [
        {**base, "id": "ab", "others": ["B"]}, {**base, "id": "ac", "others": ["C"]}],
        "paper")}
    assert res["ab"].status == "holds" and res["ac"].status == "inconclusive"
    assert res["ab"].values["B"] == pytest.approx(np.std(0.2 * z, ddof=1))


# --- panels and trends ------------------------------------------------------------------

def _panel_records(gaps: dict, n: int = 8, seed: int = 0) -> pd.DataFrame:
    """Final values per (panel nu, label, seed): B = A + gap[nu] + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for nu, gap in gaps.items():
        for s in range(n):
            a = 1.0 + 0.1 * rng.standard_normal()
            for label, v in (("A", a), ("B", a + gap + 0.02 * rng.standard_normal())):
                for step, val in ((0, 10.0), (1, v)):
                    rows.append({"label": label, "cell": f"{label}-{nu}-{s}", "seed": s,
                                 "nu": nu, "step": step, "oracle_calls": step, "metric": "m",
                                 "value": val})
    return pd.DataFrame(rows)


TREND = {"id": "t", "text": "gap grows with nu", "kind": "trend", "metric": "m",
         "solver": "A", "others": ["B"], "across": "nu", "values": [0.0, 0.5, 1.0]}


def test_trend_grows_flat_and_shrinks():
    grows = _panel_records({0.0: 0.1, 0.5: 0.3, 1.0: 0.6})
    r = evaluate_claims(grows, [TREND], "paper")[0]
    assert r.status == "holds" and len(r.effects) == 2          # 0 -> 0.5, 0.5 -> 1
    assert r.values["B gap @ nu=1.0"] == pytest.approx(0.6, abs=0.03)
    flat = _panel_records({0.0: 0.3, 0.5: 0.3, 1.0: 0.3})
    assert evaluate_claims(flat, [TREND], "paper")[0].status == "inconclusive"
    shrinks = _panel_records({0.0: 0.6, 0.5: 0.3, 1.0: 0.1})
    assert evaluate_claims(shrinks, [TREND], "paper")[0].status == "fails"
    # largest at the last panel: compared with each other panel, not only the next
    bump = _panel_records({0.0: 0.1, 0.5: 0.7, 1.0: 0.6})
    last = {**TREND, "shape": "largest_last"}
    assert evaluate_claims(bump, [last], "paper")[0].status == "fails"
    assert evaluate_claims(grows, [last], "paper")[0].status == "holds"


def test_panels_all_must_hold():
    """`panels`: judged in each panel apart; holds only if every panel holds, refuted if
    one is, with the refutation corrected over panels x others."""
    rec = _panel_records({0.0: 0.3, 0.5: 0.3, 1.0: -0.3})
    c = {"id": "p", "text": "A always below B", "kind": "final_below", "metric": "m",
         "solver": "A", "others": ["B"], "panels": [{"nu": 0.0}, {"nu": 0.5}]}
    r = evaluate_claims(rec, [c], "paper")[0]
    assert r.status == "holds" and set(r.effects) == {"B @ nu=0.0", "B @ nu=0.5"}
    assert all(e["others"] == 2 for e in r.effects.values())     # Bonferroni over 2 panels
    r = evaluate_claims(rec, [{**c, "panels": [{"nu": 0.0}, {"nu": 1.0}]}], "paper")[0]
    assert r.status == "fails" and "[nu=1.0]" in r.detail
    r = evaluate_claims(rec, [{**c, "panels": [{"nu": 0.0}, {"nu": 2.0}]}], "paper")[0]
    assert r.status == "skipped"


def test_panels_needed_most_cases():
    """`panels_needed`: 'in most cases' holds when at least that many panels hold, each at
    the level (1 - confidence) / (P - k + 1), and is refuted when more than P - k panels
    are refuted, each refutation corrected over k x others."""
    rec = _panel_records({0.0: 0.3, 0.5: 0.3, 1.0: 0.3, 1.5: -0.3})
    four = [{"nu": v} for v in (0.0, 0.5, 1.0, 1.5)]
    c = {"id": "m", "text": "A below B in most cases", "kind": "final_below", "metric": "m",
         "solver": "A", "others": ["B"], "panels": four, "panels_needed": 3}
    r = evaluate_claims(rec, [c], "paper")[0]
    assert r.status == "holds" and "3 hold, 1 refuted" in r.detail
    e = r.effects["B @ nu=0.0"]
    assert e["confidence"] == pytest.approx(1 - 0.05 / 2) and e["others"] == 3
    assert evaluate_claims(rec, [{**c, "panels_needed": 4}], "paper")[0].status == "fails"
    two_bad = _panel_records({0.0: 0.3, 0.5: 0.3, 1.0: -0.3, 1.5: -0.3})
    assert evaluate_claims(two_bad, [c], "paper")[0].status == "fails"
    assert evaluate_claims(two_bad, [{**c, "panels_needed": 2}], "paper")[0].status == "holds"
    with pytest.raises(Exception, match="panels_needed"):
        evaluate_claims(rec, [{**c, "panels_needed": 5}], "paper")


def test_panels_that_name_their_metric():
    """'Fairer in most cases' over settings x metrics: each panel names its metric, and one
    claim is judged over all of them; an unknown metric in a panel is refused by key path."""
    m1 = _panel_records({0.0: 0.3, 0.5: 0.3}, seed=1)
    m2 = _panel_records({0.0: 0.3, 0.5: -0.3}, seed=2).assign(metric="m2")
    rec = pd.concat([m1, m2], ignore_index=True)
    rec["cell"] = rec["cell"] + "-" + rec["metric"]
    panels = [{"nu": nu, "metric": m} for m in ("m", "m2") for nu in (0.0, 0.5)]
    c = {"id": "f", "text": "A below B in most cases", "kind": "final_below", "metric": "m",
         "solver": "A", "others": ["B"], "panels": panels, "panels_needed": 3}
    r = evaluate_claims(rec, [c], "paper")[0]
    assert r.status == "holds" and "3 hold, 1 refuted" in r.detail
    assert "B @ nu=0.5, metric=m2" in r.effects
    assert r.effects["B @ nu=0.5, metric=m2"]["verdict"] == "not_reproduced"
    assert evaluate_claims(rec, [{**c, "panels_needed": 4}], "paper")[0].status == "fails"
    bad = {**c, "panels": [*panels[:3], {"nu": 0.5, "metric": "m3"}]}
    with pytest.raises(DrocliError, match=r"panels\[3\]\.metric"):
        evaluate_claims(rec, [bad], "paper")


def test_smoother_factor_is_its_size():
    """`smoother` with `factor`: the solver's variation must lie below factor x the other's;
    a solver steadier by 10 % holds at factor 0.95 and is refuted at 0.5 (10 seeds)."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 100, 41)
    curves = {}
    for label, amp in (("A", 0.09), ("B", 0.1)):
        curves[label] = {s: (x, 1 + amp * np.sin(x) * (1 + 0.01 * rng.standard_normal()))
                         for s in range(10)}
    rec = records(curves)
    base = {"id": "s", "text": "A steadier", "kind": "smoother", "metric": "m",
            "solver": "A", "others": ["B"], "per_seed": True}
    assert evaluate_claims(rec, [{**base, "factor": 0.95}], "paper")[0].status == "holds"
    assert evaluate_claims(rec, [{**base, "factor": 0.5}], "paper")[0].status == "fails"
    assert "lower than 0.5 x B" in validate_claim({**base, "factor": 0.5}).test_text()


def test_compare_reference_on_the_runs_seeds():
    """A reference recorded further into its sequential plan holds seeds the run never ran:
    they are left out and named (later_seeds); a seed the run has stays compared."""
    from drocli.results.reference import later_seeds

    first = ORDERED[ORDERED["seed"] == 0]
    assert compare_reference(first, ORDERED) == []
    assert later_seeds(first, ORDERED) == ["1"]
    part = ORDERED[~((ORDERED["label"] == "MPVR") & (ORDERED["seed"] == 1))]
    assert compare_reference(part, ORDERED)[0].startswith("missing from records: MPVR")


def test_a_panel_whose_judge_errs_makes_the_claim_an_error_never_a_refutation(monkeypatch):
    """Found by the sequential null simulation: a judge that raised in one panel counted as
    a refuted panel, so the claim read FAILS."""
    from types import SimpleNamespace

    real = registry.get

    def get(kind, name, **kw):
        entry = real(kind, name, **kw)
        if kind != "claim" or not callable(getattr(entry, "func", None)):
            return entry

        def func(claim, data):
            if any((d["dataset"] == "d2").any() for d in data.values()):
                raise TypeError("a broken judge")
            return entry.func(claim, data)
        return SimpleNamespace(**{**vars(entry), "func": func}) if hasattr(
            entry, "__dict__") else SimpleNamespace(func=func, params=entry.params)

    rec = pd.concat([records({"ALEG": expo(0.60), "SMD": expo(0.62), "MPVR": expo(0.61)},
                             dataset=d) for d in ("d1", "d2")])
    monkeypatch.setattr(registry, "get", get)
    r = one(rec, panels=[{"dataset": "d1"}, {"dataset": "d2"}])
    assert r.status == "error", r.detail
    assert "panel" in r.detail and "a broken judge" in r.detail
