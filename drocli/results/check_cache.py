"""`drocli check` answers kept by content, replayed without judging again (issue 19: start-up).

Judging a folder is deterministic: the intervals come from t quantiles and exact sign-flip
tests.
So `check` keys its whole answer (stdout, stderr, exit code) by everything it reads: the
bytes of the folder's spec.yaml, manifest.json and records (and artifacts.npz), the size and
time of its cell files, the repository's tuning specs and records, the same for the reference
folder, the options, drocli's own source and the versions of the numerical
packages. A later `check` with the same key prints the stored answer without importing
pandas, scipy or the plug-ins; any change to a byte it depends on misses and judges afresh.

Kept in $DROCLI_CACHE/check/ (default: drocli's user cache folder, as for the data,
e.g. ~/.cache/drocli);
DROCLI_CACHE=off or `check --no-cache` disables it. A cache that cannot be read or written
only costs the speed: check then judges as if there were none. Errors are never kept.

Answers are authenticated: each carries an HMAC-SHA256 under a secret key kept apart from
the cache, in drocli's user config folder (`cache.key`, created with mode 0600). Whoever
can write the cache folder but not read that key cannot forge an answer (e.g. turn a
mismatching `--reference` into MATCHES): an entry whose tag does not verify is ignored and
check judges afresh. A key file that is not a private regular file of this user disables
the cache.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from pathlib import Path

from drocli.results.integrity import RECORDS, file_digest

FILES = ("spec.yaml", "manifest.json", RECORDS, "records.csv", "artifacts.npz", "verdicts.json")
PACKAGES = ("numpy", "scipy", "pandas")
VERSION = 1     # of the stored format


def cache_dir() -> Path | None:
    """The folder of stored answers, or None when caching is off."""
    env = os.environ.get("DROCLI_CACHE")
    if env is not None and env.strip().lower() in ("", "0", "off", "no", "false"):
        return None
    if env:
        return Path(env) / "check"
    import platformdirs

    return Path(platformdirs.user_cache_dir("drocli")) / "check"


def _secret() -> bytes | None:
    """The key answers are authenticated with (made on first use); None when it cannot be
    had or is not private to this user."""
    import platformdirs

    path = Path(platformdirs.user_config_dir("drocli")) / "cache.key"
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(os.urandom(32))
        st = os.lstat(path)
        import stat

        if (not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077
                or st.st_uid != os.getuid() or st.st_size != 32):
            return None
        return path.read_bytes()
    except OSError:
        return None


def _tag(secret: bytes, k: str, out: str, err: str, code: int) -> str:
    return hmac.new(secret, json.dumps([VERSION, k, out, err, code]).encode(),
                    hashlib.sha256).hexdigest()


def _versions() -> list[str]:
    """Installed versions of the packages the verdicts are computed with (from their
    distribution metadata: cheaper than importing them)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in PACKAGES:
        try:
            out.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            out.append(f"{name}=-")
    return out


def _folder(h, folder) -> bool:
    """Feed the bytes check reads from `folder` into h; False if it is not a folder."""
    folder = Path(folder)
    if not folder.is_dir():
        return False
    for name in FILES:
        path = folder / name
        digest = file_digest(path, "sha256") if path.is_file() else "-"
        h.update(f"{name}\0{digest}\0".encode())
    cells = folder / "cells"          # check compares the records with the cell files
    if cells.is_dir():
        for p in sorted(cells.iterdir()):
            st = p.stat()
            h.update(f"cells/{p.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    from drocli.results.tuning_records import files

    for p in files(folder):           # judged seeds that any tuning ran are flagged
        h.update(f"tuning\0{p}\0{file_digest(p, 'sha256')}\0".encode())
    from drocli.results.tree import committed_manifest

    committed = committed_manifest(folder)     # a manifest edited since its commit is flagged
    h.update(f"committed\0{json.dumps(committed, sort_keys=True, default=str)}\0".encode())
    return True


def _plugins() -> dict:
    """The registered plug-ins' names by kind: the cells are re-derived with them
    (drocli.results.rederive), and a kind that is gone changes what check can say."""
    from drocli.plugins import discovery, registry

    found = discovery.index()           # read from the sources: nothing is imported
    return {kind: sorted({*found.get(kind, {}), *entries})
            for kind, entries in registry._REGISTRY.items()}


def key(results_dir, reference, options: dict) -> str | None:
    """Hex key of a check invocation; None when a folder is missing (the full path reports
    it) or a file cannot be read."""
    from drocli.run.resume import source_digest

    h = hashlib.sha256(json.dumps([VERSION, options, source_digest(), _versions(),
                                   _plugins()], sort_keys=True).encode())
    try:
        if not _folder(h, results_dir):
            return None
        if reference is not None:
            h.update(b"\0reference\0")
            if not _folder(h, reference):
                return None
    except OSError:
        return None
    return h.hexdigest()


def load(k: str | None) -> dict | None:
    """The stored answer for key k, or None."""
    where = cache_dir()
    if k is None or where is None:
        return None
    from drocli.errors import DrocliError
    from drocli.results.files import read_bytes

    try:                # a regular file of bounded size only: a planted FIFO never blocks
        answer = json.loads(read_bytes(where / f"{k}.json", 64 << 20))
    except (OSError, ValueError, DrocliError, RecursionError):
        return None
    if not (isinstance(answer, dict) and answer.get("key") == k
            and isinstance(answer.get("out"), str) and isinstance(answer.get("err"), str)
            and answer.get("code") in (0, 1) and isinstance(answer.get("tag"), str)):
        return None
    secret = _secret()
    if secret is None or not hmac.compare_digest(
            answer["tag"], _tag(secret, k, answer["out"], answer["err"], answer["code"])):
        return None              # forged, or written under another key: judge afresh
    return answer


def store(k: str | None, out: str, err: str, code: int) -> None:
    """Keep an answer (atomically; silently not when the cache folder cannot be written)."""
    where = cache_dir()
    if k is None or where is None or code not in (0, 1):
        return
    secret = _secret()
    if secret is None:
        return
    tmp = None
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": k, "out": out, "err": err, "code": code,
                       "tag": _tag(secret, k, out, err, code)}, fh)
        os.replace(tmp, where / f"{k}.json")
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
