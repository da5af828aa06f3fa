"""One federated round of paper 003 (OMD-TCH) on the stand-in settings, and what it implies
for the FL profiles.

For each setting we build the `federated` problem exactly as the specs do and time, on one
core (BLAS threads = 1):
  * local:     problem.local_round (10 clients x local training), the bulk of a round, in the
               direct form and, for full-batch settings, the Gram form (drocli.ops.mlp_gram),
               timed alternately (best of 5 each) so that both see the same machine load,
  * evaluate:  problem.evaluate on every client's train and test split (one checkpoint),
  * aggregate: each method's server step on the round's client models (FedMGDA+ solves a
               QP, FedFV projects pairwise, AdaOMD keeps snapshots),
next to the floating-point work of the local training as a GFLOP/s figure (forward +
backward of the 784-200-10 MLP = 6 x 784 x 200 flops per sample and step, approximately).

Run: python benchmarks/fl_round.py   (about a minute; prints markdown tables)
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from drocli.plugins import registry  # noqa: E402
from drocli.run.monitor import Monitor  # noqa: E402
from drocli.spec import load_spec  # noqa: E402

SPECS = {"MNIST-5k": "experiments/omd_tch_fl_mnist.yaml",
         "Fashion-MNIST (CIFAR stand-in)": "experiments/omd_tch_fl_cifar10.yaml"}
METHODS = ["FedAvg", "qFFL", "FedMGDA+", "FedFV", "STCH", "OMDgd-TCH", "AdaOMDgd-TCH"]


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def problem_for(case_spec, form: str = "auto"):
    data = registry.get("data", case_spec.data.name).func(
        registry.resolve_params(registry.get("data", case_spec.data.name),
                                case_spec.data.params), 0)
    entry = registry.get("problem", case_spec.problem.name)
    return entry.func(data, registry.resolve_params(
        entry, {**case_spec.problem.params, "local_form": form}))


def interleaved(fns: dict, repeat: int) -> dict:
    """Best-of-`repeat` seconds of each callable, the callables taking turns."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def flops_per_round(problem) -> float:
    samples = sum(len(y) for y in problem.y_train)
    local = problem.local_steps if hasattr(problem, "local_steps") else 1
    d, h, k = 784, 200, 10
    return 2 * 3 * (d * h + h * k) * samples * local


def aggregation_time(problem, label: str, spec) -> float:
    """Seconds per round spent outside local_round, through the solver's own loop."""
    s = next(x for x in spec.solvers if x.display == label)
    entry = registry.get("solver", s.name)
    params = registry.resolve_params(entry, s.params)
    rounds = 5
    cache = {}
    real_round = problem.local_round

    def cached_round(theta, rng=None, **kw):   # replay one precomputed round: time the rest
        if "out" not in cache:
            cache["out"] = real_round(theta, rng, **kw)
        else:
            problem.counter[0] += 1
        thetas, L = cache["out"]
        return thetas.copy(), L.copy()

    problem.local_round = cached_round
    problem.reset_counter()
    mon = Monitor(problem, rounds, checkpoints=1)
    mon.problem = type("NoEval", (), {"oracle_calls": property(lambda _: problem.oracle_calls),
                                      "evaluate": lambda *_a, **_k: {}})()
    rng = np.random.default_rng(0)
    cached_round(problem.initial(rng), rng)   # fill the cache outside the clock
    problem.reset_counter()
    t = time.perf_counter()
    entry.func(problem, params, rng, mon)
    dt = (time.perf_counter() - t) / rounds
    problem.local_round = real_round
    return dt


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f}\n")
    print("| data | setting | clients x samples | local training / round, direct | Gram form | "
          "direct / Gram | evaluate | GFLOP/s (direct) |")
    print("|---|---|---|---|---|---|---|---|")
    agg_rows = []
    for dname, path in SPECS.items():
        spec = load_spec(path)
        for name, case in spec.case_specs(path):
            problem = problem_for(case, "direct")
            theta = problem.initial(np.random.default_rng(0))
            rng = np.random.default_rng(1)
            fns = {"direct": lambda p=problem, th=theta, r=rng: p.local_round(th, r)}
            if problem.batch <= 0:
                gram = problem_for(case, "gram")
                fns["gram"] = lambda p=gram, th=theta, r=rng: p.local_round(th, r)
            t = interleaved(fns, 5)
            t_eval = best_of(lambda p=problem, th=theta: p.evaluate(th), 3)
            n = sum(len(y) for y in problem.y_train)
            gf = flops_per_round(problem) / t["direct"] / 1e9
            g = (f"{t['gram'] * 1e3:.0f} ms | {t['direct'] / t['gram']:.2f}x" if "gram" in t
                 else "n/a (minibatches) | -")
            print(f"| {dname} | {name} | 10 x {n // 10} | {t['direct'] * 1e3:.0f} ms | {g} | "
                  f"{t_eval * 1e3:.0f} ms | {gf:.0f} |")
            if name == "rotation" and dname == "MNIST-5k":
                for label in METHODS:
                    agg_rows.append((label, aggregation_time(problem, label, case)))
    print("\nServer step per round (MNIST-5k rotation, P = 159010 parameters):\n")
    print("| method | aggregation / round |")
    print("|---|---|")
    for label, dt in agg_rows:
        print(f"| {label} | {dt * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
