"""The commits that changed a results folder's records, and whether each came with a run
(issue 56): a commit that changes the records while the manifest still names the same run
(its start and end) changed the numbers without running anything. The report shows this
history per folder; `check` flags an uncommitted edit of that kind (drocli.results.flags)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RECORDS = ("records.csv.gz", "records.csv")
SHOWN = 6


@dataclass(frozen=True)
class Change:
    commit: str          # short hash
    date: str            # committer date, YYYY-MM-DD
    subject: str
    with_run: bool       # the manifest names another run than the commit's parent


def _run_of(man: dict | None):
    return None if man is None else (man.get("started"), man.get("finished"))


def changes(results_dir: Path) -> list[Change]:
    """The commits that changed the folder's records, newest first ([] outside git or when
    the folder was never committed)."""
    from drocli.results.tree import _git, manifest_at, toplevel

    top = toplevel(results_dir)
    if top is None:
        return []
    try:
        rel = Path(results_dir).resolve().relative_to(Path(top).resolve()).as_posix()
    except ValueError:
        return []
    log = _git(top, "log", "--format=%H%x09%cs%x09%s", "--",
               *(f"{rel}/{name}" for name in RECORDS))
    out = []
    for line in (log or "").splitlines():
        sha, _, rest = line.partition("\t")
        date, _, subject = rest.partition("\t")
        before = manifest_at(top, rel, f"{sha}^")
        after = manifest_at(top, rel, sha)
        out.append(Change(sha[:7], date, subject,
                          before is None or _run_of(before) != _run_of(after)))
    return out


def summary(results_dir: Path) -> str | None:
    """One line for the report: '3 commits changed the records, each with a run: ...'."""
    found = changes(results_dir)
    if not found:
        return None
    bare = [c for c in found if not c.with_run]
    shown = "; ".join(f"{c.commit} {c.date}" + ("" if c.with_run else
                                                   f" WITHOUT A RUN ({_short(c.subject)})")
                      for c in found[:SHOWN])
    more = f"; {len(found) - SHOWN} earlier" if len(found) > SHOWN else ""
    head = (f"{len(found)} commit{'s' if len(found) != 1 else ''} changed the records, "
            + ("each with a run" if not bare else
               f"{len(bare)} without a run (the file rewritten, the manifest's run kept: "
               "its message says why)"))
    return f"{head}: {shown}{more}"


def _short(text: str, words: int = 8) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")
