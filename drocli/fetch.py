"""Downloading the papers' data sets into the data folder (`drocli data fetch NAME`).

A file-backed data source declares its files with `downloads=Downloads(...)` in its
registration: the canonical public address written in the loader, the file names, and the
checksum the data set's publisher gives (MD5 for MNIST, Fashion-MNIST and the CIFAR
archives, as torchvision checks them). Files without a published checksum (the LIBSVM sets)
are trusted on first download: their size and SHA-256 are recorded in
`<data folder>/<source>/checksums.json` and every later download is compared with them.

A download goes to `.<name>.part` in the target folder, resumes from there with an HTTP
Range request when it was cut, is verified, and only then renamed into place: a wrong or
partial file is never placed. Archives (the CIFAR tarballs) are verified as downloaded, then
only the members the loader reads are extracted, each checked against a size cap and written
atomically. `--mirror URL` replaces the base address and keeps the file names.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from drocli.errors import DrocliError
from drocli.integrity import file_digest

CHUNK = 1 << 20
TIMEOUT_S = 60           # per socket operation
STALL_S = 60             # no new byte for this long: the download stalled
DEADLINE_S = 6 * 3600    # one file, start to end
MAX_BYTES = 4 << 30      # a file of unknown length is cut here (the largest data set is 0.2 GB)


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
    """One downloadable file: its name in the data folder and the publisher's checksum."""

    name: str
    md5: str | None = None
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


def download(url: str, target: Path, quiet: bool = False) -> Path:
    """`url` into `target.parent/.target.part`, resuming a partial one; returns the part."""
    import http.client
    import time

    check_url(url)
    part = target.with_name(f".{target.name}.part")
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": "drocli"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(req, timeout=TIMEOUT_S)  # noqa: S310 - http(s) only
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:           # already complete
            return part
        raise DrocliError(f"download failed: HTTP {e.code} {e.reason}", file=url,
                          fix="check the address, or give --mirror URL") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
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
        cap = total if total is not None else MAX_BYTES
        bar = None if quiet else _progress(total, target.name, have)
        start = last = time.monotonic()
        try:
            with open(part, "ab" if resumed else "wb") as fh:
                while True:
                    try:
                        block = resp.read(CHUNK)
                    except (OSError, ValueError, http.client.HTTPException) as e:
                        raise DrocliError(f"download interrupted after {fh.tell()} bytes "
                                          f"({type(e).__name__})", file=url,
                                          fix="re-run the same command: it resumes") from None
                    now = time.monotonic()
                    if not block:
                        break
                    if now - last > STALL_S or now - start > DEADLINE_S:
                        raise DrocliError(f"download too slow: stalled or past "
                                          f"{DEADLINE_S // 3600} h after {fh.tell()} bytes",
                                          file=url, fix="re-run later (it resumes), or give "
                                                        "--mirror URL")
                    last = now
                    if fh.tell() + len(block) > cap:
                        raise DrocliError(f"the server sends more than the {cap} bytes "
                                          "it announced" if total is not None else
                                          f"the file exceeds {cap >> 30} GiB", file=url,
                                          fix="give another --mirror URL")
                    fh.write(block)
                    if bar is not None:
                        bar.update(len(block))
                size = fh.tell()
        finally:
            if bar is not None:
                bar.close()
    if total is not None and size < total:
        raise DrocliError(f"download interrupted after {size} of {total} bytes", file=url,
                          fix="re-run the same command: it resumes")
    return part


def _known(folder: Path) -> dict:
    path = folder / "checksums.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


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
    from drocli.records import atomic_write

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
            part = download(url, target, quiet=quiet)
            record = _verify(part, remote, folder, url)
            os.replace(part, target)
            if record is not None:
                known = _known(folder)
                known.setdefault(remote.name, record)
                from drocli.records import atomic_write_text

                atomic_write_text(folder / "checksums.json",
                                  json.dumps(known, indent=1, sort_keys=True) + "\n")
            log(f"{target}: downloaded and verified")
        if remote.extract:
            _extract(target, remote.extract, folder)
            log(f"{folder}: extracted {', '.join(remote.extract)}")
        placed.append(target)
    return placed
