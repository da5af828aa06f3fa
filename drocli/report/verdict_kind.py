"""A claim's verdict kind as the status counts it (the buckets of
`claims.summary_counts`), and one colour per kind that the report's pictures share: the
forest plot of a page and the README's status bars."""

from __future__ import annotations

# strong enough to read as a bar or a dot; the same hue family as the pages' pastel cells
KIND_COLORS = {"holds": "#2e8b57", "not_reproduced": "#e07b00", "fails": "#c62828",
               "inconclusive": "#8a8a8a", "cannot_decide": "#c8c8c8",
               "unsupported": "#7e57c2", "unexpectedly_holds": "#d4a800",
               "post_hoc": "#3b78d8", "error": "#6d0000", "incomplete": "#6d0000",
               "skipped": "#eeeeee"}


def kind_of(claim) -> str:
    """The summary bucket a claim result counts in: holds, not_reproduced, fails, ...,
    cannot_decide, post_hoc (read from `summary_counts`, not decided again here)."""
    from drocli.claims import summary_counts

    return next(k for k, n in summary_counts([claim]).items() if n)


def words_of(kind: str) -> str:
    """'not reproduced', 'cannot decide', ...: the kind as the status line names it."""
    from drocli.claims import SUMMARY_ORDER

    return {"holds": "holds", "fails": "fails",
            "unexpectedly_holds": "unexpectedly holds"}.get(
        kind, dict(SUMMARY_ORDER).get(kind, kind.replace("_", " ")))
