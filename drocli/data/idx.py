"""A small reader of IDX files (the MNIST / Fashion-MNIST format), gzipped or not.

Layout: magic = two zero bytes, a dtype code (0x08 ubyte, 0x09 sbyte, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64), the number of dimensions; then one big-endian uint32 size per
dimension; then the data, big-endian, row-major. A gzip file is recognised by its magic bytes.

`read_image_splits` reads the four files of an MNIST-style release (train / t10k images and
labels), validated and cached, for the mnist and fashion_mnist sources.
"""

from __future__ import annotations

import gzip
import io
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from drocli.data.cache import cached_arrays, resolve
from drocli.errors import DrocliError

DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
FIX = "download the file again (it is corrupt or truncated)"
IMAGE_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
IMAGE_NAMES = tuple(n for pair in IMAGE_FILES.values() for n in pair)


MAX_BYTES = 256 << 20     # the largest file of the papers' sets (CIFAR-100 train) is 150 MiB


def read_bytes(path: Path | str, limit: int = MAX_BYTES) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic; DrocliError if corrupt,
    or if the file (decompressed) exceeds `limit` bytes: a gzip bomb is stopped after `limit`
    bytes, not expanded."""
    path = Path(path)
    too_big = (f"larger than {limit >> 20} MiB (decompressed): not a file of this data set",
               "download the file again from the data set's address")
    from drocli.results.files import read_bytes as read_regular

    try:               # a regular file only (a FIFO or a device is refused), capped
        raw = read_regular(path, limit, too_large=too_big[0], too_large_fix=too_big[1],
                           fix="give the data set's file")
    except OSError as exc:
        raise DrocliError(f"cannot read {path}: {exc.strerror or exc}", file=str(path),
                          fix="check the file's permissions") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(limit + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise DrocliError(f"corrupt or truncated gzip file: {exc}", file=str(path),
                              fix=FIX) from exc
        if len(raw) > limit:
            raise DrocliError(too_big[0], file=str(path), fix=too_big[1])
    return raw


def parse_idx(buf: bytes, name: str = "<bytes>") -> np.ndarray:
    """Decode an IDX byte string into a native-endian array (read-only for 1-byte types)."""
    if len(buf) < 4:
        raise DrocliError(f"truncated IDX file: {len(buf)} bytes, no header", file=name, fix=FIX)
    z0, z1, code, ndim = buf[0], buf[1], buf[2], buf[3]
    if z0 or z1 or code not in DTYPES or ndim == 0:
        raise DrocliError(f"not an IDX file: magic number 0x{buf[:4].hex()} (expected "
                          f"0x0000 + dtype code 08/09/0B/0C/0D/0E + number of dimensions)",
                          file=name, fix=FIX)
    header = 4 + 4 * ndim
    if len(buf) < header:
        raise DrocliError(f"truncated IDX header: {len(buf)} bytes, need {header} for "
                          f"{ndim} dimensions", file=name, fix=FIX)
    shape = struct.unpack(f">{ndim}I", buf[4:header])
    dtype = np.dtype(DTYPES[code])
    count = math.prod(shape)
    expected = count * dtype.itemsize
    have = len(buf) - header
    if have != expected:
        kind = "truncated" if have < expected else "corrupt"
        raise DrocliError(f"{kind} IDX file: header says shape {tuple(shape)} "
                          f"({expected} data bytes) but {have} follow", file=name, fix=FIX)
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=header).reshape(shape)
    if dtype.itemsize > 1:
        arr = arr.astype(dtype.newbyteorder("="))
    return arr


def read_idx(path: Path | str) -> np.ndarray:
    """Read an IDX file (raw or gzipped) into an array of its header's shape."""
    return parse_idx(read_bytes(path), str(path))


def idx_header(shape: tuple[int, ...], code: int = 0x08) -> bytes:
    """The IDX header for `shape` (for writing test files)."""
    return struct.pack(">BBBB", 0, 0, code, len(shape)) + struct.pack(f">{len(shape)}I", *shape)


def read_image_pair(folder: Path, img_name: str, lab_name: str, what: str,
                    n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, rows, cols) uint8, labels (n,) uint8) of one IDX image/label pair.

    `what` names the release in the fixes ("MNIST"); labels must lie in 0..n_classes-1.
    """
    img_path, lab_path = resolve(folder, img_name), resolve(folder, lab_name)
    images, labels = read_idx(img_path), read_idx(lab_path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise DrocliError(f"expected uint8 images of shape (n, rows, cols), got "
                          f"{images.dtype} {images.shape}", file=str(img_path),
                          fix=f"use the {what} image file (idx3-ubyte)")
    if labels.dtype != np.uint8 or labels.ndim != 1:
        raise DrocliError(f"expected uint8 labels of shape (n,), got {labels.dtype} "
                          f"{labels.shape}", file=str(lab_path),
                          fix=f"use the {what} label file (idx1-ubyte)")
    if labels.shape[0] != images.shape[0]:
        raise DrocliError(f"{labels.shape[0]} labels for {images.shape[0]} images",
                          file=str(lab_path), fix="use the label file of the same split")
    if labels.size and labels.max() >= n_classes:
        raise DrocliError(f"label {int(labels.max())} outside 0..{n_classes - 1}",
                          file=str(lab_path), fix=f"use the {what} label file")
    return images, labels


def read_image_splits(source: str, folder: Path, what: str, n_classes: int
                      ) -> tuple[dict[str, np.ndarray], list[Path]]:
    """The IMAGE_FILES of `folder`, validated, decoded once and cached under `source`.

    Returns ({"X_train", "y_train", "X_test", "y_test": uint8, images flattened to rows;
    "shape": the (rows, cols) of one image}, the four files' paths in IMAGE_NAMES order).
    """
    files = [resolve(folder, n) for n in IMAGE_NAMES]

    def build():
        Xtr, ytr = read_image_pair(folder, *IMAGE_FILES["train"], what, n_classes)
        Xte, yte = read_image_pair(folder, *IMAGE_FILES["test"], what, n_classes)
        if Xte.shape[1:] != Xtr.shape[1:]:
            raise DrocliError(f"test images are {Xte.shape[1:]}, train {Xtr.shape[1:]}",
                              file=str(files[2]), fix="use the files of one release")
        return {"X_train": Xtr.reshape(Xtr.shape[0], -1), "y_train": ytr,
                "X_test": Xte.reshape(Xte.shape[0], -1), "y_test": yte,
                "shape": np.asarray(Xtr.shape[1:], dtype=np.int64)}

    return cached_arrays(source, files, build, tag="idx"), files
