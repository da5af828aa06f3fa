"""A small reader of IDX files (the MNIST / Fashion-MNIST format), gzipped or not.

Layout: magic = two zero bytes, a dtype code (0x08 ubyte, 0x09 sbyte, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64), the number of dimensions; then one big-endian uint32 size per
dimension; then the data, big-endian, row-major. A gzip file is recognised by its magic bytes.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from drocli.errors import DrocliError

DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
FIX = "download the file again (it is corrupt or truncated)"


def read_bytes(path: Path | str) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic; DrocliError if corrupt."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DrocliError(f"cannot read {path}: {exc.strerror or exc}", file=str(path),
                          fix="check the file's permissions") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DrocliError(f"corrupt or truncated gzip file: {exc}", file=str(path),
                              fix=FIX) from exc
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
