"""A claim along time_s whose seeds' time ranges do not overlap (one seed's stage 1 outlasting
another seed's whole run when the machine's load changes) is judged on its per-seed
statistics instead of failing on the missing seed-mean curve (issue 26, MERO time claims)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from drocli.claims import validate_claim
from drocli.claims.reach_first import reach_first


def rows(label: str, seed: int, t_scale: float, rate: float) -> pd.DataFrame:
    x = np.arange(5, 11) * 1000                       # curves start after a stage 1
    t = t_scale * np.linspace(0.8, 1.0, len(x))      # stage 1 takes 80 % of the time
    y = 0.5 * np.exp(-rate * (x - 5000) / 5000) + 0.1
    return pd.DataFrame({"cell": f"{label}{seed}", "seed": seed, "step": np.arange(len(x)),
                         "oracle_calls": x, "time_s": t, "metric": "m", "value": y})


def test_reach_first_in_time_without_overlap():
    data = {"A": pd.concat([rows("A", s, sc, 3.0) for s, sc in ((0, 10), (1, 10), (2, 5))]),
            "B": pd.concat([rows("B", s, sc, 1.0) for s, sc in ((0, 20), (1, 20), (2, 9))])}
    for level in ({"level": 0.3}, {"level_fraction": 0.5}):
        claim = validate_claim({"id": "t", "text": "A first in time", "kind": "reach_first",
                                "x": "time_s", "metric": "m", "solver": "A", "others": ["B"],
                                **level})
        holds, detail, shown, effects = reach_first(claim, data)
        assert holds, detail


def test_figure_mean_over_disjoint_time_ranges():
    from drocli.results.aggregate import aggregate

    r = pd.concat([rows("A", s, sc, 3.0) for s, sc in ((0, 10), (1, 10), (2, 5))])
    agg = aggregate(r, x="time_s", nan="omit")              # a figure: no error
    assert agg.grid[0] == 4.0 and agg.grid[-1] == 10.0
    assert np.all(np.isfinite(agg.center)) and agg.n_finite.min() == 3   # every seed held
    assert np.all(np.diff(agg.center) <= 1e-12)             # decreasing curves: no jumps
    import pytest

    from drocli.errors import DrocliError
    with pytest.raises(DrocliError, match="do not overlap"):
        aggregate(r, x="time_s", nan="propagate")
