"""The dask backend's cost per cell, apart from its fixed start (issue 29: at most 5 ms per
cell, no backlog on the workers).

`benchmarks/parallel_cells.py` times whole runs, so its "extra CPU per cell" for dask spreads
the fixed cost of a local cluster (the scheduler, two worker processes importing drocli,
numba and distributed, each warming up its kernels) over the run's cells. This script
separates the two. On one local cluster of two single-thread workers (drocli's own `Dask`
backend: its batching, its at most IN_FLIGHT tasks per worker, results collected as they
finish) it measures

  * start: the CPU seconds of starting the cluster and warming both workers up on a few cells;
  * per cell: the CPU seconds, over this process (client and scheduler) and every process it
    started (nannies, workers), of running the other cells, minus the CPU seconds of the same
    cells run one after another in this process (warm), divided by the cells;
  * backlog: the most finished tasks held on the workers and not yet collected, sampled
    from the scheduler's task states every 0.5 s while the cells run.

Rounds alternate the in-process run and the dask run (interleaved, medians).
Cells: experiments/as_lsvrg_fig3.yaml's paper profile (900 cells of about 20 ms).

Run: python benchmarks/dask_overhead.py [ROUNDS]   (about 2 minutes with 3 rounds)
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import psutil  # noqa: E402

from drocli.run.backends import Dask, run_cells  # noqa: E402
from drocli.run.cells import expand  # noqa: E402
from drocli.spec import load_spec  # noqa: E402

WARM_CELLS = 20


def tree_cpu() -> float:
    """CPU seconds of this process and every live process it started."""
    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def in_process(cells) -> float:
    """CPU seconds of the cells one after another in this process (already warm)."""
    t0 = time.process_time()
    run_cells(cells, 1)
    return time.process_time() - t0


def backlog_probe(dask: Dask, stop: threading.Event, peak: list[int]) -> None:
    """The most tasks finished on the workers and not collected, while the run goes."""
    def count(dask_scheduler=None):
        return sum(ts.state == "memory" for ts in dask_scheduler.tasks.values())
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], dask.client.run_on_scheduler(count))
        except Exception:               # noqa: BLE001 -- the cluster is closing
            return
        time.sleep(0.5)


def with_dask(cells) -> tuple[float, float, int]:
    """(start CPU s, run CPU s of cells[WARM_CELLS:], peak backlog) on a fresh local cluster."""
    c0 = tree_cpu()
    dask = Dask(2, None, total=len(cells), kept=0)
    try:
        for _ in dask.results(cells[:WARM_CELLS], 1):
            pass
        c1 = tree_cpu()
        stop, peak = threading.Event(), [0]
        probe = threading.Thread(target=backlog_probe, args=(dask, stop, peak), daemon=True)
        probe.start()
        for _ in dask.results(cells[WARM_CELLS:], 1):
            pass
        c2 = tree_cpu()
        stop.set()
        probe.join()
    finally:
        dask.close()
    return c1 - c0, c2 - c1, peak[0]


def main(rounds: int = 3) -> None:
    cells = expand(load_spec("experiments/as_lsvrg_fig3.yaml"))
    rest = cells[WARM_CELLS:]
    run_cells(cells[:WARM_CELLS], 1)                     # warm this process
    local, start, run, backlog = [], [], [], []
    for _ in range(rounds):
        local.append(in_process(rest))
        s, r, b = with_dask(cells)
        start.append(s)
        run.append(r)
        backlog.append(b)
    n = len(rest)
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"<!-- {n} cells of as_lsvrg_fig3 after {WARM_CELLS} warm-up cells, {rounds} "
          f"interleaved rounds, medians; load average {load:.1f} at the end -->")
    print("| measure | value |")
    print("|---|---|")
    print(f"| in-process CPU per cell | {med(local) / n * 1e3:.2f} ms |")
    print(f"| dask CPU per cell (client, scheduler, workers) | {med(run) / n * 1e3:.2f} ms |")
    each = ", ".join(f"{(r - x) / n * 1e3:.2f}" for r, x in zip(run, local, strict=True))
    print(f"| dask overhead per cell | {(med(run) - med(local)) / n * 1e3:.2f} ms "
          f"(rounds: {each}) |")
    print(f"| dask start (cluster + warm-up of 2 workers) | {med(start):.2f} CPU s |")
    print(f"| most finished tasks left on the workers | {max(backlog)} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
