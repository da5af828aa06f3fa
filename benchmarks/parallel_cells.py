"""-j 2 against -j 1 on a spec of many short CPU-bound cells (issue 19: at least 1.7x).

Runs `drocli run SPEC` (as_lsvrg_fig3 at the paper profile by default: 900 cells of about
20 ms each) as fresh processes into fresh folders, interleaved ROUNDS times: -j 1, -j 2
with loky workers (started fresh: each repeats the imports and kernel loads), -j 2 with
the default backend (auto: on Linux, workers forked after the parent warmed up each
solver) and -j 2 on a local dask cluster (cells sent in tasks of several,
`drocli/run/backends.py`). Prints the median wall and CPU seconds, the speed-up over -j 1,
the CPU each variant adds over -j 1 (in % and in ms per cell) and the load average.
Cells are counted from the first run's manifest.

    python benchmarks/parallel_cells.py [ROUNDS] [SPEC]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import timed  # noqa: E402  (benchmarks/ is the script's folder)

SPIN = ("import time\nt = time.perf_counter()\nx = 0\nfor i in range(6_000_000):\n    x += i\n"
        "print(time.perf_counter() - t)")


def free_cores() -> str:
    """Whether two cores are really free: a pure-Python loop timed alone, then two copies at
    once; with two free cores each copy takes as long as the loop alone (ratio ~1.0), with
    one core shared they take about twice as long."""
    def spin(k: int) -> float:
        procs = [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE,
                                  text=True) for _ in range(k)]
        return max(float(p.communicate()[0]) for p in procs)
    alone = min(spin(1) for _ in range(2))
    pair = min(spin(2) for _ in range(2))
    return f"two-core check: one loop {alone:.2f} s alone, {pair:.2f} s two at once (ratio " \
           f"{pair / alone:.2f}; 1.0 = two free cores)"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    spec = sys.argv[2] if len(sys.argv) > 2 else "experiments/as_lsvrg_fig3.yaml"
    variants = {"-j 1": ["-j", "1"], "-j 2 (loky)": ["-j", "2", "--backend", "loky"],
                "-j 2 (default: auto = fork on Linux)": ["-j", "2"],
                "-j 2 (dask)": ["-j", "2", "--backend", "dask"]}
    cells = 0
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    load0 = os.getloadavg()[0]
    check0 = free_cores()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name, args in variants.items():
                out = Path(tmp) / f"{r}-{name.replace(' ', '_')}"
                times[name].append(timed([sys.executable, "-m", "drocli", "run", spec,
                                          "--out", str(out), "-q", *args]))
                if not cells:
                    import json

                    cells = len(json.loads((out / "manifest.json").read_text())["cells"])
    base = statistics.median(w for w, _ in times["-j 1"])
    base_cpu = statistics.median(c for _, c in times["-j 1"])
    print(f"{spec}, paper profile, {cells} cells, {rounds} interleaved rounds, load average "
          f"{load0:.2f} -> {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs\n")
    print(f"before: {check0}\nafter: {free_cores()}\n")
    print("| run | wall s (median) | CPU s (median) | speed-up over -j 1 | CPU over -j 1 | "
          "extra CPU per cell |")
    print("|---|---|---|---|---|---|")
    for name, ts in times.items():
        w = statistics.median(t for t, _ in ts)
        c = statistics.median(c for _, c in ts)
        extra = c - base_cpu
        print(f"| {name} | {w:.2f} | {c:.2f} | {base / w:.2f}x | {100 * extra / base_cpu:+.0f} % "
              f"| {1000 * extra / max(cells, 1):+.2f} ms |")


if __name__ == "__main__":
    main()
