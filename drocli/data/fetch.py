"""Downloading the papers' data sets into the data folder (`drocli data fetch NAME`).

A file-backed data source declares its files with `downloads=Downloads(...)` in its
registration: the canonical public address written in the loader, the file names, their sizes
where known, and the checksum the data set's publisher gives (MD5 for MNIST, Fashion-MNIST
and the CIFAR archives, as torchvision checks them). Files without a published checksum (the
LIBSVM sets) are trusted on first download: their size and SHA-256 are recorded in
`<data folder>/<source>/checksums.json` and every later download is compared with them.

A download goes to `.<name>.part` in the target folder, resumes from there with an HTTP
Range request when the connection was cut, is verified, and only then renamed into place: a
wrong or partial file is never placed. Archives (the CIFAR tarballs) are verified as
downloaded, then only the members the loader reads are extracted, each checked against a size
cap and written atomically. `--mirror URL` replaces the base address and keeps the file names.

Nothing hangs, nothing overflows (issue 43): a download stops when no byte arrived for
STALL_S, when after GRACE_S it averages below MIN_RATE (a trickle), or at its deadline,
DEADLINE_BASE_S plus its expected size at DEADLINE_RATE; the expected size is the declared
one (or the first download's), else the announced Content-Length. A body is cut at
SIZE_FACTOR times the expected size, or at MAX_BYTES when no size is known. A watchdog
thread shuts the connection at a limit, so a read blocked on a silent or trickling server
(connecting, TLS, headers or body) returns at once. A download stopped by a limit removes
its partial file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import tarfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from drocli.errors import DrocliError
from drocli.results.integrity import file_digest

CHUNK = 1 << 20            # at most this much per read (a read returns what has arrived)
STALL_S = 30.0             # no byte of the body for this long (from the request on): stalled
GRACE_S = 30.0             # after this, the average since the request must reach MIN_RATE:
MIN_RATE = 1 << 10         # 1 KiB/s; below it a mirror trickles (e.g. a byte every few s)
DEADLINE_BASE_S = 60.0     # a file's deadline is this allowance plus its expected size at
DEADLINE_RATE = 16 << 10   # a slow link's 16 KiB/s (CIFAR's 170 MB: 2.9 h, MNIST's 10 MB: 11 min)
SIZE_FACTOR = 2            # a body longer than this multiple of the expected size is cut
MAX_BYTES = 64 << 20       # a body of unknown size is cut here: the only files without a
                           # declared size are the LIBSVM sets, a few MB each
POLL_S = 0.25              # the watchdog's period


def check_url(url: str, key: str = "--mirror") -> str:
    """An http(s) address with a host name (or IP address), a port in range if any, and no
    spaces or control characters, else exit 2: nothing else is ever looked up or connected
    to (an empty --mirror fell back to the canonical address; `http://[::1` raised)."""
    import urllib.parse

    ok = not any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url)
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        parts.port                              # noqa: B018 - ValueError: not a port
    except ValueError:                          # "http://[::1", a port past 65535
        ok = False
    if not (ok and parts.scheme in ("http", "https") and _HOST.fullmatch(host)):
        raise DrocliError(f"{url[:80]!r} is not an http(s) address", key=key,
                          fix="give a mirror such as https://host/path/ (no spaces)")
    return url


# a host name (letters, digits, '-', '_', dots) or an IPv4 / IPv6 address (brackets removed)
_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*")


MAX_MEMBER = 256 << 20        # an archive member larger than this is not one of the papers'


@dataclass(frozen=True)
class Remote:
    """One downloadable file: its name in the data folder, the publisher's checksum and its
    size in bytes where known."""

    name: str
    md5: str | None = None
    size: int | None = None          # bytes, where known: sets the download's cap and deadline
    extract: tuple[str, ...] = ()    # archive members to place (by their base names)


@dataclass(frozen=True)
class Downloads:
    """A source's canonical base address and files."""

    base: str
    files: tuple[Remote, ...]
    homepage: str = ""
    folder: str = ""                 # subfolder of the data folder; default: the source name

    def url(self, remote: Remote, mirror: str | None = None) -> str:
        return (self.base if mirror is None else mirror).rstrip("/") + "/" + remote.name


def _progress(total: int | None, name: str, start: int):
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=start, unit="B", unit_scale=True, desc=name,
                file=sys.stderr, dynamic_ncols=True)


class _Watch:
    """One download's time limits, enforced by a thread: at the first one reached it shuts
    the download's connections, so that a read blocked on a silent or trickling server
    returns at once and the download stops with `reason`."""

    def __init__(self, expected: int):
        self.start = self.last = time.monotonic()
        self.got = 0                               # body bytes received by this download
        self.deadline_s = DEADLINE_BASE_S + expected / DEADLINE_RATE
        self.reason: str | None = None
        self._socks: list[socket.socket] = []      # a duplicate of each connection's socket
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drocli-fetch-watch",
                                        daemon=True)
        self._thread.start()

    def progress(self, n: int) -> None:
        self.got += n
        self.last = time.monotonic()

    def check(self) -> str | None:
        """The limit reached, if any (the reader checks after each read as well)."""
        if self.reason is None:
            now = time.monotonic()
            t = now - self.start
            if now - self.last >= STALL_S:
                self.reason = f"no data for {STALL_S:g} s"
            elif t >= GRACE_S and self.got < MIN_RATE * t:
                self.reason = f"below {MIN_RATE} bytes/s on average after {t:.0f} s"
            elif t >= self.deadline_s:
                self.reason = f"not done by its deadline ({self.deadline_s:.0f} s)"
        return self.reason

    def stop(self, reason: str) -> None:
        """Stop for a reason of the reader's (a body past its cap)."""
        self.reason = self.reason or reason

    def _run(self) -> None:
        while not self._done.wait(POLL_S):
            if self.check():
                self._shut()

    def _shut(self) -> None:
        for sock in list(self._socks):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def connect(self, create):
        """http.client's socket factory `create`, with each socket it makes watched (a
        duplicate is kept: TLS detaches the original, and a shutdown acts on both)."""
        def watched(*args, **kwargs):
            sock = create(*args, **kwargs)
            self._socks.append(sock.dup())
            if self.reason:
                self._shut()
            return sock
        return watched

    def close(self) -> None:
        self._done.set()
        self._thread.join()
        for sock in self._socks:
            sock.close()


def _opener(watch: _Watch) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies, redirects, TLS as usual), every connection watched."""
    class Watched:
        def do_open(self, http_class, req, **kwargs):
            def connection(host, **args):
                conn = http_class(host, **args)
                # http.client's replaceable socket factory (an instance attribute)
                conn._create_connection = watch.connect(conn._create_connection)
                return conn
            return super().do_open(connection, req, **kwargs)

    return urllib.request.build_opener(
        type("WatchedHTTP", (Watched, urllib.request.HTTPHandler), {}),
        type("WatchedHTTPS", (Watched, urllib.request.HTTPSHandler), {}))


def download(url: str, target: Path, quiet: bool = False, size: int | None = None) -> Path:
    """`url` into `target.parent/.target.part`, resuming a partial one; returns the part.
    `size` is the file's expected size if known (its cap and deadline then follow from it).
    A limit reached (see the module's docstring) removes the part; a cut connection keeps it
    for the next run to resume."""
    check_url(url)
    part = target.with_name(f".{target.name}.part")
    cap = SIZE_FACTOR * size if size else MAX_BYTES
    watch = _Watch(size or cap)
    try:
        return _download(url, target, part, size, cap, watch, quiet)
    except DrocliError:
        if watch.reason:
            part.unlink(missing_ok=True)
        raise
    finally:
        watch.close()


def _download(url: str, target: Path, part: Path, size: int | None, cap: int, watch: _Watch,
              quiet: bool) -> Path:
    import http.client

    def stopped() -> DrocliError:
        return DrocliError(f"download stopped: {watch.reason}, after {watch.got} bytes; the "
                           "partial file was removed", file=url,
                           fix=f"give another --mirror URL, or download the file yourself "
                               f"and place it as {target}")

    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "drocli"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:   # the socket timeout is a backstop: the watchdog stops a silent server first
        resp = _opener(watch).open(req, timeout=STALL_S + 4 * POLL_S)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:           # already complete
            return part
        raise DrocliError(f"download failed: HTTP {e.code} {e.reason}", file=url,
                          fix="check the address, or give --mirror URL") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        if watch.check():
            raise stopped() from None
        reason = getattr(e, "reason", None) or f"{type(e).__name__}: {e}"
        raise DrocliError(f"download failed: {str(reason)[:120]}", file=url,
                          fix="check the address and the network, or give --mirror URL; "
                              "re-running resumes") from None
    with resp:
        # a 206 counts as a resume only when it starts where the part ends: a server that
        # answers 206 from byte 0 sends the whole file, which must not be appended
        rng = resp.headers.get("Content-Range", "")
        resumed = bool(have) and resp.status == 206 and rng.startswith(f"bytes {have}-")
        if not resumed:
            have = 0
        length = resp.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        limit = (f"{SIZE_FACTOR} x its expected {size} bytes" if size else
                 f"{MAX_BYTES >> 20} MiB, the cap for a file of unknown size")
        if total is not None and total > cap:
            watch.stop(f"the server announces {total} bytes, more than {limit}")
            raise stopped()
        if size is None and total is not None:
            watch.deadline_s = DEADLINE_BASE_S + total / DEADLINE_RATE
        bar = None if quiet else _progress(total, target.name, have)
        try:
            with open(part, "ab" if resumed else "wb") as fh:
                while True:
                    try:
                        block = resp.read1(CHUNK)
                    except (OSError, ValueError, http.client.HTTPException) as e:
                        if watch.check():
                            raise stopped() from None
                        raise DrocliError(f"download interrupted after {fh.tell()} bytes "
                                          f"({type(e).__name__})", file=url,
                                          fix="re-run the same command: it resumes") from None
                    if fh.tell() + len(block) > cap:
                        watch.stop(f"the file exceeds {limit}")
                    elif block:
                        fh.write(block)
                        watch.progress(len(block))
                        if bar is not None:
                            bar.update(len(block))
                    if watch.check():       # also after a shut connection's empty read
                        raise stopped()
                    if not block:
                        break
                got = fh.tell()
        finally:
            if bar is not None:
                bar.close()
    if total is not None and got < total:
        raise DrocliError(f"download interrupted after {got} of {total} bytes", file=url,
                          fix="re-run the same command: it resumes")
    return part


def _known(folder: Path) -> dict:
    path = folder / "checksums.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _expected(remote: Remote, folder: Path) -> int | None:
    """The file's size: declared, else recorded at its first download, else unknown."""
    seen = _known(folder).get(remote.name)
    size = remote.size or (seen.get("size") if isinstance(seen, dict) else None)
    return size if isinstance(size, int) and size > 0 else None


def _verify(part: Path, remote: Remote, folder: Path, url: str) -> dict | None:
    """Raise (and drop the part) on a checksum mismatch; the record to keep for a file
    trusted on first download."""
    if remote.md5:
        got = file_digest(part, "md5")
        if got != remote.md5:
            part.unlink()
            raise DrocliError(f"checksum mismatch for {remote.name}: MD5 {got}, the publisher "
                              f"gives {remote.md5}; nothing was placed", file=url,
                              fix="download again, or from another --mirror")
        return None
    record = {"size": part.stat().st_size, "sha256": file_digest(part, "sha256")}
    seen = _known(folder).get(remote.name)
    if seen and seen != record:
        part.unlink()
        raise DrocliError(f"{remote.name} differs from its first download (size "
                          f"{record['size']} vs {seen['size']}, sha256 {record['sha256'][:12]} "
                          f"vs {seen['sha256'][:12]}); nothing was placed", file=url,
                          fix=f"if the publisher changed the file, delete its entry in "
                              f"{folder / 'checksums.json'} and fetch again")
    return record


def _extract(archive: Path, members: tuple[str, ...], folder: Path) -> None:
    """Place the named members (by base name) of a verified tar archive into `folder`."""
    from drocli.results.records import atomic_write

    want = set(members)
    found = set()
    try:
        with tarfile.open(archive) as tar:
            for info in tar:
                base = info.name.rsplit("/", 1)[-1]
                if base not in want or not info.isfile():
                    continue
                if info.size > MAX_MEMBER:
                    raise DrocliError(f"archive member {info.name} is {info.size} bytes",
                                      file=str(archive), fix="download the archive again")
                src = tar.extractfile(info)
                atomic_write(folder / base, lambda fh, src=src: fh.write(src.read()))
                found.add(base)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DrocliError(f"cannot read the archive: {e}", file=str(archive),
                          fix="delete it and fetch again") from None
    missing = sorted(want - found)
    if missing:
        raise DrocliError(f"the archive lacks {', '.join(missing)}", file=str(archive),
                          fix="download the archive again")


def fetch(source: str, downloads: Downloads, folder: Path, *, mirror: str | None = None,
          only: tuple[str, ...] = (), quiet: bool = False, log=print) -> list[Path]:
    """Download, verify and place the source's files (or `only` those) into `folder`; a
    folder this call made is removed again if it fails before anything lands in it."""
    names = {r.name for r in downloads.files}
    unknown = [n for n in only if n not in names]
    if unknown:
        from drocli.errors import did_you_mean

        raise DrocliError(f"{source} has no file {unknown[0]!r}", key="--file",
                          fix=did_you_mean(unknown[0], names))
    if mirror is not None:          # refused before any folder is made or host looked up
        check_url(mirror)
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _fetch_into(downloads, folder, mirror, only, quiet, log)
    except BaseException:
        if made and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise


def _fetch_into(downloads: Downloads, folder: Path, mirror, only, quiet, log) -> list[Path]:
    placed = []
    for remote in downloads.files:
        if only and remote.name not in only:
            continue
        target = folder / remote.name
        url = downloads.url(remote, mirror)
        if target.exists():
            log(f"{target}: present")
        else:
            part = download(url, target, quiet=quiet, size=_expected(remote, folder))
            record = _verify(part, remote, folder, url)
            os.replace(part, target)
            if record is not None:
                known = _known(folder)
                known.setdefault(remote.name, record)
                from drocli.results.records import atomic_write_text

                atomic_write_text(folder / "checksums.json",
                                  json.dumps(known, indent=1, sort_keys=True) + "\n")
            log(f"{target}: downloaded and verified")
        if remote.extract:
            _extract(target, remote.extract, folder)
            log(f"{folder}: extracted {', '.join(remote.extract)}")
        placed.append(target)
    return placed
