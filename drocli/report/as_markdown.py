"""A results folder's page in Markdown: provenance, settings, the paper's numbers, the
ablations, the verdict table, what each claim judges, and the figures with their captions.
"""

from __future__ import annotations

from drocli.report.escape import _gen, _name, _url, md
from drocli.report.page import Page, _caption
from drocli.report.provenance import _provenance, dirty_note
from drocli.report.sections import ablation_section, paper_section
from drocli.report.verdict_table import (
    _claim_note,
    _overall,
    _source,
    _status,
    _verdicts_text,
    comparisons,
    seeds_note,
)


def markdown(page: Page) -> str:

    cell = md
    lines = [f"# {md(page.title)}", ""]
    if dirty_note(page):
        lines += [f"> **Dirty.** {dirty_note(page)}", ""]
    for f in page.flags:
        lines += [f"> **Flag.** {cell(f.line)}", ""]
    lines += [f"Results folder {_name(page.name, code=True)}."
              + (f" **{page.note}**." if page.note else ""), "", "| | |", "|---|---|"]
    lines += [f"| {k} | {cell(v)} |" for k, v in _provenance(page)]
    if page.description:
        lines += ["", "## Settings, deviations and stand-ins", "", md(page.description)]
    lines += paper_section(page)
    lines += ablation_section(page)
    shared = seeds_note(page)
    lines += ["", "## Verdicts", "", _verdicts_text(page, as_html=False), ""]
    if shared:
        lines += [f"Every interval below: {shared}.", ""]
    lines += ["| claim | status | compared with | effect | interval | verdict |",
              "|---|---|---|---|---|---|"]
    for c in page.claims:
        note, comps = _claim_note(c, shared, page.effect_words.get(c.id, "")), comparisons(c)
        if len(comps) == 1 and not note:      # one comparison: one row
            other, mean, interval, verdict = comps[0]
            lines.append(f"| `{c.id}` | {_gen(_status(c))} | {cell(other)} | {mean} | "
                         f"{_gen(interval)} | **{verdict}** |")
            continue
        lines.append(f"| `{c.id}` | {_gen(_status(c))} | {_gen(note)} | | | "
                     f"**{_overall(c)}** |")
        for other, mean, interval, verdict in comps:
            lines.append(f"| | | {cell(other)} | {mean} | {_gen(interval)} | {verdict} |")
    if not page.claims:
        lines.append("| - | no claims in this spec | | | | |")
    if page.claims:
        lines += ["", "### What each claim judges", "",
                  "The spec's words, the test drocli runs (generated from the claim's fields, "
                  "so it cannot drift from the code) and the paper's words.", "",
                  "| claim | the spec's words | the test | the paper's words |",
                  "|---|---|---|---|"]
        lines += [f"| `{c.id}` | {cell(c.text)} | {cell(page.tests.get(c.id, '-'))} | "
                  f"{cell(_source(c)) or '-'} |" for c in page.claims]
    lines += ["", "## Figures", ""]
    for f, link in zip(page.figures, page.links or [], strict=False):
        title, caption = _caption(page, f)
        lines += [f"![{_name(f.stem)}]({_url(link)})", ""]
        if title or caption:
            lines += [(f"**{md(title)}.** " if title else "") + md(caption), ""]
    if not page.figures:
        lines.append("(none)")
    return "\n".join(lines).rstrip("\n") + "\n"
