"""drocli.solvers.finite_sum: SGD, L-SVRG and L-Katyusha with any index sampler (Zhao, Lyu &
Kolar, TMLR 2023; docs/papers/002.md §2). Shared glue: parameter checks, the AdaOSMD horizon and the
initial snapshot; the compiled loops live in the solver modules."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.errors import DrocliError
from drocli.ops.samplers import UniformStream, sampler_from_params
from drocli.plugins.registry import Params, auto
from drocli.solvers.finite_sum.estimators import Draws

KEY = "solver.params"


class SamplerParams(Params):
    """Mini-batch and index sampler of every finite-sum solver (docs/papers/002.md §2.5)."""

    batch: int = Field(1, ge=1, description="indices drawn per iteration")
    sampler: Literal["uniform", "importance", "optimal", "osmd", "adaosmd"] = Field(
        "uniform", description="index sampler: uniform, importance (p ~ L_i), optimal, "
        "OSMD or AdaOSMD (Algorithm 3 / 4)")
    alpha: float = Field(0.4, ge=0, le=1, description="probability floor alpha / n of OSMD "
                         "and AdaOSMD ([PAPER] 0.4)")
    osmd_lr: float = Field(1e-6, gt=0, description="OSMD learning rate ([UNSPEC]; the paper "
                           "tunes it, §4.4, §8); may be paired with the data panel")
    abar_mode: Literal["paper", "squared_over_n2"] = Field(
        "paper", description="a-bar: paper = max_i ||grad f_i(x0)||; squared_over_n2 = the "
        "Zhao code's (pitfall P5)")
    eta_scale: float = Field(1.0, gt=0, description="multiplier of the AdaOSMD expert "
                             "learning rates (P5)")
    duplicates: Literal["add", "overwrite"] = Field(
        "add", description="repeated indices in a mini-batch: add or overwrite (P8)")
    horizon: int | None = auto("T AdaOSMD is tuned for; auto: the iterations the oracle "
                               "budget buys", ge=1)


class StepParams(SamplerParams):
    """A constant step, or a table of steps per data panel (Figs. 1-2, 5)."""

    step: float = Field(0.1, gt=0, description="constant step; may be paired with the data "
                        "panel, e.g. {nu: {0.0: 0.1, 0.5: 0.05}} (captions of Figs. 1-2; tuned "
                        "per panel for Fig. 5)")


def snapshot_prob(params: dict, n: int) -> float:
    """rho: the snapshot refresh probability; auto means the paper's 1/n (§2.5)."""
    return params["rho"] or 1.0 / n


def horizon(params: dict, monitor, cost_per_iter: float) -> int:
    """T, the number of iterations AdaOSMD is tuned for: the `horizon` param, or the number
    of iterations the remaining oracle budget buys at the expected cost per iteration."""
    if params["horizon"]:
        return int(params["horizon"])
    left = max(1, monitor.budget - monitor.calls)
    return max(2, int(math.ceil(left / cost_per_iter)))


def linear_only(problem, solver: str) -> None:
    """Raise for the network objective (finite_sum_mlp): only L-SVRG runs on it."""
    if getattr(problem, "objective", None) == "mlp":
        raise DrocliError(f"{solver} runs on the linear finite-sum objectives only",
                          key="solvers", fix="use l_svrg for the two-layer network (Fig. 5)")


def grad_norm_max(problem, x, snap_s, snap_c) -> float:
    """max_i ||grad f_i(x)|| from a snapshot at x (no new oracle calls)."""
    a = snap_c ** 2 * problem.row_sq
    if problem.mu:
        a = a + 2.0 * snap_c * problem.mu * snap_s + problem.mu ** 2 * float(x @ x)
    return float(np.sqrt(np.maximum(a, 0.0)).max())


class Workspace:
    """Per-run buffers and the random stream of a finite-sum solver."""

    def __init__(self, problem, params: dict, rng, *, batch: int, T: int, abar: float):
        self.sampler = sampler_from_params(params, problem, batch=batch, horizon=T, abar=abar)
        self.stream = UniformStream(rng, batch, self.sampler.uniforms_per_draw)
        self.optimal = self.sampler.name == "optimal"
        self.idx = np.zeros(batch, dtype=np.int64)
        self.pk = np.zeros(batch)
        self.ak = np.zeros(batch)
        self.g = np.zeros(problem.d)
        self.draws = Draws(self.idx, self.pk, self.ak, self.g)
