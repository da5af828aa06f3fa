"""The git work tree a run records from: its commit, whether it is clean (changed, staged
and untracked files that git does not ignore all count, except the run's own output
folder), and the manifest a results folder has in the last commit.

A paper folder (under the repository's `results/`) is recorded from a clean tree only, so
that the commit in its manifest is exactly what made it: `run` refuses otherwise. Anywhere
else the tree state is recorded and nothing is refused: a user experimenting is never
blocked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from drocli.errors import DrocliError

SHOWN = 5          # changed paths named in a refusal


def _git(cwd: Path, *args: str, timeout: float = 10) -> str | None:
    try:
        res = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def _existing(path: Path) -> Path | None:
    """The path itself or its nearest existing parent (a run's folder may not exist yet)."""
    p = Path(path).absolute()
    for q in (p, *p.parents):
        if q.is_dir():
            return q
    return None


def toplevel(path: Path) -> Path | None:
    """The root of the git work tree holding `path`, or None."""
    here = _existing(path)
    out = _git(here, "rev-parse", "--show-toplevel") if here else None
    return Path(out.strip()) if out and out.strip() else None


def head(path: Path) -> str | None:
    """The commit checked out in the work tree holding `path`, or None."""
    out = _git(Path(path), "rev-parse", "HEAD")
    return out.strip() if out and out.strip() else None


def state(root: Path, exclude: Path | None = None) -> dict | None:
    """{commit, dirty, changed (paths, at most 20)} of the work tree at `root`, untracked
    files counted, `exclude` (a folder inside it) left out; None without git."""
    root = Path(root)
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return None
    args = ["status", "--porcelain", "--untracked-files=all", "--", "."]
    if exclude is not None:
        try:
            rel = Path(exclude).absolute().relative_to(root.absolute())
            args.append(f":(exclude,top){rel.as_posix()}")
        except ValueError:
            pass
    status = _git(root, *args)
    if status is None:
        return None
    changed = [line[3:] for line in status.splitlines() if line.strip()]
    return {"commit": commit.strip(), "dirty": bool(changed), "changed": changed[:20],
            "untracked_counted": True}


def results_root(out: Path) -> Path | None:
    """The repository root when `out` lies in its `results/` folder (a paper folder)."""
    top = toplevel(out)
    if top is None:
        return None
    try:
        rel = Path(out).absolute().relative_to(top)
    except ValueError:
        try:
            rel = Path(out).resolve().relative_to(top.resolve())
        except ValueError:
            return None
    return top if rel.parts[:1] == ("results",) and len(rel.parts) >= 2 else None


def require_clean(out: Path) -> None:
    """Refuse (exit 2) to record a paper folder from a dirty work tree."""
    top = results_root(out)
    if top is None:
        return
    st = state(top, exclude=out)
    if st is None or not st["dirty"]:
        return
    names = ", ".join(st["changed"][:SHOWN]) + (" ..." if len(st["changed"]) > SHOWN else "")
    raise DrocliError(f"a folder under results/ is recorded from a clean work tree only; "
                      f"{len(st['changed'])}{'+' if len(st['changed']) >= 20 else ''} "
                      f"changed or untracked file(s): {names}", file=str(out), key="--out",
                      fix="commit (or remove) them first, or record elsewhere "
                          "(--out runs/NAME), where the tree state is recorded instead")


def committed_manifest(out: Path) -> dict | None:
    """The folder's manifest.json as the last commit holds it (None when untracked or
    without git): what a folder re-recorded from scratch inherits its first-seen times
    from."""
    top = toplevel(out)
    if top is None:
        return None
    try:
        rel = Path(out).absolute().relative_to(top)
    except ValueError:
        return None
    return manifest_at(top, rel.as_posix(), "HEAD")


def manifest_at(top: Path, folder: str, rev: str) -> dict | None:
    """The manifest.json of `folder` (relative to the work tree `top`) at commit `rev`
    (None when that commit does not hold one, or it is not a JSON mapping)."""
    text = _git(top, "show", f"{rev}:{folder}/manifest.json")
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
