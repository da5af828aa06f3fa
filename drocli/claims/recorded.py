"""Verdicts as judged when the run finished, kept in the results folder (verdicts.json), so
that a folder opens without the plug-ins that made it (issue 42): a claim whose kind is not
installed here is read as an `OpaqueClaim` (drocli.claims.base) and shown with its recorded
verdict, said to be such; with the kind installed, `check` judges it afresh."""

from __future__ import annotations

import json
from pathlib import Path

FILE = "verdicts.json"


def write(out: Path, results, kinds: dict) -> None:
    """verdicts.json: per claim, its kind, the kind's description and the function that
    judged it (`kinds`: kind -> (description, origin)), and its verdict, detail, compared
    values, effects and the per-seed summaries they were judged on (label (@ panel) ->
    {seed: value})."""
    from drocli.results.atomic import atomic_write_text

    doc = {"claims": {}}
    for r in results:
        description, judged_by = kinds.get(r.kind, ("", ""))
        doc["claims"][r.id] = {"kind": r.kind, "kind_description": description,
                               "judged_by": judged_by, "status": r.status, "detail": r.detail,
                               "values": r.values, "effects": r.effects,
                               "summaries": r.summaries}
    atomic_write_text(Path(out) / FILE, json.dumps(doc, indent=1, default=_plain) + "\n")


def _plain(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def read(out: Path) -> dict:
    """claim id -> its recorded verdict ({} when the folder holds none or it is unreadable)."""
    from drocli.errors import DrocliError
    from drocli.results.files import read_bytes

    try:                  # a missing, irregular, oversized or unparsable file: none
        doc = json.loads(read_bytes(Path(out) / FILE, 16 << 20))
    except (OSError, ValueError, DrocliError):
        return {}
    claims = doc.get("claims") if isinstance(doc, dict) else None
    return claims if isinstance(claims, dict) else {}
