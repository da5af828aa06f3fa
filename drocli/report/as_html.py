"""A results folder's page as static HTML (no server, no scripts), and the frame the index
shares with it: the style sheet, the status colours and the dirty-tree warning.
"""

from __future__ import annotations

from drocli.report.claim_details import html_block, html_id
from drocli.report.claim_line import LINE_HEAD, LINE_WORDS, claim_line
from drocli.report.effects_figure import CAPTION as EFFECTS_CAPTION
from drocli.report.escape import _esc, _url
from drocli.report.page import Page, _caption
from drocli.report.provenance import _provenance, dirty_note
from drocli.report.sections import ablation_html, paper_html
from drocli.report.verdict_table import _verdicts_text, seeds_note

STATUS_COLORS = {"holds": "#d4edda", "fails": "#f8d7da", "not_reproduced": "#fde2c8",
                 "unsupported": "#e2d9f3",
                 "inconclusive": "#eeeeee", "cannot_decide": "#f7f7f7",
                 "unexpectedly_holds": "#fff3b0",
                 "post_hoc": "#dbe8fb", "skipped": "#ffffff", "error": "#f4b6b6",
                 "incomplete": "#f4b6b6"}


# a warning, not a verdict: white with a dashed amber border, unlike every STATUS_COLORS fill
WARN = "background:#ffffff;border:2px dashed #b35c00;color:#7a3e00"
DIRTY_MEANS = ("recorded from a dirty working tree: its commit plus uncommitted or untracked "
               "changes, so that commit alone may not reproduce these numbers")
CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
       "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;"
       "padding:4px 8px;vertical-align:top;text-align:left}img{max-width:100%}"
       "figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#333;margin-top:0.4em}"
       f".dirty{{{WARN};padding:0.6em 1em;font-weight:bold}}"
       ".num{text-align:right;font-variant-numeric:tabular-nums}"
       ".badge{display:inline-block;padding:1px 6px;margin:1px;border-radius:3px;"
       f"border:1px solid #bbb}}.badge.warn{{{WARN}}}tr.claim td{{border-top:2px solid #888}}"
       "tr.total td{font-weight:bold;border-top:2px solid #888}")


def _html_page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>\n"
            f"{body}</body></html>\n")


def _color(status: str) -> str:
    return STATUS_COLORS.get(status, "#ffffff")


def html_page(page: Page) -> str:

    e = _esc
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in _provenance(page))
    shared = seeds_note(page)
    claims = []
    for c in page.claims:
        verdict, effect, size, reason = claim_line(page, c)
        key = "post_hoc" if c.post_hoc and c.status != "fails" else c.status
        claims.append(
            f'<tr class="claim"><td><a href="#{e(html_id(c.id))}"><code>{e(c.id)}</code></a>'
            f'</td><td style="background:{_color(key)}"><b>{e(verdict)}</b></td>'
            f"<td>{e(effect)}</td><td class=\"num\">{e(size)}</td><td>{e(reason)}</td></tr>"
            f'<tr class="more"><td colspan="5">{html_block(page, c, shared)}</td></tr>')
    if not page.claims:
        claims.append("<tr><td>-</td><td colspan=\"4\">no claims in this spec</td></tr>")
    effects = (f'<figure><img src="{e(_url(page.effects_png))}" alt="effect intervals">'
               f"<figcaption><b>Effect intervals.</b> {e(EFFECTS_CAPTION)}</figcaption>"
               "</figure>" if page.effects_png else "")
    head = "".join(f"<th>{e(h.strip())}</th>" for h in f"claim | verdict | {LINE_HEAD}".split("|"))

    def fig(f, link):
        title, caption = _caption(page, f)
        text = (f"<b>{e(title)}.</b> " if title else "") + e(caption) if (
            title or caption) else e(f.stem)
        return (f'<figure><img src="{e(_url(link))}" alt="{e(f.stem)}"><figcaption>{text}'
                "</figcaption></figure>")

    figs = "".join(fig(f, link) for f, link in zip(page.figures, page.links or [],
                                                   strict=False))
    desc = (f"<h2>Settings, deviations and stand-ins</h2><p>{e(page.description)}</p>"
            if page.description else "")
    dirty = f'<p class="dirty">{e(dirty_note(page))}</p>' if dirty_note(page) else ""
    dirty += "".join(f'<p class="dirty">Flag. {e(f.line)}</p>' for f in page.flags)
    body = (f"<h1>{e(page.title)}</h1>{dirty}<p>Results folder <code>{e(page.name)}</code>."
            + (f" <strong>{e(page.note)}</strong>" if page.note else "") + "</p>"
            f"<table>{rows}</table>{desc}{paper_html(page)}{ablation_html(page)}"
            "<h2>Verdicts</h2>"
            f"<p>{_verdicts_text(page, as_html=True)}</p>"
            + (f"<p>Every interval below: {e(shared)}.</p>" if shared else "")
            + f"<p>{e(LINE_WORDS)} In this page a claim's details open under its line.</p>"
            + f"<table><tr>{head}</tr>{''.join(claims)}</table>{effects}"
            + f"<h2>Figures</h2>{figs or '<p>(none)</p>'}")
    return _html_page(page.title, body)
