"""MPVR: Mirror Prox with Variance Reduction (Alacaoglu & Malitsky, COLT 2022) applied to
empirical GDRO as in Yu et al. 2024, Appendix C, Algorithm 3 (docs/papers/000.md §2.9, §3.2).

The GDRO objective is flattened into one finite sum over the N samples (85)-(87); each inner
iteration draws ONE sample:
  Option II "importance" (default, eqs. (92)-(93)): i ~ U[m], j ~ U[n_i];
      grad F(z; xi) = ( m q_i grad l(w; xi_ij) ; -m l(w; xi_ij) e_i )
  Option I "uniform" (eqs. (88)-(89)): l ~ U[N], c = N / n_{g(l)};
      grad F(z; xi) = ( c q_i grad l(w; xi_l) ; -c l(w; xi_l) e_i )
The epoch structure is that of Algorithm 3 implemented like ALEG ([RECON] §2.9): the
snapshot and the full gradient are computed at the start of each epoch, the snapshot is the
mean of z_1..z_K of the previous epoch (epoch 0: z_0), the half step uses the full snapshot
gradient, the full step the control variate with the same sample, anchors alpha on the mirror
snapshot and 1 - alpha on the iterate (alpha = 1/K, pitfall 8), constant steps, and the output
is the plain (ergodic) average of the half points z_{k+1/2}. Cost N + 2K per epoch.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.plugins import registry
from drocli.plugins.registry import Params, auto
from drocli.solvers.dro import steps
from drocli.solvers.dro.mirror_prox import (
    VRState,
    effective_steps,
    single_rows,
)


class MPVRParams(Params):
    """MPVR's parameters (§3.2; steps tuned by §4.1; tuned values in the specs)."""

    gamma_w: float = steps.gamma_w(0.0003)
    gamma_q: float = steps.gamma_q(0.00316)
    K: int | None = auto("inner iterations per epoch; auto: K = N (Cor. C.5, [DEFAULT] "
                         "docs/papers/000.md §3.2)", ge=1)
    alpha: float | None = auto("snapshot weight; auto: 1/K (pitfall 8, [DEFAULT] §3.2)",
                               legacy=0.0, gt=0, le=1)
    sampling: Literal["importance", "uniform"] = Field(
        "importance", description="importance = Option II [DEFAULT] §3.2; uniform = "
        "Option I")
    eta: float | None = steps.eta()
    eval_point: steps.EvalPoint = Field(
        "output", description="output = the ergodic average of the half points [DEFAULT] spec "
            "§4.1; last = the last iterate")


@registry.solver(
    "mpvr",
    reference="Yu et al. (2024), Alg. 3 (App. C)",
    params=MPVRParams,
    family="gdro",
    description="MPVR (Alacaoglu & Malitsky 2022; Yu et al. 2024 App. C Alg. 3): VR mirror "
                "prox with single-sample oracles",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor) -> tuple:
    """MPVR, Algorithm 3 of Yu et al. 2024 (Appendix C); returns the point (W, q)."""
    sampling = params["sampling"]
    eval_point = params["eval_point"]
    gamma_w, gamma_q = effective_steps(params, problem)
    K = int(params.get("K") or 0) or problem.N
    alpha = float(params.get("alpha") or 0.0) or 1.0 / K
    st = VRState(problem)
    keep = monitor(*st.point(eval_point))
    while keep:
        st.take_snapshot()                                   # snapshot + full gradient, cost N
        keep = monitor(*st.point(eval_point))
        rows, grps, scale = single_rows(problem, rng, K, sampling)
        k = 0
        while keep and k < K:
            n = min(K - k, monitor.steps_until_due(2))
            st.run(rows[k:k + n], grps[k:k + n], scale, alpha, gamma_w, gamma_q, 1.0)
            k += n
            keep = monitor(*st.point(eval_point))
    return st.point(eval_point)
