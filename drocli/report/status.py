"""A results folder's one-line status, the row that the index and the README's status block
both show: profile, seeds, verdict counts, negative verdicts by cause, the inconclusive
share, post-hoc and tuning-seed counts, and the work tree it was recorded from.
"""

from __future__ import annotations

from drocli.report.escape import _name, _url
from drocli.report.page import Page

TABLE_HEAD = ("| results | profile | seeds (the plan's last look) | verdicts (at each claim's "
              "confidence, default 95 %) | negative verdicts by cause | inconclusive | post "
              "hoc | on tuning seeds | recorded from |\n|---|---|---|---|---|---|---|---|---|")


def counts(page: Page) -> dict[str, int]:
    from drocli.claims import summary_counts

    return summary_counts(page.claims)


def summary(page: Page) -> str:
    """The verdict counts in words (post-hoc claims counted apart, whatever their verdict)."""
    from drocli.claims import SUMMARY_ORDER

    n = counts(page)
    verdicts = ", ".join(f"{n[k]} {w}" for k, w in SUMMARY_ORDER
                         if n.get(k) and k != "skipped") or "no claims"
    if page.note:
        verdicts += f" ({page.note})"
    return verdicts


def shares(page: Page) -> tuple[str, str, str]:
    """Of the judged claims (not skipped): the inconclusive share, the post-hoc count, the
    count judged on seeds that tuning used."""
    judged = [c for c in page.claims if c.status != "skipped"]
    if not judged:
        return "-", "-", "-"
    inc = sum(c.status == "inconclusive" and not c.cannot_decide for c in judged)
    post = sum(c.post_hoc for c in judged)
    tuned = sum(bool(c.tuned_on) for c in judged)
    return f"{inc}/{len(judged)} ({inc / len(judged):.0%})", str(post), str(tuned)


def tree_state(page: Page) -> str:
    """'clean abc1234', 'dirty abc1234' (uncommitted or untracked files when it was
    recorded) or 'unknown' (no git), with ', N flag(s)' when check flags edits."""
    commit, dirty = _commit(page)
    known = (page.manifest or {}).get("git_dirty") is not None
    state = ("dirty" if dirty else "clean") if known else "unknown"
    flagged = f", {len(page.flags)} flag(s)" if page.flags else ""
    return f"{state} `{commit}`{flagged}" if commit != "?" else f"{state}{flagged}"


def status_line(page: Page, link: str) -> str:
    """One README line: folder, profile, seeds, verdict counts, inconclusive share, post-hoc
    and tuning-seed counts, the work tree it was recorded from."""
    inc, post, tuned = shares(page)
    return (f"| [{_name(page.name)}]({_url(link)}) | {page.profile} | {seeds_cell(page)} "
            f"| {summary(page)} | {causes_cell(page.claims)} | {inc} | {post} | {tuned} "
            f"| {tree_state(page)} |")


README_HEAD = ("| results | profile | seeds (the plan's last look) | verdicts (at each claim's "
               "confidence, default 95 %) | negative verdicts by cause | recorded from (a "
               "clean tree unless said) |\n|---|---|---|---|---|---|")


def readme_line(page: Page, link: str) -> str:
    """The README's shorter line: the verdict counts already count the inconclusive and
    post-hoc claims, so only claims judged on tuning seeds join the tree state (the index
    keeps every column)."""
    _, _, tuned = shares(page)
    on_tuning = f", {tuned} judged on tuning seeds" if tuned not in ("0", "-") else ""
    tree = tree_state(page).removeprefix("clean ")       # the header says clean by default
    return (f"| [{_name(page.name)}]({_url(link)}) | {page.profile} | {seeds_cell(page)} "
            f"| {summary(page)} | {causes_cell(page.claims)} | {tree}{on_tuning} |")


def causes_cell(claims) -> str:
    """'3 stand-in, 1 setting' over the FAILS and NOT REPRODUCED claims ('-' if none)."""
    from drocli.claims import cause

    return cause.summary(cause.counts(claims)) or "-"


def seeds_cell(page: Page) -> str:
    """The seeds the records hold, and with a sequential plan its last look ('20 of 40')."""
    used = page.seeds_used if page.seeds_used is not None else len(page.seeds)
    return f"{used} of {page.looks[-1]}" if page.looks else str(used)


def _commit(p: Page) -> tuple[str, bool]:
    m = p.manifest or {}
    return str(m.get("git_commit") or "?")[:7], bool(m.get("git_dirty"))
