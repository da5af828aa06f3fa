"""The critical values computed ahead (drocli.claims.critical_table) are exactly what the
seeded simulation gives, and `paired_t` at the default confidence reads them instead of
simulating (a first `check` then needs no simulation)."""

from __future__ import annotations

import numpy as np
import pytest

from drocli.claims import critical_table, inference


@pytest.mark.parametrize("n", [2, 3, 5, 10, 17, 30])
def test_table_equals_the_simulation_to_the_bit(n):
    rng = np.random.default_rng(n)
    levels = critical_table.levels()
    for p in [levels[0], levels[-1], *rng.choice(levels, 3, replace=False)]:
        assert critical_table.VALUES[n][float(p)] == inference.simulated_critical_value(n, float(p))


def test_table_covers_the_default_levels():
    assert set(critical_table.VALUES) == set(critical_table.SEEDS)
    for n in critical_table.SEEDS:
        assert set(critical_table.VALUES[n]) == set(critical_table.levels())
        row = [critical_table.VALUES[n][p] for p in sorted(critical_table.VALUES[n])]
        assert all(np.diff(row) > 0)               # stricter levels, larger multipliers


def test_paired_t_reads_the_table(monkeypatch):
    inference.critical_value.cache_clear()

    def no_simulation(n, p):
        raise AssertionError(f"simulated ({n}, {p}) although it is tabulated")

    monkeypatch.setattr(inference, "simulated_critical_value", no_simulation)
    d = np.array([0.3, 0.1, 0.4, 0.2, 0.5, 0.25, 0.35])
    for k in (1, 3, 64):
        e = inference.paired_t(d, k=k)
        assert e["verdict"] == "holds" and e["lo"] > 0
    inference.critical_value.cache_clear()
