"""Why a verdict is negative (drocli.claims.cause, issue 55): a claim marked not reproduced
needs a cause from one list, checked against its spec on load and against its verdict after
judging, kept out of the claim's registration hash, and counted in the report."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import TINY_SPEC, call

NOTE = "the stand-in has 12x smaller client sets than the paper's data"


def _spec(tmp_path, mark: dict, title: str = "Tiny GDRO") -> str:
    raw = yaml.safe_load(TINY_SPEC)
    raw["title"] = title
    raw["claims"][0].update(mark)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


@pytest.mark.parametrize("mark,key,word", [
    ({"reproduced": False}, "claims[0].cause", "needs a cause"),
    ({"reproduced": ["smoke"]}, "claims[0].cause", "needs a cause"),
    ({"reproduced": False, "cause": {"kind": "luck", "note": NOTE}}, "claims[0].cause.kind",
     "genuine"),
    ({"reproduced": False, "cause": {"kind": "genuine", "note": "short"}},
     "claims[0].cause.note", "20"),
    ({"reproduced": False, "cause": {"kind": "setting", "note": NOTE}},
     "claims[0].cause.key", "names its spec key"),
    ({"reproduced": False, "cause": {"kind": "setting", "key": "solvers.ALEG.params.gamma",
                                     "note": NOTE}}, "claims[0].cause.key", "no spec key"),
    ({"reproduced": False, "cause": {"kind": "genuine", "key": "budget.epochs", "note": NOTE}},
     "claims[0].cause.key", "only a `setting` cause"),
    ({"reproduced": False, "cause": {"kind": "stand_in", "note": NOTE}},
     "claims[0].cause.kind", "stand-in"),
    ({"reproduced": False, "cause": {"kind": "paper_numbers", "note": NOTE}},
     "claims[0].cause.kind", "reported"),
    ({"reproduced": False, "cause": {"kind": "timing", "note": NOTE}},
     "claims[0].cause.kind", "on time"),
])
def test_a_bad_or_missing_cause_is_refused_on_load(mark, key, word, tmp_path, capsys):
    out = tmp_path / "out"
    code = call("run", _spec(tmp_path, mark), "--out", out, "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert not out.exists()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f": {key}" in err and word in err and "(fix: " in err, err


@pytest.mark.parametrize("cause", [
    {"kind": "setting", "key": "budget.epochs", "note": NOTE},
    {"kind": "setting", "key": "solvers.ALEG", "note": NOTE},             # an entry by label
    {"kind": "setting", "key": "data.params.n_train", "note": NOTE},
    {"kind": "setting", "key": "claims.below_start.per_seed", "note": NOTE},
    {"kind": "setting", "key": "claims.below_start.confidence", "note": NOTE},  # at default
    {"kind": "genuine", "note": NOTE},
    {"kind": "undecidable", "note": NOTE},
])
def test_a_good_cause_loads(cause, tmp_path):
    assert call("show", _spec(tmp_path, {"reproduced": False, "cause": cause})) == 0


def test_a_saved_spec_may_predate_causes(tmp_path):
    """A results folder's spec.yaml names its profile; one recorded before causes loads."""
    path = _spec(tmp_path, {"reproduced": False})
    text = open(path).read() + "profile: paper\n"
    open(path, "w").write(text)
    assert call("show", path) == 0


def test_stand_in_needs_a_title_that_says_so(tmp_path):
    cause = {"kind": "stand_in", "note": NOTE}
    assert call("show", _spec(tmp_path, {"reproduced": False, "cause": cause},
                              title="Tiny GDRO on a stand-in")) == 0


def test_has_key_reads_flat_case_keys_and_list_entries():
    from drocli.claims.cause import has_key

    raw = {"cases": {"C=2": {"solvers.FedFV.params.tau": 45}},
           "solvers": [{"name": "fedfv", "label": "FedFV", "params": {"tau": 1}}]}
    assert has_key(raw, "cases.C=2.solvers.FedFV.params.tau")
    assert has_key(raw, "solvers.FedFV.params.tau")
    assert has_key(raw, "solvers.fedfv.params.tau")
    assert has_key(raw, "solvers.0.params")
    assert not has_key(raw, "cases.C=5.solvers.FedFV.params.tau")
    assert not has_key(raw, "solvers.FedFV.params.alpha")
    assert not has_key(raw, "")


def test_the_cause_stays_out_of_the_registration_hash():
    from drocli.claims.registration import claim_hash

    claim = yaml.safe_load(TINY_SPEC)["claims"][0]
    with_cause = {**claim, "cause": {"kind": "genuine", "note": NOTE}}
    assert claim_hash(claim) == claim_hash(with_cause)
    assert claim_hash(claim) != claim_hash({**claim, "reproduced": False})


def _result(status, paper=None):
    from drocli.claims import ClaimResult

    return ClaimResult("c", "t", "final_below", status, "d", paper=paper or {})


def test_apply_attaches_checks_and_counts():
    from drocli.claims import validate_claim
    from drocli.claims.cause import NONE_GIVEN, apply, counts, label, summary

    base = yaml.safe_load(TINY_SPEC)["claims"][0]
    paper = {**base, "id": "p", "cause": {"kind": "paper_numbers", "note": NOTE}}
    claims = [validate_claim({**base, "id": "a", "cause": {"kind": "genuine", "note": NOTE}}),
              validate_claim(paper), validate_claim({**base, "id": "b"}),
              validate_claim({**base, "id": "h"})]
    results = [_result("not_reproduced"), _result("fails", {"status": "supported"}),
               _result("fails"), _result("holds")]
    for r, c in zip(results, claims, strict=True):
        r.id = c.id
    apply(results, claims)
    assert results[0].cause == {"kind": "genuine", "note": NOTE}
    assert "contradicted" in label(results[1].cause)       # the paper's numbers show it
    assert results[2].cause == {"kind": None, "note": NONE_GIVEN}
    assert results[3].cause == {}                            # a HOLDS needs none
    assert counts(results) == {"genuine": 1, "paper_numbers": 1, None: 1}
    assert summary(counts(results)) == "1 paper's numbers, 1 genuine, 1 no cause given"


def test_check_and_the_report_show_the_cause(tmp_path, capsys):
    import json

    cause = {"kind": "setting", "key": "budget.epochs", "note": NOTE}
    spec = _spec(tmp_path, {"reproduced": False, "margin": 1e3, "cause": cause})
    out = tmp_path / "out"
    assert call("run", spec, "--out", out, "--profile", "smoke", "--set", "seeds=0-7",
                "-q") == 0
    capsys.readouterr()
    call("check", out, "--json", "--no-cache")
    doc = json.loads(capsys.readouterr().out)
    (c,) = doc["claims"]
    assert c["status"] == "not_reproduced" and c["cause"] == cause
    call("check", out, "--no-cache")
    assert f"[cause: a setting we chose (budget.epochs): {NOTE}]" in capsys.readouterr().out
    rep = tmp_path / "rep"
    assert call("report", out, "--out", rep) == 0
    index = (rep / "index.md").read_text()
    assert "negative verdicts by cause" in index and "| 1 setting |" in index
    assert f"cause: a setting we chose (budget.epochs): {NOTE}" in (rep / "out.md").read_text()
