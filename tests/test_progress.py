"""Progress within cells (drocli.run.progress): workers report the fraction of the budget spent
at each checkpoint; the parent's bar moves by finished cells plus those fractions."""

from __future__ import annotations

from drocli.run import progress
from drocli.run.monitor import Monitor


class Bar:
    def __init__(self, total):
        self.total, self.n, self.refreshed = total, 0.0, 0

    def refresh(self):
        self.refreshed += 1


class Counter:
    """A problem whose oracle counter the test moves by hand."""

    oracle_calls = 0

    def evaluate(self, *point, **named):
        return {"m": 1.0}


def test_monitor_reports_fractions():
    prob = Counter()
    mon = Monitor(prob, 100, checkpoints=4)
    seen = []
    mon.on_record = seen.append
    for calls in (0, 25, 50, 75, 100):
        prob.oracle_calls = calls
        mon(1.0)
    assert seen == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_watcher_moves_bar_within_cells(tmp_path, monkeypatch):
    bar = Bar(total=3)
    with progress.Watcher(bar, tmp_path / "cells" / ".progress", interval=60) as w:
        report = progress.reporter("cellA")
        assert report is not None
        report(0.5)
        progress.reporter("cellB")(0.25)
        w.refresh()
        assert bar.n == 0.75
        w.done("cellA")                        # a finished cell counts whole, once
        assert bar.n == 1.25
    assert progress.reporter("cellC") is None  # no bar listening any more
    assert not (tmp_path / "cells" / ".progress").exists()
