"""OMD-TCH and AdaOMD-TCH for fair federated learning (Liu, Zhang, Xie, Donahue & Zhao 2024,
"Online Mirror Descent for Tchebycheff Scalarization in Multi-Objective Optimization", §4.2;
docs/papers/003.md §2.6, codes `AFL`, `AFLeg`, `AFL_new`, `AFLeg_new`). Round r = 0, 1, ..., from
the global model θ^(r) with client models θ_i and round losses L:

    [adaptive] Algorithm 2 bookkeeping of (F = L, copy of θ^(r)), BEFORE aggregation
    p = λ∘w / Σ(λ∘w)                          (= λ with pref null: the code drops w)
    θ^(r+1) = Σ_i p_i θ_i                     (≡ θ - η_θ Σ p_i g_i; uses the OLD λ, pitfall 2)
    gd: λ ← Π_Δ(λ + η'_λ w∘L)                 (exact sort-based projection, pitfall 9)
    eg: log λ ← log λ + η'_λ w∘L, log-sum-exp renormalised (pitfall 8)

η'_λ = `eta_lambda` is Table 1's "0.1η_λ", the literal step on raw client losses (pitfall 5).
With pref null, w = 1 in both places, as in the code; a given pref multiplies the aggregation
weights and the λ-gradient by w_i as given ([CODE]; pref = [1]*m is the same as null, a pref
on the simplex is the paper's eq. 9-11 convention).

Output models (what the monitor records and the solver returns; pitfall 10):
  uniform   running mean of the post-aggregation globals θ^(2..r+1) ([CODE], §5.3-9);
            average_from: pre averages θ^(1..r) instead (§2.3, the synthetic code)
  adaptive  θ̃ = (1/t) Σ_P γ θ over the snapshots of Algorithm 2 (faithful deep copies, §5.3-1)
  last      the current global θ^(r+1): the last iterate
  aliased   θ^(r), the global before the latest aggregation: exactly what the published
            AdaOMD code evaluates, because its Pareto list aliases the live model (§5.3-1),
            i.e. `last` lagged by one round ("code-equivalent")
Before the first round every output is θ^(1).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from drocli.errors import DrocliError
from drocli.ops.adaptive_conversion import AdaptiveConversion
from drocli.ops.fl_aggregators import omd_lambda_gd, omd_loglambda_eg, omd_weights
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.solvers.fl.base import FLMethod, run


class OMDTchFLParams(Params):
    """OMD-TCH for fair FL (paper 003 §5, Table 1; docs/papers/003.md §2.6)."""

    variant: Literal["gd", "eg"] = Field("gd", description="gd: eq. 10 (OMDgd-TCH = AFL); "
                                         "eg: eq. 11 (OMDeg-TCH)")
    eta_lambda: float = Field(0.03, ge=0, description="λ step ([PAPER Table 1] MNIST "
                              "rotation, OMDgd-TCH '0.1η_λ'; eg: 0.3)")
    output: Literal["uniform", "adaptive", "last", "aliased"] = Field(
        "uniform", description="uniform: the traditional conversion θ̄ [PAPER]; adaptive: "
        "Algorithm 2; last; aliased: what the published code evaluates (§5.3-1)")
    average_from: Literal["post", "pre"] = Field(
        "post", description="post: the code averages θ^(2..r+1) [CODE] (§5.3-9); pre: "
        "θ^(1..r)")
    pref: list[float] | None = Field(None, description="m client weights > 0; null: the "
                                     "uniform w dropped from both steps [CODE]")


class AdaOMDTchFLParams(OMDTchFLParams):
    """AdaOMD-TCH for fair FL (Algorithms 1+2; paper 003 Table 1)."""

    eta_lambda: float = Field(0.03, ge=0, description="λ step ([PAPER Table 1] MNIST "
                              "rotation, AdaOMDgd-TCH '0.1η_λ'; eg: 0.1)")
    output: Literal["uniform", "adaptive", "last", "aliased"] = Field(
        "adaptive", description="adaptive: Algorithm 2's θ̃ with faithful snapshot copies "
        "[PAPER] (docs/papers/003.md §5.3-1); aliased: the published code's")


class OMDTchFL(FLMethod):
    def __init__(self, params: dict):
        p = params
        self.variant, self.out = p["variant"], p["output"]
        self.average_from = p["average_from"]
        self.eta = float(p["eta_lambda"])
        self.pref = p["pref"]

    def start(self, problem, theta):
        super().start(problem, theta)
        m = self.m
        if self.pref is None:
            self.w = None
        else:
            w = np.asarray(self.pref, dtype=np.float64).ravel() \
                if isinstance(self.pref, (list, tuple)) else np.full(1, np.nan)
            if not (w.size == m and bool(np.all(np.isfinite(w))) and bool(np.all(w > 0))):
                raise DrocliError(f"need a list of {m} positive weights (one per client), "
                                  f"got {self.pref!r}", key="params.pref",
                                  fix="null for the uniform preference")
            self.w = w
        self.loglam = np.full(m, -np.log(m))
        self.lam = np.full(m, 1.0 / m)
        self.ada = AdaptiveConversion() if self.out == "adaptive" else None
        self.avg = theta.copy()          # running mean; θ^(1) until the first model is added
        self.n_avg = 0
        self.prev = theta.copy()         # θ^(r) before the latest aggregation ("aliased")

    def _add(self, x: np.ndarray) -> None:
        self.n_avg += 1
        self.avg += (x - self.avg) / self.n_avg

    def aggregate(self, theta, thetas, L, r):
        if self.ada is not None:
            self.ada.update(L, theta)                 # copies θ^(r) (pitfall 7.1)
        if self.average_from == "pre":
            self._add(theta)
        self.prev = theta.copy()
        new = omd_weights(self.lam, self.w) @ thetas  # old λ (pitfall 2)
        if self.variant == "gd":
            self.lam = omd_lambda_gd(self.lam, L, self.eta, self.w)
        else:
            self.loglam = omd_loglambda_eg(self.loglam, L, self.eta, self.w)
            self.lam = np.exp(self.loglam)
        if self.average_from == "post":
            self._add(new)
        return new

    def output(self, theta):
        if self.out == "uniform":
            return self.avg.copy()
        if self.out == "adaptive":
            return theta.copy() if self.ada.t == 0 else self.ada.output()
        if self.out == "aliased":
            return self.prev.copy()
        return theta.copy()


@registry.solver(
    "omd_tch_fl",
    reference="Liu et al. (2024), Alg. 1, federated (docs/papers/003.md §2.6)",
    params=OMDTchFLParams,
    family="federated",
    description="OMD-TCH for fair FL (Liu et al. 2024; gd = AFL): λ-weighted local models, "
                "OMD on λ, uniform-average output",
)
def solve_omd_tch_fl(problem, params: dict, rng: np.random.Generator, monitor) -> np.ndarray:
    """OMD-TCH (Liu et al. 2024, Algorithm 1) in federated form, docs/papers/003.md §2.6; variant
    gd is AFL (Mohri et al. 2019). Output θ̄ by default (see module docstring for the others)."""
    return run(problem, rng, monitor, OMDTchFL(params))


@registry.solver(
    "ada_omd_tch_fl",
    reference="Liu et al. (2024), Alg. 1 + Alg. 2, federated (docs/papers/003.md §2.6)",
    params=AdaOMDTchFLParams,
    family="federated",
    description="AdaOMD-TCH for fair FL (Liu et al. 2024, Algorithms 1+2): OMD-TCH with the "
                "adaptive conversion over non-dominated global models",
)
def solve_ada_omd_tch_fl(problem, params: dict, rng: np.random.Generator,
                         monitor) -> np.ndarray:
    """AdaOMD-TCH (Liu et al. 2024, Algorithm 1 + Algorithm 2) in federated form, docs/papers/003.md
    §2.6: omd_tch_fl with output adaptive (faithful snapshot copies) by default."""
    return run(problem, rng, monitor, OMDTchFL(params))
