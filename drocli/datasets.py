"""`drocli data list` and `drocli data fetch`: where each file-backed data set is expected,
whether it is there, and downloading it (`drocli.fetch`)."""

from __future__ import annotations

from pathlib import Path

from drocli import registry
from drocli.data.cache import data_dir
from drocli.errors import DrocliError


def file_backed() -> dict[str, registry.Entry]:
    """Data sources that read files (a preflight, downloads or files=True)."""
    return {name: e for name, e in registry.entries("data").items()
            if e.preflight is not None or e.extra.get("downloads") or e.extra.get("files")}


def folder_of(entry: registry.Entry) -> Path:
    dl = entry.extra.get("downloads")
    return data_dir() / ((dl.folder if dl is not None else "") or entry.name)


def _size(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def status(entry: registry.Entry) -> tuple[str, Path | None]:
    """(present / missing, where found) for the files its defaults need (the loader's own
    lookup, which also searches system folders such as a Debian package's)."""
    if entry.preflight is None:
        return "your file (data.params.path)", None
    try:
        found = entry.preflight(registry.resolve_params(entry, {}))
    except DrocliError:
        return "missing", None
    if isinstance(found, tuple):
        found = found[0]
    found = Path(found) if isinstance(found, (str, Path)) else None
    return "present", (found.parent if found is not None and found.is_file() else found)


def table() -> str:
    """One line per file-backed source: folder, status, size on disk, fetchable."""
    rows = [("source", "folder (found in, or expected in)", "status", "size", "fetch")]
    for name, e in file_backed().items():
        state, found = status(e)
        folder = found or folder_of(e)
        fetch = "yes" if e.extra.get("downloads") else "no"
        rows.append((name, str(folder), state, _human(_size(folder)), fetch))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def fetch(name: str, *, mirror: str | None, files: tuple[str, ...], to: Path | None,
          quiet: bool, log) -> list[Path]:
    """Download a source's files into its folder (or `to`)."""
    from drocli import fetch as fetcher

    entry = registry.get("data", name, key="data fetch")
    dl = entry.extra.get("downloads")
    if dl is None:
        have = ", ".join(n for n, e in file_backed().items() if e.extra.get("downloads"))
        raise DrocliError(f"data source {name!r} has no download address", key="data fetch",
                          fix=f"fetchable: {have}; place other files by hand "
                              "(`drocli data list` shows where)")
    return fetcher.fetch(name, dl, Path(to) if to else folder_of(entry), mirror=mirror,
                         only=tuple(files), quiet=quiet, log=log)
