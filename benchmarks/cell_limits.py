"""How soon after its wall limit a cell that never returns is stopped (issue 42: within 5 s).

Three solvers that ignore the monitor (a loop in Python, a loop in a numba kernel, an hour's
sleep) and one that calls it run on the tiny finite-sum problem with `budget.max_time_s` =
LIMIT, two at a time in the local pool (drocli.run.pool), ROUNDS rounds interleaved. Prints,
per solver, the median seconds from the cell's start to the moment the pool handed back its
timed-out status, minus LIMIT; the machine's load and CPU model come first.

    python benchmarks/cell_limits.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time

from _timing import machine_info  # (benchmarks/ is the script's folder)

from drocli import testing
from drocli.run import misbehaving
from drocli.run.pool import supervised

LIMIT = 2.0


SOLVERS = [*misbehaving.HANGS, "slow_steps"]


def main(rounds: int) -> None:
    print(machine_info())
    misbehaving.register_toys("bench_")
    late: dict[str, list[float]] = {name: [] for name in SOLVERS}
    for _ in range(rounds):
        for name in SOLVERS:
            cell = testing.tiny_cell(f"bench_{name}", epochs=1e5, limit_s=LIMIT)
            t0 = time.monotonic()
            (_, _, status, _), = supervised([cell], 1, 1)
            late[name].append(time.monotonic() - t0 - LIMIT)
            assert status["status"] == "timeout", status
    print(f"{'solver':<12} {'stopped after the limit (median s)':>36} {'worst':>7}")
    for name, xs in late.items():
        print(f"{name:<12} {statistics.median(xs):>36.2f} {max(xs):>7.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
