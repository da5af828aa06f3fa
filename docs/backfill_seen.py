"""One-off: give the results folders recorded before `seen` their first-seen times, and their
claims' registered `profiles`, from the repository's git history (run once, from the
repository root: `python docs/backfill_seen.py results/*`).

`seen.cells[c]` (and `seen.seeds[s]`) is the earliest time a finished cell c (of seed s)
appears in any committed version of the folder's manifest.json (or the current one),
`seen.claims[id]` the earliest time the claim id was registered there
(drocli.claims.registration.seen). A folder re-recorded from scratch (mero_*, 2026-11-26) thereby
keeps the time its seeds 100-109 were first run, before a claim was reworded, and `check`
judges the reworded claim on the later seeds only, while a claim whose content is
unchanged keeps the time that content was first registered (the earlier manifests' entry
with the same hash; the re-recorded run's time is kept as `fixed_in_run`). Each
registration without `profiles` gets those of the saved spec.yaml, whose digest the
manifest holds: the profiles as the claim stands in the folder. Folders whose manifest
already has `seen` are left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from drocli.claims.registration import earliest, seen
from drocli.results.integrity import manifest as read_manifest
from drocli.results.records import atomic_write_text
from drocli.spec import load_saved


def _versions(path: Path) -> list[dict]:
    log = subprocess.run(["git", "log", "--format=%H", "--", str(path)], capture_output=True,
                         text=True, check=True).stdout.split()
    out = []
    for commit in log:
        shown = subprocess.run(["git", "show", f"{commit}:{path.as_posix()}"],
                               capture_output=True, text=True)
        if shown.returncode == 0:
            try:
                out.append(json.loads(shown.stdout))
            except ValueError:
                continue
    return out


def backfill(folder: Path) -> str:
    man = read_manifest(folder)
    if not man or "seen" in man:
        return "left alone"
    spec = load_saved(folder / "spec.yaml")
    profiles = {c.id: (list(c.profiles) if c.profiles is not None else None)
                for c in spec.claims}
    for cid, entry in (man.get("claims") or {}).items():
        if isinstance(entry, dict) and "profiles" not in entry and cid in profiles:
            entry["profiles"] = profiles[cid]
    history = _versions(folder / "manifest.json")
    for cid, entry in (man.get("claims") or {}).items():      # re-recorded from scratch:
        if not isinstance(entry, dict):                        # the content's first fixing
            continue
        same = [old["claims"][cid].get("fixed") for old in history
                if isinstance(old.get("claims"), dict)
                and isinstance(old["claims"].get(cid), dict)
                and old["claims"][cid].get("sha1") == entry.get("sha1")]
        first = earliest(entry.get("fixed"), *same)
        if first and first != entry.get("fixed"):
            entry["fixed_in_run"], entry["fixed"] = entry.get("fixed"), first
    man["seen"] = seen(man, *history)
    atomic_write_text(folder / "manifest.json", json.dumps(man, indent=1, default=str))
    return f"{len(history)} committed version(s), {len(man['seen']['seeds'])} seed(s)"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg, backfill(Path(arg)))
