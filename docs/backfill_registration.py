"""One-off: give the results folders recorded before claim registration their `claims`
entries in manifest.json, from the repository's git history (run once, from the repository
root: `python docs/backfill_registration.py results/*`).

For each claim of a folder's saved spec, the time it was fixed is the commit time of the
first commit in which `experiments/<name>.yaml` (or the folder's own spec.yaml) holds a
claim with the same content hash (drocli.claims.registration.claim_hash). The cells of those
manifests carry no time of their own, and `started` may be a later spec rewrite's, so the
run is dated by the commit it ran from (the manifest's `git_commit`, checked to be an
ancestor of the commit that brought the current records): every cell ran after that
commit was made (`cells_ran_after`). A claim first committed after it is post hoc, as is
one changed since (its hash then matches no commit before the run). When the run's commit
is not such an ancestor, no date is written and every claim of the folder is post hoc.
Folders whose manifest already has `claims` are left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from drocli.claims import validate_claim
from drocli.claims.registration import claim_hash
from drocli.results.records import atomic_write_text
from drocli.spec import load_spec


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def first_seen(paths: list[str]) -> dict[str, tuple[str, str]]:
    """claim hash -> (commit time, commit) of its earliest appearance in these files."""
    seen: dict[str, tuple[str, str]] = {}
    for path in paths:
        log = git("log", "--format=%H %cI", "--follow", "--", path).split("\n")
        for line in filter(None, log):
            commit, when = line.split()
            try:
                raw = yaml.safe_load(git("show", f"{commit}:{path}")) or {}
            except (subprocess.CalledProcessError, yaml.YAMLError):
                continue
            for c in raw.get("claims") or []:
                try:
                    h = claim_hash(validate_claim(c))
                except Exception:       # an older claim format: not today's content
                    continue
                if h not in seen or when < seen[h][0]:
                    seen[h] = (when, commit)
    return seen


def run_commit_time(folder: Path, commit: str | None) -> str | None:
    """The commit time of the run's commit, if it precedes the commit that brought the
    folder's current records (else None: the run cannot be dated)."""
    rec = next((p for p in (folder / "records.csv.gz", folder / "records.csv")
                if p.is_file()), None)
    if not commit or rec is None:
        return None
    current = git("rev-parse", f"HEAD:{rec}").strip()
    brought = None
    for c in git("log", "--format=%H", "--", str(rec)).split():
        if subprocess.run(["git", "rev-parse", f"{c}:{rec}"], capture_output=True,
                          text=True).stdout.strip() != current:
            break
        brought = c
    if brought is None or subprocess.run(
            ["git", "merge-base", "--is-ancestor", commit, brought]).returncode != 0:
        return None
    return git("log", "-1", "--format=%cI", commit).strip()


def backfill(folder: Path) -> str:
    man_path = folder / "manifest.json"
    man = json.loads(man_path.read_text())
    if man.get("claims") is not None:
        return f"{folder}: has claims already"
    spec = load_spec(folder / "spec.yaml")
    seen = first_seen([f"experiments/{man.get('experiment', spec.name)}.yaml",
                       str(folder / "spec.yaml")])
    now = git("log", "-1", "--format=%cI").strip()
    ran_after = run_commit_time(folder, man.get("git_commit"))
    if ran_after is not None:
        man["cells_ran_after"] = {"at": ran_after, "why": (
            f"backfilled: the cells ran from commit {man['git_commit'][:12]}, made then")}
    entries, late = {}, 0
    for c in spec.claims:
        h = claim_hash(c)
        when, commit = seen.get(h, (now, "(not committed before this backfill)"))
        entries[c.id] = {"sha1": h, "fixed": when,
                         "backfilled": f"first committed in {commit[:12]}"}
        late += ran_after is None or when > ran_after
    man["claims"] = entries
    atomic_write_text(man_path, json.dumps(man, indent=1, default=str))
    return f"{folder}: {len(entries)} claims, {late} fixed after the run started"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(backfill(Path(arg)))
