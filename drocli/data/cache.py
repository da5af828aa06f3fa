"""Where real data sets live, an on-disk cache of decoded arrays, and shared loader helpers.

Data folder: `$DROCLI_DATA` if set, else `platformdirs.user_cache_dir("drocli")`. Each source
has a subfolder named after it (`$DROCLI_DATA/cifar100/`, `$DROCLI_DATA/fashion_mnist/`).
Search order of `find_files`: the explicit `data.params.path` if given (and then only it),
else `$DROCLI_DATA/<source>/`, then the source's system folders (e.g. a Debian package).

Decoded raw arrays (before preprocessing, which is cheap) can be cached as .npy files under
`<data folder>/cache/<source>/`, keyed by the source files' path, mtime and size; entries are
written atomically (a temporary folder renamed into place) and memory-mapped on load.
Set DROCLI_NO_CACHE=1 to disable the cache. A cache that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from drocli.data.base import GroupedData
from drocli.errors import DrocliError

ENV = "DROCLI_DATA"
PATH_KEY = "data.params.path"
CACHE_VERSION = "1"


# ---- folders ------------------------------------------------------------------------------
def data_dir() -> Path:
    """`$DROCLI_DATA`, else the user cache folder of drocli (not created here)."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("drocli"))


def cache_dir(sub: str) -> Path:
    """`<data folder>/cache/<sub>/`, created on demand."""
    path = data_dir() / "cache" / sub
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(folder: Path | str, name: str) -> Path | None:
    """`folder/name`, else `folder/name.gz`, else None. DrocliError (with its path) when one
    of them is there but is not a regular file: a FIFO or a device where the data file
    should be is refused by name (it read as "not found"; opened, it would block the load
    or exhaust memory)."""
    from drocli.results.files import is_special, regular_stat

    folder = Path(folder)
    for cand in (folder / name, folder / f"{name}.gz"):
        if cand.is_file():
            return cand
        if is_special(cand):
            regular_stat(cand, fix="put the data set's file there instead")
    return None


def _fmt_names(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def find_files(source: str, candidates: list[Path | str], names: list[str], *, path: str = "",
               what: str = "", archive: str = "", subdirs: Iterable[str] = ()) -> Path:
    """The first folder holding every name in `names` (each possibly with a `.gz` suffix).

    Searched: `path` (the explicit data.params.path) alone when given; otherwise
    `$DROCLI_DATA/<source>/` and then `candidates` (system folders). Each folder's `subdirs`
    (e.g. the folder a release archive extracts to) are tried right after it.
    Raises DrocliError naming the folders searched, the missing files and where to put them.
    """
    what = what or source
    if path:
        explicit = Path(os.path.expanduser(str(path)))
        if explicit.is_file():
            raise DrocliError(f"{explicit} is a file; it must be the folder holding "
                              f"{_fmt_names(names)}", key=PATH_KEY,
                              fix=f"set data.params.path to {explicit.parent}"
                                  + (f" after extracting {explicit.name}" if archive else ""))
        roots = [explicit]
    else:
        roots = [data_dir() / source] + [Path(os.path.expanduser(str(c))) for c in candidates
                                         if str(c)]
    searched: list[Path] = []
    partial: list[str] = []
    archives: list[Path] = []
    for root in roots:
        for folder in [root] + [root / s for s in subdirs if s != root.name]:
            if folder in searched:
                continue
            searched.append(folder)
            if not folder.is_dir():
                continue
            have = [n for n in names if resolve(folder, n) is not None]
            if len(have) == len(names):
                return folder
            if have:
                lack = [n for n in names if n not in have]
                partial.append(f"{folder} lacks {_fmt_names(lack)}")
            if archive and (folder / archive).is_file():
                archives.append(folder / archive)
    where = ", ".join(str(f) for f in searched)
    msg = f"{what} files {_fmt_names(names)} not found in {where}"
    if partial:
        msg += " (" + "; ".join(partial) + ")"
    target = roots[0]
    if archives:
        fix = (f"extract the archive: tar xzf {archives[0]} -C {archives[0].parent}")
    elif archive:
        fix = (f"download {archive} and extract it into {target}/"
               + ("" if path else f" (${ENV}/{source}/) or pass data.params.path"))
    else:
        fix = (f"put {_fmt_names(names)} (or their .gz) into {target}/"
               + ("" if path else f" (${ENV}/{source}/) or pass data.params.path"))
    raise DrocliError(msg, key=PATH_KEY, fix=fix)


# ---- cache of decoded arrays ----------------------------------------------------------------
def _stamp(files: Iterable[Path]) -> tuple[str, str]:
    where, when = hashlib.sha256(), hashlib.sha256()
    for f in files:
        st = os.stat(f)
        name = str(Path(f).resolve())  # a file swapped for its .gz replaces the entry
        where.update(name.removesuffix(".gz").encode() + b"\0")
        when.update(f"{st.st_mtime_ns}:{st.st_size};".encode())
    return where.hexdigest()[:16], when.hexdigest()[:16]


def cached_arrays(sub: str, files: list[Path], build: Callable[[], dict[str, np.ndarray]],
                  tag: str = "") -> dict[str, np.ndarray]:
    """`build()` memoised on disk, keyed by the files' path, mtime and size (and `tag`).

    Arrays come back memory-mapped read-only when cached. Cache failures never fail a load.
    """
    if os.environ.get("DROCLI_NO_CACHE", "").strip() not in ("", "0"):
        return build()
    try:
        where, when = _stamp(files)
        key = hashlib.sha256(f"{when}|{tag}|{CACHE_VERSION}".encode()).hexdigest()[:16]
        root = cache_dir(sub)
        entry = root / f"{where}-{key}"
    except OSError:
        return build()
    if entry.is_dir():
        from drocli.results.files import read_text, regular_stat

        try:           # regular files only: a FIFO in the cache blocked every later load
            names = read_text(entry / "MANIFEST", 1 << 20).split()
            for n in names:
                regular_stat(entry / f"{n}.npy")
            return {n: np.load(entry / f"{n}.npy", mmap_mode="r", allow_pickle=False)
                    for n in names}
        except (OSError, ValueError, DrocliError):
            shutil.rmtree(entry, ignore_errors=True)
    arrays = build()
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        try:
            for n, a in arrays.items():
                np.save(tmp / f"{n}.npy", np.ascontiguousarray(a), allow_pickle=False)
            (tmp / "MANIFEST").write_text("\n".join(arrays) + "\n")
            os.replace(tmp, entry)  # atomic; fails if another process won the race
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for old in root.glob(f"{where}-*"):  # stale entries of the same files
            if old != entry:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass
    return arrays


# ---- shared helpers of the image loaders ----------------------------------------------------
def per_class_subsample(labels: np.ndarray, n_per_class: int, n_classes: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Row indices (ascending) keeping at most n_per_class rows of each class.

    Classes with more rows are subsampled without replacement with `rng` (class 0 first);
    classes with at most n_per_class rows keep all of them (no random draw).
    """
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    counts = np.bincount(labels, minlength=n_classes)
    if np.all(counts <= n_per_class):
        return np.arange(labels.shape[0])
    keep = []
    start = 0
    for c in range(n_classes):
        idx = order[start:start + counts[c]]
        start += counts[c]
        if idx.size > n_per_class:
            idx = rng.choice(idx, size=n_per_class, replace=False)
        keep.append(idx)
    return np.sort(np.concatenate(keep))


def affine_features(raw: np.ndarray, scale: np.ndarray, shift: np.ndarray, bias: bool,
                    rows: np.ndarray | None = None, chunk: int = 4096) -> np.ndarray:
    """float32 (n, d [+1]) = raw[rows] * scale + shift per feature, plus a 1-column if bias.

    Filled in row chunks straight from the raw (e.g. uint8) array: no full-size temporaries.
    """
    n = raw.shape[0] if rows is None else rows.shape[0]
    d = raw.shape[1]
    scale = np.asarray(scale, dtype=np.float32).reshape(-1)
    shift = np.asarray(shift, dtype=np.float32).reshape(-1)
    out = np.empty((n, d + int(bool(bias))), dtype=np.float32)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        src = raw[lo:hi] if rows is None else raw[rows[lo:hi]]
        dst = out[lo:hi, :d]
        np.multiply(src, scale, out=dst)
        np.add(dst, shift, out=dst)
    if bias:
        out[:, d] = 1.0
    return out


def scaled_split(raw_X: np.ndarray, raw_y: np.ndarray, n_per_class: int, n_classes: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(pixel/255 float32 (n, d), int64 labels), subsampled per class (0 = all rows)."""
    y = np.asarray(raw_y, dtype=np.int64)
    rows = None
    if n_per_class:
        rows = per_class_subsample(y, n_per_class, n_classes, rng)
        if rows.size == y.size:
            rows = None
    d = raw_X.shape[1]
    X = affine_features(raw_X, np.full(d, 1.0 / 255.0), np.zeros(d), False, rows)
    return X, (y if rows is None else y[rows])


def pixel_data(name: str, raw: dict[str, np.ndarray], n_train: int, n_test: int,
               n_classes: int, seed: int, info: dict) -> GroupedData:
    """One-group (g all zeros) pixel/255 data of raw uint8 X_train / y_train / X_test / y_test.

    n_train / n_test per class (0 = all), drawn with train and test streams spawned from the
    seed; `info` is extended by n_train_per_class and n_test_per_class.
    """
    rng_tr, rng_te = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    X_tr, y_tr = scaled_split(raw["X_train"], raw["y_train"], n_train, n_classes, rng_tr)
    X_te, y_te = scaled_split(raw["X_test"], raw["y_test"], n_test, n_classes, rng_te)
    info = {**info, "n_train_per_class": np.bincount(y_tr, minlength=n_classes).tolist(),
            "n_test_per_class": np.bincount(y_te, minlength=n_classes).tolist()}
    return GroupedData(name, X_tr, y_tr, np.zeros(y_tr.size, np.int64), X_te, y_te,
                       np.zeros(y_te.size, np.int64), n_classes=n_classes, info=info)
