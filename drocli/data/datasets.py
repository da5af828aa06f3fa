"""`drocli data list` and `drocli data fetch`: where each file-backed data set is expected,
whether it is there, and downloading it (`drocli.data.fetch`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from drocli.data.cache import data_dir
from drocli.errors import DrocliError
from drocli.plugins import registry


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


def _wrapped(path: str, width: int) -> list[str]:
    """A path on lines of at most `width` characters, broken after a '/' where one is near:
    the header keeps the whole data folder (shortened, it could not be found or copied)."""
    lines = []
    while len(path) > width:
        cut = path.rfind("/", 0, width) + 1
        cut = cut if cut > width // 2 else width
        lines.append(path[:cut])
        path = path[cut:]
    return lines + [path]


def table(width: int | None = None) -> str:
    """One line per file-backed source: folder, status, size on disk, fetchable; within
    `width` columns (the terminal's, 100 when it is not one). The data folder is named once
    in a header and the folders in it relative to it (a long checkout or $DROCLI_DATA path
    made every line over 200 characters); a folder elsewhere loses its middle if needed."""
    from drocli.errors import ELLIPSIS, shorten_middle, shorten_path

    width = width or shutil.get_terminal_size((100, 24)).columns
    home = data_dir()
    rows = []
    for name, e in file_backed().items():
        state, found = status(e)
        folder = found or folder_of(e)
        fetch = "yes" if e.extra.get("downloads") else "no"
        try:
            shown = f"{Path(folder).relative_to(home)}/"
        except ValueError:
            shown = str(folder)
        rows.append([name, shown, state, _human(_size(folder)), fetch])
    head = ["source", "folder", "status", "size", "fetch"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    room = width - (sum(widths) - widths[1]) - 2 * (len(head) - 1)
    label = "data folder (DROCLI_DATA; folders ending in / are in it):"
    if len(label) + 1 + len(str(home)) <= width:
        lines = [f"{label} {home}"]
    else:
        lines = [label if len(label) <= width else "data folder:"]
        lines += ["  " + p for p in _wrapped(str(home), max(width - 2, 8))]
    if room < 16:         # a terminal too narrow for the table: one source after another
        for r in rows:
            lines += [r[0], "  " + shorten_path(r[1], max(width - 2, 8)),
                      "  " + shorten_middle(f"{r[2]}, {r[3]}, fetch {r[4]}", max(width - 2, 8),
                                            ELLIPSIS)]
        return "\n".join(lines)
    for r in rows:
        r[1] = shorten_path(r[1], room)
    widths[1] = max(len(r[1]) for r in [head, *rows])
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in [head, *rows]]
    return "\n".join(lines)


def fetch(name: str, *, mirror: str | None, files: tuple[str, ...], to: Path | None,
          quiet: bool, log) -> list[Path]:
    """Download a source's files into its folder (or `to`)."""
    from drocli.data import fetch as fetcher

    entry = registry.get("data", name, key="data fetch")
    dl = entry.extra.get("downloads")
    if dl is None:
        have = ", ".join(n for n, e in file_backed().items() if e.extra.get("downloads"))
        raise DrocliError(f"data source {name!r} has no download address", key="data fetch",
                          fix=f"fetchable: {have}; place other files by hand "
                              "(`drocli data list` shows where)")
    return fetcher.fetch(name, dl, Path(to) if to else folder_of(entry), mirror=mirror,
                         only=tuple(files), quiet=quiet, log=log)
