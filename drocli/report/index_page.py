"""The report's index, in Markdown and HTML: one status row per results folder, the totals
over all of them, and how far the inconclusive claims are from a verdict.
"""

from __future__ import annotations

import math

from drocli.report.as_html import DIRTY_MEANS, _color, _html_page
from drocli.report.escape import _esc, _url
from drocli.report.page import Page
from drocli.report.status import (
    TABLE_HEAD,
    _commit,
    causes_cell,
    counts,
    seeds_cell,
    shares,
    status_line,
)
from drocli.report.verdict_table import _distance


def totals(pages: list[Page]) -> dict:
    """Summed over the pages: claims per summary bucket, judged, inconclusive, post hoc,
    on tuning seeds, folders from a dirty tree."""
    from drocli.claims import SUMMARY_ORDER

    t = {k: 0 for k, _ in SUMMARY_ORDER}
    t.update(judged=0, inconclusive_share=0, post=0, tuned=0, dirty=0, claims=0,
             decide=dict.fromkeys(DECIDE_BUCKETS, 0), causes={})
    from drocli.claims import cause

    for p in pages:
        for k, v in cause.counts(p.claims).items():
            t["causes"][k] = t["causes"].get(k, 0) + v
        for k, v in counts(p).items():
            t[k] = t.get(k, 0) + v
        judged = [c for c in p.claims if c.status != "skipped"]
        t["claims"] += len(p.claims)
        t["judged"] += len(judged)
        t["inconclusive_share"] += sum(c.status == "inconclusive" and not c.cannot_decide
                                       for c in judged)
        t["post"] += sum(c.post_hoc for c in judged)
        t["tuned"] += sum(bool(c.tuned_on) for c in judged)
        t["dirty"] += bool((p.manifest or {}).get("git_dirty"))
        for c in judged:
            if c.status == "inconclusive" and not c.cannot_decide:
                t["decide"][_decide_bucket(c)] += 1
    return t


DECIDE_BUCKETS = ("at most 2x", "2-10x", "more than 10x", "no number", "not estimated")


def _decide_bucket(c) -> str:
    """Which of DECIDE_BUCKETS an inconclusive claim's seeds-to-decide falls in, as a
    multiple of the seeds it was judged on."""
    need, n = _distance(c)
    if math.isnan(need):
        return "not estimated"
    if need == math.inf:
        return "no number"
    ratio = need / max(1, n)
    return DECIDE_BUCKETS[0] if ratio <= 2 else DECIDE_BUCKETS[1 if ratio <= 10 else 2]


def decide_sentence(t: dict) -> str:
    """'Of the 68 inconclusive claims, ...': how far each is from a verdict."""
    d = t["decide"]
    if not sum(d.values()):
        return ""
    return (f"Of the {sum(d.values())} claims whose verdict is inconclusive (post-hoc ones "
            f"included, as in the inconclusive column), at the estimated effects (80 % "
            f"power): {d['at most 2x']} would be decided by at most twice the seeds they "
            f"were judged on, {d['2-10x']} by 2-10x, {d['more than 10x']} need more than 10x, "
            f"{d['no number']} no number of seeds (an effect on its threshold), "
            f"{d['not estimated']} not estimated (no interval, or a sign-flip test).")


def index(pages: list[Page], ext: str) -> str:
    """The index page: the totals, the verdicts picture (`status_figure`, drawn beside it)
    and one status line per folder."""
    from drocli.claims import SUMMARY_ORDER
    from drocli.report.status_figure import PNG, has_picture

    t = totals(pages)
    words = ", ".join(f"{t[k]} {w}" for k, w in SUMMARY_ORDER if t.get(k) and k != "skipped")
    if t.get("skipped"):                 # the intro's counts add up to its claims
        words += f", {t['skipped']} skipped (not judged on that profile)"
    share = (f"{t['inconclusive_share']}/{t['judged']} "
             f"({t['inconclusive_share'] / t['judged']:.0%})" if t["judged"] else "-")
    intro = " ".join(s for s in (
        f"{len(pages)} results folders, {t['claims']} claims: {words or 'none'}.",
        f"{t['dirty']} folder(s) were recorded from a dirty working tree (uncommitted or "
        "untracked changes beside the commit: the commit alone may not reproduce them).",
        decide_sentence(t)) if s)
    if ext == "md":
        head = TABLE_HEAD
        lines = [status_line(p, f"{p.name}.md") for p in pages]
        from drocli.claims.cause import summary as by_cause

        total = (f"| **total** | | | {words or '-'} | {by_cause(t['causes']) or '-'} | {share} "
                 f"| {t['post']} | {t['tuned']} | {t['dirty']} dirty |")
        picture = f"![verdicts by kind]({PNG})\n\n" if has_picture(pages) else ""
        return ("# Reproduction report\n\n" + intro + "\n\n" + picture + head + "\n"
                + "\n".join(lines + [total]) + "\n")
    e = _esc

    def badges(c: dict) -> str:
        return " ".join(f'<span class="badge" style="background:{_color(k)}">'
                        f"{c[k]} {e(w)}</span>" for k, w in SUMMARY_ORDER
                        if c.get(k) and k != "skipped") or "no claims"

    rows = []
    for p in pages:
        commit, dirty = _commit(p)
        note = f" <small>({e(p.note)})</small>" if p.note else ""
        rows.append(
            f"<tr><td><a href=\"{e(_url(p.name + '.html'))}\">{e(p.name)}</a></td>"
            f"<td>{e(p.profile)}</td>"
            f"<td class=\"num\">{seeds_cell(p)}</td><td>{badges(counts(p))}{note}</td>"
            f"<td>{e(causes_cell(p.claims))}</td>"
            + "".join(f"<td class=\"num\">{e(x)}</td>" for x in shares(p))
            + f"<td><code>{e(commit)}</code>"
            + (f' <span class="badge warn" title="{e(DIRTY_MEANS)}">dirty</span>' if dirty
               else "") + "</td></tr>")
    from drocli.claims.cause import summary as by_cause

    rows.append(f'<tr class="total"><td>total</td><td></td><td></td><td>{badges(t)}</td>'
                f"<td>{e(by_cause(t['causes']) or '-')}</td>"
                f'<td class="num">{e(share)}</td><td class="num">{t["post"]}</td>'
                f'<td class="num">{t["tuned"]}</td><td>{t["dirty"]} dirty</td></tr>')
    legend = " ".join(f'<span class="badge" style="background:{_color(k)}">{e(w)}</span>'
                      for k, w in SUMMARY_ORDER if k != "skipped")
    return _html_page("Reproduction report",
                      f"<h1>Reproduction report</h1><p>{e(intro)}</p><p>Colours: {legend}"
                      f'. Warning: <span class="badge warn" title="{e(DIRTY_MEANS)}">dirty'
                      f"</span> = {e(DIRTY_MEANS)}.</p>"
                      + (f'<p><img src="{e(PNG)}" alt="verdicts by kind"></p>'
                         if has_picture(pages) else "")
                      + "<table><tr><th>results</th><th>profile</th><th>seeds</th><th>verdicts "
                      "(effect intervals at each claim's confidence, default 95 %)</th>"
                      "<th>negative verdicts by cause</th><th>inconclusive</th>"
                      "<th>post hoc</th><th>on tuning seeds</th>"
                      f"<th>recorded from</th></tr>{''.join(rows)}</table>")
