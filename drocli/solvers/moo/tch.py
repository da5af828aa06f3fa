"""TCH: vanilla Tchebycheff scalarization by projected subgradient descent, a baseline of the
VLMOP2 experiment of paper 003 (Liu et al., arXiv:2410.21764, §4.1 and App. B.1; docs/papers/003.md
§1.3, §2.5, pitfall §7.7):

    TCH(θ; w) = max_i w_i f_i(θ),   i* = argmax_i w_i f_i(θ^(t)),
    θ^(t+1) = Π_Θ(θ^(t) - η ∇f_{i*}(θ^(t))),   η = 0.01,   output = the last iterate.

The step uses the UNWEIGHTED gradient ∇f_{i*}, as the official code does (LibMOON's `tche`
returns f_{i*} unweighted): the same direction as the subgradient w_{i*}∇f_{i*} of TCH, 1/w_{i*}
times longer. `weighted: true` takes the literal subgradient w_{i*}∇f_{i*} instead (with
η = 0.01 it is 1/w slower, pitfall 7). Ties in the argmax go to the first objective.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.moo.ls import last_iterate_loop


def tch_direction(w, weighted: bool = False) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """∇f_{i*} (code) or w_{i*}∇f_{i*} (weighted) with i* = argmax_i w_i f_i."""
    w = np.asarray(w, dtype=np.float64)

    def direction(F, J):
        i = int(np.argmax(w * F))
        return w[i] * J[i] if weighted else J[i]

    return direction


class TCHParams(Params):
    """TCH's step and subgradient (paper 003 App. B.1; docs/papers/003.md pitfall 7)."""

    eta: float = Field(0.01, gt=0, description="step η ([PAPER App. B.1] VLMOP2: 0.01)")
    weighted: bool = Field(False, description="false: step along ∇f_{i*} as the code "
                           "(LibMOON `tche`); true: the literal w_{i*}∇f_{i*} (pitfall 7)")


@registry.solver(
    "tch",
    reference="Liu et al. (2024) §4.1 baseline (docs/papers/003.md §1.3, §2.5)",
    params=TCHParams,
    family="moo",
    description="TCH (paper 003 baseline): projected subgradient descent on max_i w_i f_i "
                "(step along the unweighted ∇f_{i*}, as the code), last iterate",
)
def solve_tch(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """Vanilla Tchebycheff (Liu et al. 2024, §4.1 baseline; docs/papers/003.md §1.3, §2.5):
    i* = argmax_i w_i f_i(θ), θ ← Π_Θ(θ - η ∇f_{i*}(θ)), η = 0.01, output the last iterate."""
    eta, weighted = params["eta"], params["weighted"]
    return last_iterate_loop(problem, rng, monitor, tch_direction(problem.w, weighted), eta)
