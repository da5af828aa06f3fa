"""Each claim in full, one click from its line in the verdict table: its status with every
flag and the whole cause, what its effects are (unit, sign, procedure, multiple-comparison
level, seeds to decide), one row per comparison, the spec's words, the test drocli runs and
the paper's words. In Markdown a section with a heading per claim (its anchor the table
links to), in HTML a <details> block.
"""

from __future__ import annotations

import re

from drocli.report.escape import _esc, _gen, _name, md
from drocli.report.page import Page
from drocli.report.verdict_table import _claim_note, _source, _status, comparisons

HEAD = "Each claim in full"
INTRO = ("Per claim: its verdict with every flag and the whole cause, what its effects "
         "are, one row per comparison (effect, interval, verdict), the spec's words, the "
         "test drocli runs (generated from the claim's fields, so it cannot drift from the "
         "code) and the paper's words.")


def anchor(claim_id: str) -> str:
    """The Markdown anchor of a claim's heading (GitHub's rule: lower case, punctuation
    but - and _ dropped, spaces as -)."""
    return re.sub(r"[^\w\- ]", "", str(claim_id).strip().lower()).replace(" ", "-")


def html_id(claim_id: str) -> str:
    """The HTML id of a claim's details block."""
    return "claim-" + re.sub(r"[^\w-]", "-", str(claim_id))


def _texts(page: Page, c, shared: str) -> list[tuple[str, str]]:
    """(label, text) of a claim's details, in order; the paper's words last."""
    return [("Verdict", _status(c)),
            ("Its effects", _claim_note(c, shared, page.effect_words.get(c.id, ""))),
            ("The spec's words", c.text), ("The test", page.tests.get(c.id, "-")),
            ("The paper's words", _source(c) or "-")]


def markdown_section(page: Page, shared: str) -> list[str]:
    """The section of the page holding every claim in full."""
    if not page.claims:
        return []
    out = ["", f"## {HEAD}", "", INTRO, ""]
    for c in page.claims:
        out += [f"### {_name(c.id, code=True)}", ""]
        out += [f"- **{label}:** {_gen(text) if label in ('Verdict', 'Its effects') else md(text)}"
                for label, text in _texts(page, c, shared)]
        comps = comparisons(c)
        if comps:
            out += ["", "| compared with | effect | interval | verdict |", "|---|---|---|---|"]
            out += [f"| {md(o)} | {m} | {_gen(i)} | {v} |" for o, m, i, v in comps]
        out += ["", "[Back to the verdicts](#verdicts)", ""]
    return out[:-1]


def html_block(page: Page, c, shared: str) -> str:
    """A claim's <details> block (closed; its summary names what it holds)."""
    e = _esc
    items = "".join(f"<li><b>{e(label)}:</b> {e(text)}</li>"
                    for label, text in _texts(page, c, shared))
    comps = comparisons(c)
    table = ("<table><tr><th>compared with</th><th>effect</th><th>interval</th>"
             "<th>verdict</th></tr>" + "".join(
                 f'<tr><td>{e(o)}</td><td class="num">{e(m)}</td><td>{e(i)}</td>'
                 f"<td>{e(v)}</td></tr>" for o, m, i, v in comps) + "</table>"
             if comps else "")
    return (f'<details id="{e(html_id(c.id))}"><summary>{e(c.id)} in full: the test, '
            f"{len(comps)} comparison{'s' if len(comps) != 1 else ''}, the cause and the "
            f"paper's words</summary><ul>{items}</ul>{table}</details>")
