"""One uncompressed member of an .npz read straight into its array.

`numpy.load` reads an .npz member through `zipfile` in chunks and copies it again into the
array: at n = 1e6, d = 100 (800 MB) that is 0.5-1.2 CPU s. An array written by
`numpy.savez` is stored uncompressed, so its bytes lie in the file as they lie in memory:
`read_stored` finds them from the member's local header, checks the .npy header (a plain
numeric dtype, a shape whose size matches the member's), reads them into a new array with
one `readinto`, and checks the zip's CRC-32 of the member as `zipfile` would. It returns
None for whatever it does not handle (a compressed or encrypted member, an .npy format
version or dtype it does not read), and the caller then lets numpy read the member.
"""

from __future__ import annotations

import math
import zipfile
import zlib

import numpy as np

LOCAL_HEADER = 30
LOCAL_MAGIC = b"PK\x03\x04"


class CorruptMember(ValueError):
    """The member's bytes do not match its zip entry (CRC-32 or size)."""


def read_stored(fh, zf: zipfile.ZipFile, name: str) -> np.ndarray | None:
    """The array in member `name`.npy of the open .npz `fh` (whose directory is `zf`), or
    None when the member is not a plain stored array (see the module docstring). Raises
    CorruptMember when its bytes disagree with the zip directory."""
    try:
        info = zf.getinfo(name + ".npy")
    except KeyError:
        return None
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return None
    fh.seek(info.header_offset)
    local = fh.read(LOCAL_HEADER)
    if len(local) != LOCAL_HEADER or local[:4] != LOCAL_MAGIC:
        return None
    start = (info.header_offset + LOCAL_HEADER + int.from_bytes(local[26:28], "little")
             + int.from_bytes(local[28:30], "little"))
    fh.seek(start)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            return None
    except ValueError:
        return None
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.itemsize == 0:
        return None
    header = fh.tell() - start
    count = math.prod(shape)
    if header + count * dtype.itemsize != info.file_size:
        return None              # numpy names what is wrong with it
    fh.seek(start)
    crc = zlib.crc32(fh.read(header))
    flat = np.empty(count, dtype=dtype)
    got = fh.readinto(memoryview(flat).cast("B")) if count else 0
    if got != flat.nbytes:
        raise CorruptMember(f"member {name}.npy is truncated ({header + got} of "
                            f"{info.file_size} bytes)")
    if zlib.crc32(flat, crc) != info.CRC:
        raise CorruptMember(f"member {name}.npy fails its CRC-32 check (the file is damaged)")
    return flat.reshape(shape, order="F" if fortran else "C")
