"""A measured roofline for the single-sample GDRO steps (MPVR, AL-SVRE) against the reference
loop of benchmarks/gdro_throughput.py (issue 29: 0.6x of the 4-accumulator reference, or why
not).

A step of either method reads one random row of X (d = 1024 float32 from a 200 MB matrix,
so from memory) and then works on d-vectors of float64 that stay in the L1 cache. Timed
here, per sample, interleaved (best of 3 per round, medians of 5 rounds):

  * row: only reading the drawn row (its sum, four accumulators): the memory part;
  * reference: the 4-accumulator reference (dot, sigmoid, axpy of the row into g);
  * pass: one dense multiply-add pass y += a z over d float64 in L1;
  * softmax: one renormalisation of the m = 25 group log-weights (`log_normalize_probs`: m
    exps and a log), which every step does twice (half point and full step);
  * MPVR and AL-SVRE: their compiled kernels, as gdro_throughput.py times them.

The bound: a step needs at least what the reference does (the half-point dot and the row's
axpy), two more dense passes (forming the anchor point, and the two averaging accumulators
the methods' outputs are built from, each fused into one pass; the projections' norms can
ride along), and the two softmaxes, so no kernel of the same update can beat
reference + 2 passes + 2 softmaxes, and the best ratio is reference over that. The script
prints it beside the measured ratios, and how many passes' worth the kernels spend beyond
the reference and the softmaxes.

Run: python benchmarks/gdro_roofline.py   (about a minute)
"""

from __future__ import annotations

import os
import statistics
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gdro_throughput as g  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402

from drocli.ops.rows import log_normalize_probs  # noqa: E402

SAMPLES = 200_000
PASSES = 2_000_000


@numba.njit(cache=True)
def row_read(X, rows, out):
    """Sum of each drawn row (four accumulators): the cost of bringing it in."""
    d = X.shape[1]
    tot = 0.0
    for t in range(rows.shape[0]):
        r = rows[t]
        s0 = s1 = s2 = s3 = 0.0
        for j in range(0, d - 3, 4):
            s0 += X[r, j]
            s1 += X[r, j + 1]
            s2 += X[r, j + 2]
            s3 += X[r, j + 3]
        tot += (s0 + s1) + (s2 + s3)
    out[0] = tot


@numba.njit(cache=True)
def dense_passes(y, z, a, k):
    """k passes y += a z over d float64 (both in L1)."""
    for _ in range(k):
        for j in range(y.shape[0]):
            y[j] += a * z[j]


@numba.njit(cache=True)
def softmaxes(lq, q, k):
    """k renormalisations of the group log-weights."""
    for _ in range(k):
        log_normalize_probs(lq, q)


def main(rounds: int = 5) -> None:
    data = g.load_data({"groups": g.M, "dim": g.D, "n_train": g.N_PER, "n_test": 10,
                        "label_noise": 0.1})
    problem = g.make_problem(data)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, problem.N, size=SAMPLES)
    out = np.zeros(1)
    y, z = np.zeros(problem.d), rng.standard_normal(problem.d)
    row_read(problem.X, rows[:10], out)
    dense_passes(y, z, 1e-9, 10)
    lq, q = np.log(rng.dirichlet(np.ones(g.M))), np.zeros(g.M)
    softmaxes(lq, q, 10)
    per = {"row": [], "pass": [], "softmax": [], "reference": [], "MPVR": [], "AL-SVRE": []}
    for _ in range(rounds):
        per["row"].append(g.best_of(lambda: row_read(problem.X, rows, out)) / SAMPLES)
        per["pass"].append(g.best_of(lambda: dense_passes(y, z, 1e-9, PASSES // problem.d))
                           / (PASSES // problem.d))
        per["softmax"].append(g.best_of(lambda: softmaxes(lq, q, SAMPLES)) / SAMPLES)
        rates = g.kernel_rates(problem, rng)           # samples / s, interleaved inside
        per["reference"].append(1.0 / rates["reference, 4-acc"][1])
        per["MPVR"].append(1.0 / rates["mpvr"][1])
        per["AL-SVRE"].append(1.0 / rates["al_svre"][1])
    med = {k: statistics.median(v) for k, v in per.items()}
    ref, p, sm = med["reference"], med["pass"], med["softmax"]
    print(f"<!-- m = {g.M}, d = {g.D}, N = {problem.N}; {rounds} rounds, medians; load "
          f"average {os.getloadavg()[0]:.1f} -->")
    print("| per sample | ns | over the reference |")
    print("|---|---|---|")
    for k in ("row", "pass", "softmax", "reference", "MPVR", "AL-SVRE"):
        print(f"| {k} | {med[k] * 1e9:.0f} | {ref / med[k]:.2f}x |")
    print(f"\nrow read / reference: {med['row'] / ref:.2f}; best ratio any kernel of the "
          f"update can reach, reference / (reference + 2 passes + 2 softmaxes): "
          f"{ref / (ref + 2 * p + 2 * sm):.2f}")
    for k in ("MPVR", "AL-SVRE"):
        print(f"{k}: {(med[k] - ref - 2 * sm) / p:.1f} passes' worth beyond the reference "
              "and the two softmaxes")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
