"""OMD-TCH and AdaOMD-TCH: online mirror descent for Tchebycheff scalarization (Liu, Zhang,
Xie, Donahue & Zhao, "Online Mirror Descent for Tchebycheff Scalarization in Multi-Objective
Optimization", arXiv:2410.21764; docs/papers/003.md §2.2-2.4).

Algorithm 1 (OMD-TCH, eqs. 9-11), on min_θ max_{λ∈Δ_m} Σ_i λ_i w_i f_i(θ):

    θ^(1) = problem.initial(rng), λ^(1) = 1/m
    for t = 1..T:
        F = f(θ^(t)), J = ∇f(θ^(t))                                        [cost m]
        [AdaOMD: Algorithm 2 bookkeeping of (F, θ^(t)), before θ moves]
        gd (eq. 10): λ^(t+1) = Π_Δ(λ^(t) + η_λ w∘F)
        eg (eq. 11): λ^(t+1) ∝ λ^(t) exp(η_λ w∘F)        (kept as log λ, log-sum-exp)
        eq. 9:       θ^(t+1) = Π_Θ(θ^(t) - η_θ Σ_i λ^(t)_i w_i ∇f_i(θ^(t)))    (old λ^(t))
    OMD-TCH output: θ̄ = (1/T) Σ_{t=1..T} θ^(t)                    (traditional conversion)

Algorithm 2 (AdaOMD-TCH, eq. 14): adaptive online-to-batch conversion over the non-dominated
iterates, θ̃ = (1/T) Σ_{P} γ_τ θ^(τ), with the code's weak dominance (an exact tie discards
the new iterate), see `AdaptiveConversion`.

The any-time output after t iterations (what the monitor records) is θ̄^(t) / θ̃^(t) over
θ^(1..t); before the first iteration it is θ^(1).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.ops.adaptive_conversion import AdaptiveConversion
from drocli.ops.simplex import project_simplex
from drocli.plugins import registry
from drocli.plugins.registry import Params


def run(problem, params: dict, rng: np.random.Generator, monitor, adaptive: bool) -> np.ndarray:
    """Algorithm 1 (+ Algorithm 2 when adaptive) driven by the monitor; returns the output θ."""
    variant, output = params["variant"], params["output"]
    eta_t, eta_l = float(params["eta_theta"]), float(params["eta_lambda"])
    m = problem.m
    w = np.asarray(problem.w, dtype=np.float64)
    theta = np.asarray(problem.initial(rng), dtype=np.float64)
    lam = np.full(m, 1.0 / m)
    loglam = np.log(lam)
    avg = np.zeros_like(theta)
    ada = AdaptiveConversion() if adaptive else None
    t = 0

    def point():
        if t == 0 or output == "last":
            return theta.copy()
        return ada.output() if adaptive else avg.copy()

    keep = monitor(point())
    while keep:
        for _ in range(monitor.steps_until_due(m)):
            F, J = problem.oracle(theta)
            t += 1
            if adaptive:
                ada.update(F, theta)
            avg += (theta - avg) / t
            g_theta = (lam * w) @ J                       # eq. 9 uses λ^(t)
            if variant == "gd":                           # eq. 10
                lam = project_simplex(lam + eta_l * w * F)
            else:                                         # eq. 11, in log space
                loglam = loglam + eta_l * w * F
                loglam -= np.logaddexp.reduce(loglam)
                lam = np.exp(loglam)
            theta = problem.project(theta - eta_t * g_theta)
        keep = monitor(point())
    return point()


class OMDTCHParams(Params):
    """(Ada)OMD-TCH's steps and λ update (paper 003 App. B.1, eqs. (10)-(11))."""

    eta_theta: float = Field(0.02, gt=0, description="θ step η_θ ([PAPER App. B.1] VLMOP2: "
                             "0.02 for all (Ada)OMD variants)")
    eta_lambda: float = Field(1.0, ge=0, description="λ step η_λ ([PAPER App. B.1] VLMOP2: "
                              "1.0, gd and eg)")
    variant: Literal["gd", "eg"] = Field("gd", description="gd: projected GD on λ (eq. 10); "
                                         "eg: exponentiated gradient (eq. 11)")
    output: Literal["average", "last"] = Field(
        "average", description="average: the paper's conversion; last: the last iterate "
        "(diagnostic)")


@registry.solver(
    "omd_tch",
    reference="Liu et al. (2024), Alg. 1, eqs. (9)-(11)",
    params=OMDTCHParams,
    family="moo",
    description="OMD-TCH (Liu et al. 2024, Algorithm 1): OMD on θ and λ, uniform average",
)
def solve_omd_tch(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """OMD-TCH, Liu et al. (2024) Algorithm 1, eqs. 9-11; output θ̄ = uniform iterate average."""
    return run(problem, params, rng, monitor, adaptive=False)


@registry.solver(
    "ada_omd_tch",
    reference="Liu et al. (2024), Alg. 1 + Alg. 2, eq. (14)",
    params=OMDTCHParams,
    family="moo",
    description="AdaOMD-TCH (Liu et al. 2024, Algorithms 1+2): OMD-TCH with the adaptive "
                "online-to-batch conversion over non-dominated iterates",
)
def solve_ada_omd_tch(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """AdaOMD-TCH, Liu et al. (2024) Algorithm 1 + Algorithm 2, eq. 14; output θ̃."""
    return run(problem, params, rng, monitor, adaptive=True)
