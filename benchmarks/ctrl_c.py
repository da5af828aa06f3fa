"""How soon `drocli run -j 2` stops after Ctrl-C, and which cells it keeps (issue 43: within
2 s, keeping every cell that finished).

A copy of the tests' tiny GDRO spec with 16 cells of a few seconds each runs with -j 2 in a
subprocess; once WAIT cells have finished, SIGINT goes to the process group (as a terminal's
Ctrl-C does). Prints, per round, the seconds from the signal to the exit, the exit code, the
cells finished before the signal and kept after it, and whether a worker outlived the run.
The machine's load and CPU model come first.

    python benchmarks/ctrl_c.py [ROUNDS]
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _timing import machine_info  # (benchmarks/ is the script's folder)

from drocli.results.records import finished, read_cell

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.conftest import TINY_SPEC  # noqa: E402

WAIT = 3                         # cells finished before the signal



def _finished(out: Path) -> set[str]:
    ids = {p.stem for p in (out / "cells").glob("*.json")}
    return {i for i in ids if finished(read_cell(out, i)[0])}


def one_round(tmp: Path) -> tuple[float, int, int, int, bool]:
    spec = tmp / "tiny.yaml"
    spec.write_text(TINY_SPEC.replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3, 4, 5, 6, 7]")
                    .replace("epochs: 4", "epochs: 1500"))
    out = tmp / "res"
    proc = subprocess.Popen([sys.executable, "-m", "drocli", "run", str(spec), "--out",
                             str(out), "-q", "-j", "2"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    while len(_finished(out)) < WAIT and proc.poll() is None:
        time.sleep(0.02)
    before = _finished(out)
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=120)
    took = time.monotonic() - t0
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    kept = _finished(out)
    shutil.rmtree(out)
    return took, proc.returncode, len(before), len(before & kept), bool(left.stdout.strip())


def main(rounds: int) -> None:
    print(machine_info())
    print(f"{'round':>5} {'stop (s)':>9} {'exit':>5} {'finished':>9} {'kept':>5} {'orphans':>8}")
    took = []
    with tempfile.TemporaryDirectory() as d:
        for r in range(rounds):
            t, code, n, kept, orphans = one_round(Path(d))
            took.append(t)
            print(f"{r:>5} {t:>9.2f} {code:>5} {n:>9} {kept:>5} {orphans!s:>8}")
    print(f"median {statistics.median(took):.2f} s, worst {max(took):.2f} s; "
          f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
