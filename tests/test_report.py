"""`drocli report`: static pages whose every figure exists, an index, and the README's
generated status block, which CI checks is current."""

from __future__ import annotations

import html.parser
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
                  if p.is_dir() and not p.name.endswith("-smoke"))
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
