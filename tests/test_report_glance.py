"""A report read at a glance (issue 57, item 2): one short line per claim with the claim in
full one click away, a forest plot of the effects per folder, a picture of the verdicts in
the README, the seeds actually judged in the header, readable metric names."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import call
from tests.test_doc_cells import cells

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "report"
PAGES = sorted(REPORT.glob("*.md"))
MAX_WORDS = 60
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_generated_table_cell_runs_past_60_words(page):
    """Every table cell of the generated pages is short; the paper's quoted words (“...”)
    are the only exception, and none is left in a table now."""
    long = [(n, len(t.split())) for n, t in cells(page)
            if len(t.split()) > MAX_WORDS and "\u201c" not in t]
    assert not long, f"{page.name}: cells over {MAX_WORDS} words at (line, words) {long}"


def _report(tiny_spec, tmp_path):
    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("plot", out) == 0
    assert call("report", out, "--out", rep) == 0
    return out, rep


def test_forest_plot_is_written_and_embedded(tiny_spec, tmp_path):
    """A folder with judged claims gets report/<folder>/effects.png, shown under the
    verdict table with its caption in both pages; the report's index folder gets the
    verdicts picture."""
    from drocli.report.effects_figure import CAPTION

    _, rep = _report(tiny_spec, tmp_path)
    png = rep / "res" / "effects.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 2000
    md, html = (rep / "res.md").read_text(), (rep / "res.html").read_text()
    table, rest = md.split("## Verdicts")[1].split("![effect intervals](res/effects.png)")
    assert "| [`below_start`]" in table              # under the verdict table
    assert rest.lstrip().startswith("**Effect intervals.**")
    assert '<img src="res/effects.png" alt="effect intervals">' in html
    assert CAPTION.split(";")[0] in html
    assert (rep / "status.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_generated_page_with_effects_shows_its_forest_plot(page):
    if page.stem == "index" or "## Each claim in full" not in page.read_text():
        return
    text = page.read_text()
    assert f"![effect intervals]({page.stem}/effects.png)" in text
    assert (REPORT / page.stem / "effects.png").read_bytes()[:8] == PNG_MAGIC


def test_forest_plot_gives_each_claim_and_unit_its_panel():
    """One panel per claim (per unit where its panels judge several metrics), every
    comparison with a mean on it; 75 claims are laid out in 3 columns."""
    from drocli.report.effects_figure import layout, panels

    def claim(cid, effects):
        return SimpleNamespace(id=cid, effects=effects, status="holds")

    e = {"mean": 1.0, "lo": 0.5, "hi": 1.5, "threshold": 0.1, "verdict": "holds"}
    page = SimpleNamespace(
        claims=[claim("a", {"X @ setting=r, metric=m1": e, "X @ setting=r, metric=m2": e}),
                claim("b", {"Y": e, "Z": {**e, "mean": None}}), claim("c", {})],
        units={"a": "units of m1", "b": "units of m3"}, metric_names={"m1": "Loss one"})
    got = [(c.id, unit, [k for k, _ in comps]) for c, unit, comps in panels(page)]
    assert got == [("a", "Loss one", ["X @ setting=r, metric=m1"]),
                   ("a", "m2", ["X @ setting=r, metric=m2"]), ("b", "m3", ["Y"])]
    assert (layout(2), layout(5), layout(75)) == (1, 2, 3)


def test_seed_runs_are_ranges():
    from drocli.report.judged_seeds import ranges

    assert ranges([5, 1, 2, 3, 8, 7, 3]) == "1-3, 5, 7-8"
    assert ranges([300]) == "300" and ranges([]) == ""


def test_seeds_row_lists_the_seeds_the_claims_were_judged_on():
    """The union over claims of each claim's deciding look's seeds, not the spec's."""
    from drocli.report.judged_seeds import seeds_row

    def claim(seeds, status="holds", reg=None):
        return SimpleNamespace(status=status, judged={f"c{s}": s for s in seeds},
                               registration=reg or {}, look={"seeds": len(seeds)})

    spec = list(range(300, 310))
    row = seeds_row([claim(range(300, 310)), claim(range(300, 320), "not_reproduced")], spec)
    assert row == "300-319 (claims decided at 10 or 20 seeds; the spec's seeds 300-309)"
    confirmed = claim(range(300, 320), reg={"status": "confirmed",
                                            "confirmed_seeds": [318, 319]})
    assert seeds_row([confirmed], spec).startswith("318-319 (claims decided at 2 seeds")
    assert seeds_row([claim(spec, "skipped")], spec).startswith("300-309 (the spec's seeds")


def test_generated_header_lists_the_judged_seeds():
    """mero_synthetic's records hold 20 seeds, its spec 10: the header names the 20 its
    claims were judged on, and the looks that decided them."""
    from drocli.report import _load
    from drocli.report.judged_seeds import claim_seeds, ranges

    page = _load(ROOT / "results" / "mero_synthetic")
    union = {s for c in page.claims for s in claim_seeds(c)}
    assert set(page.seeds) < union
    row = next(line for line in (REPORT / "mero_synthetic.md").read_text().splitlines()
               if line.startswith("| seeds |"))
    assert f"| seeds | {ranges(union)} " in row
    assert "at 10 or 20 seeds" in row


def test_claim_lines_link_to_the_claim_in_full(tiny_spec, tmp_path):
    """Markdown: the claim's name in the table links to its heading's anchor (GitHub's
    rule), where its test and comparisons are; HTML: to its <details> block."""
    from tests.test_links import anchors

    _, rep = _report(tiny_spec, tmp_path)
    page = rep / "res.md"
    md = page.read_text()
    targets = re.findall(r"\| \[`([^`]+)`\]\(#([^)]+)\)", md)
    assert targets == [("below_start", "below_start")]
    assert "below_start" in anchors(page)
    full = md.split("### `below_start`")[1]
    assert "**The test:**" in full and "| compared with | effect | interval | verdict |" in full
    html = (rep / "res.html").read_text()
    assert '<a href="#claim-below_start">' in html
    block = html.split('<details id="claim-below_start">')[1].split("</details>")[0]
    assert "<summary>" in block and "The test" in block and "<th>interval</th>" in block


def test_the_claim_line_is_short_and_names_metrics_readably():
    """The plain line takes the effect of the worst comparison, says 'worst of N', and
    names the metric as the spec draws it (no raw key where the spec names it)."""
    from drocli.report.claim_line import MAX_WORDS, claim_line, deciding

    e = {"mean": 0.3, "lo": 0.1, "hi": 0.5, "threshold": 0.05, "verdict": "holds",
         "n": 10, "confidence": 0.95}
    worst = {**e, "mean": 0.2, "lo": 0.06, "hi": 0.34}
    c = SimpleNamespace(id="a", effects={"B": e, "C": worst}, status="holds", paper={},
                        cause={}, registration={}, tuned_on=[], post_hoc=False,
                        cannot_decide=False, detail="", look={})
    page = SimpleNamespace(units={"a": "units of max_loss_test"},
                           metric_names={"max_loss_test": "Agnostic loss"}, factors={})
    assert deciding(c)[0] == "C"
    verdict, effect, size, reason = claim_line(page, c)
    assert effect == "C: +0.2 [+0.06, +0.34] Agnostic loss (worst of 2)"
    assert size == "0.05" and "max_loss_test" not in effect
    assert all(len(x.split()) <= MAX_WORDS for x in (verdict, effect, size, reason))


def test_generated_lines_use_the_spec_s_metric_names():
    """omd_tch_fl_cifar10: the spec names max_loss_test 'Agnostic loss'; the verdict
    table's effect cells say so and never show the key."""
    table = (REPORT / "omd_tch_fl_cifar10.md").read_text().split("## Verdicts")[1].split(
        "![effect intervals]")[0]
    rows = [r for r in table.splitlines() if r.startswith("| [`")]
    assert len(rows) == 75
    effects = [r.split(" | ")[2] for r in rows]
    assert any("Agnostic loss" in e for e in effects)
    assert not any(re.search(r"\b(max_loss_test|acc_test|parity_test)\b", e)
                   for e in effects)


def test_readme_stays_under_12000_bytes():
    size = (ROOT / "README.md").stat().st_size
    assert size < 12_000, f"README.md is {size} bytes: trim the generated wording"


def test_readme_status_block_shows_the_verdicts_picture():
    text = (ROOT / "README.md").read_text()
    block = text.split("drocli:status:begin")[1].split("drocli:status:end")[0]
    link = re.search(r"!\[[^\]]*\]\((docs/report/status\.png)\)", block)
    assert link and (ROOT / link.group(1)).read_bytes()[:8] == PNG_MAGIC
