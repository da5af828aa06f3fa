"""`drocli report` items of issue 43: a dirty folder's badge is a warning, not a verdict's
colour; each effect says what it is; the multiplicity detail is in plain words; a
reach_first level every method starts past says it cannot decide; concurrent reports into
one folder keep both; a non-UTF-8 folder name; --out naming a file; SIGTERM at any point."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import TINY_SPEC, call


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One tiny results folder (smoke profile, figures drawn), shared: copy it to change it."""
    root = tmp_path_factory.mktemp("rec")
    spec = root / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    out = root / "res"
    assert call("run", spec, "--profile", "smoke", "--out", out, "-q") == 0
    assert call("plot", out) == 0
    return out


def test_dirty_badge_is_a_warning_with_its_meaning(recorded):
    """The index's 'dirty' badge has no verdict's colour (FAILS, not reproduced, ...) and
    says what it means, in a tooltip and in the legend."""
    from drocli.report import DIRTY_MEANS, STATUS_COLORS, WARN, _load, index

    page = _load(recorded)
    page.manifest = {**page.manifest, "git_commit": "0123456789abcdef", "git_dirty": True}
    text = index([page], "html")
    badge = re.search(r'<span class="badge warn" title="([^"]+)">dirty</span>', text)
    assert badge and "uncommitted" in badge.group(1)
    colours = set(re.findall(r"#[0-9a-f]{6}", WARN))
    assert "dashed" in WARN and not colours & {STATUS_COLORS[k] for k in (
        "fails", "not_reproduced", "error", "unexpectedly_holds", "inconclusive")}
    assert f".badge.warn{{{WARN}}}" in text
    assert "Warning:" in text and DIRTY_MEANS in text
    assert "uncommitted" in index([page], "md")
