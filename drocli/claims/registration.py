"""Claims fixed before the runs that judge them (preregistration), and tuning seeds kept
apart from judged seeds.

`run` keeps, in the manifest, each claim's content hash and the time it was first seen with
that content (`claims: {id: {sha1, fixed}}`), and stamps every cell with the time it first
finished (`cells: {id: {..., at}}`; a re-run of the same cell id, which gives the same
numbers, keeps the first time: re-running the seeds a claim was written on cannot confirm
it). A claim is *preregistered* when its hash is the one
registered and every cell it is judged on ran after it was fixed. Otherwise it is *post hoc*:
its text, threshold, direction, mark or reading changed after (some of) its records were
written, or it was added afterwards. A post-hoc claim is *confirmed* when the seeds whose
cells all ran after it was fixed are enough to judge it: `check` then judges it on those
seeds alone and reports that verdict, with the post-hoc one beside it.

The hash covers what is judged and said: every field of the claim's model (text, kind,
metric, labels, threshold, factor, level, direction, seeds rule, filter, panels, mark,
confidence) except its `source` (the paper's words it cites: attaching or correcting the
citation does not change the test), its `cause` (why a negative verdict is negative: an
explanation, not the test), its `profiles` (which profiles judge it: a profile
left out shows the claim as skipped there, and the test on the others is unchanged) and
fields at their default (`exclude_defaults`), so a field added to drocli later does not
re-key old claims.

A spec's `tuning:` names where its settings came from (the tuning specs or records) and the
seeds tuning used; a claim judged on any of them is flagged: tuning on the judged seeds
biases the comparison towards the tuned methods.

Reading a results folder needs only its manifest and records: nothing here imports a
plug-in.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone


def claim_hash(claim, plan: dict | None = None) -> str:
    """sha1 of the claim's content (model or dict), without its source, its profiles and
    the fields at their default; with the spec's sequential `plan` (looks and pool), which
    decides when it is judged, when there is one."""
    if hasattr(claim, "model_dump"):
        data = claim.model_dump(mode="json", exclude_defaults=True)
    else:
        data = dict(claim)
    data.pop("source", None)
    data.pop("profiles", None)
    data.pop("cause", None)
    if plan:
        data["sequential"] = plan
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode()).hexdigest()


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def register(previous: dict | None, claims, at: str | None = None,
             plan: dict | None = None) -> dict:
    """The manifest's `claims` entry for these claims: an unchanged claim keeps the time it
    was fixed; a new or changed one is fixed now. Each entry also keeps the claim's
    `profiles` (outside its hash: a claim moved to another profile is flagged, not re-keyed),
    `first`, when its id was first registered, and `earlier`, the versions it replaced.
    The ledger only grows: a claim the spec no longer has stays, marked `removed` with the
    time it was first missed, so `check` can say that it was dropped after its run."""
    previous = previous if isinstance(previous, dict) else {}
    at = at or now()
    out = {}
    for c in claims:
        h = claim_hash(c, plan)
        profiles = list(c.profiles) if c.profiles is not None else None
        old = previous.get(c.id)
        old = old if isinstance(old, dict) else {}
        same = (old.get("sha1") == h and bool(old.get("fixed")) and not old.get("removed")
                and ("profiles" not in old or old["profiles"] == profiles))
        entry = {k: v for k, v in old.items() if k != "removed"} if same else \
            {"sha1": h, "fixed": at}
        if not same and old.get("sha1"):          # the versions it replaced, oldest first
            entry["earlier"] = [*old.get("earlier", []),
                                {k: old[k] for k in ("sha1", "fixed", "profiles") if k in old}]
        entry["profiles"] = profiles
        entry["first"] = earliest(old.get("first"), old.get("fixed"), entry["fixed"])
        out[c.id] = entry
    for cid, old in previous.items():
        if cid not in out and isinstance(old, dict) and old.get("sha1"):
            out[cid] = {**old, "removed": old.get("removed") or at}
    return out


PENDING = ".claims"      # in cells/ (JSON; no .json suffix: cells/*.json are the cells)


def pending_path(results_dir):
    """Where a run keeps the claims as it fixed them until its manifest holds them."""
    from pathlib import Path

    return Path(results_dir) / "cells" / PENDING


def read_pending(results_dir) -> dict:
    """The claims a run registered before its cells ran (`cells/.claims`): what an
    interrupted run leaves, having written no manifest. Its cells keep the time they first
    finished, so without this their claims would look fixed after them on resume. {} when
    absent or unreadable (then the manifest alone decides, as before)."""
    from drocli.errors import DrocliError
    from drocli.results.files import read_bytes
    from drocli.results.layout import MAX_MANIFEST_BYTES

    try:
        data = json.loads(read_bytes(pending_path(results_dir), MAX_MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError, DrocliError):     # absent, forged, special
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("sha1"), str) and _time(v.get("fixed"))}


def merge(manifest_claims, pending: dict) -> dict:
    """The registrations a new run starts from: the manifest's, updated by those of a later
    run that was interrupted (its pending file is newer than the manifest it started from)."""
    out = dict(manifest_claims) if isinstance(manifest_claims, dict) else {}
    out.update(pending if isinstance(pending, dict) else {})
    return out


def _time(s) -> datetime | None:
    try:
        t = datetime.fromisoformat(str(s))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def earliest(*times) -> str | None:
    """The earliest of these times (datetimes or ISO strings; None ignored), as ISO."""
    parsed = [t if isinstance(t, datetime) else _time(t) for t in times if t]
    parsed = [t for t in parsed if t is not None]
    return min(parsed).isoformat() if parsed else None


def cell_times(manifest: dict) -> dict[str, datetime | None]:
    """cell id -> a time it finished after: its own stamp, else the manifest's
    `cells_ran_after` (folders recorded before cells were stamped: the time of the commit
    their run ran from, docs/backfill_registration.py), else unknown (None: not after any
    claim)."""
    after = manifest.get("cells_ran_after")
    run_start = _time(after.get("at")) if isinstance(after, dict) else None
    out = {}
    for cid, st in (manifest.get("cells") or {}).items():
        at = _time(st.get("at")) if isinstance(st, dict) and st.get("at") else None
        out[cid] = at or run_start
    return out


def judged_times(manifest: dict) -> dict[str, datetime | None]:
    """cell_times, each no later than the first time that cell (its settings and seed) was
    seen in the folder (`seen.cells`, kept across re-recordings): re-running a cell never
    makes it fresh."""
    seen = _seen_times(manifest, "cells")
    out = {}
    for cid, at in cell_times(manifest).items():
        first = seen.get(cid)
        out[cid] = min(at, first) if at is not None and first is not None else at
    return out


def _seen_times(manifest: dict, what: str) -> dict[str, datetime]:
    block = manifest.get("seen") if isinstance(manifest.get("seen"), dict) else {}
    times = block.get(what) if isinstance(block.get(what), dict) else {}
    out = {}
    for k, t in times.items():
        parsed = _time(t)
        if parsed is not None:
            out[str(k)] = parsed
    return out


def seen(*manifests: dict) -> dict:
    """The manifest's `seen` block: for each cell (its settings and seed) and each seed, the
    first time it finished, and for each claim id, the first time it was registered, over
    these manifests (the current one, the one it replaces, the one committed in git): a
    folder re-recorded from scratch keeps when its cells, seeds and claims were first
    seen."""
    from drocli.results.status import finished

    seeds: dict[str, str] = {}
    cells: dict[str, str] = {}
    claims: dict[str, str] = {}
    for man in manifests:
        if not isinstance(man, dict):
            continue
        old = man.get("seen") if isinstance(man.get("seen"), dict) else {}
        for into, what in ((seeds, "seeds"), (cells, "cells"), (claims, "claims")):
            for k, t in old.get(what).items() if isinstance(old.get(what), dict) else ():
                into[str(k)] = earliest(into.get(str(k)), t) or into.get(str(k))
        times = cell_times(man)
        for cid, st in (man.get("cells") or {}).items():
            if isinstance(st, dict) and times.get(cid) is not None and finished(st):
                s = str(st.get("seed"))
                seeds[s] = earliest(seeds.get(s), times[cid])
                cells[cid] = earliest(cells.get(cid), times[cid])
        for cid, e in (man.get("claims") or {}).items() if isinstance(man.get("claims"), dict) \
                else ():
            if isinstance(e, dict):
                t = earliest(claims.get(cid), e.get("first"), e.get("fixed"))
                if t:
                    claims[cid] = t
    return {"seeds": dict(sorted(seeds.items(), key=lambda kv: _seed_key(kv[0]))),
            "cells": dict(sorted(cells.items())), "claims": dict(sorted(claims.items()))}


def _seed_key(s: str):
    return (0, int(s), "") if s.lstrip("-").isdigit() else (1, 0, s)


def assess(manifest: dict, claim, cells_judged: dict[str, object],
           plan: dict | None = None) -> dict:
    """Registration of one claim judged on `cells_judged` (cell id -> seed):
    {status: preregistered | post_hoc, why, confirmed_seeds (post hoc: the seeds every cell
    of which ran after the claim was fixed)}."""
    entry = (manifest.get("claims") or {}).get(claim.id)
    if not isinstance(entry, dict) or "sha1" not in entry:
        return {"status": "post_hoc", "why": "not registered in the manifest before its run",
                "confirmed_seeds": []}
    if entry["sha1"] != claim_hash(claim, plan):
        return {"status": "post_hoc", "why": "changed after it was registered",
                "confirmed_seeds": []}
    if "profiles" in entry and entry["profiles"] != (
            list(claim.profiles) if claim.profiles is not None else None):
        return {"status": "post_hoc", "why": f"its profiles changed after it was registered "
                f"(registered {entry['profiles'] or 'every profile'})", "confirmed_seeds": []}
    fixed = _time(entry.get("fixed"))
    times = judged_times(manifest)
    late: dict[object, bool] = {}
    for cid, seed in cells_judged.items():
        t = times.get(cid)
        after = fixed is not None and t is not None and t >= fixed
        late[seed] = late.get(seed, True) and after
    if late and all(late.values()):
        return {"status": "preregistered", "why": "", "confirmed_seeds": sorted(late, key=str)}
    before = sorted((s for s, ok in late.items() if not ok), key=str)
    return {"status": "post_hoc",
            "why": f"fixed {str(entry.get('fixed', '?'))[:16]}, after the runs of seed(s) "
                   f"{', '.join(map(str, before[:8]))}{' ...' if len(before) > 8 else ''}",
            "confirmed_seeds": sorted((s for s, ok in late.items() if ok), key=str)}


def tuning_overlap(tuning: dict | None, seeds) -> list:
    """The judged seeds that tuning used (the spec's `tuning.seeds`)."""
    if not tuning:
        return []
    used = {str(s) for s in tuning.get("seeds") or ()}
    return sorted({s for s in seeds if str(s) in used}, key=str)
