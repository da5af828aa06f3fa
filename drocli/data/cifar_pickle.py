"""Reading one pickle of the CIFAR python releases (CIFAR-10 batches, CIFAR-100 train / test).

Each file is a pickled dict with keys b'data' (uint8, N x 3072, channel-major: 1024 red,
1024 green, 1024 blue, each 32x32 row-major) and a label list (b'labels' in CIFAR-10,
b'fine_labels' in CIFAR-100), gzipped or not. The pickles are read with an unpickler that only
admits numpy arrays and plain containers.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

from drocli.data.cache import resolve
from drocli.data.idx import read_bytes
from drocli.errors import DrocliError

D = 3072

_SAFE = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
}


class _Unpickler(pickle.Unpickler):
    """Admits only what a CIFAR pickle needs (numpy arrays, lists, dicts, bytes, ints)."""

    def find_class(self, module, name):
        if (module, name) not in _SAFE:
            raise pickle.UnpicklingError(f"refusing global {module}.{name}")
        if module.startswith("numpy.core"):  # numpy >= 2 moved numpy.core to numpy._core
            try:
                return super().find_class("numpy._core" + module[len("numpy.core"):], name)
            except (ImportError, AttributeError):
                pass
        return super().find_class(module, name)


def read_cifar_pickle(folder: Path, name: str, *, label_key: str, n_classes: int, what: str,
                      fix: str) -> tuple[np.ndarray, np.ndarray]:
    """(data (n, 3072) uint8, labels (n,) int64) of the pickle `name` in `folder`, validated.

    `label_key` is the (str) name of the label list ("labels", "fine_labels"), `what` the
    release named in the errors ("CIFAR-10"); every error names the file and carries `fix`.
    """
    path = resolve(folder, name)
    key = label_key.encode()
    word = label_key.replace("_", " ")  # "labels", "fine labels"
    try:
        obj = _Unpickler(io.BytesIO(read_bytes(path)), encoding="bytes").load()
    except DrocliError:
        raise
    except Exception as exc:  # any unpickling failure: not a CIFAR file
        raise DrocliError(f"cannot read as a {what} python pickle: {exc}", file=str(path),
                          fix=fix) from exc
    if not isinstance(obj, dict):
        raise DrocliError(f"expected a pickled dict, got {type(obj).__name__}",
                          file=str(path), fix=fix)
    missing = [k.decode() for k in (b"data", key) if k not in obj]
    if missing:
        found = ", ".join(sorted(k.decode() if isinstance(k, bytes) else str(k) for k in obj))
        raise DrocliError(f"missing key(s) {', '.join(missing)} (found: {found or 'none'})",
                          file=str(path), key=missing[0], fix=fix)
    data = obj[b"data"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != D:
        desc = (f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray)
                else type(data).__name__)
        raise DrocliError(f"b'data' must be uint8 of shape (n, {D}), got {desc}",
                          file=str(path), key="data", fix=fix)
    try:
        labels = np.asarray(obj[key], dtype=np.int64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DrocliError(f"b'{label_key}' is not a list of integers: {exc}", file=str(path),
                          key=label_key, fix=fix) from exc
    if labels.shape[0] != data.shape[0]:
        raise DrocliError(f"{labels.shape[0]} {word} for {data.shape[0]} images",
                          file=str(path), key=label_key, fix=fix)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise DrocliError(f"{word} must lie in 0..{n_classes - 1}, got "
                          f"{labels.min()}..{labels.max()}", file=str(path), key=label_key,
                          fix=fix)
    return data, labels
