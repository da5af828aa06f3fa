"""One contract for every registered solver (the scikit-learn `check_estimator` idea), run
through the public check suite `drocli.testing` that outside packages use too.

Each solver runs on a tiny problem of its family, under a per-check time limit: values are
finite, the oracle counter increases and reaches the budget without overrunning it, a fixed
seed gives identical records, the rows are well formed, and the solver neither prints nor
writes files; it declares the algorithm it implements; its defaults are valid and values
outside its parameters' constraints are refused with the key path.
"""

import pytest

from drocli import testing
from drocli.plugins import registry

SOLVERS = sorted(registry.entries("solver"))
FAMILY_FIXTURES = testing.family_fixtures()


def test_every_family_has_a_fixture():
    fams = {registry.get("solver", s).family for s in SOLVERS}
    assert fams <= set(FAMILY_FIXTURES), fams - set(FAMILY_FIXTURES)
    assert SOLVERS, "no solver registered"


@pytest.mark.parametrize("name", SOLVERS)
def test_solver_contract(name):
    testing.check_entry("solver", name, time_limit_s=testing.TIME_LIMIT_S)


@testing.parametrize_entries("solver", skip=("check_solver_runs",), time_limit_s=30)
def test_solver_checks_one_by_one(check):
    """The same suite as an outside package runs it: one test per entry and check."""
    check()
