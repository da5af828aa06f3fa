"""Reading input files safely: regular files only, sizes capped before reading (issue 27).

A FIFO given as a spec, or a results folder whose records.csv.gz, spec.yaml or manifest.json
is a FIFO or a character device (/dev/zero, /dev/urandom), blocked drocli forever or exhausted
its memory. Every file drocli reads from the user goes through `read_bytes` (or
`open_regular`, for readers that take a file object): the path is stat-ed first (a device is
never opened), opened without blocking, checked again on the open file (it may have been
swapped in between) and read up to its cap.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from drocli.errors import DrocliError

MAX_SPEC_BYTES = 1_000_000        # a spec (drocli.spec reads it; resume hashes it)

KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str:
    for test, name in KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 1 << 20 else f"{n / (1 << 20):,.0f} MiB"


def check_regular(path, st: os.stat_result, *, fix: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise DrocliError(f"is {_kind(st.st_mode)}, not a regular file", file=str(path),
                          fix=fix)


def regular_stat(path, *, fix: str = "give a regular file") -> os.stat_result:
    """os.stat of `path` (symlinks followed); DrocliError unless it is a regular file.
    FileNotFoundError (an OSError) when it does not exist."""
    st = os.stat(path)
    check_regular(path, st, fix=fix)
    return st


LOOP_FIX = "make the link point at a real file or folder, or give the real path"


def link_loop(path) -> Path | None:
    """The symbolic link loop `path` is or lies under (`ln -s loop loop`: the shortest part
    of the path on which os.stat fails with ELOOP), else None. Path.exists() and is_dir()
    only say False for one, which read as "file not found"."""
    def loops(p) -> bool:
        try:
            os.stat(p)
        except OSError as e:
            return e.errno == errno.ELOOP
        except ValueError:         # a NUL in the path
            return False
        return False

    path = Path(path)
    if not loops(path):
        return None
    return next((p for p in [*reversed(path.parents), path] if loops(p)), path)


def refuse_link_loop(*paths) -> None:
    """DrocliError naming the first of `paths` that is (or lies under) a symbolic link loop;
    called before a "not found" error so that the message says what is wrong."""
    for path in paths:
        at = link_loop(path)
        if at is None:
            continue
        where = "" if at == Path(path) else f"lies under {at}, which "
        raise DrocliError(f"{where}is a symbolic link loop (ELOOP: the link leads back to "
                          "itself)", file=str(path), fix=LOOP_FIX)


def named(path, e: OSError) -> OSError:
    """`e` with `path` as its file name when it has none: a read of an open file (os.read on
    /proc/self/mem: "Input/output error") raised it without one, and the error line named
    no file."""
    if e.filename is not None:
        return e
    return OSError(e.errno, e.strerror or str(e), str(path))


def is_special(path) -> bool:
    """`path` exists and is not a regular file (a FIFO, a device, a socket, a folder)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_bytes(path, limit: int, *, fix: str = "give a regular file",
               too_large: str | None = None, too_large_fix: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; DrocliError (with
    the path) for anything that is not a regular file or is larger than `limit`. OSError as
    open() raises it (missing file, permissions)."""
    path = Path(path)
    big = too_large or "is too large"
    big_fix = too_large_fix or fix
    st = regular_stat(path, fix=fix)                  # never open a device or a FIFO
    if st.st_size > limit:
        raise DrocliError(f"{big} ({_size(st.st_size)}; the limit is {_size(limit)})",
                          file=str(path), fix=big_fix)
    fd = _open_checked(path, fix)
    try:
        chunks, total = [], 0
        while total <= limit:
            block = os.read(fd, min(1 << 20, limit + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
    except OSError as e:                              # EIO: named, as open() names it
        raise named(path, e) from e
    finally:
        os.close(fd)
    if total > limit:                                 # it grew while being read
        raise DrocliError(f"{big} (more than {_size(limit)})", file=str(path), fix=big_fix)
    return b"".join(chunks)


def _open_checked(path, fix: str) -> int:
    """A read-only descriptor of `path`, opened without blocking (a FIFO swapped in after
    the stat cannot block) and checked again on the open file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise named(path, e) from e
    try:
        check_regular(path, os.fstat(fd), fix=fix)    # swapped since the stat
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path, limit: int | None, *, fix: str = "give a regular file",
                 too_large: str | None = None, too_large_fix: str | None = None):
    """The regular file at `path` opened for reading in binary, for readers that take a
    file object: checked as `read_bytes` checks it, its size capped at `limit` before
    opening (None: the caller bounds what it reads, as an .npz whose members are read
    lazily and checked against their declared sizes)."""
    st = regular_stat(path, fix=fix)
    if limit is not None and st.st_size > limit:
        raise DrocliError(f"{too_large or 'is too large'} ({_size(st.st_size)}; the limit is "
                          f"{_size(limit)})", file=str(path), fix=too_large_fix or fix)
    return os.fdopen(_open_checked(path, fix), "rb")


def read_text(path, limit: int, **kw) -> str:
    """`read_bytes` decoded as UTF-8 (UnicodeDecodeError as bytes.decode raises it)."""
    return read_bytes(path, limit, **kw).decode("utf-8")
