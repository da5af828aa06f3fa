"""Revisions of a defective test (issue 55): a claim with `revises: {claim, changes}` corrects
the test of another claim of the spec, in a new study on fresh seeds; that claim's cause is
`test`, which is refused on load unless the correcting claim exists. Both links survive into
`check --json`, and the report pairs the two verdicts."""

from __future__ import annotations

import json

import yaml

from drocli.claims.ablation import link
from drocli.claims.result import ClaimResult
from tests.conftest import TINY_SPEC, call

CAUSE = {"kind": "test", "note": "the test read the sentence wrongly; revised as again"}


def _spec(tmp_path, revises=None, cause=CAUSE) -> str:
    raw = yaml.safe_load(TINY_SPEC)
    first = raw["claims"][0]
    first.update(reproduced=False, cause=cause, profiles=["smoke", "paper"])
    if revises is not None:
        raw["claims"].append(dict(first, id="again", revises=revises, profiles=["revised"],
                                  reproduced=True, cause=None))
        del raw["claims"][-1]["cause"]
    raw["profiles"]["revised"] = {"seeds": [5, 6], "judge_as": "paper"}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def test_a_test_cause_without_its_revision_is_refused_on_load(tmp_path, capsys):
    out = tmp_path / "out"
    code = call("run", _spec(tmp_path), "--profile", "smoke", "--out", out, "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert "claims[0].cause.kind" in err and "revises" in err, err


def test_a_revision_naming_no_other_claim_is_refused_on_load(tmp_path, capsys):
    out = tmp_path / "out"
    bad = {"claim": "again", "changes": "names itself, which is no revision"}
    genuine = {"kind": "genuine", "note": "the paper's setting, and it does not hold"}
    code = call("run", _spec(tmp_path, bad, genuine), "--profile", "smoke", "--out", out,
                "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert "claims[1].revises.claim" in err, err


def test_the_revision_keeps_its_link_in_check_json(tmp_path, capsys):
    out = tmp_path / "out"
    revises = {"claim": "below_start", "changes": "reads the sentence as it is written"}
    path = _spec(tmp_path, revises)
    assert call("run", path, "--profile", "revised", "--out", out, "-q") in (0, 1)
    capsys.readouterr()
    call("check", out, "--json")
    got = json.loads(capsys.readouterr().out)
    claims = got["claims"] if isinstance(got, dict) else got
    again = next(c for c in claims if c["id"] == "again")
    assert again["revises"] == revises and again["status"] not in ("error", "skipped")
    # the new study judges the paper profile's claim too (judge_as: paper), beside its own
    first = next(c for c in claims if c["id"] == "below_start")
    assert first["status"] != "skipped", first["detail"]


class _Page:
    def __init__(self, name, profile, claims):
        self.name, self.experiment, self.profile, self.claims = name, "e", profile, claims


def test_the_report_pairs_a_revision_with_the_claim_it_corrects():
    orig = ClaimResult("c", "t", "final_below", "not_reproduced", "d", reproduced=False)
    new = ClaimResult("c2", "t", "final_below", "holds", "d")
    new.revises = {"claim": "c", "changes": "reads the sentence"}
    abl = ClaimResult("c3", "t", "final_below", "fails", "d")
    abl.ablates = {"claim": "c", "changes": "budget.epochs 3"}
    pairs = link([_Page("e", "paper", [orig]), _Page("e-revised", "revised", [new]),
                  _Page("e-abl", "abl", [abl])])
    kinds = {(p.kind, p.claim) for p in pairs["e"]}
    assert kinds == {("revision", "c2"), ("ablation", "c3")}
    assert [p.kind for p in pairs["e-revised"]] == ["revision"]


def test_the_report_titles_the_section_by_what_it_pairs():
    from types import SimpleNamespace

    from drocli.report.sections import ablation_html, ablation_section

    orig = ClaimResult("c", "t", "final_below", "not_reproduced", "d", reproduced=False)
    new = ClaimResult("c2", "t", "final_below", "holds", "d")
    new.revises = {"claim": "c", "changes": "reads the sentence"}
    page = SimpleNamespace(ablations=link([_Page("e", "paper", [orig]),
                                           _Page("e-revised", "revised", [new])])["e"])
    text = "\n".join(ablation_section(page))
    assert "## Revisions" in text and "| c2 | revision | HOLDS" in text
    assert "<h2>Revisions</h2>" in ablation_html(page)


def test_a_second_revision_pairs_where_each_claim_was_judged():
    """A study that judges the paper's claims (judge_as: paper) skips the other studies' own
    claims: a claim is paired only where it was judged, and a second revision is paired
    with the first revision's verdict from the study that judged it, not a skipped one."""
    def claim(cid, status, revises=None):
        c = ClaimResult(cid, "t", "final_below", status, "d")
        c.revises = revises
        return c

    first = {"claim": "c", "changes": "x from the first record"}
    second = {"claim": "c2", "changes": "x from the shared start"}
    pages = [_Page("e", "paper", [claim("c", "not_reproduced"), claim("c2", "skipped", first),
                                  claim("c3", "skipped", second)]),
             _Page("e-revised", "revised", [claim("c", "not_reproduced"),
                                            claim("c2", "fails", first),
                                            claim("c3", "skipped", second)]),
             _Page("e-revised2", "revised2", [claim("c", "not_reproduced"),
                                              claim("c2", "skipped", first),
                                              claim("c3", "holds", second)])]
    pairs = link(pages)
    got = {(p.claim, p.page, p.original_page, p.original.split()[0], p.verdict.split()[0])
           for ps in pairs.values() for p in ps}
    assert got == {("c2", "e-revised", "e", "NOT", "FAILS"),
                   ("c3", "e-revised2", "e-revised", "FAILS", "HOLDS")}
    assert {p.claim for p in pairs["e-revised"]} == {"c2", "c3"}
    assert {p.claim for p in pairs["e-revised2"]} == {"c3"}
