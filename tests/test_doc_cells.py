"""The reproduction notes read in one sitting (issue 58): no Markdown table cell of
docs/reproduction.md or docs/reproduction/*.md runs past 120 words (whitespace-separated
tokens; longer texts go in a list below the table), and the index docs/reproduction.md stays
short (about 15 KB at most)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "docs" / "reproduction.md"
PAGES = [INDEX, *sorted((ROOT / "docs" / "reproduction").glob("*.md"))]
MAX_WORDS = 120
MAX_INDEX_BYTES = 15 * 1024
SEPARATOR = re.compile(r"^:?-+:?$")


def cells(page: Path) -> list[tuple[int, str]]:
    """(line number, text) of every table cell outside fenced code, header rows included."""
    out, fenced = [], False
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not s.startswith("|"):
            continue
        body = s[1:]
        if body.endswith("|") and not body.endswith("\\|"):
            body = body[:-1]
        parts = re.split(r"(?<!\\)\|", body)
        out += [(n, p.strip()) for p in parts if not SEPARATOR.match(p.strip())]
    return out


def test_the_cell_splitter(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("| a | b |\n|---|:-:|\n| one two | x \\| y |\n  | indented |\n"
                    "```\n| in code |\n```\ntext | not a row\n", encoding="utf-8")
    assert cells(page) == [(1, "a"), (1, "b"), (3, "one two"), (3, "x \\| y"),
                           (4, "indented")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_table_cell_runs_past_120_words(page):
    long = [(n, len(t.split())) for n, t in cells(page) if len(t.split()) > MAX_WORDS]
    assert not long, (f"{page.relative_to(ROOT)}: cells over {MAX_WORDS} words at "
                      f"(line, words) {long}; move the long text to a list below the table")


def test_the_index_is_short():
    size = INDEX.stat().st_size
    assert size <= MAX_INDEX_BYTES, (f"docs/reproduction.md is {size} bytes (at most "
                                     f"{MAX_INDEX_BYTES}): move detail to a figure page")


def test_every_figure_page_is_listed_in_the_index():
    index = INDEX.read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"reproduction/{p.name}" not in index]
    assert not missing, f"docs/reproduction.md does not link {missing}"
