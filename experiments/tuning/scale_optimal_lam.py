"""The scale-optimal ridge of a paper-004 stand-in (issue 26's fair setup).

    python experiments/tuning/scale_optimal_lam.py SPEC [--case NAME] [--lo -7] [--hi -1]
    python experiments/tuning/scale_optimal_lam.py SPEC --lam 2.1e-5     (check a given lam)

Scaling every example weight by c is the same lower problem as dividing the ridge by c:
w*(c 1; lam) = w*(1; lam / c). So F(c 1; lam) = F(1; lam / c), and the lam that minimises
F(1; lam), the validation-tuned ridge of the uniformly weighted model, makes p_0 = 1 the best
uniform scale: no method can win the race by inflating every weight. The script finds it by a
bounded search on log10 lam (scipy's minimize_scalar, xatol 0.01) with each task's lower
problem solved by its damped Newton method (`solve_lower`), then prints F(c 1) / m at
c = 1/4 .. 4 at that lam, which must be smallest at c = 1. The spec (and case) fixes the
data, the tasks and their temperatures; only lam is searched.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.optimize import minimize_scalar

SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)


def problem(spec_path: str, case: str | None, lam: float):
    from drocli.plugins import registry
    from drocli.spec import load_spec

    spec = load_spec(spec_path)
    if case is not None:
        spec = dict(spec.case_specs(spec_path))[case]
    src = registry.get("data", spec.data.name)
    data = src.func(src.params.model_validate(spec.data.params).model_dump(), spec.data.seed)
    params = registry.get("problem", spec.problem.name).params.model_validate(
        {**spec.problem.params, "lam": lam, "exact": True}).model_dump()
    return registry.get("problem", spec.problem.name).func(data, params)


def mean_F(pb, c: float = 1.0, warm: dict | None = None) -> float:
    """F(c 1) / m: the mean over tasks of the validation loss at w_i*(c 1), each lower
    problem solved by the problem's damped Newton method (`solve_lower`; `warm` keeps each
    task's last solution as the next start: the search moves lam a little at a time)."""
    p = c * np.ones(pb.n)
    warm = {} if warm is None else warm
    total = 0.0
    for i in range(pb.m):
        w = pb.solve_lower(p, i, w0=warm.get(i))
        if not np.all(np.isfinite(w)):
            raise RuntimeError(f"task {i}: the lower problem was not solved")
        warm[i] = w
        total += pb.upper_value(w, i)
    return total / pb.m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--case")
    ap.add_argument("--lo", type=float, default=-7.0, help="log10 lam, lower end")
    ap.add_argument("--hi", type=float, default=-1.0, help="log10 lam, upper end")
    ap.add_argument("--lam", type=float, help="no search: F(c 1) at this lam")
    a = ap.parse_args()
    base = problem(a.spec, a.case, 1.0)
    warm: dict = {}
    if a.lam is not None:
        base.lam = a.lam
        vals = [mean_F(base, c, warm) for c in SCALES]
        print(f"{a.spec}: lam {a.lam:g}; F(c 1) / m at c = " + ", ".join(
            f"{c:g}: {v:.5f}" for c, v in zip(SCALES, vals, strict=True))
            + ("; interior optimum at c = 1" if vals[2] == min(vals) else
               "; NOT smallest at c = 1"))
        return

    def f(log_lam: float) -> float:
        base.lam = 10.0 ** log_lam
        return mean_F(base, warm=warm)

    res = minimize_scalar(f, bounds=(a.lo, a.hi), method="bounded",
                          options={"xatol": 0.01})
    lam = float(f"{10.0 ** res.x:.2g}")
    base.lam = lam
    vals = [mean_F(base, c) for c in SCALES]
    edge = min(res.x - a.lo, a.hi - res.x) < 0.05
    print(f"{a.spec}{' case ' + a.case if a.case else ''}: lam* = {lam:.2g} "
          f"(log10 {math.log10(lam):.2f}{', at the search edge' if edge else ''}); "
          "F(c 1) / m at c = " + ", ".join(f"{c:g}: {v:.5f}" for c, v in zip(SCALES, vals,
                                                                            strict=True))
          + ("; interior optimum at c = 1" if vals[2] == min(vals) else
             "; NOT smallest at c = 1"))


if __name__ == "__main__":
    main()
