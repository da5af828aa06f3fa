"""drocli.ops.weight_step against the numpy expression SVRB wrote before it, to the bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from drocli.ops.weight_step import SAFE_P, TINY_ALPHA, weight_step


def numpy_step(p, alpha, q, s, nonneg):
    z = -alpha * q
    r = p - s * z
    return np.maximum(r, 0.0) if nonneg else r


EDGES = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-310, TINY_ALPHA,
         TINY_ALPHA * (1 - 2 ** -53), 2.0 ** -500, SAFE_P, SAFE_P * (1 - 2 ** -53), 2.0 ** -299,
         1e-13, 1.0, 1.0 - 2 ** -53, 2.0, 3.5e-4, 2.0 ** 99, 2.0 ** 100,
         2.0 ** 100 * (1 - 2 ** -53), 1e300, np.inf, -np.inf, np.nan, -1.0, -SAFE_P]
SCALES = [0.0, -0.0, 1e-3, 0.7, 10.0, 2.0 ** 99, 2.0 ** 100, -3.0, 1e200, np.inf, np.nan]
value = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True),
                  st.floats(-1e-300, 1e-300), st.floats(-1e-305, 1e-305, allow_subnormal=True))


def same_bits(a, b):
    """Equal to the bit, NaN for NaN (a NaN's sign bit is not kept: LLVM may negate a
    product instead of a factor, which moves the sign of a NaN only)."""
    nan = np.isnan(b)
    return np.array_equal(np.isnan(a), nan) and np.array_equal(a[~nan].view(np.int64),
                                                               b[~nan].view(np.int64))


def test_weight_step_on_every_combination_of_the_edge_values():
    """p, alpha, q each over the values at and around the kernel's thresholds, zeros of both
    signs, subnormals, infinities and NaN, for every step scale and both clips."""
    p, alpha, q = (g.ravel() for g in np.meshgrid(EDGES, EDGES, EDGES, indexing="ij"))
    for s in SCALES:
        for nonneg in (True, False):
            with np.errstate(all="ignore"):
                want = numpy_step(p, alpha, q, s, nonneg)
            assert same_bits(weight_step(p, alpha, q, s, nonneg), want), (s, nonneg)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(value, value, value), min_size=1, max_size=40),
       st.sampled_from(SCALES),
       st.booleans())
def test_weight_step_is_the_numpy_expression_to_the_bit(entries, s, nonneg):
    p, alpha, q = (np.array(c, dtype=np.float64) for c in zip(*entries, strict=True))
    with np.errstate(all="ignore"):
        want = numpy_step(p, alpha, q, s, nonneg)
    assert same_bits(weight_step(p, alpha, q, s, nonneg), want)


def test_weight_step_on_a_decayed_svrb_like_state():
    """Weights near 1, a sixth of alpha subnormal and more tiny, q of the hypergradient's
    size: the skipped entries and the computed ones both equal numpy's."""
    rng = np.random.default_rng(3)
    n = 20_000
    p = np.abs(1.0 + 0.1 * rng.standard_normal(n))
    p[:50] = 0.0
    p[50:60] = 1e-310
    alpha = 1e-4 * rng.standard_normal(n)
    alpha[rng.random(n) < 0.17] *= 1e-305
    alpha[rng.random(n) < 0.2] = 0.0
    q = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 4, n)
    for s, nonneg in ((0.37, True), (12.5, False), (1e-9, True)):
        with np.errstate(all="ignore"):
            want = numpy_step(p, alpha, q, s, nonneg)
        assert same_bits(weight_step(p, alpha, q, s, nonneg), want)
