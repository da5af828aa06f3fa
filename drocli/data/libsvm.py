"""LIBSVM-format binary classification data (w8a, docs/papers/002.md §3.7; the a1a/a8a/w1a/w8a
train/test pairs of docs/papers/004.md §6) and the offline stand-in of docs/papers/002.md §6
("digits_bin").

libsvm: one file in LIBSVM / svmlight format (`label idx:value ...`, 1-based indices; a `.gz`
or `.bz2` suffix is read compressed), parsed by `sklearn.datasets.load_svmlight_file` with
`n_features` columns (w8a: 300). The file `name` (e.g. "w8a", the LIBSVM train split with
n = 49,749) is looked up in data.params.path (a folder), else `$DROCLI_DATA/libsvm/`; the
parsed sparse arrays are cached (`drocli.data.cache`). libsvm_pair reads a train file and its
test file (LIBSVM names them a1a and a1a.t) for paper 004's bilevel problem. Labels are
mapped to {0, 1}: +1 -> 1 and -1 (or 0) -> 0 ([UNSPEC] §3.7: y in {0, 1}); any other
label is an error.
Features are used as they are, without an intercept ([UNSPEC] §3.7). X is dense float64
(the finite-sum kernels are dense); w8a is 49,749 x 300, 120 MB.

digits_bin (§6, preferred offline stand-in for w8a; no download): scikit-learn's bundled
8x8 digits (n = 1,797, d = 64), features binarised z_ij = 1[pixel >= threshold] (default 8,
pixels 0..16), label y = 1[digit == positive] (default 0, about 10% positives), no
intercept: sparse binary features, imbalanced labels and heterogeneous ||z_i||^2 like w8a.
"""

from __future__ import annotations

import os

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.data.cache import cached_arrays, find_files, resolve
from drocli.data.fetch import Downloads, Remote
from drocli.data.idx import MAX_BYTES, read_bytes
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params, auto

NAME = "libsvm"
KEY = "data.params"


FILE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$"   # one path component, no "." or ".."


class LIBSVMParams(Params):
    """A binary LIBSVM file (docs/papers/002.md §3.7: w8a, 300 features)."""

    name: str = Field("w8a", pattern=FILE_NAME, description="the file name in path or "
                      "$DROCLI_DATA/libsvm/ (also name.gz)")
    path: str | None = auto("folder of the file; auto: $DROCLI_DATA/libsvm/", legacy="")
    n_features: int = Field(300, ge=1, description="dense feature count (w8a: 300, a1a: 123)")


class LIBSVMPairParams(LIBSVMParams):
    """A LIBSVM train file and its test file (paper 004: a1a + a1a.t, w8a + w8a.t)."""

    name: str = Field("a1a", pattern=FILE_NAME, description="the train file name")
    test_name: str | None = auto("the test file name; auto: name + '.t'", legacy="",
                                 pattern=FILE_NAME)
    n_features: int = Field(123, ge=1, description="dense feature count (a1a: 123, w8a: 300)")


class DigitsBinParams(Params):
    """Offline stand-in for w8a (docs/papers/002.md §6): binarised digits, one digit vs the rest."""

    threshold: int | float = Field(8, gt=0, le=16, description="feature = 1[pixel >= "
                                   "threshold] (pixels run 0..16)")
    positive: int = Field(0, ge=0, le=9, description="the digit labelled 1")


def _size_memory(params: dict) -> int:
    """Dense features from the file's size: ~ 4 bytes of text per stored entry."""
    try:
        size = os.path.getsize(os.path.join(params["path"] or "", params["name"]))
    except (OSError, TypeError):
        size = 0
    rows = max(1, size // 40)
    return rows * 8 * (params["n_features"] + 1)


def _name(params: dict) -> str:
    return str(params["name"])


def locate(params: dict):
    """The file `name` (or `name.gz`) in path or $DROCLI_DATA/libsvm/ (DrocliError if absent)."""
    name = _name(params)
    folder = find_files(NAME, [], [name], path=str(params.get("path") or ""),
                        what=f"LIBSVM {name!r}")
    return resolve(folder, name)


def labels01(y: np.ndarray, file: str = "") -> np.ndarray:
    """Binary labels {-1, +1} or {0, 1} (either alone too) -> {0.0, 1.0}."""
    y = np.asarray(y, dtype=np.float64)
    have = np.unique(y)
    if not np.all(np.isin(have, (-1.0, 0.0, 1.0))) or (-1.0 in have and 0.0 in have):
        shown = ", ".join(f"{v:g}" for v in have[:6]) + (", ..." if have.size > 6 else "")
        raise DrocliError(f"binary labels expected (-1/+1 or 0/1), found {shown}",
                          file=file or None, fix="use a binary LIBSVM data set such as w8a")
    return (y > 0).astype(np.float64)


def _n_features(params: dict) -> int:
    return int(params["n_features"])


def read_text(file) -> bytes:
    """The file's text, undone from gzip or bzip2: a regular file only, capped before and
    after decompression as every data file (drocli.data.idx.read_bytes); sklearn opened
    the path itself, so a FIFO blocked the load and /dev/zero exhausted memory."""
    raw = read_bytes(file)
    if raw[:3] == b"BZh":
        import bz2

        try:
            raw = bz2.BZ2Decompressor().decompress(raw, max_length=MAX_BYTES + 1)
        except (OSError, ValueError, EOFError) as exc:
            raise DrocliError(f"corrupt or truncated bzip2 file: {exc}", file=str(file),
                              fix="download the file again") from exc
        if len(raw) > MAX_BYTES:
            raise DrocliError(f"larger than {MAX_BYTES >> 20} MiB (decompressed): not a "
                              "LIBSVM file of a paper", file=str(file),
                              fix="download the file again from the data set's address")
    return raw


def read_dense(file, nf: int) -> tuple[np.ndarray, np.ndarray]:
    """(X dense float64 (n, nf), labels {0, 1}) of one LIBSVM file; the parse is cached."""

    def build():
        import io

        from sklearn.datasets import load_svmlight_file

        text = io.BytesIO(read_text(file))
        try:
            X, y = load_svmlight_file(text, n_features=nf, dtype=np.float64)
        except ValueError as exc:
            raise DrocliError(f"cannot parse as LIBSVM with n_features={nf}: {exc}",
                              file=str(file),
                              fix="check the file and n_features (w8a: 300)") from exc
        X = X.tocsr()
        X.sort_indices()
        return {"data": X.data, "indices": X.indices.astype(np.int64),
                "indptr": X.indptr.astype(np.int64), "y": np.asarray(y, dtype=np.float64)}

    raw = cached_arrays(NAME, [file], build, tag=f"svmlight:{nf}")
    from scipy.sparse import csr_matrix

    n = raw["indptr"].shape[0] - 1
    X = csr_matrix((np.asarray(raw["data"]), np.asarray(raw["indices"]),
                    np.asarray(raw["indptr"])), shape=(n, nf)).toarray()
    return np.ascontiguousarray(X), labels01(raw["y"], str(file))


def _info(file, X: np.ndarray, y: np.ndarray) -> dict:
    n = X.shape[0]
    return {"path": str(file), "n": n, "n_features": X.shape[1], "positives": int(y.sum()),
            "nnz_per_row": float(np.count_nonzero(X) / max(n, 1))}


# The LIBSVM binary data sets of papers 002 and 004 (no checksums are published: the first
# download's size and SHA-256 are recorded and later downloads compared with them)
DOWNLOADS = Downloads(
    base="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/",
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html",
    folder=NAME,
    files=tuple(Remote(n) for n in ("a1a", "a1a.t", "a8a", "a8a.t", "w1a", "w1a.t", "w8a",
                                    "w8a.t")))

def _fetch_args(params: dict) -> list[str]:
    """`--file` options of the fetch command for this spec's files."""
    names = [_name(params)]
    if "test_name" in params:
        names.append(str(params.get("test_name") or "") or names[0] + ".t")
    return [f"--file {n}" for n in names]


@registry.data(
    NAME,
    preflight=locate,
    downloads=DOWNLOADS,
    fetch_args=_fetch_args,
    params=LIBSVMParams,
    memory=_size_memory,
    description="a binary LIBSVM-format file (e.g. w8a) from path or $DROCLI_DATA/libsvm/, "
                "labels mapped to {0, 1}, dense features, no intercept",
)
def load(params: dict, seed: int) -> GroupedData:
    """Parse (cached) the LIBSVM file and map its labels to {0, 1}; `seed` is unused."""
    nf = _n_features(params)
    file = locate(params)
    X, y = read_dense(file, nf)
    return GroupedData(_name(params), X, y, np.zeros(X.shape[0], dtype=np.int64),
                       info=_info(file, X, y))


def locate_pair(params: dict):
    """The train file `name` and the test file `test_name` (default name + ".t")."""
    test = str(params.get("test_name") or "") or _name(params) + ".t"
    return locate(params), locate({**params, "name": test})


@registry.data(
    "libsvm_pair",
    preflight=locate_pair,
    downloads=DOWNLOADS,
    fetch_args=_fetch_args,
    params=LIBSVMPairParams,
    memory=lambda params: 2 * _size_memory(params),
    description="a LIBSVM train/test pair (a1a + a1a.t, w8a + w8a.t, ...) from path or "
                "$DROCLI_DATA/libsvm/, labels {0, 1}, dense features, no intercept",
)
def load_pair(params: dict, seed: int) -> GroupedData:
    """Train split `name`, test split `test_name` (LIBSVM's a1a / a1a.t naming); `seed` unused."""
    nf = _n_features(params)
    f_tr, f_te = locate_pair(params)
    X, y = read_dense(f_tr, nf)
    Xt, yt = read_dense(f_te, nf)
    info = _info(f_tr, X, y)
    info.update(test_path=str(f_te), n_test=Xt.shape[0], positives_test=int(yt.sum()))
    return GroupedData(_name(params), X, y, np.zeros(X.shape[0], dtype=np.int64), Xt, yt,
                       np.zeros(Xt.shape[0], dtype=np.int64), info=info)


@registry.data(
    "digits_bin",
    params=DigitsBinParams,
    memory=lambda params: 1797 * (8 * 64 + 16),
    description="offline stand-in for w8a (docs/papers/002.md §6): scikit-learn's bundled digits, "
                "features 1[pixel >= threshold], label 1[digit == positive], no intercept",
)
def load_digits_bin(params: dict, seed: int) -> GroupedData:
    """Binarised digits, one digit vs the rest (module docstring); `seed` is unused."""
    thr, pos = float(params["threshold"]), params["positive"]
    from sklearn.datasets import load_digits

    X, digit = load_digits(return_X_y=True)
    Z = (np.asarray(X) >= thr).astype(np.float64)
    y = (np.asarray(digit) == pos).astype(np.float64)
    n = Z.shape[0]
    info = {"source": "sklearn.datasets.load_digits", "threshold": thr, "positive": int(pos),
            "positives": int(y.sum()), "nnz_per_row": float(Z.sum() / n)}
    return GroupedData("digits_bin", np.ascontiguousarray(Z), y, np.zeros(n, dtype=np.int64),
                       info=info)
