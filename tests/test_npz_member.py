"""An uncompressed .npz member read straight into its array (drocli.data.npz_member): the
same array numpy.load gives, in every layout numpy.savez writes, and a damaged member
refused with its file named."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from drocli.data.npz_member import CorruptMember, read_stored

ARRAYS = {
    "c64": np.arange(12.0).reshape(3, 4) / 7,
    "f32": (np.arange(6, dtype=np.float32) / 3).reshape(2, 3),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4) ** 0.5),
    "big": np.arange(5, dtype=">f8") * 1.5,
    "ints": np.array([3, -1, 7], dtype=np.int64),
    "bools": np.array([True, False, True]),
    "empty": np.zeros((0, 3)),
    "scalar": np.array(10),
}


def _read(path, name):
    with open(path, "rb") as fh, zipfile.ZipFile(fh) as zf:
        return read_stored(fh, zf, name)


def test_every_layout_reads_as_numpy_reads_it(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, **ARRAYS)
    with np.load(path) as z:
        for name in ARRAYS:
            want, got = z[name], _read(path, name)
            assert got is not None, name
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.flags.f_contiguous == want.flags.f_contiguous, name
            assert np.array_equal(got, want), name


def test_what_it_does_not_handle_is_left_to_numpy(tmp_path):
    packed = tmp_path / "packed.npz"
    np.savez_compressed(packed, X=np.ones((4, 2)))
    assert _read(packed, "X") is None                       # compressed
    objects = tmp_path / "objects.npz"
    np.savez(objects, X=np.array([{"a": 1}], dtype=object))
    assert _read(objects, "X") is None                      # a pickle: numpy refuses it
    assert _read(packed, "absent") is None


def test_a_damaged_member_fails_its_crc(tmp_path):
    path = tmp_path / "a.npz"
    X = np.arange(2000.0).reshape(200, 10)
    np.savez(path, X=X)
    raw = bytearray(path.read_bytes())
    at = raw.find(X[100].tobytes())
    assert at > 0
    raw[at + 3] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptMember, match="CRC-32"):
        _read(path, "X")


def test_the_npz_source_names_the_damaged_file(tmp_path):
    """Through the npz data source: one DrocliError naming the file, the array and a fix."""
    from drocli.errors import DrocliError
    from tests.test_data_sources import load, write_npz

    path = tmp_path / "toy.npz"
    arrs = write_npz(path)
    raw = bytearray(path.read_bytes())
    at = raw.find(arrs["X_train"][5].tobytes())
    assert at > 0
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(DrocliError) as err:
        load({"_name": "npz", "path": str(path)})
    msg = str(err.value)
    assert str(path) in msg and "X_train" in msg and "CRC-32" in msg and "fix" in msg
