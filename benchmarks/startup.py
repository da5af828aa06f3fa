"""Start-up cost of the commands a user types most, next to `drocli --version`.

Each command runs as a fresh process, interleaved with the others, ROUNDS times; the table
gives the median wall time, the median CPU time (user + sys of the child) and both as ratios
to `drocli --version` measured in the same rounds (issue 19's target: within 3x; issue 41's
for a first check: within 5x). A resumed run is a second `drocli run` of the as_lsvrg_fig1
smoke spec into a folder whose cells are all done. `check` is timed judging afresh
(`--no-cache`: as_lsvrg_fig1, 479,250 rows, and mero_fashion_mnist, the folder issue 41
names) and replaying its kept answer (the same folder checked before; the answer cache is a
fresh temporary folder). Each command runs once unmeasured first, with
PYTHONDONTWRITEBYTECODE unset, so that drocli's modules have their bytecode as in an
installed package. Also lists the heavy modules each command imports (the child prints
`sys.modules`).

    python benchmarks/startup.py [ROUNDS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import ROOT, timed  # noqa: E402  (benchmarks/ is the script's folder)

HEAVY = ("matplotlib", "numba", "scipy.optimize", "pandas", "dask", "sklearn")


def heavy_imports(args: list[str]) -> list[str]:
    code = ("import sys, runpy; sys.argv = ['drocli', *sys.argv[1:]]\n"
            "from drocli.cli import cli\n"
            "try:\n    cli.main(args=sys.argv[1:], standalone_mode=False)\n"
            "except BaseException:\n    pass\n"
            f"print('MODS:' + '|'.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                         text=True).stdout.splitlines()
    line = next((ln for ln in reversed(out) if ln.startswith("MODS:")), "MODS:")
    return [m for m in line[5:].split("|") if m]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    # an installed package has its bytecode: time drocli with it, as a user runs it
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    drocli = [sys.executable, "-m", "drocli"]
    with tempfile.TemporaryDirectory() as tmp:
        done = Path(tmp) / "fig1"
        spec = "experiments/as_lsvrg_fig1.yaml"
        subprocess.run([*drocli, "run", spec, "--profile", "smoke", "--out", str(done), "-q"],
                       cwd=ROOT, check=True, capture_output=True)
        os.environ["DROCLI_CACHE"] = str(Path(tmp) / "cache")
        cmds = {
            "drocli --version": ["--version"],
            "drocli list": ["list"],
            "drocli check results/as_lsvrg_fig1 --no-cache (judged)":
                ["check", "results/as_lsvrg_fig1", "--no-cache"],
            "drocli check results/mero_fashion_mnist --no-cache (judged)":
                ["check", "results/mero_fashion_mnist", "--no-cache"],
            "drocli check results/as_lsvrg_fig1 (checked before)":
                ["check", "results/as_lsvrg_fig1"],
            "drocli run (resumed, nothing to do)": ["run", spec, "--profile", "smoke",
                                                    "--out", str(done), "-q"],
        }
        for args in cmds.values():          # unmeasured: each command's bytecode written
            timed([*drocli, *args], ok=(0, 1))
        wall = {k: [] for k in cmds}
        cpu = {k: [] for k in cmds}
        for _ in range(rounds):
            for k, args in cmds.items():
                w, c = timed([*drocli, *args], ok=(0, 1))
                wall[k].append(w)
                cpu[k].append(c)
        base_w = statistics.median(wall["drocli --version"])
        base_c = statistics.median(cpu["drocli --version"])
        load = os.getloadavg()[0]
        print(f"median of {rounds} interleaved rounds; load average {load:.2f} on "
              f"{os.cpu_count()} cores\n")
        print("| command | wall s | CPU s | wall / --version | CPU / --version | heavy modules "
              "imported |")
        print("|---|---|---|---|---|---|")
        for k, args in cmds.items():
            w, c = statistics.median(wall[k]), statistics.median(cpu[k])
            mods = ", ".join(heavy_imports(args)) or "none"
            print(f"| {k} | {w:.2f} | {c:.2f} | {w / base_w:.1f} | {c / base_c:.1f} | "
                  f"{mods} |")


if __name__ == "__main__":
    main()
