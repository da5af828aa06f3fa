"""LS: linear scalarization by projected gradient descent, the first baseline of the VLMOP2
experiment of paper 003 (Liu et al., "Online Mirror Descent for Tchebycheff Scalarization in
Multi-Objective Optimization", arXiv:2410.21764, §4.1 and App. B.1; docs/papers/003.md §1.3, §2.5):

    LS(θ; w) = Σ_i w_i f_i(θ),    θ^(t+1) = Π_Θ(θ^(t) - η Σ_i w_i ∇f_i(θ^(t))),   η = 0.01,

Π_Θ = clipping onto the box (the official code's projection), output = the last iterate.
LS can only reach front points where w is the normal of a supporting line (§1.4): on the
concave VLMOP2 front it ends at one of the two end points.

`last_iterate_loop` is the monitor-driven loop shared by the last-iterate baselines (ls, tch,
stch): one `problem.oracle` call (m counted calls) per iteration, the monitor sees θ^(t).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params


def last_iterate_loop(problem, rng: np.random.Generator, monitor,
                      direction: Callable[[np.ndarray, np.ndarray], np.ndarray],
                      eta: float) -> np.ndarray:
    """θ^(1) = problem.initial(rng); θ ← Π_Θ(θ - η direction(F, J)) with F, J = oracle(θ)
    (cost m per iteration) until the monitor stops; returns the last iterate."""
    m = problem.m
    theta = np.asarray(problem.initial(rng), dtype=np.float64)
    keep = monitor(theta.copy())
    while keep:
        for _ in range(monitor.steps_until_due(m)):
            F, J = problem.oracle(theta)
            theta = problem.project(theta - eta * direction(F, J))
        keep = monitor(theta.copy())
    return theta


def ls_direction(w: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """∇ LS(θ; w) = Σ_i w_i ∇f_i(θ) = w @ J."""
    w = np.asarray(w, dtype=np.float64)
    return lambda F, J: w @ J


class LSParams(Params):
    """LS's step (paper 003 App. B.1)."""

    eta: float = Field(0.01, gt=0, description="step η ([PAPER App. B.1] VLMOP2: 0.01 for LS "
                       "and TCH)")


@registry.solver(
    "ls",
    reference="Liu et al. (2024) §4.1 baseline (docs/papers/003.md §1.3, §2.5)",
    params=LSParams,
    family="moo",
    description="LS (paper 003 baseline): projected GD on the linear scalarization Σ w_i f_i, "
                "last iterate",
)
def solve_ls(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Linear scalarization (Liu et al. 2024, §4.1 baseline; docs/papers/003.md §1.3, §2.5):
    θ ← Π_Θ(θ - η Σ_i w_i ∇f_i(θ)), η = 0.01, output the last iterate."""
    eta = params["eta"]
    return last_iterate_loop(problem, rng, monitor, ls_direction(problem.w), eta)
