"""Verdicts in words: the tag of each status, one line per claim, the summary line.

What `check` prints and the report counts: HOLDS / FAILS / ... with the registration flags,
the cause of a negative verdict, and the claims per summary bucket.
"""

from __future__ import annotations

from drocli.claims.result import ClaimResult

TAGS = {"holds": "HOLDS", "fails": "FAILS", "inconclusive": "INCONCLUSIVE",
        "unsupported": "NOT SUPPORTED BY THE PAPER'S NUMBERS",
        "not_reproduced": "NOT REPRODUCED (expected)",
        "unexpectedly_holds": "UNEXPECTEDLY HOLDS (marked not reproduced)",
        "incomplete": "NOT JUDGED (cells did not finish)",
        "skipped": "SKIPPED", "error": "ERROR"}


UNEXPECTED_HINT = ("the spec marks this claim not reproduced, yet it holds here: re-examine "
                   "the mark (`reproduced:`) against these numbers")


def tag(r: ClaimResult) -> str:
    """The verdict as shown: its status's tag, CANNOT DECIDE for an inconclusive claim no
    number of seeds can decide."""
    return "CANNOT DECIDE" if r.cannot_decide else TAGS.get(r.status, r.status.upper())


def format_result(r: ClaimResult) -> str:
    """One line: `HOLDS  id: detail` (and what to do about an unexpected hold), then the
    registration flags: post hoc, confirmed on fresh seeds, judged on tuning seeds."""
    shown = tag(r)
    if r.post_hoc and r.status != "fails":
        shown += " [POST HOC]"
    if r.status == "unsupported":
        ours = r.paper.get("ours", {})
        line = (f"{shown}  {r.id}: the paper's own numbers: {r.paper.get('detail')}; ours: "
                f"{TAGS.get(ours.get('status'), '?')} {ours.get('detail', '')}")
    else:
        line = f"{shown}  {r.id}: {r.detail}"
    if r.status == "unexpectedly_holds":
        line += f" [{UNEXPECTED_HINT}]"
    reg = r.registration
    if reg.get("status") == "post_hoc":
        line += (f" [post hoc: {reg.get('why')}; to confirm it, run fresh seeds into this "
                 f"folder and check again]")
    elif reg.get("status") == "confirmed":
        seeds = ", ".join(map(str, reg.get("confirmed_seeds", [])))
        line += (f" [written or changed after earlier runs: judged on the seeds first run "
                 f"after it was fixed ({seeds}); on every seed: "
                 f"{TAGS.get(reg.get('post_hoc_status'), '?')}]")
    if r.tuned_on:
        line += (f" [judged on seed(s) {', '.join(map(str, r.tuned_on))} that tuning used: "
                 f"run held-out seeds]")
    if r.paper.get("status") == "supported":
        line += " [the paper's own numbers show it too]"
    if r.cause and r.status in ("fails", "not_reproduced", "unsupported"):
        from drocli.claims.cause import label

        line += f" [cause: {label(r.cause)}]"
    return line


SUMMARY_ORDER = (("holds", "hold"), ("not_reproduced", "not reproduced"),
                 ("inconclusive", "inconclusive"), ("cannot_decide", "cannot decide"),
                 ("post_hoc", "post hoc"),
                 ("unexpectedly_holds", "unexpectedly hold"),
                 ("unsupported", "not supported by the paper's numbers"), ("fails", "fail"),
                 ("error", "judged with an error"),
                 ("incomplete", "not judged (cells did not finish)"), ("skipped", "skipped"))


def summary_counts(results: list[ClaimResult]) -> dict[str, int]:
    """Claims per summary bucket: a post-hoc claim (not confirmed) counts as post hoc
    whatever its verdict, except a failure, which always counts as one, and a claim the
    paper's own numbers do not support, which counts as that."""
    counts = {k: 0 for k, _ in SUMMARY_ORDER}
    for r in results:
        key = "post_hoc" if r.post_hoc and r.status not in ("fails", "error", "unsupported",
                                                             "incomplete") \
            else "cannot_decide" if r.cannot_decide else r.status
        counts[key] = counts.get(key, 0) + 1
    return counts


def summary_line(results: list[ClaimResult]) -> str:
    """'12 claims: 5 hold, 2 not reproduced, 3 inconclusive, 1 post hoc, 0 fail[, ...]'."""
    counts = summary_counts(results)
    shown = [f"{counts[k]} {word}" for k, word in SUMMARY_ORDER
             if counts[k] or k in ("holds", "fails")]
    tuned = sum(1 for r in results if r.tuned_on)
    tail = f"; {tuned} judged on tuning seeds" if tuned else ""
    return f"SUMMARY  {len(results)} claim(s): " + ", ".join(shown) + tail
