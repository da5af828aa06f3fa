"""Cell statuses: which ones mark a cell finished (an import-light module: the resume fast
path reads statuses before anything heavy is imported).

Finished: `done`; `diverged` and `stalled`, what the solver did, which a re-run would
repeat (kept in the records and named at the end of the run). Not finished: `timeout`
(stopped at its wall limit) and `failed` (an error): their rows never enter the records, a
plain re-run runs them again, and `run` and `check` exit with UNFINISHED_EXIT while any is
left (issue 56)."""

from __future__ import annotations

DONE = ("done", "diverged", "stalled")   # a cell with one of these is not run again
UNFINISHED = ("timeout", "failed")       # run, but did not finish: run again, never judged
UNFINISHED_EXIT = 4                      # run/check: cells did not finish (docs/cli.md)


def finished(status: dict | None) -> bool:
    """A cell status that marks the cell done (done, diverged or stalled: what the solver
    did, which a re-run would repeat)."""
    return bool(status) and status.get("status") in DONE


def unfinished(status: dict | None) -> bool:
    """A cell that ran and did not finish: stopped at its wall limit, or failed."""
    return bool(status) and isinstance(status, dict) and status.get("status") in UNFINISHED
