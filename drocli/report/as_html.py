"""A results folder's page as static HTML (no server, no scripts), and the frame the index
shares with it: the style sheet, the status colours and the dirty-tree warning.
"""

from __future__ import annotations

from drocli.report.escape import _esc, _url
from drocli.report.page import Page, _caption
from drocli.report.provenance import _provenance, dirty_note
from drocli.report.sections import ablation_html, paper_html
from drocli.report.verdict_table import (
    _claim_note,
    _overall,
    _source,
    _status,
    _verdicts_text,
    comparisons,
    seeds_note,
)

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
        comps, note = comparisons(c), _claim_note(c, shared, page.effect_words.get(c.id, ""))
        key = "post_hoc" if c.post_hoc and c.status != "fails" else c.status
        if len(comps) == 1 and not note:      # one comparison: one row
            o, m, i, v = comps[0]
            claims.append(
                f'<tr class="claim"><td><code>{e(c.id)}</code></td>'
                f'<td style="background:{_color(key)}">{e(_status(c))}</td>'
                f'<td>{e(o)}</td><td class="num">{e(m)}</td><td>{e(i)}</td>'
                f'<td style="background:{_color(c.status)}"><b>{e(v)}</b></td></tr>')
            continue
        span = f' rowspan="{len(comps) + 1}"' if comps else ""
        claims.append(
            f'<tr class="claim"><td{span}><code>{e(c.id)}</code></td>'
            f'<td{span} style="background:{_color(key)}">{e(_status(c))}</td>'
            f"<td colspan=\"3\"><small>{e(note)}</small></td>"
            f'<td style="background:{_color(c.status)}"><b>{e(_overall(c))}</b></td></tr>')
        claims += [f"<tr><td>{e(o)}</td><td class=\"num\">{e(m)}</td><td>{e(i)}</td>"
                   f"<td>{e(v)}</td></tr>" for o, m, i, v in comps]
    if not page.claims:
        claims.append("<tr><td>-</td><td colspan=\"5\">no claims in this spec</td></tr>")
    judges = "".join(f"<tr><td><code>{e(c.id)}</code></td><td>{e(c.text)}</td>"
                     f"<td>{e(page.tests.get(c.id, '-'))}</td>"
                     f"<td>{e(_source(c) or '-')}</td></tr>" for c in page.claims)

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
            + "<table><tr><th>claim</th><th>status</th><th>compared with</th><th>effect</th>"
            f"<th>interval</th><th>verdict</th></tr>{''.join(claims)}</table>"
            + (f"<h3>What each claim judges</h3><p>The spec's words, the test drocli runs "
               "(generated from the claim's fields) and the paper's words.</p><table><tr>"
               "<th>claim</th><th>the spec's words</th><th>the test</th>"
               f"<th>the paper's words</th></tr>{judges}</table>" if judges else "")
            + f"<h2>Figures</h2>{figs or '<p>(none)</p>'}")
    return _html_page(page.title, body)
