"""TTSA (Hong, Wai, Wang & Yang 2020), a baseline of Guo, Hu, Zhang & Yang (docs/papers/004.md §3.4
[RECON]): single loop, one lower SGD step then one p step along the Ghadimi-Wang Neumann
hypergradient at the new lower iterate.

Step rules (pitfall 9): `steps: literal` (default) is the paper's E.1 rule for all
baselines but STABLE, x step gamma (t + c0)^(-1/2), lower step tau0 (t + c0)^(-1). The lower
step then decays FASTER than the upper one, the reverse of TTSA's two time scales.
`steps: theory` uses TTSA's own rates, lower tau0 (t + c0)^(-2/5), upper gamma (t + c0)^(-3/5)
(retune tau0: with c0 = 100 the default 10 gives a lower step of 1.6).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.solvers.bilevel import Batches, NeumannSteps, clip_weights, decay
from drocli.solvers.bilevel.bsa import gw_hypergrad, lower_sgd, smoothness


def step_sizes(t: int, c0: float, gamma: float, tau0: float, steps: str) -> tuple:
    """(x step, lower step) at iteration t."""
    if steps == "theory":
        return gamma * decay(t, c0, 0.6), tau0 * decay(t, c0, 0.4)
    eta = decay(t, c0, 0.5)
    return gamma * eta, tau0 * eta * eta


class TTSAParams(Batches, NeumannSteps):
    """TTSA's parameters ([RECON] docs/papers/004.md §3.4 with App. E.1's step rule)."""

    N: int = Field(10, ge=1, description="Neumann terms of the Hessian inverse (k ~ U{0..N-1})")
    steps: Literal["literal", "theory"] = Field(
        "literal", description="literal: App. E.1's rule (reverses TTSA's time scales); "
        "theory: TTSA's own rates")


@registry.solver(
    "ttsa",
    reference="Hong et al. (2020); docs/papers/004.md §3.4 [RECON], App. E.1 steps",
    params=TTSAParams,
    family="bilevel",
    description="TTSA: single-loop two-time-scale stochastic bilevel method with a Neumann "
                "Hessian inverse (Hong et al. 2020; baseline of Guo, Hu, Zhang & Yang, App. E)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """TTSA (Hong et al. 2020), docs/papers/004.md §3.4 [RECON] with the E.1 step rule of App. E.1
    (steps: literal, which reverses TTSA's time scales; steps: theory for TTSA's own). Per
    iteration and task i: w_i <- w_i - tau_t grad_w g_i(p, w_i; b-batch), then the GW-HIA
    hypergradient h_i(p, w_i) (N terms, L); p <- p - eta_t sum_i h_i (E.2: all m tasks).
    Samples per iteration: m (b + b_val + k_i b + b), k_i ~ U{0..N-1}."""
    b, bv, N = params["batch"], params["batch_val"], params["N"]
    c0, gamma, tau0 = params["c0"], params["gamma"], params["tau0"]
    steps = params["steps"]
    Ls = [smoothness(problem, params, i) for i in range(problem.m)]
    nonneg = params["nonneg"]
    p, W = problem.zero_point()
    keep = monitor(p, W)
    t = 0
    while keep:
        eta, tau = step_sizes(t, c0, gamma, tau0, steps)
        h = np.zeros(problem.n)
        for i in range(problem.m):
            W[i] = lower_sgd(problem, rng, p, W[i], i, b, tau, 1)
            h += gw_hypergrad(problem, rng, p, W[i], i, b, bv, N, Ls[i])
        p = clip_weights(p - eta * h, nonneg)
        t += 1
        keep = monitor(p, W)
    return p, W
