"""Client partitioners of paper 003's fair federated learning (docs/papers/003.md §3.2.1, pitfall
15).

All functions are pure numpy and take an explicit `np.random.Generator`.

- Chunking [CODE]: the indices of every class are shuffled and cut into m equal chunks;
  the remainder (n_c mod m) is dropped (divmod floor). Chunk i of class c goes to client i.
- Rotation [PAPER App. B.2 + CODE]: client i gets chunk i of EVERY class (balanced classes,
  equal client sizes), and its images are rotated by angles[i] degrees: np.rot90 on the
  (H, W) axes with k = angle / 90. MNIST: clients 0-6 at 0°, 7-8 at 90°, 9 at 180°;
  CIFAR-10: clients 0-6 at 0°, 7-9 at 180°.
- Partial class C [PAPER App. B.2 + CODE]: every client independently draws C distinct classes
  (rng.choice without replacement); client i gets chunk i of each of its C classes only.
  Classes may repeat across clients and some class may be unused.
- Train and test sets are partitioned the same way: the same rotation per client and the
  SAME class choice per client (drawn once, `draw_classes`, and used for both splits).

Order of the random draws in `partition` (fixed so that a seed gives one partition):
partial class only: the (m, C) class choice (client 0 first); then the train chunks (one
permutation per class, class 0 first); then the test chunks likewise.
"""

from __future__ import annotations

import numpy as np

MNIST_ANGLES = [0] * 7 + [90, 90, 180]
CIFAR_ANGLES = [0] * 7 + [180] * 3
SCHEMES = ("rotation", "partial_class")


def _n_classes(y: np.ndarray, n_classes: int | None) -> int:
    return int(n_classes) if n_classes is not None else (int(y.max()) + 1 if y.size else 0)


def class_chunks(y, m: int, rng: np.random.Generator,
                 n_classes: int | None = None) -> list[list[np.ndarray]]:
    """chunks[c][i]: chunk i (of m, equal size n_c // m) of the shuffled indices of class c.

    One permutation per class, class 0 first; the last n_c mod m shuffled indices are dropped.
    """
    y = np.asarray(y)
    out = []
    for c in range(_n_classes(y, n_classes)):
        perm = rng.permutation(np.flatnonzero(y == c))
        size = perm.size // m
        out.append([perm[i * size:(i + 1) * size] for i in range(m)])
    return out


def _gather(chunks: list[list[np.ndarray]], classes_of) -> list[np.ndarray]:
    """Client i's indices (ascending): chunk i of each class in classes_of(i)."""
    m = len(chunks[0]) if chunks else 0
    parts = []
    for i in range(m):
        pieces = [chunks[c][i] for c in classes_of(i)]
        parts.append(np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, np.int64))
    return parts


def rotation(y, m: int = 10, rng: np.random.Generator | None = None,
             n_classes: int | None = None) -> list[np.ndarray]:
    """m index arrays: client i gets chunk i of every class (equal sizes, balanced classes)."""
    if rng is None:
        raise ValueError("rotation needs an explicit np.random.Generator")
    chunks = class_chunks(y, m, rng, n_classes)
    return _gather(chunks, lambda i: range(len(chunks)))


def draw_classes(m: int, n_classes: int, C: int, rng: np.random.Generator) -> np.ndarray:
    """(m, C) int array: row i = client i's C distinct classes (uniform, without replacement)."""
    if not 1 <= C <= n_classes:
        raise ValueError(f"classes per client must lie in 1..{n_classes}, got {C}")
    return np.stack([rng.choice(n_classes, size=C, replace=False) for _ in range(m)]) \
        if m else np.zeros((0, C), np.int64)


def partial_class(y, m: int = 10, C: int = 2, rng: np.random.Generator | None = None,
                  classes: np.ndarray | None = None,
                  n_classes: int | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """(m index arrays, (m, C) classes): client i gets chunk i of each of its C classes.

    `classes` (from `draw_classes`) is drawn here when not given; pass the train split's
    classes to partition the test split with the same choice.
    """
    if rng is None:
        raise ValueError("partial_class needs an explicit np.random.Generator")
    y = np.asarray(y)
    K = _n_classes(y, n_classes)
    if classes is None:
        classes = draw_classes(m, K, C, rng)
    classes = np.asarray(classes)
    chunks = class_chunks(y, m, rng, K)
    return _gather(chunks, lambda i: classes[i]), classes


def partition(y_train, y_test, scheme: str, m: int, rng: np.random.Generator, C: int = 2,
              n_classes: int | None = None):
    """(train index arrays, test index arrays, classes (m, C) or None) for `scheme`.

    The same class choice is used for both splits (module docstring for the draw order).
    """
    K = n_classes if n_classes is not None else max(_n_classes(np.asarray(y_train), None),
                                                    _n_classes(np.asarray(y_test), None))
    if scheme == "rotation":
        return rotation(y_train, m, rng, K), rotation(y_test, m, rng, K), None
    if scheme == "partial_class":
        classes = draw_classes(m, K, C, rng)
        tr, _ = partial_class(y_train, m, C, rng, classes=classes, n_classes=K)
        te, _ = partial_class(y_test, m, C, rng, classes=classes, n_classes=K)
        return tr, te, classes
    raise ValueError(f"unknown partition scheme {scheme!r} (known: {', '.join(SCHEMES)})")


def rotation_k(angle) -> int:
    """k of np.rot90 for an angle in degrees (a multiple of 90), in 0..3."""
    a = float(angle)
    if a != round(a) or int(round(a)) % 90:
        raise ValueError(f"rotation angles must be multiples of 90 degrees, got {angle}")
    return (int(round(a)) // 90) % 4


def rotate_rows(X: np.ndarray, shape, k: int) -> np.ndarray:
    """Rows of X (n, prod(shape)) as images of `shape`, np.rot90 by k on the last two axes
    (the (H, W) axes of (H, W) or (C, H, W)), flattened back; a contiguous copy."""
    k = int(k) % 4
    X = np.asarray(X)
    if k == 0:
        return np.ascontiguousarray(X).copy()
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        raise ValueError(f"cannot rotate images of shape {shape}: need (H, W) or (C, H, W)")
    imgs = X.reshape((X.shape[0],) + shape)
    rot = np.rot90(imgs, k=k, axes=(imgs.ndim - 2, imgs.ndim - 1))
    return np.ascontiguousarray(rot).reshape(X.shape[0], -1)
