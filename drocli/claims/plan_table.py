"""The levels of the group-sequential plans the paper specs use, computed ahead, read from
the data file beside this module (plan_table.csv: looks, alpha, look, nominal, critical;
floats written with `repr`, so they read back to the bit).

At look j of a plan (drocli.claims.sequential) a side of error `alpha` decides at a
*nominal* level found by a numerical recursion and a root search (scipy), and its interval
needs the critical value at that level for the look's seeds (a seeded simulation). Both are
exactly what `sequential.nominal_levels` and `inference.simulated_critical_value` give, for
the plans in PLANS and the alphas a claim at the default 95 % confidence asks for: the
HOLDS side (1 - c) / 2 and the refutation (1 - c) / (2 k) for k = 1..32 comparisons, with c
the claim's confidence or a panel's, 1 - (1 - 0.95) / d for d = 1..12 (drocli.claims.evaluate_one,
_in_panels). Other plans, levels and seed counts are computed as before, only slower: a
first `check` of a folder judged at its plan's looks then needs neither scipy nor the
simulation. A test recomputes entries and compares them to the bit; regenerate with
`python -m drocli.claims.inference` after changing the recursion or the simulation.
"""

from __future__ import annotations

import functools
from pathlib import Path

PLANS = ((10, 20, 40), (10, 20, 30))
CONFIDENCE = 0.95
PANEL_SPLITS = range(1, 13)
COMPARISONS = range(1, 33)
FILE = Path(__file__).with_suffix(".csv")


def fractions(looks) -> tuple[float, ...]:
    """A plan's information fractions, by the expression `sequential.at_look` uses."""
    return tuple(n / looks[-1] for n in looks)


def alphas() -> list[float]:
    """Every tabulated side's alpha, by the expressions `paired_t` and `spread_effect` use."""
    out = set()
    for d in PANEL_SPLITS:
        for conf in {CONFIDENCE, 1 - (1 - CONFIDENCE) / d}:
            out.add((1.0 - conf) / 2)
            out.update((1.0 - conf) / (2 * k) for k in COMPARISONS)
    return sorted(out)


@functools.lru_cache(maxsize=1)
def values() -> tuple[dict, dict]:
    """(fractions, alpha) -> nominal level of each look, and seeds -> p -> critical value."""
    nominal: dict[tuple, dict[int, float]] = {}
    critical: dict[int, dict[float, float]] = {}
    for line in FILE.read_text(encoding="ascii").splitlines()[1:]:
        looks, alpha, j, nom, crit = line.split(",")
        plan = tuple(int(n) for n in looks.split())
        nominal.setdefault((fractions(plan), float(alpha)), {})[int(j)] = float(nom)
        critical.setdefault(plan[int(j)], {})[1.0 - float(nom)] = float(crit)
    levels = {key: tuple(d[j] for j in range(len(d))) for key, d in nominal.items()}
    return levels, critical


def nominal(fractions_: tuple[float, ...], alpha: float) -> tuple[float, ...] | None:
    """The tabulated nominal levels of this plan and alpha, or None."""
    return values()[0].get((tuple(fractions_), alpha))


def critical(n: int, p: float) -> float | None:
    """The tabulated critical value at n seeds and level p, or None."""
    return values()[1].get(n, {}).get(p)


def write(rows: list[tuple], path: Path = FILE) -> None:
    """Write rows (looks, alpha, look, nominal, critical) as the data file."""
    lines = ["looks,alpha,look,nominal,critical"] + [
        f"{' '.join(map(str, looks))},{alpha!r},{j},{nom!r},{crit!r}"
        for looks, alpha, j, nom, crit in rows]
    Path(path).write_text("\n".join(lines) + "\n", encoding="ascii")
