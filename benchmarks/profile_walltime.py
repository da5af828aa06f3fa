"""Wall time of a spec's profile on this machine (default: gdro_synthetic, paper, -j 2).

    python benchmarks/profile_walltime.py [SPEC] [--profile paper] [-j 2]

Runs into a fresh temporary folder (no resume) and prints a markdown row.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec", nargs="?", default="experiments/gdro_synthetic.yaml")
    ap.add_argument("--profile", default="paper")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "drocli", "run", args.spec, "--profile", args.profile,
               "-j", str(args.jobs), "--out", out, "-q"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        wall = time.perf_counter() - t0
    print("| spec | profile | -j | cores | wall time |")
    print("|---|---|---|---|---|")
    print(f"| {args.spec} | {args.profile} | {args.jobs} | {os.cpu_count()} | {wall:.0f} s |")


if __name__ == "__main__":
    main()
