"""`drocli report`: static pages whose every figure exists, an index, and the README's
generated status block, which CI checks is current."""

from __future__ import annotations

import html
import html.parser
import re
import shutil
from pathlib import Path

from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]


class Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.links = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs.append(a["src"])
        if tag == "a":
            self.links.append(a["href"])


def _refs(path: Path) -> Refs:
    r = Refs()
    r.feed(path.read_text())
    return r


def test_report_pages_reference_existing_figures(tiny_spec, tmp_path):
    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("plot", out) == 0
    assert call("report", out, "--out", rep) == 0
    page = rep / "res.html"
    refs = _refs(page)
    assert refs.imgs, "the page shows the figures"
    for src in refs.imgs:
        assert (page.parent / src).resolve().is_file(), src
        assert not src.startswith(("/", "..")), src      # inside the report folder
    index = _refs(rep / "index.html")
    assert index.links == ["res.html"] and (rep / index.links[0]).is_file()
    md = (rep / "res.md").read_text()
    assert "below_start" in md and "paired-t 95" in md and "| profile | smoke |" in md
    first = page.read_bytes()
    assert call("report", out, "--out", rep) == 0
    assert page.read_bytes() == first                 # no clock in the report


def test_readme_status_block_is_current():
    """What CI runs: the README's generated block matches the recorded results."""
    dirs = sorted(p for p in (ROOT / "results").iterdir()
                  if p.is_dir() and not p.name.endswith(("-smoke", "-quick")))
    assert call("report", *dirs, "--readme", ROOT / "README.md", "--check",
                "--out", ROOT / "docs" / "report") == 0


def test_stale_readme_block_is_detected_and_rewritten(tiny_spec, tmp_path, capsys):
    from drocli.report import BEGIN, END

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{BEGIN}\n| stale |\n{END}\n\nrest\n")
    assert call("report", out, "--readme", readme, "--check",
                "--out", tmp_path / "report") == 1
    assert "stale" in capsys.readouterr().err
    assert call("report", out, "--readme", readme, "--out", tmp_path / "report") == 0
    text = readme.read_text()
    assert "| stale |" not in text and "[res](report/res.md)" in text
    assert text.endswith("\n\nrest\n")
    assert call("report", out, "--readme", readme, "--check",
                "--out", tmp_path / "report") == 0


MD_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
MD_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)#]+)\)")


def _all_refs_resolve(report: Path) -> int:
    """Every image and page link of every page (HTML and Markdown) resolves inside `report`;
    the number of images checked."""
    n = 0
    for page in sorted(report.glob("*.html")):
        refs = _refs(page)
        for h in refs.links:                  # a link within the page: an id it holds
            assert not h.startswith("#") or f'id="{h[1:]}"' in page.read_text(), (page, h)
        for src in refs.imgs + [h for h in refs.links if not h.startswith(("http", "#"))]:
            target = (page.parent / src).resolve()
            assert target.is_file() and report.resolve() in target.parents, (page, src)
        n += len(refs.imgs)
    for page in sorted(report.glob("*.md")):
        text = page.read_text()
        for src in MD_IMAGE.findall(text) + MD_LINK.findall(text):
            if src.startswith("http") or src.startswith("docs/"):
                continue
            target = (page.parent / src).resolve()
            assert target.is_file() and report.resolve() in target.parents, (page, src)
    return n


def test_report_travels_when_its_folder_is_moved(tiny_spec, tmp_path):
    """The figures are copied into the report and linked relatively: moving the report
    folder elsewhere (and deleting the results) leaves every page whole."""
    out, rep = tmp_path / "res", tmp_path / "a" / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("plot", out) == 0
    assert call("report", out, "--out", rep) == 0
    assert sorted(p.name for p in (rep / "res").iterdir()) == sorted(
        [p.name for p in (out / "figures").glob("*.png")] + ["effects.png"])
    moved = tmp_path / "elsewhere" / "deep" / "copy"
    moved.parent.mkdir(parents=True)
    shutil.move(str(rep), str(moved))
    shutil.rmtree(out)
    assert _all_refs_resolve(moved) >= 1


def test_report_removes_the_pages_of_folders_it_no_longer_lists(tiny_spec, tmp_path):
    """A folder dropped from the report loses its page, its HTML and its copied figures;
    what the report did not write (a user's note beside the pages, a file in the page's
    folder, a page it never listed) stays."""
    a, b, rep = tmp_path / "a", tmp_path / "b", tmp_path / "report"
    for out in (a, b):
        assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
        assert call("plot", out) == 0
    (rep / "c").mkdir(parents=True)
    (rep / "c.md").write_text("a page drocli never listed")
    (rep / "notes.md").write_text("mine")
    assert call("report", a, b, "--out", rep) == 0
    assert list((rep / "b").glob("*.png"))
    (rep / "b" / "mine.txt").write_text("mine")
    assert call("report", a, "--out", rep) == 0
    assert not (rep / "b.md").exists() and not (rep / "b.html").exists()
    assert [f.name for f in (rep / "b").iterdir()] == ["mine.txt"]
    assert (rep / "a.md").is_file() and list((rep / "a").glob("*.png"))
    assert (rep / "c.md").is_file() and (rep / "notes.md").read_text() == "mine"
    (rep / "b" / "mine.txt").unlink()
    assert call("report", a, "b", "--out", rep) != 0          # b is not a folder here
    assert (rep / "a.md").is_file()
    assert call("report", a, b, "--out", rep) == 0             # b comes back whole
    assert (rep / "b.md").is_file() and list((rep / "b").glob("*.png"))


def test_report_prunes_nothing_outside_its_folder(tiny_spec, tmp_path):
    """A forged list naming paths outside the report, or a page folder that is a link to
    elsewhere, removes nothing there."""
    import json

    a, rep, other = tmp_path / "a", tmp_path / "report", tmp_path / "other"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", a, "-q") == 0
    assert call("plot", a) == 0
    other.mkdir()
    (other / "x.png").write_bytes(b"png")
    (tmp_path / "up.md").write_text("keep")
    rep.mkdir()
    (rep / "linked").symlink_to(other, target_is_directory=True)
    (rep / ".drocli-report.json").write_text(json.dumps(
        {"pages": ["../up", "..", "/etc/passwd", "linked", "index", 7]}))
    assert call("report", a, "--out", rep) == 0
    assert (other / "x.png").read_bytes() == b"png" and (tmp_path / "up.md").is_file()
    assert (rep / "index.md").is_file() and (rep / "linked").is_symlink()
    assert json.loads((rep / ".drocli-report.json").read_text())["pages"] == ["a"]


def test_report_requires_out(tiny_spec, tmp_path, capsys):
    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("report", out) == 2
    assert "--out" in capsys.readouterr().err


def test_caption_once_beside_each_figure_and_one_row_per_comparison(tiny_spec, tmp_path):
    from drocli.report import _load
    from drocli.report import md as md_text

    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("plot", out) == 0
    assert call("report", out, "--out", rep) == 0
    page = _load(out)
    md, page_html = (rep / "res.md").read_text(), (rep / "res.html").read_text()
    for fig in page.figures:
        _title, caption = page.captions[fig.stem]
        assert caption and md.count(md_text(caption)) == 1
        assert page_html.count(html.escape(caption)) == 1
    # one row per comparison, the procedure and the seed count said once
    judged = [c for c in page.claims if c.effects]
    assert judged
    full = md.split("## Each claim in full")[1].split("## Figures")[0]
    rows = [line for line in full.splitlines() if re.search(r"\| \[[-+]", line)]
    assert len(rows) == sum(len(c.effects) for c in judged)
    for c in judged:
        for other in c.effects:
            assert sum(f"| {other} |" in r for r in rows) >= 1
    note = md.count("paired-t 95% over")
    assert note == 1, md


def test_index_has_totals_and_status_colours(tiny_spec, tmp_path):
    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("report", out, "--out", rep) == 0
    md = (rep / "index.md").read_text()
    assert "| **total** |" in md and "1 results folders" in md
    page = (rep / "index.html").read_text()
    assert 'class="total"' in page and "background:#" in page


def test_compute_clock_is_the_run_that_computed_the_cells():
    """A clock shorter than the cells' solver time allows is a rewrite's: shown unknown;
    cell finish times are read where present (and count the cells that first ran in the
    last run); a spec revision is shown apart."""
    from drocli.report import compute_clock

    times = {f"c{i}": 10.0 for i in range(12)}                 # 120 s of solver time
    rewrite = {"started": "2026-11-22T01:22:24.396+00:00",
               "finished": "2026-11-22T01:22:24.476+00:00", "n_jobs": 2,
               "cells": {f"c{i}": {"status": "done"} for i in range(12)}}
    rows = dict(compute_clock(rewrite, times))
    assert rows["last run"].startswith("unknown") and "0.08 s" in rows["last run"]
    run = {**rewrite, "finished": "2026-11-22T01:23:30+00:00",
           "cells": {f"c{i}": {"status": "done", "at": f"2026-11-22T01:23:{10 + i}+00:00"}
                     for i in range(12)},
           "spec_revised": {"at": "2026-11-25T08:00:00+00:00", "git_commit": "abc",
                            "git_dirty": False}}
    rows = dict(compute_clock(run, times))
    assert rows["last run"] == ("2026-11-22 01:22:24 UTC to 2026-11-22 01:23:30 UTC "
                                "(1 min 06 s), -j 2 (?): 12 of 12 cells first ran in it")
    assert "12 of 12 cells" in rows["cells finished"] and "01:23:21" in rows["cells finished"]
    assert rows["spec revised"].startswith("2026-11-25 08:00:00 UTC, commit abc")
    assert dict(compute_clock({}, {}))["last run"].startswith("unknown")


def test_dirty_commit_is_shown_at_the_top(tiny_spec, tmp_path):
    from drocli.report import _load, html_page, markdown

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    page = _load(out)
    page.manifest = {**page.manifest, "git_commit": "0123456789abcdef", "git_dirty": True}
    md = markdown(page)
    assert md.splitlines()[2].startswith("> **Dirty.**") and "0123456789ab" in md
    assert '<p class="dirty">' in html_page(page)
    page.manifest["git_dirty"] = False
    assert "Dirty" not in markdown(page) and 'class="dirty"' not in html_page(page)


def test_user_text_cannot_inject_markup(tiny_spec, tmp_path):
    """Titles, captions and claim texts are written inert into the Markdown pages: no raw
    HTML, no links, no extra table cells (issue 27)."""
    import yaml

    raw = yaml.safe_load(tiny_spec.read_text())
    raw["title"] = "T <script>alert(1)</script>"
    raw["figures"][0]["caption"] = "see [here](javascript:alert(1)) | extra | cells"
    raw["claims"][0]["text"] = "a | b <img src=x onerror=alert(1)>"
    tiny_spec.write_text(yaml.safe_dump(raw))
    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--out", out, "-q") == 0
    assert call("plot", out) == 0
    assert call("report", out, "--out", rep) == 0
    md = (rep / "res.md").read_text()
    for bad in ("<script>", "<img", "](javascript:", "| extra |"):
        assert bad not in md, bad
    assert "&lt;script&gt;" in md


def test_a_folder_given_twice_counts_once(tiny_spec, tmp_path):
    """`report O O` (or O and a link to O) is one page and one line of totals (issue 56)."""
    out, rep = tmp_path / "res", tmp_path / "report"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    (tmp_path / "link").symlink_to(out)
    assert call("report", out, out, tmp_path / "link", "--out", rep) == 0
    assert _refs(rep / "index.html").links == ["res.html"]
    once = tmp_path / "once"
    assert call("report", out, "--out", once) == 0
    assert (rep / "index.md").read_text() == (once / "index.md").read_text()


def test_the_procedure_paragraph_links_docs_verdicts(tiny_spec, tmp_path):
    """Issue 57: "docs/verdicts.md says why." was plain text; in a report inside the
    checkout (docs/report) it is a link that resolves; a report written elsewhere keeps the
    plain text, so that it travels whole."""
    import os

    from tests.conftest import call

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("report", out, "--out", tmp_path / "outside") == 0
    assert "[docs/verdicts.md](" not in (tmp_path / "outside" / "res.md").read_text()
    report = ROOT / "runs" / "test-report-link" / "deep"
    shutil.rmtree(report.parent, ignore_errors=True)
    try:
        assert call("report", out, "--out", report) == 0
        md = (report / "res.md").read_text()
        html = (report / "res.html").read_text()
    finally:
        shutil.rmtree(report.parent, ignore_errors=True)
    link = md.split("[docs/verdicts.md](")[1].split(")")[0]
    assert os.path.normpath(report / link) == os.path.normpath(ROOT / "docs" / "verdicts.md")
    assert f'<a href="{link}">docs/verdicts.md</a> says why.' in html


def test_effects_name_the_metric_as_the_spec_draws_it():
    """Issue 57: 'in units of mer' alone; the y-label (or the paper's name) beside it."""
    from drocli.report import _readable, metric_words
    from drocli.spec import load_spec

    spec = load_spec(ROOT / "experiments" / "as_lsvrg_fig1.yaml")
    words = metric_words(spec)
    assert words["log10_gap"] == "log10(F(x) - F*)"
    claim = spec.claims[0]
    assert "units of log10_gap (log10(F(x) - F*))" in _readable(claim.effect_text(), claim,
                                                                 words)
    fl = metric_words(load_spec(ROOT / "experiments" / "omd_tch_fl_mnist.yaml"))
    assert fl["acc_test"] == "Average accuracy"


def test_metric_words_read_every_shipped_spec():
    """A figure kind without a panel list (a table) is passed over, not iterated."""
    from drocli.report import metric_words
    from drocli.spec import load_spec

    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        assert isinstance(metric_words(load_spec(path)), dict), path
