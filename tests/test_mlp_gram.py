"""drocli.ops.mlp_gram's compiled step against the plain numpy step, to the bit.

The numpy step below is the Gram form written with numpy alone (what drocli ran before its
elementwise passes were compiled). Same bits means the federated records do not move; that
the Gram form is the direct gradient step is checked in tests/test_federated_problem.py
(against mlp.loss_grad steps and finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drocli.ops import mlp, mlp_gram
from drocli.ops import mlp_gram_kernels as kern


def numpy_steps(phi, X, K, y, dims, steps, step_size):
    """The Gram-form steps in numpy: the reference the kernels must equal bit for bit."""
    dt = X.dtype.type
    W1, b1, W2, b2 = mlp.unpack(phi, dims)
    Z1 = X @ W1.T
    Z1 += b1
    S = np.zeros_like(Z1)
    A = np.empty_like(Z1)
    total = 0.0
    for _ in range(steps):
        np.maximum(Z1, 0, out=A)
        lg = A @ W2.T
        lg += b2
        ce, G = mlp.ce_grad_logits(lg, y)
        value, c = step_size(ce)
        total += value
        D = G @ W2
        D *= Z1 > 0
        D *= dt(c)
        W2 -= dt(c) * (G.T @ A)
        b2 -= dt(c) * G.sum(axis=0)
        S += D
        Z1 -= K @ D
    W1 -= S.T @ X
    b1 -= S.sum(axis=0)
    return total


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _case(n, d, h, k, dtype, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) * scale).astype(dtype)
    X[:, : d // 3] = 0                      # dead pixels: exact zeros, as MNIST has
    y = rng.integers(0, k, n)
    dims = mlp.Dims(d, h, k)
    phi = mlp.init(dims, rng).astype(dtype)
    return X, y, dims, phi


def propfair_like(ce):
    """A step size that depends on the loss, as PropFair's does (lr x l'(CE))."""
    return np.log(5.0 - ce) if ce < 4 else 0.0, 0.1 / (5.0 - min(ce, 4.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,d,h,k", [(400, 60, 50, 10), (80, 30, 20, 10), (1, 5, 3, 2),
                                     (37, 11, 9, 7), (50, 20, 16, 8), (60, 9, 12, 17),
                                     (40, 10, 6, 140)])
@pytest.mark.parametrize("step", ["constant", "propfair_like"])
def test_compiled_step_is_the_numpy_step_to_the_bit(dtype, n, d, h, k, step):
    X, y, dims, phi = _case(n, d, h, k, dtype, seed=n * 7 + k)
    K = mlp_gram.kernel(X)
    size = propfair_like if step == "propfair_like" else (lambda ce: (ce, 0.5))
    ref = phi.copy()
    want = numpy_steps(ref, X, K, y, dims, 12, size)
    got_phi = phi.copy()
    got = mlp_gram.gd_steps(got_phi, X, K, y, dims, 12, size)
    assert got == want
    np.testing.assert_array_equal(bits(got_phi), bits(ref))
    assert not np.array_equal(got_phi, phi)          # the steps moved θ


def test_compiled_step_on_saturated_logits_and_dead_units():
    """Large inputs: softmax rows at 0 and 1 exactly, many units dead (Z1 <= 0)."""
    X, y, dims, phi = _case(64, 20, 30, 10, np.float32, seed=3, scale=60.0)
    K = mlp_gram.kernel(X)
    ref = phi.copy()
    want = numpy_steps(ref, X, K, y, dims, 5, lambda ce: (ce, 0.05))
    got_phi = phi.copy()
    got = mlp_gram.gd_steps(got_phi, X, K, y, dims, 5, lambda ce: (ce, 0.05))
    assert got == want
    np.testing.assert_array_equal(bits(got_phi), bits(ref))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_is_numpy_maximum_on_signed_zeros_nan_and_inf(dtype):
    Z = np.array([[-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-30, -1e-30, 2.5, -2.5]],
                 dtype=dtype)
    A = np.empty_like(Z)
    kern.relu(Z, A)
    want = np.maximum(Z, 0)
    np.testing.assert_array_equal(np.isnan(A), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(bits(A)[ok], bits(want)[ok])
    T = np.zeros_like(Z)
    Z2 = Z.copy()
    kern.move_relu(Z2, T, A)
    np.testing.assert_array_equal(bits(A)[ok], bits(want)[ok])


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 300), rows=st.integers(1, 4), seed=st.integers(0, 2**32 - 1),
       f64=st.booleans())
def test_row_sums_in_numpys_order(k, rows, seed, f64):
    rng = np.random.default_rng(seed)
    dtype = np.float64 if f64 else np.float32
    G = (rng.random((rows, k)) * 10.0 ** rng.uniform(-6, 6, (rows, k))).astype(dtype)
    s = np.empty(rows, dtype=dtype)
    kern.row_sums(G, s)
    np.testing.assert_array_equal(bits(s), bits(G.sum(axis=1)))


def test_shift_logits_propagates_nan_like_numpy():
    lg = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0]], dtype=np.float32)
    ref = lg + np.zeros(3, np.float32)
    ref -= ref.max(axis=1, keepdims=True)
    picked = np.empty(2, np.float32)
    kern.shift_logits(lg, np.zeros(3, np.float32), np.array([2, 1]), picked)
    np.testing.assert_array_equal(np.isnan(lg), np.isnan(ref))
    np.testing.assert_array_equal(lg[1], ref[1])
    assert picked[1] == 0.0 and np.isnan(picked[0])


@settings(max_examples=40, deadline=None)
@given(n=st.one_of(st.integers(1, 300), st.integers(8000, 20000)),
       seed=st.integers(0, 2**32 - 1), f64=st.booleans())
def test_mean_ce_in_numpys_order_and_chunks(n, seed, f64):
    """The mean CE the kernel returns is np.mean(log_s - picked, dtype=float64) to the bit,
    past numpy's 8192-element buffer too."""
    rng = np.random.default_rng(seed)
    dtype = np.float64 if f64 else np.float32
    G = rng.random((n, 3)).astype(dtype) + dtype(0.1)
    s = G.sum(axis=1)
    log_s = np.log(s)
    picked = np.log(G[:, 0]) * dtype(rng.uniform(0.5, 3.0))
    dt = np.dtype(dtype).type
    ce = kern.softmax_grad(G, s, log_s, picked, np.zeros(n, np.intp), dt(1.0 / n), dt(1),
                            kern.mean_chunk(dtype, n))
    want = np.mean(log_s - picked, dtype=np.float64)
    assert bits(np.array([ce]))[0] == bits(np.array([want]))[0]


def test_a_workspace_reused_across_clients_and_shapes_changes_no_bit():
    """One Workspace handed to clients in turn (as the federated problem shares one per
    shape), and one of the wrong shape (replaced): every client's θ is the numpy step's."""
    work = mlp_gram.Workspace(50, mlp.Dims(20, 16, 10), np.float32)
    for seed, (n, d) in enumerate([(50, 20), (50, 20), (30, 20), (50, 20)]):
        X, y, dims, phi = _case(n, d, 16, 10, np.float32, seed=seed)
        K = mlp_gram.kernel(X)
        ref = phi.copy()
        want = numpy_steps(ref, X, K, y, dims, 6, propfair_like)
        got = mlp_gram.gd_steps(phi, X, K, y, dims, 6, propfair_like, work)
        assert got == want
        np.testing.assert_array_equal(bits(phi), bits(ref))
