"""Seed aggregation: interpolation, common grid, mean/std and quantile bands, NaN handling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drocli.errors import DrocliError
from drocli.results.aggregate import (
    aggregate,
    apply_filter,
    common_grid,
    final_values,
    interpolate,
    seed_curves,
)


def make_rows(curves, metric="m", label="A", dataset="d", **extra):
    """Records rows from {seed: (x, y)} of one label and metric."""
    rows = []
    for seed, (xs, ys) in curves.items():
        for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
            rows.append(dict(experiment="e", cell=f"{label}-{dataset}-{seed}", solver=label.lower(),
                             label=label, dataset=dataset, seed=seed, step=k, oracle_calls=x,
                             time_s=x * 1e-3, metric=metric, value=y, **extra))
    return pd.DataFrame(rows)


def test_interpolate_linear_exact_outside_and_nan():
    x = np.array([0.0, 1.0, 3.0, 4.0])
    y = np.array([0.0, 2.0, np.nan, 8.0])
    got = interpolate(x, y, np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 4.0, 5.0]))
    assert got[0] != got[0] and got[-1] != got[-1]          # outside -> NaN
    assert got[1] == 0.0 and got[2] == 1.0 and got[3] == 2.0  # exact hits and linear
    assert np.isnan(got[4])                                  # next to a NaN
    assert got[5] == 8.0                                     # exact hit beside a NaN


def test_mean_and_std_of_two_linear_seeds_on_mismatched_grids():
    x0 = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    x1 = np.array([0.5, 1.5, 2.5, 3.5, 4.2])
    rows = make_rows({0: (x0, 1 + 2 * x0), 1: (x1, 3 - x1)})
    agg = aggregate(rows, band="std")
    # grid: union of points from the largest start (0.5) to the smallest end (4.0)
    np.testing.assert_allclose(agg.grid, [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])
    g = agg.grid
    np.testing.assert_allclose(agg.center, (4 + g) / 2)
    sd = np.abs(3 * g - 2) / np.sqrt(2)                      # sample std of two values
    np.testing.assert_allclose(agg.hi - agg.center, sd, atol=1e-12)
    np.testing.assert_allclose(agg.center - agg.lo, sd, atol=1e-12)
    assert agg.seeds == (0, 1) and agg.diverged == ()
    assert (agg.n_finite == 2).all()


def test_population_std_with_ddof0():
    x = np.array([0.0, 1.0])
    rows = make_rows({0: (x, np.array([0.0, 0.0])), 1: (x, np.array([2.0, 4.0]))})
    agg = aggregate(rows, ddof=0)
    np.testing.assert_allclose(agg.hi - agg.center, [1.0, 2.0])


def test_curve_starting_after_stage1_cost():
    x = np.array([1e4, 2e4, 3e4])
    rows = make_rows({0: (x, np.array([3.0, 2.0, 1.0])), 1: (x + 500, np.array([3.0, 2, 1]))})
    agg = aggregate(rows)
    assert agg.grid[0] == 1.05e4 and agg.grid[-1] == 3e4
    # seed 0 at 1.05e4 is 2.95; seed 1 starts there at 3.0
    assert agg.center[0] == pytest.approx((2.95 + 3.0) / 2)


def test_quantile_band():
    x = np.array([0.0, 1.0, 2.0])
    rows = make_rows({s: (x, np.full(3, c)) for s, c in enumerate([0.0, 1.0, 5.0])})
    agg = aggregate(rows, band="quantile")
    np.testing.assert_allclose(agg.center, 1.0)
    np.testing.assert_allclose(agg.lo, 0.5)
    np.testing.assert_allclose(agg.hi, 3.0)


def test_band_none_and_single_seed():
    x = np.array([0.0, 1.0])
    agg = aggregate(make_rows({0: (x, np.array([1.0, 2.0]))}), band="std")
    np.testing.assert_allclose(agg.lo, agg.hi)
    agg = aggregate(make_rows({0: (x, np.array([1.0, 2.0])), 1: (x, np.array([3.0, 4.0]))}),
                    band="none")
    np.testing.assert_allclose(agg.lo, agg.center)
    np.testing.assert_allclose(agg.center, [2.0, 3.0])


def test_diverged_seed_omit_and_propagate():
    x = np.linspace(0, 10, 11)
    ok = 5 - 0.1 * x
    # seed 2 diverges: its records stop at x=4 with a NaN value
    rows = make_rows({0: (x, ok), 1: (x, ok + 1), 2: (x[:5], np.r_[ok[:4] + 2, np.nan])})
    omit = aggregate(rows, nan="omit")
    assert omit.diverged == (2,)
    assert omit.grid[-1] == 10.0                 # the grid is not cut at the divergence
    np.testing.assert_allclose(omit.center[:4], ok[:4] + 1)
    np.testing.assert_allclose(omit.center[5:], ok[5:] + 0.5)
    assert list(omit.n_finite[:4]) == [3] * 4 and list(omit.n_finite[4:]) == [2] * 7
    prop = aggregate(rows, nan="propagate")
    assert np.isfinite(prop.center[:4]).all() and np.isnan(prop.center[4:]).all()


def test_repeated_x_keeps_later_checkpoint_and_sorting():
    rows = make_rows({0: (np.array([0.0, 2.0, 2.0, 1.0]), np.array([1.0, 5.0, 6.0, 3.0]))})
    (c,) = seed_curves(rows)
    np.testing.assert_allclose(c.x, [0, 1, 2])
    np.testing.assert_allclose(c.y, [1, 3, 6])


def test_two_cells_for_one_seed_is_an_error_naming_the_column():
    x = np.array([0.0, 1.0])
    rows = pd.concat([make_rows({0: (x, x)}, dataset="synthetic"),
                      make_rows({0: (x, x)}, dataset="cifar")])
    with pytest.raises(DrocliError, match="dataset"):
        aggregate(rows)
    assert len(aggregate(apply_filter(rows, {"dataset": "cifar"})).seeds) == 1


def test_non_overlapping_seeds_is_an_error():
    rows = make_rows({0: (np.array([0.0, 1.0]), np.zeros(2)),
                      1: (np.array([2.0, 3.0]), np.zeros(2))})
    with pytest.raises(DrocliError, match="overlap"):
        aggregate(rows)


def test_common_grid_thinning_keeps_ends():
    x = np.linspace(0, 1, 101)
    (c,) = seed_curves(make_rows({0: (x, x)}))
    g = common_grid([c], max_points=11)
    assert len(g) == 11 and g[0] == 0 and g[-1] == 1


def test_final_values_last_checkpoint_per_cell():
    rows = make_rows({0: (np.array([0.0, 1.0, 2.0]), np.array([3.0, 2.0, 1.0])),
                      1: (np.array([0.0, 1.1]), np.array([3.0, np.inf]))})
    fv = final_values(rows)
    assert list(fv["seed"]) == [0, 1]
    assert fv["value"].iloc[0] == 1.0 and np.isnan(fv["value"].iloc[1])


def test_apply_filter_numbers_lists_and_unknown_column():
    x = np.array([0.0, 1.0])
    rows = pd.concat([make_rows({0: (x, x)}, label="A", gamma_w=0.001),
                      make_rows({0: (x, x)}, label="B", gamma_w=0.01)])
    assert set(apply_filter(rows, {"gamma_w": "1e-3"})["label"]) == {"A"}
    assert set(apply_filter(rows, {"gamma_w": [0.001, 0.01]})["label"]) == {"A", "B"}
    assert set(apply_filter(rows, {"label": ["B"]})["label"]) == {"B"}
    with pytest.raises(DrocliError, match="gamma"):
        apply_filter(rows, {"gama_w": 0.01}, where="figures[f].filter")


def _curves_by_groupby(rows, x):
    """seed_curves' statement written with a pandas sort and groupby: the points of each
    seed sorted by (x, step), missing x dropped, the later of repeated x kept."""
    import numpy as np

    out = []
    data = rows.sort_values(["seed", x, "step"], kind="stable")
    for seed, sub in data.groupby("seed", sort=True):
        sub = sub[np.isfinite(sub[x].to_numpy(dtype=float, na_value=np.nan))]
        if sub.empty:
            continue
        sub = sub.drop_duplicates(x, keep="last")
        ys = sub["value"].to_numpy(dtype=float)
        out.append((seed, str(data[data["seed"] == seed]["cell"].iloc[0]),
                    sub[x].to_numpy(dtype=float).tolist(),
                    np.where(np.isfinite(ys), ys, np.nan).tolist()))
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_seed_curves_equal_a_sort_and_groupby(data):
    """On shuffled rows with ties in x, missing x, non-finite values and unsorted seeds,
    the one-sort seed_curves gives each seed's points, cell and seed (value and type) as a
    pandas sort and groupby does."""
    import numpy as np

    n_seeds = data.draw(st.integers(1, 5))
    rows = []
    for s in data.draw(st.permutations(list(range(n_seeds)))):
        for step in range(data.draw(st.integers(1, 6))):
            x = data.draw(st.sampled_from([0.0, 1.0, 2.0, 2.0, 5.0, np.nan]))
            v = data.draw(st.sampled_from([0.5, 1.5, -2.0, np.inf, np.nan]))
            rows.append({"seed": 10 * s, "cell": f"c{s}", "step": step, "oracle_calls": x,
                         "value": v})
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=data.draw(st.integers(0, 99)))
    got = [(c.seed, c.cell, c.x.tolist(), c.y.tolist())
           for c in seed_curves(frame, "oracle_calls")]
    want = _curves_by_groupby(frame, "oracle_calls")
    assert [(type(g[0]), g[0], g[1]) for g in got] == [(type(w[0]), w[0], w[1]) for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[2], w[2])
        np.testing.assert_array_equal(g[3], w[3])


def test_seed_first_keeps_the_smallest_seed_whatever_the_study_runs():
    from drocli.results.aggregate import apply_filter

    df = pd.DataFrame({"seed": [402, 400, 401, 400, 1000], "v": [1, 2, 3, 4, 5]})
    kept = apply_filter(df, {"seed": "first"})
    assert kept["v"].tolist() == [2, 4]           # 400 < 402 < 1000, numerically
    assert apply_filter(df.iloc[[0, 2]], {"seed": "first"})["v"].tolist() == [3]
    text = pd.DataFrame({"seed": ["b", "a"], "v": [1, 2]})
    assert apply_filter(text, {"seed": "first"})["v"].tolist() == [2]
