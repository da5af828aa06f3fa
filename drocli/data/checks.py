"""Data checked once, in the parent, before any cell runs (file-backed sources).

A file of the user's or of a paper's data set can be malformed in ways a loader's parser
accepts: zero rows, NaN or infinite features or labels, a label outside the classes, group
indices that skip a group or point far past the data (a group index of 1e12 would make
every cell try to allocate terabytes). `check_grouped` refuses them with the file, the
array and the fix; the runner calls it for each distinct file-backed data set, so a bad file
costs one error line instead of a failure per cell.
"""

from __future__ import annotations

import weakref

import numpy as np

from drocli.data.base import GroupedData
from drocli.errors import DrocliError


def _where(data: GroupedData, name: str) -> dict:
    return {"file": str(data.info.get("path") or data.info.get("folder") or data.name),
            "key": name}


def _check_split(data: GroupedData, split: str, X, y, g) -> None:
    xn, yn, gn = f"X_{split}", f"y_{split}", f"g_{split}"
    for name, arr in ((xn, X), (yn, y), (gn, g)):
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
            kind = type(arr).__name__ if not isinstance(arr, np.ndarray) else arr.dtype
            raise DrocliError(f"{name} must be a numeric array, got {kind}",
                              **_where(data, name), fix="store plain numbers (no objects)")
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DrocliError(f"{xn} must be a non-empty (rows x features) matrix, got shape "
                          f"{X.shape}", **_where(data, xn), fix="give at least one row")
    n = X.shape[0]
    for name, arr in ((yn, y), (gn, g)):
        if arr.shape != (n,):
            raise DrocliError(f"{name} must hold one entry per row of {xn} ({n}), got shape "
                              f"{arr.shape}", **_where(data, name), fix="one entry per row")
    for name, arr in ((xn, X), (yn, y)):
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            bad = int((~np.isfinite(arr)).sum())
            raise DrocliError(f"{name} holds {bad} NaN or infinite value(s)",
                              **_where(data, name), fix="drop or impute those entries")
    if data.n_classes is not None and data.n_classes > 2:
        if np.any(y != np.round(y)) or y.min() < 0 or y.max() >= data.n_classes:
            raise DrocliError(f"{yn} must hold class indices 0..{data.n_classes - 1}, found "
                              f"{y.min():g}..{y.max():g}", **_where(data, yn),
                              fix="number the classes 0..C-1")
    if np.any(g != np.round(g)) or g.min() < 0:
        raise DrocliError(f"{gn} must hold group indices 0..m-1", **_where(data, gn),
                          fix="number the groups 0..m-1")
    if g.max() >= n:
        raise DrocliError(f"{gn} has group index {g.max():g} but only {n} rows",
                          **_where(data, gn), fix="number the groups 0..m-1, each non-empty")


def _arrays(data: GroupedData) -> tuple:
    return (data.X_train, data.y_train, data.X_test, data.y_test)


_CHECKED: dict = {}      # id(data) -> weak references to it and to the arrays it passed with
_CHECKED_SIZE = 8


def _seen(data: GroupedData) -> bool:
    """Whether these very data, with these very feature and label arrays, passed the check
    (weak references, kept here rather than on the data, which may be pickled: a replaced
    array is checked again, and nothing checked is kept alive)."""
    refs = _CHECKED.get(id(data))
    return refs is not None and refs[0]() is data and all(
        (r() if r is not None else None) is a for r, a in zip(refs[1], _arrays(data),
                                                             strict=True))


def _remember(data: GroupedData) -> None:
    _CHECKED.pop(id(data), None)
    while len(_CHECKED) >= _CHECKED_SIZE:
        _CHECKED.pop(next(iter(_CHECKED)))
    _CHECKED[id(data)] = (weakref.ref(data), tuple(weakref.ref(a) if a is not None else None
                                                   for a in _arrays(data)))


def check_grouped(data) -> None:
    """Raise DrocliError when a loaded GroupedData is malformed (see the module docstring).
    Data already checked with the same feature and label arrays pass at once (a loader
    checks what it read, and the runner's preflight checks every file-backed source: at
    n = 1e6 each check is a pass over 800 MB)."""
    if not isinstance(data, GroupedData):
        return
    if _seen(data):
        return
    _check_split(data, "train", data.X_train, data.y_train, data.g_train)
    m = int(data.g_train.max()) + 1
    present = np.unique(data.g_train.astype(np.int64))
    if present.size != m:
        missing = sorted(set(range(m)) - set(present.tolist()))[:3]
        raise DrocliError(f"g_train numbers {m} groups but group(s) {missing} have no rows",
                          **_where(data, "g_train"), fix="number the groups 0..m-1, each "
                                                         "non-empty")
    if data.X_test is not None:
        _check_split(data, "test", data.X_test, data.y_test, data.g_test)
        if data.X_test.shape[1] != data.X_train.shape[1]:
            raise DrocliError(f"X_test has {data.X_test.shape[1]} features, X_train "
                              f"{data.X_train.shape[1]}", **_where(data, "X_test"),
                              fix="use the same features in both splits")
    _remember(data)
