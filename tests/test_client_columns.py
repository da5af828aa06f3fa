"""drocli.ops.client_columns against numpy's fancy indexing, to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from drocli.ops import client_columns


def raw(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_and_scatter_are_numpys_fancy_index_with_its_casts(dtype):
    rng = np.random.default_rng(0)
    W1 = rng.standard_normal((7, 30)) * 10.0 ** rng.uniform(-50, 50, (7, 30))  # past float32
    W1[0, :3] = [np.nan, np.inf, -0.0]
    cols = np.flatnonzero(rng.random(30) < 0.6)
    out = np.empty((7, cols.size), dtype=dtype)
    client_columns.gather(W1, cols, out)
    with np.errstate(over="ignore"):
        want = W1[:, cols].astype(dtype)
    np.testing.assert_array_equal(raw(out), raw(want))
    back = rng.standard_normal((7, 30))
    expect = back.copy()
    expect[:, cols] = want
    client_columns.scatter(want, cols, back)
    np.testing.assert_array_equal(raw(back), raw(expect))
