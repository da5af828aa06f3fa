"""The two optional sections of a page, in Markdown and in HTML: the paper's own numbers
beside ours (words, picture, table) and the ablations that re-test its claims.
"""

from __future__ import annotations

from drocli.report.escape import _esc, _url, md
from drocli.report.page import Page
from drocli.report.paper_vs_ours import PNG as PAPER_PNG


def paper_words(page: Page) -> str:
    """What the section on the paper's numbers shows, and how the claims read them."""
    data = page.paper["data"].iloc[0]
    n = sum(bool(c.paper) for c in page.claims)
    unsupported = sum(c.status == "unsupported" for c in page.claims)
    why = (", so absolute values are not expected to agree and the order of the methods is "
           "what compares" if data == "stand-in" else "")
    return (f"The paper's own reported numbers beside ours ({len(page.paper)} values; our "
            f"data: {data}{why}). Each claim whose "
            f"subject they cover is read on them first ({n} claims): {unsupported} of them "
            "say more than the paper's own numbers show and are NOT SUPPORTED BY THE "
            "PAPER'S NUMBERS, whatever ours give (docs/verdicts.md, \"The paper's own "
            "numbers\"). The picture: ours (y, mean and 95 % interval) against the paper's "
            "(x, mean ± std), one point per method; Spearman's rank correlation in each "
            "title.")


def paper_section(page: Page) -> list[str]:
    """The report's section on the paper's numbers: words, picture, table."""
    from drocli.report.paper_vs_ours import markdown as table_md

    if page.paper is None:
        return []
    return ["", "## The paper's numbers beside ours", "", md(paper_words(page)), "",
            f"![paper versus ours]({_url(f'{page.name}/{PAPER_PNG}')})", "",
            table_md(page.paper).rstrip("\n")]


ABLATION_WORDS = ("Each ablation changes one setting we chose and re-tests a claim of the "
                  "paper profile under it; each revision corrects a test that did not read "
                  "the paper's sentence (that claim's cause: test). Both run on fresh seeds "
                  "with their own plan, registered before their runs: the two verdicts side "
                  "by side.")


def _title(page: Page) -> str:
    kinds = {p.kind for p in page.ablations}
    return {frozenset({"ablation"}): "Ablations", frozenset({"revision"}): "Revisions"}.get(
        frozenset(kinds), "Ablations and revisions")


def ablation_section(page: Page) -> list[str]:
    """The ablations and revisions of this page's claims, or of the claims this page's
    ablation or revision re-tests."""
    from drocli.claims.ablation import HEADER, rows

    if not page.ablations:
        return []
    out = ["", f"## {_title(page)}", "", ABLATION_WORDS, "", "| " + " | ".join(HEADER) + " |",
           "|" + "---|" * len(HEADER)]
    return out + ["| " + " | ".join(md(c) for c in r) + " |" for r in rows(page.ablations)]


def ablation_html(page: Page) -> str:
    """ablation_section in HTML."""
    from drocli.claims.ablation import HEADER, rows

    if not page.ablations:
        return ""
    e = _esc
    head = "<tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADER) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>"
                   for r in rows(page.ablations))
    return f"<h2>{_title(page)}</h2><p>{e(ABLATION_WORDS)}</p><table>{head}{body}</table>"


def paper_html(page: Page) -> str:
    """paper_section in HTML."""
    from drocli.report.paper_vs_ours import HEADER, NUMERIC, cells

    if page.paper is None:
        return ""
    e = _esc
    head = "<tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADER) + "</tr>"
    rows = "".join("<tr>" + "".join(f'<td class="num">{e(c)}</td>' if i in NUMERIC else
                                    f"<td>{e(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in cells(page.paper))
    return (f"<h2>The paper's numbers beside ours</h2><p>{e(paper_words(page))}</p>"
            f'<figure><img src="{e(_url(f"{page.name}/{PAPER_PNG}"))}" alt="paper versus '
            f'ours"></figure><table>{head}{rows}</table>')
