"""The monitor records at checkpoints of the oracle counter, outside the solver clock."""

import numpy as np

from drocli.run.monitor import Monitor, checkpoint_grid


class FakeProblem:
    def __init__(self):
        self.oracle_calls = 0
        self.evals = 0

    def evaluate(self, w, q=None):
        self.evals += 1
        return {"a": float(np.sum(w)), "b": 1.0}


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_grid_linear_and_log():
    assert list(checkpoint_grid(100, 4)) == [0, 25, 50, 75, 100]
    g = checkpoint_grid(1000, 5, "log")
    assert g[0] == 0 and g[-1] == 1000 and np.all(np.diff(g) > 0)


def test_records_at_checkpoints_and_stops_at_budget():
    p = FakeProblem()
    m = Monitor(p, budget=100, checkpoints=4, metrics=["a"])
    assert m(np.zeros(2))  # step 0 at 0 calls
    assert m.calls_until_due() == 25
    p.oracle_calls = 10
    m(np.ones(2))  # not due: no record
    assert len(m.rows) == 1
    p.oracle_calls = 30
    m(np.ones(2))
    assert [r[1] for r in m.rows] == [0, 30]
    assert m.calls_until_due() == 20
    p.oracle_calls = 100
    assert not m(np.ones(2))
    assert m.status == "done" and m.rows[-1][1] == 100 and m.rows[-1][3] == "a"


def test_evaluation_time_excluded():
    p = FakeProblem()
    clock = FakeClock()

    def slow_eval(w, q=None):
        clock.t += 5.0  # evaluation costs 5 s of wall time
        return {"a": 0.0}

    p.evaluate = slow_eval
    m = Monitor(p, budget=10, checkpoints=2, clock=clock)
    m(np.zeros(1))
    clock.t += 1.0  # solver works 1 s
    p.oracle_calls = 5
    m(np.zeros(1))
    assert [r[2] for r in m.rows] == [0.0, 1.0]


def test_nonfinite_point_is_diverged_not_raised():
    p = FakeProblem()
    m = Monitor(p, budget=10, checkpoints=2, metrics=["a"])
    assert not m(np.array([np.nan]))
    assert m.status == "diverged"
    assert len(m.rows) == 1 and np.isnan(m.rows[0][4])
