"""A results folder's page in Markdown: provenance, settings, the paper's numbers, the
ablations, the verdict table (one line per claim), the forest plot of the effects, each
claim in full (linked from its line), and the figures with their captions.
"""

from __future__ import annotations

from drocli.report.claim_details import anchor, markdown_section
from drocli.report.claim_line import LINE_HEAD, LINE_WORDS, claim_line
from drocli.report.effects_figure import CAPTION as EFFECTS_CAPTION
from drocli.report.escape import _gen, _name, _url, md
from drocli.report.page import Page, _caption
from drocli.report.provenance import _provenance, dirty_note
from drocli.report.sections import ablation_section, paper_section
from drocli.report.verdict_table import _verdicts_text, seeds_note


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
    lines += [LINE_WORDS, ""]
    lines += [f"| claim | verdict | {LINE_HEAD} |", "|---|---|---|---|---|"]
    for c in page.claims:
        verdict, effect, size, reason = claim_line(page, c)
        lines.append(f"| [{_name(c.id, code=True)}](#{anchor(c.id)}) | {_gen(verdict)} | "
                     f"{_gen(effect)} | {_gen(size)} | {_gen(reason)} |")
    if not page.claims:
        lines.append("| - | no claims in this spec | | | |")
    if page.effects_png:
        lines += ["", f"![effect intervals]({_url(page.effects_png)})", "",
                  f"**Effect intervals.** {md(EFFECTS_CAPTION)}"]
    lines += markdown_section(page, shared)
    lines += ["", "## Figures", ""]
    for f, link in zip(page.figures, page.links or [], strict=False):
        title, caption = _caption(page, f)
        lines += [f"![{_name(f.stem)}]({_url(link)})", ""]
        if title or caption:
            lines += [(f"**{md(title)}.** " if title else "") + md(caption), ""]
    if not page.figures:
        lines.append("(none)")
    return "\n".join(lines).rstrip("\n") + "\n"
