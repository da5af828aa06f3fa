"""Cell statuses: which ones mark a cell finished (an import-light module: the resume fast
path reads statuses before anything heavy is imported)."""

from __future__ import annotations

DONE = ("done", "diverged", "timeout", "stalled")   # a cell with one of these is not run again


def finished(status: dict | None) -> bool:
    """A cell status that marks the cell done (done, diverged, timeout or stalled: what
    the solver did, which a re-run would repeat)."""
    return bool(status) and status.get("status") in DONE
