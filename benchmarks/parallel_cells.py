"""-j 2 against -j 1 on a spec of many short CPU-bound cells (issue 19: at least 1.7x).

Runs `drocli run SPEC` (as_lsvrg_fig3 at the paper profile by default: 450 cells of about
10 ms each) as fresh processes into fresh folders, interleaved ROUNDS times: -j 1, -j 2
with loky workers (started fresh: each repeats the imports and kernel loads) and -j 2 with
`--backend fork` (workers forked after the parent ran one cell of each solver). Prints the
median wall and CPU seconds, the speed-up over -j 1 and the load average.

    python benchmarks/parallel_cells.py [ROUNDS] [SPEC]
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str]) -> tuple[float, float]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return time.perf_counter() - t0, cpu


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    spec = sys.argv[2] if len(sys.argv) > 2 else "experiments/as_lsvrg_fig3.yaml"
    variants = {"-j 1": ["-j", "1"], "-j 2 (loky)": ["-j", "2"],
                "-j 2 (fork)": ["-j", "2", "--backend", "fork"]}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name, args in variants.items():
                out = Path(tmp) / f"{r}-{name.replace(' ', '_')}"
                times[name].append(timed([sys.executable, "-m", "drocli", "run", spec,
                                          "--out", str(out), "-q", *args]))
    base = statistics.median(w for w, _ in times["-j 1"])
    print(f"{spec}, paper profile, {rounds} interleaved rounds, load average "
          f"{load0:.2f} -> {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs\n")
    print("| run | wall s (median) | CPU s (median) | speed-up over -j 1 |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        w = statistics.median(t for t, _ in ts)
        c = statistics.median(c for _, c in ts)
        print(f"| {name} | {w:.2f} | {c:.2f} | {base / w:.2f}x |")


if __name__ == "__main__":
    main()
