"""Paper 003's fair federated learning: partitioners, the numpy MLP and the `federated` problem.

Truths used: central finite differences (float64) for the MLP and PropFair gradients, the
direct softmax formula for the cross-entropy, np.rot90 on reshaped images for the rotation
wiring, and plain numpy per-client loops for the metrics.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops import mlp
from drocli.ops import partition as part
from drocli.plugins import registry
from drocli.problems import federated
from tests.conftest import load_source
from tests.test_solver_contract import FAMILY_FIXTURES


# ---- helpers --------------------------------------------------------------------------------
def make_data(n_tr=23, n_te=12, side=6, seed=0, info_seed=4) -> GroupedData:
    """10-class images (side x side) with an all-zero border, pixel values in [0, 1]."""
    rng = np.random.default_rng(seed)

    def split(n):
        y = rng.permutation(np.repeat(np.arange(10), n))
        X = np.zeros((y.size, side, side), np.float32)
        X[:, 1:-1, 1:-1] = rng.random((y.size, side - 2, side - 2))
        X[np.arange(y.size), 1 + y % (side - 2), 1 + y // (side - 2) % (side - 2)] += 2.0
        return (X / X.max()).reshape(y.size, -1), y

    Xtr, ytr = split(n_tr)
    Xte, yte = split(n_te)
    return GroupedData("synthetic", Xtr, ytr, np.zeros(ytr.size, np.int64), Xte, yte,
                       np.zeros(yte.size, np.int64), n_classes=10,
                       info={"shape": (side, side), "seed": info_seed})


def build(data=None, **params):
    entry = registry.get("problem", "federated")
    base = {"hidden": 8, "local_steps": 1, "dtype": "float64"}
    return entry.func(data if data is not None else make_data(),
                      registry.resolve_params(entry, {**base, **params}))


def rot(X, shape, k):
    """Independent truth: np.rot90 on each image's (H, W) axes."""
    imgs = X.reshape((-1,) + tuple(shape))
    return np.stack([np.rot90(im, k, axes=(im.ndim - 2, im.ndim - 1)) for im in imgs]) \
        .reshape(X.shape[0], -1)


def fd_grad(f, x, h=1e-6):
    g = np.empty_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        g[j] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ---- partitioners -----------------------------------------------------------------------------
def test_rotation_partition_sizes_disjoint_balanced_deterministic():
    y = np.random.default_rng(0).integers(0, 10, 997)
    parts = part.rotation(y, 10, np.random.default_rng(1))
    counts = np.bincount(y, minlength=10)
    assert len(parts) == 10
    assert all(p.size == (counts // 10).sum() for p in parts)  # remainders dropped
    allidx = np.concatenate(parts)
    assert np.unique(allidx).size == allidx.size  # disjoint
    for p in parts:
        assert np.bincount(y[p], minlength=10).tolist() == (counts // 10).tolist()
    again = part.rotation(y, 10, np.random.default_rng(1))
    other = part.rotation(y, 10, np.random.default_rng(2))
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(parts, other, strict=True))


def test_partial_class_chunks_and_same_classes_on_test():
    rng = np.random.default_rng(3)
    y_tr = rng.integers(0, 10, 2000)
    y_te = rng.integers(0, 10, 500)
    tr, te, classes = part.partition(y_tr, y_te, "partial_class", 10, np.random.default_rng(5),
                                     C=3)
    assert classes.shape == (10, 3)
    assert all(np.unique(c).size == 3 for c in classes)
    for y, parts in ((y_tr, tr), (y_te, te)):
        counts = np.bincount(y, minlength=10)
        allidx = np.concatenate(parts)
        assert np.unique(allidx).size == allidx.size
        for i, p in enumerate(parts):
            have = np.bincount(y[p], minlength=10)
            want = np.zeros(10, np.int64)
            want[classes[i]] = counts[classes[i]] // 10  # chunk i of each of its classes
            assert have.tolist() == want.tolist()
    tr2, te2, classes2 = part.partition(y_tr, y_te, "partial_class", 10,
                                        np.random.default_rng(5), C=3)
    assert np.array_equal(classes, classes2)
    assert all(np.array_equal(a, b) for a, b in zip(te, te2, strict=True))


def test_partial_class_chunk_i_of_the_class():
    """Client i gets chunk i of a class, not the whole class."""
    y = np.repeat(np.arange(10), 30)
    classes = np.tile(np.arange(2), (10, 1))  # everybody picks classes 0 and 1
    parts, _ = part.partial_class(y, 10, 2, np.random.default_rng(0), classes=classes)
    assert all(p.size == 6 for p in parts)
    allidx = np.concatenate(parts)
    assert np.unique(allidx).size == 60 and set(y[allidx]) == {0, 1}


def test_rotation_k_and_rotate_rows():
    assert [part.rotation_k(a) for a in (0, 90, 180, 270, 360, -90)] == [0, 1, 2, 3, 0, 3]
    with pytest.raises(ValueError):
        part.rotation_k(45)
    rng = np.random.default_rng(0)
    X = rng.random((3, 28 * 28)).astype(np.float32)
    for k in range(4):
        np.testing.assert_array_equal(part.rotate_rows(X, (28, 28), k), rot(X, (28, 28), k))
    C = rng.random((2, 3 * 32 * 32))
    got = part.rotate_rows(C, (3, 32, 32), 2)
    imgs = C.reshape(2, 3, 32, 32)
    np.testing.assert_array_equal(got.reshape(2, 3, 32, 32), imgs[:, :, ::-1, ::-1])
    assert part.MNIST_ANGLES == [0] * 7 + [90, 90, 180]
    assert part.CIFAR_ANGLES == [0] * 7 + [180] * 3


# ---- the MLP ----------------------------------------------------------------------------------
def test_mlp_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    dims = mlp.Dims(5, 4, 3)
    X = rng.normal(size=(7, 5))
    y = rng.integers(0, 3, 7)
    theta = mlp.init(dims, rng) * 3
    ce, g = mlp.loss_grad(theta, X, y, dims)
    assert g.dtype == np.float64 and g.shape == (dims.size,)
    assert ce == pytest.approx(mlp.loss(theta, X, y, dims), rel=1e-12)
    num = fd_grad(lambda t: mlp.loss(t, X, y, dims), theta)
    assert np.linalg.norm(g - num) / np.linalg.norm(num) < 1e-6


def test_mlp_cross_entropy_and_layout():
    rng = np.random.default_rng(1)
    dims = mlp.Dims(4, 3, 5)
    theta = rng.normal(size=dims.size)
    X = rng.normal(size=(6, 4))
    y = rng.integers(0, 5, 6)
    W1, b1, W2, b2 = mlp.unpack(theta, dims)
    assert np.shares_memory(W1, theta) and W1.shape == (3, 4) and W2.shape == (5, 3)
    np.testing.assert_array_equal(theta, np.concatenate([W1.ravel(), b1, W2.ravel(), b2]))
    logits = np.maximum(X @ W1.T + b1, 0) @ W2.T + b2
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert mlp.loss(theta, X, y, dims) == pytest.approx(-np.mean(np.log(p[np.arange(6), y])),
                                                        rel=1e-12)
    assert mlp.accuracy(theta, X, y, dims) == np.mean(logits.argmax(1) == y)
    big = np.array([[1000.0, 0.0], [0.0, -1000.0]])
    np.testing.assert_allclose(mlp.per_sample_ce(big, np.array([1, 1])), [1000.0, 1000.0])
    for dt in (np.float32, np.float64):                 # logits: forward's, to the bit
        Xd = X.astype(dt)
        np.testing.assert_array_equal(mlp.logits(theta, Xd, dims), mlp.forward(theta, Xd, dims)[2])
        np.testing.assert_allclose(mlp.logits(theta, Xd, dims), logits, rtol=1e-5)


def test_mlp_init_is_pytorch_default():
    dims = mlp.Dims(784, 200, 10)
    theta = mlp.init(dims, np.random.default_rng(0))
    assert theta.dtype == np.float64 and theta.size == 159010 == mlp.n_params(784, 200, 10)
    W1, b1, W2, b2 = mlp.unpack(theta, dims)
    for a, fan_in in ((W1, 784), (b1, 784), (W2, 200), (b2, 200)):
        s = 1 / math.sqrt(fan_in)
        assert np.abs(a).max() <= s
    assert np.abs(W1).max() > 0.99 / math.sqrt(784) and np.abs(W2).max() > 0.99 / math.sqrt(200)
    assert abs(W1.std() - 1 / math.sqrt(3 * 784)) < 1e-3  # uniform, not normal


def test_mlp_float32_close_to_float64():
    rng = np.random.default_rng(2)
    dims = mlp.Dims(30, 10, 4)
    X = rng.random((50, 30))
    y = rng.integers(0, 4, 50)
    theta = mlp.init(dims, rng)
    c64, g64 = mlp.loss_grad(theta, X, y, dims)
    c32, g32 = mlp.loss_grad(theta, X.astype(np.float32), y, dims)
    assert g32.dtype == np.float32
    assert c32 == pytest.approx(c64, rel=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-6)


# ---- the problem: local rounds ----------------------------------------------------------
def test_interface_and_one_full_batch_step():
    pr = build(lr=0.3)
    assert pr.m == 10 and pr.N == 1 and pr.P == 36 * 8 + 8 + 8 * 10 + 10
    assert pr.counter.dtype == np.int64 and pr.oracle_calls == 0
    assert all(c is not None and c.size < 36 for c in pr._cols)  # the reduced-column path
    theta = pr.initial(np.random.default_rng(0))
    assert theta.dtype == np.float64 and theta.shape == (pr.P,)
    thetas, L = pr.local_round(theta, np.random.default_rng(0))
    assert thetas.shape == (10, pr.P) and thetas.dtype == np.float64 and L.dtype == np.float64
    assert pr.oracle_calls == 1
    for i in range(pr.m):
        ce, g = mlp.loss_grad(theta, pr.X_train[i].astype(np.float64), pr.y_train[i], pr.dims)
        np.testing.assert_allclose(thetas[i], theta - 0.3 * g, rtol=1e-12, atol=1e-14)
        assert L[i] == pytest.approx(ce + 1e-10, rel=1e-12)  # the pre-step loss
    pr.local_round(theta)
    assert pr.oracle_calls == 2
    pr.reset_counter()
    assert pr.oracle_calls == 0


@pytest.mark.parametrize("form", ["direct", "gram"])
def test_several_full_batch_steps_and_float32(form):
    pr = build(local_steps=3, lr=0.2, local_form=form)
    assert pr.info["local_form"] == [form] * pr.m
    theta = pr.initial()
    thetas, L = pr.local_round(theta)
    for i in (0, 9):
        th, losses = theta.copy(), []
        for _ in range(3):
            ce, g = mlp.loss_grad(th, pr.X_train[i].astype(np.float64), pr.y_train[i], pr.dims)
            th -= 0.2 * g
            losses.append(ce)
        np.testing.assert_allclose(thetas[i], th, rtol=1e-12, atol=1e-14)
        assert L[i] == pytest.approx(np.mean(losses) + 1e-10, rel=1e-12)
    pr32 = build(local_steps=3, lr=0.2, dtype="float32", local_form=form)
    t32, L32 = pr32.local_round(theta)
    assert t32.dtype == np.float64
    np.testing.assert_allclose(t32, thetas, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(L32, L, rtol=1e-5)


def test_gram_form_choice_counts_flops():
    """auto takes the Gram form exactly when its flops (τ·2n²h + 4ndh) undercut τ·4ndh, and
    only for full batches: a minibatch sees other rows every step."""
    from drocli.ops import mlp_gram
    for n, d, tau in [(400, 600, 10), (1100, 600, 10), (1000, 600, 10), (80, 600, 1), (5, 3, 2)]:
        h = 7
        assert mlp_gram.worth_it(n, d, tau) == (tau * 2 * n * n * h + 4 * n * d * h
                                                < tau * 4 * n * d * h)
    pr = build(local_steps=10)       # ~23 rows of <= 16 used pixels: 230 < 288
    assert pr.info["local_form"] == ["gram" if 10 * c.size < 18 * pr._dims_loc[i].d
                                     else "direct" for i, c in enumerate(pr.y_train)]
    assert "gram" in pr.info["local_form"]
    assert build(local_steps=10, batch=5, local_form="gram").info["local_form"] == \
        ["direct"] * 10
    assert build(local_steps=1).info["local_form"] == ["direct"] * 10


def test_gram_steps_match_loss_grad_steps_with_a_varying_step():
    """mlp_gram.gd_steps = the direct loop θ -= c_t ∇CE(θ), c_t a function of CE_t (float64),
    on rows whose first layer is wide and narrow, against mlp.loss_grad."""
    from drocli.ops import mlp_gram
    rng = np.random.default_rng(3)
    for n, d in [(9, 20), (30, 4)]:
        dims = mlp.Dims(d, 6, 4)
        X, y = rng.standard_normal((n, d)), rng.integers(0, 4, n)
        theta = mlp.init(dims, rng)

        def step(ce):
            return ce * 2.0, 0.05 + 0.1 * ce

        phi = theta.copy()
        total = mlp_gram.gd_steps(phi, X, mlp_gram.kernel(X), y, dims, 4, step)
        th, want = theta.copy(), 0.0
        for _ in range(4):
            ce, g = mlp.loss_grad(th, X, y, dims)
            value, c = step(ce)
            th -= c * g
            want += value
        np.testing.assert_allclose(phi, th, rtol=1e-11, atol=1e-13)
        assert total == pytest.approx(want, rel=1e-12)
        np.testing.assert_allclose(mlp_gram.kernel(X), X @ X.T + 1.0)


def test_minibatch_mode_visits_every_sample_once_per_epoch(monkeypatch):
    pr = build(batch=7, local_steps=2, lr=0.1)
    seen = []
    real = federated.mlp.loss_grad

    def spy(theta, X, y, dims, out=None):
        seen.append(np.array(X))
        return real(theta, X, y, dims, out=out)

    monkeypatch.setattr(federated.mlp, "loss_grad", spy)
    theta = pr.initial()
    thetas, L = pr.local_round(theta, np.random.default_rng(11))
    n0 = pr.sizes_train[0]
    nb = math.ceil(n0 / 7)
    assert len(seen) == pr.m * 2 * nb
    cols = pr._cols[0]
    X0 = pr.X_train[0] if cols is None else pr.X_train[0][:, cols]
    for e in range(2):  # client 0's epochs: a permutation of its rows in batches of 7
        batches = seen[e * nb:(e + 1) * nb]
        assert [b.shape[0] for b in batches] == [7] * (nb - 1) + [n0 - 7 * (nb - 1)]
        got = np.concatenate(batches)
        np.testing.assert_array_equal(got[np.lexsort(got.T)], X0[np.lexsort(X0.T)])
    monkeypatch.setattr(federated.mlp, "loss_grad", real)
    # the same numbers as a hand-written loop drawing the permutations from the same stream
    rng = np.random.default_rng(11)
    for i in range(pr.m):
        th, losses = theta.copy(), []
        X, y = pr.X_train[i].astype(np.float64), pr.y_train[i]
        for _ in range(2):
            perm = rng.permutation(y.size)
            for j in range(0, y.size, 7):
                b = perm[j:j + 7]
                ce, g = mlp.loss_grad(th, X[b], y[b], pr.dims)
                th -= 0.1 * g
                losses.append(ce)
        np.testing.assert_allclose(thetas[i], th, rtol=1e-12, atol=1e-14)
        assert L[i] == pytest.approx(np.mean(losses) + 1e-10, rel=1e-12)


@pytest.mark.parametrize("form", ["direct", "gram"])
@pytest.mark.parametrize("M", [2.0, 10.0])  # 2: the linear branch (M - CE < 1); 10: the log one
def test_propfair_loss_and_gradient(M, form):
    pr = build(lr=0.1, local_form=form)
    theta = pr.initial()
    thetas, L = pr.local_round(theta, loss="propfair", M=M, eps0=1.0)
    X, y = pr.X_train[3].astype(np.float64), pr.y_train[3]
    ce = mlp.loss(theta, X, y, pr.dims)
    branch_linear = M - ce < 1.0
    assert branch_linear == (M == 2.0)

    def f(t):
        c = mlp.loss(t, X, y, pr.dims)
        return c / M if branch_linear else -math.log(1 - c / M)

    assert L[3] == pytest.approx(f(theta) + 1e-10, rel=1e-12)
    grad = (theta - thetas[3]) / 0.1
    num = fd_grad(f, theta)
    assert np.linalg.norm(grad - num) / np.linalg.norm(num) < 1e-6
    assert federated.propfair(1.5, 2.0) == (0.75, 0.5)
    v, s = federated.propfair(0.5, 2.0)
    assert v == pytest.approx(-math.log(0.75)) and s == pytest.approx(1 / 1.5)


def test_local_round_argument_errors():
    pr = build(batch=5)
    theta = pr.initial()
    with pytest.raises(DrocliError, match="PropFair"):
        pr.local_round(theta, np.random.default_rng(0), loss="propfair")
    with pytest.raises(DrocliError, match="unknown local loss"):
        pr.local_round(theta, np.random.default_rng(0), loss="mse")
    with pytest.raises(ValueError, match="rng"):
        pr.local_round(theta)
    assert pr.oracle_calls == 0


# ---- the problem: evaluation ------------------------------------------------------------
def test_evaluate_matches_direct_numpy():
    pr = build(partition="partial_class", classes_per_client=3)
    theta = mlp.init(pr.dims, np.random.default_rng(8)) * 4
    ev = pr.evaluate(theta, t=5)
    for split, Xs, ys in (("train", pr.X_train, pr.y_train), ("test", pr.X_test, pr.y_test)):
        losses, accs, correct, n = [], [], 0, 0
        for X, y in zip(Xs, ys, strict=True):
            W1, b1, W2, b2 = mlp.unpack(theta, pr.dims)
            lg = np.maximum(X @ W1.T + b1, 0) @ W2.T + b2
            p = np.exp(lg - lg.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            losses.append(-np.mean(np.log(p[np.arange(y.size), y])))
            hit = lg.argmax(1) == y
            accs.append(hit.mean())
            correct += hit.sum()
            n += y.size
        assert ev[f"acc_{split}"] == pytest.approx(100 * correct / n)
        assert ev[f"max_loss_{split}"] == pytest.approx(max(losses), rel=1e-6)
        assert ev[f"mean_loss_{split}"] == pytest.approx(np.mean(losses), rel=1e-6)
        assert ev[f"parity_{split}"] == pytest.approx(100 * np.sqrt(np.var(accs)))
        for i in range(pr.m):
            assert ev[f"loss_{split}_{i}"] == pytest.approx(losses[i], rel=1e-6)
            assert ev[f"acc_{split}_{i}"] == pytest.approx(100 * accs[i])
    assert ev["iteration"] == 5.0
    assert pr.oracle_calls == 0
    assert all(math.isfinite(v) for v in ev.values())


# ---- the problem: partition wiring and seeds --------------------------------------------
def test_rotation_wiring_clients_7_to_9():
    data = make_data()
    pr = build(data)
    assert pr.rot_k == [0] * 7 + [1, 1, 2]
    for i, k in ((0, 0), (6, 0), (7, 1), (8, 1), (9, 2)):
        for X, src, idx in ((pr.X_train[i], data.X_train, pr.idx_train[i]),
                            (pr.X_test[i], data.X_test, pr.idx_test[i])):
            np.testing.assert_array_equal(X, rot(src[idx], (6, 6), k))
    assert np.array_equal(pr.y_train[9], data.y_train[pr.idx_train[9]])
    assert len(set(pr.sizes_train.tolist())) == 1  # equal client sizes
    cifar = build(data, angles=part.CIFAR_ANGLES)
    assert cifar.rot_k == [0] * 7 + [2] * 3


def test_partial_class_wiring_same_classes_train_and_test():
    pr = build(partition="partial_class", classes_per_client=2)
    assert pr.classes.shape == (10, 2) and pr.rot_k == [0] * 10
    for i in range(pr.m):
        assert set(np.unique(pr.y_train[i])) == set(pr.classes[i])
        assert set(np.unique(pr.y_test[i])) == set(pr.classes[i])
        np.testing.assert_array_equal(pr.X_train[i], make_data().X_train[pr.idx_train[i]])


def test_seeds_partition_from_data_seed_and_shared_init():
    a = build(make_data(info_seed=4))
    b = build(make_data(info_seed=4))
    c = build(make_data(info_seed=5))
    d = build(make_data(info_seed=5), partition_seed=4)
    assert a.seed == 4 and c.seed == 5 and d.seed == 4
    def same(p, q):
        return all(np.array_equal(x, y) for x, y in zip(p.idx_train, q.idx_train, strict=True))

    assert same(a, b) and same(a, d) and not same(a, c)
    # init "seed": the same θ0 for every solver stream; "rng": from the solver's stream
    np.testing.assert_array_equal(a.initial(np.random.default_rng(1)),
                                  a.initial(np.random.default_rng(2)))
    assert not np.array_equal(a.initial(), c.initial())
    bare = make_data()
    bare.info = {}  # e.g. digits: no seed, no shape in info -> seed 0, square side inferred
    e = build(bare)
    assert e.seed == 0 and e.shape == (6, 6) and e.rot_k[9] == 2
    r = build(init="rng")
    assert not np.array_equal(r.initial(np.random.default_rng(1)),
                              r.initial(np.random.default_rng(2)))


def test_problem_parameter_errors():
    with pytest.raises(DrocliError, match="angles"):
        build(angles=[0, 90])
    with pytest.raises(DrocliError, match="multiples of 90"):
        build(angles=[45] * 10)
    with pytest.raises(DrocliError, match="partition"):
        build(partition="dirichlet")
    with pytest.raises(DrocliError, match="no train sample"):
        build(clients=40, angles=[0] * 40)
    with pytest.raises(DrocliError, match="classes_per_client"):
        build(partition="partial_class", classes_per_client=11)
    data = make_data()
    data.X_test = None
    with pytest.raises(DrocliError, match="no test split"):
        build(data)


def test_registry_defaults_and_family_fixture():
    entry = registry.get("problem", "federated")
    assert entry.family == "federated"
    assert entry.defaults["clients"] == 10 and entry.defaults["lr"] == 0.1
    assert entry.defaults["angles"] == part.MNIST_ANGLES
    assert entry.defaults["local_steps"] == 10 and entry.defaults["batch"] is None
    dname, dparams, pname, pparams = FAMILY_FIXTURES["federated"]
    pe = registry.get("problem", pname)
    pr = pe.func(load_source(dname, dparams), registry.resolve_params(pe, pparams))
    theta = pr.initial(np.random.default_rng(0))
    thetas, L = pr.local_round(theta, np.random.default_rng(0))
    assert np.all(np.isfinite(thetas)) and np.all(L > 0)
    ev = pr.evaluate(thetas.mean(axis=0))
    assert all(math.isfinite(v) for v in ev.values())


def test_default_mnist5k_rotation_setting():
    """The paper's MNIST rotation setting on MNIST-5k: 10 clients of 400 / 100 images."""
    pr = build(load_source("mnist5k", {}, seed=25), hidden=200, local_steps=10,
               dtype="float32")
    assert pr.seed == 25 and pr.P == 159010
    assert pr.sizes_train.tolist() == [400] * 10 and pr.sizes_test.tolist() == [100] * 10
    theta = pr.initial()
    thetas, L = pr.local_round(theta)
    assert np.all(L < 2.4) and np.all(np.isfinite(thetas))
    ev = pr.evaluate(thetas.mean(axis=0))
    assert ev["acc_test"] > 30 and ev["max_loss_train"] < 2.3
