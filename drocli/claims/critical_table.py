"""Critical values of `drocli.claims.inference.critical_value`, computed ahead, read from
the data file beside this module (critical_table.csv: seeds, p, value; floats written with
`repr`, so they read back to the bit).

The values are exactly what the seeded simulation gives (`simulated_critical_value`), for
2..30 seeds at the levels of the default 95 % confidence: the two-sided interval
(p = 0.975) and the Bonferroni refutation over k = 1..64 comparisons
(p = 0.5 + (1 - 0.05 / k) / 2). A test recomputes entries and compares them to the bit.
Regenerate with `python -m drocli.claims.inference` after changing the simulation.
"""

from __future__ import annotations

import functools
from pathlib import Path

SEEDS = range(2, 31)
COMPARISONS = range(1, 65)
CONFIDENCE = 0.95
FILE = Path(__file__).with_suffix(".csv")


def levels() -> list[float]:
    """The p of every tabulated level, by the expressions `paired_t` uses."""
    ps = [0.5 + CONFIDENCE / 2]
    for k in COMPARISONS:
        refute = 1.0 - (1.0 - CONFIDENCE) / k
        ps.append(0.5 + refute / 2)
    return sorted(set(ps))


@functools.lru_cache(maxsize=1)
def values() -> dict[int, dict[float, float]]:
    """seeds -> p -> critical value, as tabulated."""
    out: dict[int, dict[float, float]] = {}
    for line in FILE.read_text(encoding="ascii").splitlines()[1:]:
        n, p, v = line.split(",")
        out.setdefault(int(n), {})[float(p)] = float(v)
    return out


def write(table: dict[int, dict[float, float]], path: Path = FILE) -> None:
    """Write `table` (seeds -> p -> value) as the data file."""
    rows = ["seeds,p,value"] + [f"{n},{p!r},{v!r}" for n, d in table.items()
                                for p, v in d.items()]
    Path(path).write_text("\n".join(rows) + "\n", encoding="ascii")


def __getattr__(name: str):
    if name == "VALUES":             # the table as a mapping, read on first use
        return values()
    raise AttributeError(name)
