"""GDRO at CIFAR-100 size (N = 50,000, d = 3072, 100 classes = groups, softmax W 3072 x 100).

Random float32 data of the real shape (CIFAR-100 is not available offline; timing does not
depend on the pixel values). Reports the time of one counted full pass (risks and the
q-weighted gradient: float32 matmuls, float64 accumulation) and, per solver, the counted
gradients per second of a short run (1.3 N: for the VR methods one full pass plus 0.3 N of
inner steps) and the implied time of one epoch of its inner loop (3 N gradients for ALEG and
MPVR, N for SMD). One BLAS thread, as in `drocli run`.

Run: python benchmarks/cifar_scale.py   (about 3 minutes)
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from drocli.data.base import GroupedData  # noqa: E402
from drocli.plugins import registry  # noqa: E402
from drocli.run.monitor import Monitor  # noqa: E402

N_PER, D, C = 500, 3072, 100


def make_problem():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(C), N_PER)
    X = rng.standard_normal((C * N_PER, D), dtype=np.float32)
    data = GroupedData("cifar100-shaped", X, y, y, n_classes=C)
    entry = registry.get("problem", "gdro")
    return entry.func(data, registry.resolve_params(entry, {"loss": "softmax"}))


def main() -> None:
    p = make_problem()
    W = np.zeros((D, C))
    q = np.full(C, 1.0 / C)
    p.full_oracle(W, q)  # warm up
    t0 = time.perf_counter()
    reps = 3
    for _ in range(reps):
        p.full_oracle(W, q)
    full = (time.perf_counter() - t0) / reps
    mb = p.X.nbytes / 1e6
    print(f"GDRO at CIFAR-100 size: N={p.N}, d={D}, classes={C}, float32 X ({mb:.0f} MB)")
    print()
    print("| what | counted gradients / s | time |")
    print("|---|---|---|")
    print(f"| one full pass (risks + weighted gradient) | {p.N / full:.3g} | {full:.2f} s |")
    for name, epoch_cost in (("aleg", 3), ("smd", 1), ("mpvr", 3), ("al_svre", 3)):
        entry = registry.get("solver", name)
        p.reset_counter()
        budget = int(1.3 * p.N)
        mon = Monitor(p, budget, checkpoints=1, metrics=["max_risk_train"])
        mon.problem = _NoEval(p)
        entry.func(p, entry.defaults, np.random.default_rng(0), mon)
        rate = p.oracle_calls / mon.elapsed()
        print(f"| {name}: 1.3 N run | {rate:.3g} | one epoch ({epoch_cost} N) ~ "
              f"{epoch_cost * p.N / rate:.0f} s |")


class _NoEval:
    """The problem, with evaluation skipped (only solver time is of interest here)."""

    def __init__(self, problem):
        self._p = problem

    @property
    def oracle_calls(self):
        return self._p.oracle_calls

    def evaluate(self, *a, **k):
        return {"max_risk_train": 0.0}


if __name__ == "__main__":
    main()
