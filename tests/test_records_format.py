"""The records' CSV format: what drocli wrote with pandas, `csv_text` below (pandas' to_csv
with %.17g floats, each distinct value formatted once: the format of every recorded
records.csv.gz), and what it writes now without pandas, records.table_csv_text, which must
give the same bytes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from drocli.results.records import _csv_field


def csv_text(df: pd.DataFrame) -> str:
    """The tidy CSV of `df` as drocli wrote its records before records.Table: byte for
    byte what `df.to_csv(index=False, float_format="%.17g")` writes (the tests below),
    formatted column by column, each distinct value once (as pandas.factorize groups them)."""
    cols = []
    for name in df.columns:            # each distinct value is formatted once
        col = df[name]
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        kind = col.dtype.kind
        if kind == "f":
            shown = [f"{v:.17g}" for v in uniques.tolist()]
        elif kind in "iu":
            shown = list(map(str, uniques.tolist()))
        else:
            shown = [_csv_field(v.item() if isinstance(v, np.generic) else v)
                     for v in uniques.tolist()]
        cols.append(np.array(shown + [""], dtype=object)[codes].tolist())    # -1: missing
    head = ",".join(_csv_field(str(c)) for c in df.columns)
    return head + "\n" + "".join(",".join(r) + "\n" for r in zip(*cols, strict=True)) \
        if cols and len(df) else head + "\n"


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


def _frame_of(columns: dict) -> pd.DataFrame:
    """The DataFrame drocli built from merged columns before records.Table (pandas' own
    inference, the four numeric row fields through to_numeric)."""
    df = pd.DataFrame(columns)
    if len(df):
        for name in ("step", "oracle_calls", "time_s", "value"):
            if name in df:
                df[name] = pd.to_numeric(df[name])
    return df


SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**15, 10**15),
                   st.floats(allow_nan=True, allow_infinity=True), TEXT)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(n=st.integers(0, 12), data=st.data())
def test_table_writer_matches_the_frame_writer(n, data):
    """records.Table's writer (no pandas) writes what csv_text wrote for the frame pandas
    builds from the same columns: swept columns of any mix of None, bools, ints, floats
    and text, and numeric row fields of ints, floats and missing values."""
    from drocli.results.records import Table, table_csv_text

    number = st.one_of(st.none(), st.integers(-10**6, 10**6),
                       st.floats(allow_nan=True, allow_infinity=True))
    columns = {
        "label": data.draw(st.lists(TEXT, min_size=n, max_size=n)),
        "seed": data.draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n)),
        "step": data.draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n)),
        "value": data.draw(st.lists(number, min_size=n, max_size=n)),
        "swept": data.draw(st.lists(SCALAR, min_size=n, max_size=n)),
        "ints_or_floats": data.draw(st.lists(st.one_of(st.integers(-99, 99),
                                                       st.sampled_from([0.0, -0.0, 0.5])),
                                             min_size=n, max_size=n)),
    }
    assert table_csv_text(Table(columns)) == csv_text(_frame_of(columns))
