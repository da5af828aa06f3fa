"""Grouped data from a numpy .npz file.

Required arrays: X_train (n, d), y_train (n,), g_train (n,) (group 0..m-1 of each row).
Optional: X_test, y_test, g_test (all three or none), n_classes (scalar).
Labels: +-1 for binary (logistic) problems, integers 0..C-1 for multiclass (softmax).
Features keep the type they were stored in unless the spec names one (`dtype`): nothing is
cast behind the user's back (a float64 file used to be read as float32).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.data.checks import check_grouped
from drocli.data.npz_member import CorruptMember, read_stored
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params, added
from drocli.results.files import open_regular

REQUIRED = ("X_train", "y_train", "g_train")
OPTIONAL = ("X_test", "y_test", "g_test")
KEY = "data.params.path"


def _check(X, y, g, split, path):
    if X.ndim != 2:
        raise DrocliError(f"X_{split} must be 2-D (samples x features), got shape {X.shape}",
                          file=path, key=f"X_{split}", fix="reshape the features to (n, d)")
    n = X.shape[0]
    for name, arr in ((f"y_{split}", y), (f"g_{split}", g)):
        if arr.ndim != 1 or arr.shape[0] != n:
            raise DrocliError(f"{name} must be 1-D with {n} entries, got shape {arr.shape}",
                              file=path, key=name, fix=f"one entry per row of X_{split}")
    if n and (np.any(g < 0) or np.any(g != np.round(g))):
        raise DrocliError(f"g_{split} must hold group indices 0..m-1", file=path,
                          key=f"g_{split}", fix="number the groups 0..m-1")


def _array(z, name: str, path: str, dtype=None):
    """One array of the file; object arrays (pickles) are refused."""
    try:
        arr = z[name]
    except ValueError as exc:
        raise DrocliError(f"array {name} cannot be read without unpickling ({exc})",
                          file=path, key=name, fix="store plain numeric arrays") from None
    if arr.dtype.kind not in "biuf":
        raise DrocliError(f"array {name} has dtype {arr.dtype}, not numbers", file=path,
                          key=name, fix="store plain numeric arrays")
    return np.ascontiguousarray(arr, dtype=dtype) if dtype is not None else arr


def _features(z, name: str, path: str, dtype: str):
    """A feature matrix in the type the spec names, or as stored (floats kept, integers and
    booleans as float64, so that no value is rounded)."""
    if dtype != "stored":
        return _array(z, name, path, np.dtype(dtype))
    arr = _array(z, name, path)
    return np.ascontiguousarray(arr, dtype=arr.dtype if arr.dtype.kind == "f" else np.float64)


class NPZParams(Params):
    """A grouped data set of your own in one .npz file."""

    path: str = Field("", description="the .npz file (required): X_train, y_train, g_train "
                      "[, X_test, y_test, g_test]")
    dtype: Literal["stored", "float32", "float64"] = added(
        "stored", "the features' type: as stored in the file (integer features become "
                  "float64), or cast to the one named")


FIX_PATH = "set data.params.path to an .npz file"


def _open(path: str):
    """The .npz file opened for reading: a regular file only (a FIFO or a device given as
    the data file blocked the load or exhausted memory)."""
    try:
        return open_regular(path, None, fix=FIX_PATH)
    except FileNotFoundError:
        raise DrocliError(f"file not found: {path}", key=KEY,
                          fix="check the path (relative paths are resolved from the working "
                              "directory)") from None


def memory(params: dict) -> int:
    """Twice the arrays' size as the .npz's zip directory declares it, decompressed (the
    arrays and their sorted copies; a member cannot decompress past its declared size, so a
    small compressed file of zeros is counted as what it becomes); 0 if it cannot be read."""
    import zipfile

    try:
        with _open(os.path.expanduser(str(params["path"]))) as fh, zipfile.ZipFile(fh) as zf:
            return 2 * sum(i.file_size for i in zf.infolist())
    except (OSError, DrocliError, zipfile.BadZipFile, ValueError):
        return 0


FIX_NPZ = "write it with numpy.savez(path, X_train=..., y_train=..., g_train=...)"


class _Members:
    """The arrays of an open .npz by name: an uncompressed member read straight into its
    array (`npz_member.read_stored`), any other by numpy."""

    def __init__(self, fh, z, path: str):
        self.fh, self.z, self.path = fh, z, path
        self.files = z.files

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            arr = read_stored(self.fh, self.z.zip, name)
        except (CorruptMember, OSError) as exc:
            raise DrocliError(f"cannot read {self.path}: {exc}", key=name,
                              fix=FIX_NPZ) from None
        return self.z[name] if arr is None else arr


@contextmanager
def _npz(fh, path: str):
    """numpy.load of the open file, its failures as one line."""
    try:
        z = np.load(fh, allow_pickle=False)
    except Exception as exc:  # corrupted / not an npz
        raise DrocliError(f"cannot read {path} as .npz: {exc}", key=KEY,
                          fix=FIX_NPZ) from exc
    with z:
        yield _Members(fh, z, path) if getattr(z, "zip", None) is not None else z


@registry.data("npz", params=NPZParams, memory=memory, files=True,
               description="grouped data from a .npz file (X_train, y_train, g_train "
                           "[, X_test, y_test, g_test])")
def load(params: dict, seed: int) -> GroupedData:
    """Load arrays from params['path'] (the seed is unused: the data are fixed)."""
    path = str(params.get("path") or "")
    if not path:
        raise DrocliError("no file given", key=KEY, fix=FIX_PATH)
    path = os.path.expanduser(path)
    with _open(path) as fh, _npz(fh, path) as z:
        names = set(z.files)
        missing = [k for k in REQUIRED if k not in names]
        if missing:
            raise DrocliError(f"missing array(s) {', '.join(missing)} in {path} "
                              f"(found: {', '.join(sorted(names)) or 'none'})", file=path,
                              key=missing[0],
                              fix="save X_train, y_train and g_train with numpy.savez")
        have_test = [k for k in OPTIONAL if k in names]
        if have_test and len(have_test) != len(OPTIONAL):
            lack = [k for k in OPTIONAL if k not in names]
            raise DrocliError(f"incomplete test split in {path}: missing {', '.join(lack)}",
                              file=path, key=lack[0],
                              fix="save all of X_test, y_test, g_test, or none of them")
        X = _features(z, "X_train", path, params.get("dtype", "stored"))
        y = _array(z, "y_train", path, np.float64)
        g = _array(z, "g_train", path)
        _check(X, y, g, "train", path)
        Xt = yt = gt = None
        if have_test:
            Xt = _features(z, "X_test", path, params.get("dtype", "stored"))
            yt = _array(z, "y_test", path, np.float64)
            gt = _array(z, "g_test", path)
            _check(Xt, yt, gt, "test", path)
            if Xt.shape[1] != X.shape[1]:
                raise DrocliError(f"X_test has {Xt.shape[1]} features, X_train {X.shape[1]}",
                                  file=path, key="X_test", fix="use the same features")
        n_classes = int(_array(z, "n_classes", path)) if "n_classes" in names else None
    name = os.path.splitext(os.path.basename(path))[0]
    data = GroupedData(name, X, y, g, Xt, yt, gt, n_classes=n_classes, info={"path": path})
    check_grouped(data)          # NaN/inf, labels, groups: before n_classes is read off y
    data.g_train = g.astype(np.int64)
    data.g_test = gt.astype(np.int64) if gt is not None else None
    if n_classes is None and not np.all(np.isin(y, (-1.0, 1.0))):
        data.n_classes = int(y.max()) + 1
    return data
