"""`drocli report RESULTS_DIR... --out DIR`: writing the report folder. Per results folder a
Markdown and an HTML page with its figures copied into DIR/<folder>/ (linked relatively, so
the folder can be moved or copied whole), then the index. A list of the pages it wrote lets
a later report prune the pages of folders it no longer reports; reports into one folder at
once take turns (a lock) and keep each other's pages. Nothing here depends on the clock:
the same results give the same report.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from drocli.errors import DrocliError
from drocli.report.as_html import html_page
from drocli.report.as_markdown import markdown
from drocli.report.index_page import index
from drocli.report.page import Page, _load, page_name
from drocli.results.atomic import signals_held


def _copy_figures(page: Page, out: Path) -> list[str]:
    """Copy the page's figures to out/<folder>/ (unchanged files are left alone, figures
    no longer drawn are removed); their links, relative to `out`."""
    from drocli.results.atomic import atomic_write
    from drocli.results.ownership import inside

    dest = inside(out, out / page.name)
    dest.mkdir(parents=True, exist_ok=True)
    links, keep = [], set()
    for f in page.figures:
        target = dest / f.name
        data = f.read_bytes()
        if not target.is_file() or target.read_bytes() != data:
            atomic_write(target, lambda fh, data=data: fh.write(data))
        keep.add(f.name)
        links.append(f"{page.name}/{f.name}")
    if page.paper is not None:
        from drocli.report.paper_vs_ours import draw

        keep.add(draw(page.paper, dest, title=page.title).name)
    from drocli.report.effects_figure import draw as draw_effects

    effects = draw_effects(page, dest)
    page.effects_png = f"{page.name}/{effects.name}" if effects is not None else None
    if effects is not None:
        keep.add(effects.name)
    for old in dest.glob("*.png"):
        if old.name not in keep:
            old.unlink()
    return links


LISTED = ".drocli-report.json"      # in `out`: the pages the last `write` left there


def _listing(out: Path) -> dict[str, str | None]:
    """The pages an earlier `write` recorded in `out`, each with its results folder
    relative to `out` (None when not recorded); none when absent or unreadable."""
    from drocli.results.files import read_bytes
    from drocli.results.layout import MAX_MANIFEST_BYTES

    try:
        doc = json.loads(read_bytes(out / LISTED, MAX_MANIFEST_BYTES))
        pages, where = doc.get("pages"), doc.get("from") or {}
    except (OSError, ValueError, AttributeError, DrocliError, RecursionError):
        return {}
    if not isinstance(pages, list):
        return {}
    where = where if isinstance(where, dict) else {}
    return {n: where[n] if isinstance(where.get(n), str) else None
            for n in pages if isinstance(n, str)}


def _listed(out: Path) -> set[str]:
    """The page names an earlier `write` recorded in `out`."""
    return set(_listing(out))


@contextlib.contextmanager
def _locked(out: Path):
    """An exclusive lock on the report folder (flock on the folder itself, so no lock file
    is left in it): reports writing into one folder at once take turns. Without flock (not
    POSIX) the block runs unlocked."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                     # releases the lock


def _stamp(path: Path) -> tuple | None:
    """Which write made the file at `path` (each atomic write is a new file): its inode,
    time and size; None when absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _seen(out: Path) -> dict[str, tuple | None]:
    """The listed pages of `out` as this report finds them when it starts: name -> stamp
    of its Markdown page."""
    if not out.is_dir():
        return {}
    with _locked(out):
        return {n: _stamp(out / f"{n}.md") for n in _listed(out)}


def _written_meanwhile(out: Path, seen: dict, ours: set[str], now: dict) -> list[Page]:
    """The pages another report wrote into `out` while this one ran (listed `now`, and not
    as they were when this one started), loaded again from their results folders for the
    index; one whose folder no longer loads is left out (and pruned)."""
    pages = []
    for name, src in sorted(now.items()):
        if name in ours or src is None or (name in seen and
                                           seen[name] == _stamp(out / f"{name}.md")):
            continue
        try:
            page = _load(out / src)
        except (DrocliError, OSError, ValueError):
            continue
        if page.name == name:
            pages.append(page)
    return pages


def _prune(out: Path, keep: set[str]) -> None:
    """Remove the pages an earlier `write` made for folders this one no longer reports:
    only names its list holds, and of each only what `write` makes (<name>.md, <name>.html,
    the .png files in <name>/, then <name>/ if that left it empty). A user's own files, and
    anything behind a symbolic link, stay."""
    from drocli.results.ownership import inside

    for name in sorted(_listed(out) - keep):
        if name in ("", ".", "..", "index") or "/" in name or "\\" in name or "\0" in name:
            continue
        for f in (out / f"{name}.md", out / f"{name}.html"):
            if f.is_file() or f.is_symlink():
                f.unlink()
        folder = out / name
        if folder.is_dir() and not folder.is_symlink():
            inside(out, folder)
            for png in folder.glob("*.png"):
                if png.is_file() or png.is_symlink():
                    png.unlink()
            try:
                folder.rmdir()
            except OSError:                 # the user's files are in it
                pass


def distinct(results_dirs) -> list[Path]:
    """The folders in order, each once: the same folder named twice (or by two paths, a
    link included) is one page and counts once in the totals."""
    seen, out = set(), []
    for d in results_dirs:
        key = os.path.realpath(d)
        if key not in seen:
            seen.add(key)
            out.append(Path(d))
    return out


def write(results_dirs: list[Path], out: Path) -> list[Page]:
    """The pages and the index (Markdown and HTML) under `out`, the figures copied into
    `out/<folder>/` and linked relatively: the folder stays whole when moved or copied.
    `out/.drocli-report.json` lists the pages and their results folders; the pages listed
    when this report started for folders it does not report are removed (`_prune`).
    Reports into one folder at once take turns writing (`_locked`), and the pages another
    wrote meanwhile are kept and indexed: none is lost. The index and the list are
    written with SIGTERM and SIGHUP held (`signals_held`): a stop leaves the old ones or
    the new ones, whole."""
    out = Path(out)
    if out.exists() and not out.is_dir():          # refused before any folder is judged
        raise DrocliError("is a file, not a folder: a report is a folder of pages",
                          file=str(out), key="--out",
                          fix="give --out a folder, new or one an earlier report wrote, "
                              "e.g. --out report")
    names = [page_name(d) for d in results_dirs]
    for d, n in zip(results_dirs, names, strict=True):
        same = [str(o) for o, m in zip(results_dirs, names, strict=True) if m == n and o != d]
        if same:          # each would overwrite the other's page
            raise DrocliError(f"shares its name {n!r} with {same[0]}; a report page is "
                              "named after its folder", file=str(d),
                              fix="report them separately, or copy one under another name")
        if n in ("", "index"):
            raise DrocliError(f"a report page is named after its folder, and {n or '/'!r} "
                              "cannot be one (index.md is the report's own page)",
                              file=str(d), fix="copy the folder under another name")
    seen = _seen(out)
    pages = [_load(d) for d in results_dirs]
    from drocli.claims.ablation import link

    for name, pairs in link(pages).items():
        next(p for p in pages if p.name == name).ablations = pairs
    out.mkdir(parents=True, exist_ok=True)
    where = {p.name: os.path.relpath(os.path.abspath(d), os.path.abspath(out))
             for p, d in zip(pages, results_dirs, strict=True)}
    with _locked(out):
        docs = _docs_from(out)
        for p in pages:
            p.links = _copy_figures(p, out)
            p.docs = docs
            _write(out / f"{p.name}.md", markdown(p))
            _write(out / f"{p.name}.html", html_page(p))
        now = _listing(out)
        others = _written_meanwhile(out, seen, set(where), now)
        where |= {p.name: now[p.name] for p in others}
        with signals_held():
            _write(out / "index.md", index(pages + others, "md"))
            _write(out / "index.html", index(pages + others, "html"))
            from drocli.report.status_figure import draw as draw_status

            draw_status(pages + others, out)
            _prune(out, set(where))
            _write(out / LISTED, json.dumps({"pages": sorted(where), "from": dict(
                sorted(where.items()))}, indent=1) + "\n")
    return pages


def _docs_from(out: Path) -> str | None:
    """drocli's docs/ folder relative to the report folder, when the report lies inside
    drocli's checkout (docs/report): its pages link to it. None elsewhere: a report written
    outside travels alone (moved, its relative links must still resolve), and an installed
    package has no docs."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    where = Path(out).resolve()
    if not (docs / "verdicts.md").is_file() or docs.parent not in where.parents:
        return None
    return Path(os.path.relpath(docs, where)).as_posix()


def _write(path: Path, text: str) -> None:
    """A page, atomically (a reader or a stop never sees half of it) and as UTF-8, which
    the pages declare; a lone surrogate no escaper met is written as `\\udcff`."""
    from drocli.results.atomic import atomic_write

    data = text.encode("utf-8", "backslashreplace")
    atomic_write(path, lambda fh: fh.write(data))
