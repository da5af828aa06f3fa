"""Every shipped claim says why its test is its sentence (`source.fit`), a quote that uses a
word without a number cites the one reading docs/verdicts.md gives that word ("Words without
numbers", W0-W9), the sizes those readings fix are the same in every spec, and the claim
tables of the figure pages docs/reproduction/*.md are current, every paper spec's claims on
exactly one page."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import pytest

from drocli.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
SPECS = sorted((ROOT / "experiments").glob("*.yaml"))
CLAIMS = [(p.stem, c) for p in SPECS for c in load_spec(p, profile="paper").claims]

# rule -> words of a quote that call for it (docs/verdicts.md, "Words without numbers")
WORDS = {
    "W1": r"\b(significant(ly)?|considerabl[ey]|notabl[ey]|substantial(ly)?|greatly|"
          r"dramatic(ally)?|clearly)\b",
    "W2": r"\b(similar|comparable|on par)\b",
    "W3": r"\b(equal or (even )?better|not worse|competitive)\b",
    "W4": r"\b(in most cases|mostly|generally|usually|in general)\b",
    "W6": r"\b(converges? faster|faster convergence|fastest convergence|convergence rate)\b",
}
S_DECADES = math.log10(2)          # the size S on a log10 metric: a factor 2


def _id(item):
    return f"{item[0]}:{item[1].id}"


@pytest.mark.parametrize("item", CLAIMS, ids=_id)
def test_every_claim_says_why_its_test_is_its_sentence(item):
    _, claim = item
    assert claim.source is not None and claim.source.fit, \
        "give source.fit: why the test says what the quote says (docs/verdicts.md)"


QUOTES: dict[tuple[str, str], list] = {}
for _spec, _claim in CLAIMS:
    if _claim.source is not None:
        QUOTES.setdefault((_spec, _claim.source.quote), []).append(_claim)


@pytest.mark.parametrize("key", list(QUOTES), ids=lambda k: f"{k[0]}:{QUOTES[k][0].id}")
def test_a_word_without_a_number_cites_its_reading(key):
    """A sentence split into several claims: one of them cites each word's rule."""
    quote = key[1].lower()
    fits = " ".join(c.source.fit or "" for c in QUOTES[key])
    for rule, pattern in WORDS.items():
        found = re.search(pattern, quote)
        if found:
            assert rule in fits, (f"the quote says {found.group(0)!r}: the source.fit of one "
                                  f"of its claims ({', '.join(c.id for c in QUOTES[key])}) "
                                  f"must cite {rule} (applied, or why it does not apply)")


@pytest.mark.parametrize("item", CLAIMS, ids=_id)
def test_the_size_of_a_ratio_reading_is_the_same_everywhere(item):
    """A W1 or W2 reading on a log10 metric uses S = log10 2 decades (as margin, or its
    negative for W2/W3), never another number."""
    _, claim = item
    fit = claim.source.fit or ""
    margin = getattr(claim, "margin", 0.0) or 0.0
    if not (claim.metric or "").startswith("log10") or not margin:
        return
    if re.search(r"\[?W[123]\]?", fit) and "R =" not in fit and " R " not in fit:
        assert math.isclose(abs(margin), S_DECADES, abs_tol=0.002), \
            f"margin {margin} on {claim.metric}: S is {S_DECADES:.3f} decades"


def _claim_table():
    spec = importlib.util.spec_from_file_location("claim_table", ROOT / "docs" /
                                                  "claim_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_claim_tables_are_current():
    mod = _claim_table()
    assert mod.pages(), "no figure pages in docs/reproduction/"
    stale = [p.name for p in mod.pages()
             if mod.render(p.read_text(encoding="utf-8")) != p.read_text(encoding="utf-8")]
    assert not stale, f"stale claim tables in {stale}: run `python docs/claim_table.py`"


def test_every_spec_with_claims_is_on_one_page():
    assert _claim_table().unplaced() == []

