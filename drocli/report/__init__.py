"""`drocli report`: a reproduction report of results folders, made by the modules beside this
face (page, as_markdown, as_html, index_page, folder, readme); it hands their names on."""
# ruff: noqa: F401

from drocli.report.as_html import CSS, DIRTY_MEANS, STATUS_COLORS, WARN, html_page
from drocli.report.as_markdown import markdown
from drocli.report.escape import MD_SPECIAL, PLAIN, md, shown
from drocli.report.folder import LISTED, distinct, write
from drocli.report.index_page import DECIDE_BUCKETS, decide_sentence, index, totals
from drocli.report.page import Page, _load, _readable, metric_words, page_name
from drocli.report.provenance import (
    compute_clock,
    compute_total,
    dirty_note,
    folder_provenance,
    machine_rows,
)
from drocli.report.readme import BEGIN, END, readme_block, update_readme
from drocli.report.sections import (
    ABLATION_WORDS,
    ablation_html,
    ablation_section,
    paper_html,
    paper_section,
    paper_words,
)
from drocli.report.status import (
    TABLE_HEAD,
    causes_cell,
    counts,
    seeds_cell,
    shares,
    status_line,
    summary,
    tree_state,
)
from drocli.report.verdict_table import _claim_note, comparisons, decision_note, flags, seeds_note
