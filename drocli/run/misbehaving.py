"""Solvers that misbehave on purpose, for the wall-limit tests and benchmarks/cell_limits.py
(issue 42): each ignores the monitor in its own way, or spends its budget without moving.
Not registered on import: `register_toys(prefix)` registers them under a test's or a
benchmark's own names."""

from __future__ import annotations

import time

import numpy as np

from drocli.ops.jit import njit


@njit(cache=False)
def _spin(x):
    while x[0] >= 0.0:            # never false: the kernel never returns
        x[0] += 1.0
    return x[0]


def python_loop(problem, params, rng, monitor):
    """A solver that loops in Python without calling the monitor, on purpose."""
    while True:
        pass


def numba_loop(problem, params, rng, monitor):
    """A solver that loops forever in a compiled kernel, on purpose."""
    return _spin(np.zeros(1))


def sleeps(problem, params, rng, monitor):
    """A solver that sleeps for an hour, on purpose."""
    time.sleep(3600)


def slow_steps(problem, params, rng, monitor):
    """Calls the monitor between steps of 0.05 s (the monitor stops it at the limit)."""
    x = problem.zero_point()
    while monitor(x):
        time.sleep(0.05)
        problem.sample_gradients(x, rng.integers(problem.n, size=1))
        x = x + 1e-3
    return x


def no_move(problem, params, rng, monitor):
    """A solver that spends oracle calls without changing its point, on purpose."""
    x = problem.zero_point()
    while monitor(x):
        problem.sample_gradients(x, rng.integers(problem.n, size=monitor.calls_until_due()))
    return x


HANGS = {"python_loop": python_loop, "numba_loop": numba_loop, "sleeps": sleeps}


TOYS = {**HANGS, "no_move": no_move, "slow_steps": slow_steps}


def register_toys(prefix: str = "toy_") -> list[str]:
    """Register every solver of TOYS as `<prefix><name>` (once per process); their names."""
    from drocli.plugins import registry

    names = []
    for name, func in TOYS.items():
        names.append(prefix + name)
        if prefix + name not in registry._REGISTRY["solver"]:
            registry.solver(prefix + name, family="finite_sum",
                            description=f"toy: {func.__doc__}", reference="none")(func)
    return names


def run_with_toys(cell, blas_threads: int):
    """drocli.run.worker._run_remote in a worker that registers the toys first: what a test
    hands drocli.run.pool.supervised for workers started fresh (spawn), which do not inherit the
    test process's registrations."""
    from drocli.run.worker import _run_remote

    register_toys()
    return _run_remote(cell, blas_threads)
