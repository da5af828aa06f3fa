"""The contract calls what a plug-in offers (issue 42): every data source's loader on its
tiny parameters and every claim kind's judge on tiny records, so a loader or a judge that
always raises fails it, named; at `check`, a judge that raises gives its claim an ERROR
verdict naming the claim and the plug-in, and the other claims are still judged."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import Field

from drocli import testing
from drocli.claims import ClaimBase
from drocli.data.base import GroupedData
from drocli.plugins import registry
from tests.conftest import TINY_SPEC, call


class _Broken(ClaimBase):
    """A claim kind whose judge always raises."""

    kind: str = Field("toy_broken", pattern="^toy_broken$")


def _judge_raises(claim, data):
    """Always raises."""
    raise RuntimeError("boom in the judge")


def _loader_raises(params, seed):
    """Always raises."""
    raise ValueError("boom in the loader")


def _loader_ok(params, seed):
    """Two groups of four rows."""
    X = np.arange(16, dtype=float).reshape(8, 2)
    return GroupedData("toy", X, np.array([1.0, -1.0] * 4), np.array([0] * 4 + [1] * 4))


@pytest.fixture
def broken():
    registry.claim("toy_broken", params=_Broken, description="toy: a judge that raises")(
        _judge_raises)
    registry.data("toy_raises", memory=lambda p: 0, description="toy: a loader that "
                  "raises")(_loader_raises)
    registry.data("toy_loads", memory=lambda p: 0, description="toy: a loader that "
                  "works")(_loader_ok)
    yield
    for kind, name in (("claim", "toy_broken"), ("data", "toy_raises"), ("data", "toy_loads")):
        registry._REGISTRY[kind].pop(name, None)


def test_the_contract_calls_loaders_and_judges(broken):
    with pytest.raises(AssertionError, match="data toy_raises: its loader raised ValueError"):
        testing.check_entry("data", "toy_raises")
    testing.check_entry("data", "toy_loads")
    with pytest.raises(AssertionError, match="claim kind toy_broken: the judge of claim kind "
                                             "'toy_broken' .*raised RuntimeError"):
        testing.check_claim_judges("claim", "toy_broken")


@pytest.mark.parametrize("name", sorted(registry.names("claim")))
def test_every_built_in_judge_gives_a_verdict_on_tiny_records(name):
    testing.check_claim_judges("claim", name)


def test_check_gives_the_broken_claim_an_error_and_judges_the_others(broken, tmp_path,
                                                                    capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(TINY_SPEC.replace("\nprofiles:", """
  - id: broken
    text: a claim whose judge raises
    kind: toy_broken
    metric: max_risk_train
    solver: ALEG
    others: [SMD]
profiles:""", 1))
    out = tmp_path / "res"
    assert call("run", spec, "--out", out, "-q", "-j", "1") == 0
    capsys.readouterr()
    assert call("check", out) == 1
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("ERROR"))
    assert "broken:" in line and "toy_broken" in line and "test_contract_calls" in line
    assert "RuntimeError: boom in the judge" in line
    assert any(x.split()[0] in ("HOLDS", "FAILS", "INCONCLUSIVE")
               and "below_start" in x for x in text.splitlines()), text
    assert "1 judged with an error" in text
