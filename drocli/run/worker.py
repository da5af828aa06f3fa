"""One cell in this process: its data (cached per process), its problem, its solver under
the monitor, and what it hands back (rows, status, artifacts). What every worker runs, local
or on a dask cluster (drocli.run.backends); the runner (drocli.run.runner) decides which cells run
where and writes what comes back."""

from __future__ import annotations

import json
import math
import os
import socket
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.results.provenance import load_avg
from drocli.run import progress
from drocli.run.cells import Cell
from drocli.run.limits import WARMUP_FRACTION, TimeLimit, cell_limit, first_limit, why_limit
from drocli.run.monitor import Monitor, stalled

_DATA_CACHE: OrderedDict = OrderedDict()
_DATA_CACHE_SIZE = 2          # the runner groups cells by data, so 2 is enough
_DATA_LOCK = threading.Lock()     # the threading backend's cells share this cache


def data_key(name: str, params: dict, seed: int) -> tuple:
    """What identifies a loaded data set: its source, its resolved parameters, its seed."""
    return name, json.dumps(params, sort_keys=True, default=str), seed


def load_data(name: str, params: dict, seed: int, source=None):
    """Data of a (source, params, seed), loaded at most once while it stays in this
    process's small cache (the last `_DATA_CACHE_SIZE` used), shared by the preflight,
    warm-ups and cells (solvers then share samples). `source`: the data source's function
    when the caller has looked it up already."""
    key = data_key(name, params, seed)
    with _DATA_LOCK:
        if key in _DATA_CACHE:
            _DATA_CACHE.move_to_end(key)
            return _DATA_CACHE[key]
        data = (source or registry.get("data", name).func)(params, seed)
        _DATA_CACHE[key] = data
        while len(_DATA_CACHE) > _DATA_CACHE_SIZE:
            _DATA_CACHE.popitem(last=False)
        return data


def forget_data() -> None:
    """Drop this process's loaded data (the parent's, once its cells run elsewhere)."""
    with _DATA_LOCK:
        _DATA_CACHE.clear()


def budget_calls(budget: dict, problem) -> int:
    if budget.get("oracle_calls"):
        return int(budget["oracle_calls"])
    return int(round(float(budget["epochs"]) * int(problem.N)))


def execute(cell: Cell, blas_threads: int = 1) -> tuple[list[tuple], dict]:
    """Run one cell: (rows, status); see `run_cell`."""
    rows, status, _ = run_cell(cell, blas_threads)
    return rows, status


_BLAS_LIMIT: list[int] = []
# read by each BLAS / OpenMP library when it is loaded
BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
            "VECLIB_MAXIMUM_THREADS")


def _limit_blas(threads: int) -> None:
    """Limit the BLAS / OpenMP pools of this process to `threads`, once per process (a
    threadpoolctl scan of the loaded libraries per cell cost a quarter of a small cell).
    threadpoolctl reaches only the libraries loaded by now; the environment variables reach
    those a plug-in loads later (scipy's own OpenBLAS, imported with a problem module by
    the first cell of a fresh spawn or dask worker, started with one thread per core)."""
    if _BLAS_LIMIT == [threads]:
        return
    from threadpoolctl import threadpool_limits

    for name in BLAS_ENV:
        os.environ[name] = str(threads)
    threadpool_limits(limits=threads)
    _BLAS_LIMIT[:] = [threads]


_WARM: dict[tuple, float] = {}   # (solver, problem, data) run here -> its warm-up's seconds
_ANNOUNCE: list = []         # set by a pool worker: (cell id, limit) -> None, to its parent


@dataclass(frozen=True)
class Plugins:
    """The functions of a cell's data source, problem and solver, looked up once per cell."""

    load: Callable        # the data source's: (params, seed) -> data
    build: Callable       # the problem's: (data, params) -> problem
    solve: Callable       # the solver's: (problem, params, rng, monitor) -> point

    @classmethod
    def of(cls, cell: Cell) -> Plugins:
        return cls(registry.get("data", cell.data_name).func,
                   registry.get("problem", cell.problem_name).func,
                   registry.get("solver", cell.solver).func)


def _build(cell: Cell, plugins: Plugins | None = None):
    plugins = plugins or Plugins.of(cell)
    data = load_data(cell.data_name, cell.data_params, cell.data_seed, plugins.load)
    return plugins.build(data, cell.problem_params)


def _solve(cell: Cell, problem, monitor, plugins: Plugins | None = None) -> None:
    """The cell's solver on `problem` until `monitor` stops it, then the final record."""
    solve = (plugins or Plugins.of(cell)).solve
    rng = np.random.default_rng(cell.seed_sequence())
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        point = solve(problem, dict(cell.solver_params), rng, monitor)
        if point is None:
            monitor.finish()
        else:
            point = point if isinstance(point, tuple) else (point,)
            monitor.finish(*point)
            if hasattr(problem, "artifacts"):
                for k, v in problem.artifacts(*point).items():
                    monitor.keep(k, v)


def warm_up(cell: Cell, deadline: float = math.inf, plugins: Plugins | None = None) -> float:
    """Before the first cell of a (solver, problem, data) in this process: the same solver
    on its own copy of the problem for 1 % of the budget, discarded, so that loading and
    compiling its kernels (numba: seconds in a fresh worker) stays off the cell's clock.
    Seconds spent (0 when already warm). The cell's numbers do not depend on it: the real
    run builds its own problem and random stream. The warm-up evaluates no metric (its rows
    are discarded; evaluation is off the solver clock anyway). A warm-up that fails is
    ignored: the cell itself then fails or succeeds on its own, but an alarm (`TimeLimit`) is
    not: it stops the cell. The warm-up counts against the cell's limit (`deadline`, a
    perf_counter value)."""
    key = _key(cell)
    if key in _WARM:
        return 0.0
    _WARM[key] = math.inf            # a warm-up stopped by an alarm: no pace
    t0 = time.perf_counter()
    try:
        plugins = plugins or Plugins.of(cell)
        problem = _build(cell, plugins)
        budget = budget_calls(cell.budget, problem)
        monitor = Monitor(problem, max(1, int(budget * WARMUP_FRACTION)), checkpoints=2,
                          metrics=cell.metrics or None, evaluate=False, deadline=deadline)
        _solve(cell, problem, monitor, plugins)
        stopped = monitor.status == "timeout"
    except TimeLimit:
        raise
    except Exception:  # noqa: BLE001 -- the real run reports any failure
        stopped = False
    spent = time.perf_counter() - t0
    _WARM[key] = math.inf if stopped else spent
    return spent


def _key(cell: Cell) -> tuple:
    return (cell.solver, cell.problem_name, cell.data_name)


def _limit_after_warm_up(cell: Cell) -> float:
    """The cell's limit once this process's warm-up of its solver showed a pace
    (drocli.run.limits), told to the pool that watches this worker."""
    pace = _WARM.get(_key(cell))
    limit = first_limit(cell) if pace == math.inf else cell_limit(cell, pace)
    for tell in _ANNOUNCE:
        tell(cell.id, limit)
    return limit


def run_cell(cell: Cell, blas_threads: int = 1) -> tuple[list[tuple], dict, dict]:
    """Run one cell: its rows, its status and the arrays it hands over (the monitor's
    `keep`, and the problem's `artifacts(point)` at the output point). Never raises for
    solver failures: they become the cell's status. Kernels are warmed up first
    (`warm_up`), so `time_s` starts with the solver's own work; the warm-up's seconds are
    in the status as `warmup_s`. The cell's wall limit (drocli.run.limits) starts here: the
    monitor stops the solver there (status timeout). A run that spends its budget without
    any metric moving is `stalled` (drocli.run.monitor.stalled). The status keeps the 1-minute
    load average at the cell's start (`load_1m`): a busy machine slows its wall time."""
    load = load_avg()
    t0 = time.time()
    start = time.perf_counter()
    limit = first_limit(cell)
    rows, status, artifacts = [], {"status": "failed"}, {}
    _limit_blas(blas_threads)
    warm = 0.0
    try:
        plugins = Plugins.of(cell)
        warm = warm_up(cell, start + limit, plugins)
        limit = _limit_after_warm_up(cell)
        deadline = start + limit
        problem = _build(cell, plugins)
        monitor = Monitor(problem, budget_calls(cell.budget, problem),
                          checkpoints=cell.budget.get("checkpoints", 50),
                          spacing=cell.budget.get("spacing", "linear"),
                          metrics=cell.metrics or None, deadline=deadline)
        monitor.on_record = progress.reporter(cell.id)
        _solve(cell, problem, monitor, plugins)
        rows = monitor.rows
        artifacts = monitor.artifacts
        status = {"status": monitor.status, "oracle_calls": monitor.calls,
                  "budget": monitor.budget, "solver_time_s": monitor.elapsed()}
        if monitor.status == "timeout":
            status["error"] = (f"stopped at its limit of {limit:g} s "
                               f"({why_limit(cell, limit)})")
        elif monitor.status == "done" and stalled(rows):
            status.update(status="stalled", error="spent its budget without any metric "
                                                  "moving: the solver's point never changed")
    except DrocliError as e:
        status = {"status": "failed", "error": str(e)}
    except Exception as e:  # a failing cell must not stop the others
        status = {"status": "failed", "error": f"{type(e).__name__}: {e}",
                  "traceback": traceback.format_exc()}
    status.update(cell=cell.id, label=cell.label, seed=cell.seed, wall_s=time.time() - t0,
                  warmup_s=round(warm, 3), limit_s=round(limit, 3), host=socket.gethostname(),
                  pid=os.getpid(), load_1m=load[0] if load else None)
    return rows, status, artifacts


_WATCHING: list[int] = []


def _leave_sigint_to_parent() -> None:
    """In a worker process, ignore Ctrl-C and let SIGTERM / SIGHUP end it as the system
    does: the parent stops the run and its workers, and a worker's own KeyboardInterrupt,
    or the parent's stop handler a fork inherits (multiprocessing ends daemonic workers
    with SIGTERM at exit), would print a stray `Process ForkProcess-1:` block. A
    worker whose parent is the drocli process also watches it and exits within a second
    once it is gone (killed with -9, or ended by a signal), instead of finishing its cell
    for nobody."""
    parent = os.environ.get("DROCLI_PARENT_PID")
    if parent and int(parent) != os.getpid():
        import signal

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for sig in (signal.SIGTERM, signal.SIGHUP):   # a fork inherits drocli's stop
                signal.signal(sig, signal.SIG_DFL)        # handlers: a stop ends it quietly
        if not _WATCHING and os.getppid() == int(parent):
            _WATCHING.append(int(parent))

            def watch():
                while os.getppid() == int(parent):
                    time.sleep(1.0)
                os._exit(143)

            threading.Thread(target=watch, daemon=True, name="drocli-parent-watch").start()


def _run_remote(cell: Cell, blas_threads: int) -> tuple[str, list, dict, dict]:
    """A cell on a worker: (cell id, rows, status, artifacts), returned to the client, which
    writes them. Workers need no access to the results folder (clusters without a shared
    file system)."""
    _leave_sigint_to_parent()
    rows, status, artifacts = run_cell(cell, blas_threads)
    return cell.id, rows, status, artifacts
