"""records.csv_text writes exactly what pandas' to_csv(float_format="%.17g") writes (the
format of records.csv.gz), for the values records can hold."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from drocli.records import csv_text

TEXT = st.text(alphabet=st.sampled_from(list('ab ,"\n\r[]:1.-')), max_size=8)


def test_csv_text_matches_pandas_on_awkward_values():
    df = pd.DataFrame({
        "experiment": ["e", "e", "e", "e"],
        "label": ['A, "quoted"', "line\nbreak", "plain", None],
        "seed": [0, 1, 2, 3],
        "value": [math.nan, math.inf, -0.0, 1 / 3],
        "time_s": [1e-300, -1e300, 5e-324, 2.0],
        "swept": ["[1, 2]", '{"a": 1}', None, "x"],
        "mixed": [0.5, "s", None, 3],
    })
    df["metric"] = pd.Series(["m", "m", None, "n"], dtype="string")
    assert csv_text(df) == df.to_csv(index=False, float_format="%.17g")
    assert csv_text(df.iloc[:0]) == df.iloc[:0].to_csv(index=False, float_format="%.17g")


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(rows=st.lists(st.tuples(TEXT, st.integers(-10**6, 10**6),
                               st.floats(allow_nan=True, allow_infinity=True), TEXT),
                     min_size=1, max_size=30))
def test_csv_text_matches_pandas_on_random_frames(rows):
    df = pd.DataFrame(rows, columns=["label", "step", "value", "metric"])
    df["value"] = df["value"].astype(np.float64)
    assert csv_text(df) == df.to_csv(index=False, float_format="%.17g")
