"""drocli.ops.bitpacked: X @ q on packed 0/1 rows against numpy's dense product."""

from __future__ import annotations

import numpy as np
import pytest

from drocli.ops.bitpacked import BitMatrix


@pytest.mark.parametrize("D", [1, 7, 8, 9, 65, 197])
def test_packed_product_equals_dense(D):
    rng = np.random.default_rng(D)
    X = (rng.random((301, D)) < 0.4).astype(np.float64)
    X[:, -1] = 1.0                                   # a bias column
    B = BitMatrix.of(X)
    assert B is not None and B.bits.shape == (301, -(-D // 8))
    for _ in range(3):
        q = rng.standard_normal(D) * 10.0 ** rng.integers(-3, 4, D)
        want = X @ q
        got = B.dot(q)
        assert got.dtype == np.float64 and got.shape == (301,)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(q).sum())


def test_only_binary_matrices_are_packed_and_shapes_are_checked():
    assert BitMatrix.of(np.array([[0.0, 1.0], [0.5, 1.0]])) is None
    assert BitMatrix.of(np.array([[0.0, 2.0]])) is None
    assert BitMatrix.of(np.zeros((0, 3))) is None
    B = BitMatrix.of(np.array([[1, 0, 1], [0, 0, 0]]))
    np.testing.assert_array_equal(B.dot(np.array([1.0, 2.0, 4.0])), [5.0, 0.0])
    with pytest.raises(ValueError, match="columns"):
        B.dot(np.ones(4))


def test_bilevel_problem_uses_the_packed_product_on_binary_features():
    from drocli.plugins import registry
    from tests.conftest import load_source
    data = load_source("digits_split", {"n_train": 200})
    entry = registry.get("problem", "bilevel_weights")
    pr = entry.func(data, registry.resolve_params(entry, {}))
    assert pr._bits is not None                      # binarised digits + the bias column
    q = np.random.default_rng(1).standard_normal(pr.D)
    np.testing.assert_allclose(pr.features_dot(q), pr.X @ q, rtol=1e-12, atol=1e-12)
