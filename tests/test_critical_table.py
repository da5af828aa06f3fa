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


def _plan_rows():
    from drocli.claims import plan_table

    rows = {}
    for line in plan_table.FILE.read_text(encoding="ascii").splitlines()[1:]:
        looks, alpha, j, nom, crit = line.split(",")
        rows.setdefault((tuple(int(n) for n in looks.split()), float(alpha)), []).append(
            (int(j), float(nom), float(crit)))
    return rows


@pytest.mark.parametrize("looks", [(10, 20, 40), (10, 20, 30)])
def test_plan_table_equals_the_recursion_and_the_simulation_to_the_bit(looks):
    """Entries of plan_table.csv recomputed afresh: the nominal levels by the recursion of
    drocli.claims.sequential, the critical values by the seeded simulation."""
    from drocli.claims import plan_table
    from drocli.claims.sequential import computed_nominal_levels

    rows = _plan_rows()
    alphas = plan_table.alphas()
    rng = np.random.default_rng(len(looks) + looks[-1])
    for alpha in [alphas[0], alphas[-1], *rng.choice(alphas, 2, replace=False)]:
        alpha = float(alpha)
        fresh = computed_nominal_levels(plan_table.fractions(looks), alpha)
        table = rows[(looks, alpha)]
        assert [nom for _, nom, _ in table] == list(fresh)
        j, nom, crit = table[int(rng.integers(len(table)))]
        assert crit == inference.simulated_critical_value(looks[j], 1.0 - nom)


def test_plan_table_covers_every_plan_and_alpha_and_is_read():
    """Every tabulated plan has every alpha at every look, and `nominal_levels` and
    `critical_value` answer from the table without the recursion or the simulation."""
    from drocli.claims import plan_table, sequential

    rows = _plan_rows()
    assert set(rows) == {(looks, a) for looks in plan_table.PLANS for a in plan_table.alphas()}
    assert all(sorted(j for j, _, _ in r) == [0, 1, 2] for r in rows.values())
    # spent error grows over the looks: a later look's nominal level is larger (HSD, gamma<0)
    assert all(r[0][1] < r[1][1] < r[2][1] for r in rows.values())
    for looks in plan_table.PLANS:      # the fractions `at_look` makes are the table's keys
        with sequential.at_look(list(looks), 1):
            side = sequential.levels((1.0 - 0.95) / 2)
        assert side.nominal == rows[(looks, (1.0 - 0.95) / 2)][1][1]
    sequential.nominal_levels.cache_clear()
    inference.critical_value.cache_clear()

    def refuse(*a):
        raise AssertionError(f"computed {a} although it is tabulated")

    import drocli.claims.sequential as sq
    old = (sq.computed_nominal_levels, inference.simulated_critical_value)
    sq.computed_nominal_levels = inference.simulated_critical_value = refuse
    try:
        d = np.array([0.3, 0.1, 0.4, 0.2, 0.5, 0.25, 0.35, 0.3, 0.2, 0.45])
        for k in (1, 4, 32):
            with sequential.at_look([10, 20, 40], 0):
                e = inference.paired_t(d, k=k)
            assert e["look"] == 1 and e["lo"] is not None
    finally:
        sq.computed_nominal_levels, inference.simulated_critical_value = old
        sequential.nominal_levels.cache_clear()
        inference.critical_value.cache_clear()
