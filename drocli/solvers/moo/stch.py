"""STCH: smooth Tchebycheff scalarization (Lin et al. 2024) by projected gradient descent, in
the official code of paper 003 but not in its VLMOP2 figures (Liu et al., arXiv:2410.21764,
§1.3 and §3.2; docs/papers/003.md §1.3, §2.5):

    STCH(θ; w, μ) = μ log Σ_i exp(w_i f_i(θ) / μ),
    ∇STCH = Σ_i α_i w_i ∇f_i(θ),   α = softmax(w∘f(θ) / μ),
    θ^(t+1) = Π_Θ(θ^(t) - η ∇STCH(θ^(t))),   η = 0.02, μ = 0.01,   output = the last iterate.

The softmax and the log-sum-exp are computed stably (shifted by the maximum).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.moo.ls import last_iterate_loop


def stch_value(F, w, mu: float) -> float:
    """μ log Σ_i exp(w_i F_i / μ) (stable)."""
    z = np.asarray(w, dtype=np.float64) * np.asarray(F, dtype=np.float64) / mu
    zmax = float(z.max())
    return float(mu * (zmax + np.log(np.sum(np.exp(z - zmax)))))


def stch_weights(F, w, mu: float) -> np.ndarray:
    """α = softmax(w∘F / μ)."""
    z = np.asarray(w, dtype=np.float64) * np.asarray(F, dtype=np.float64) / mu
    e = np.exp(z - z.max())
    return e / e.sum()


def stch_direction(w, mu: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """∇STCH(θ) = (α∘w) @ J with α = softmax(w∘F / μ)."""
    w = np.asarray(w, dtype=np.float64)
    return lambda F, J: (stch_weights(F, w, mu) * w) @ J


class STCHParams(Params):
    """STCH's step and smoothing (the code of paper 003, docs/papers/003.md §2.5)."""

    eta: float = Field(0.02, gt=0, description="step η ([CODE] --step-size 0.02)")
    mu: float = Field(0.01, gt=0, description="smoothing μ ([CODE] 0.01)")


@registry.solver(
    "stch",
    reference="Lin et al. (2024); Liu et al. (2024) §1.3, §2.5 (docs/papers/003.md)",
    params=STCHParams,
    family="moo",
    description="STCH (code of paper 003, not in its figures): projected GD on the smooth "
                "Tchebycheff μ log Σ exp(w_i f_i / μ), last iterate",
)
def solve_stch(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Smooth Tchebycheff (Lin et al. 2024; Liu et al. 2024 §1.3, §2.5): θ ← Π_Θ(θ -
    η Σ_i softmax_i(w∘f/μ) w_i ∇f_i(θ)), η = 0.02, μ = 0.01, output the last iterate."""
    eta = params["eta"]
    mu = params["mu"]
    return last_iterate_loop(problem, rng, monitor, stch_direction(problem.w, mu), eta)
