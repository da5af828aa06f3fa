"""Errors as one line with the path and the fix: an OSError (`os_error_line`; `_writing`
names the folder in one that carries no path, a full stdout or stderr named as such) and a
usage error that click would print in four lines (`usage_line`).
"""

from __future__ import annotations

import contextlib
import errno
import sys

import click


@contextlib.contextmanager
def _writing(folder):
    """Name `folder` (a path, or a callable giving it) in an OSError that carries no path:
    a write to an open file (disk full, a file-size limit) printed "(no path)"."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or _failed_stream(e):
            raise
        where = folder() if callable(folder) else folder
        raise OSError(e.errno, e.strerror or str(e), str(where)) from e


def _failed_stream(e: OSError) -> str | None:
    """"standard output" (or error) when `e` was raised writing it with click.echo (`drocli
    list > /dev/full`, a closed pipe): what an OSError without a path names instead of
    "(no path)"."""
    tb = e.__traceback__
    while tb is not None:
        code, names = tb.tb_frame.f_code, tb.tb_frame.f_locals
        if code.co_name == "echo" and "click" in code.co_filename:
            err = names.get("err") or names.get("file") is sys.stderr
            return "standard error" if err else "standard output"
        tb = tb.tb_next
    return None


OS_FIXES = {
    errno.ENOSPC: "free disk space, or give --out on another disk; re-running resumes",
    errno.EDQUOT: "free space in your quota, or give --out elsewhere; re-running resumes",
    errno.EACCES: "give a folder you can write (--out), or fix its permissions",
    errno.EPERM: "give a folder you can write (--out), or fix its permissions",
    errno.EROFS: "the file system is read-only: give --out on a writable one",
    errno.EFBIG: "the file exceeds the file-size limit (ulimit -f): raise it or use fewer "
                 "checkpoints",
    errno.ENOTDIR: "a part of the path is a file, not a folder: give another --out",
    errno.EISDIR: "the path is a folder where a file is expected",
    errno.ENOENT: "check the path",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.ELOOP: "a symbolic link loop (the link leads back to itself): make the link point "
                 "at a real file or folder, or give the real path",
    errno.EIO: "give a regular file (a special file such as /proc/self/mem cannot be "
               "read); if it is one, check the disk",
}


def os_error_line(e: OSError) -> str:
    """An OSError as one line with the path and the fix (a long path loses its middle)."""
    from drocli.errors import fit_line

    stream = None if e.filename is not None else _failed_stream(e)
    path = e.filename if e.filename is not None else stream
    what = e.strerror or type(e).__name__
    fix = OS_FIXES.get(e.errno, "check the path and the disk")
    if stream:
        fix = (f"{stream} goes to a full disk or a closed pipe: send it where it can be "
               "written")
    return fit_line(None if path is None else str(path), None, what, fix)


def usage_line(e: click.UsageError) -> str:
    """A usage error (a value click cannot convert, as `-j 1e400` or `--rtol abc`, an
    unknown option, a missing argument) as one line with the fix, like every other bad
    input: click printed four."""
    from drocli.errors import fit_line

    command = e.ctx.command_path if e.ctx is not None else "drocli"
    return fit_line(None, None, e.format_message(), f"see `{command} --help`")
