"""drocli.solvers.finite_sum: SGD, L-SVRG and L-Katyusha with any index sampler (Zhao, Lyu &
Kolar, TMLR 2023; spec 002 §2). Shared glue: parameter checks, the AdaOSMD horizon and the
initial snapshot; the compiled loops live in the solver modules."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from drocli.errors import DrocliError
from drocli.ops.samplers import UniformStream, sampler_from_params
from drocli.registry import Params, auto

KEY = "solver.params"


def _positive_table(v, name: str):
    """A step: a number > 0, or a table {data key: {value: step or table}} (per panel)."""
    if isinstance(v, dict):
        if len(v) != 1 or not isinstance(next(iter(v.values())), dict):
            raise ValueError(f"a {name} table maps one data value to steps ({STEP_TABLE_FIX})")
        for sub in next(iter(v.values())).values():
            _positive_table(sub, name)
    elif isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
        raise ValueError(f"{name} must be a finite number > 0 or a table ({STEP_TABLE_FIX})")
    return v


class SamplerParams(Params):
    """Mini-batch and index sampler of every finite-sum solver (spec 002 §2.5)."""

    batch: int = Field(1, ge=1, description="indices drawn per iteration")
    sampler: Literal["uniform", "importance", "optimal", "osmd", "adaosmd"] = Field(
        "uniform", description="index sampler: uniform, importance (p ~ L_i), optimal, "
        "OSMD or AdaOSMD (Algorithm 3 / 4)")
    alpha: float = Field(0.4, ge=0, le=1, description="probability floor alpha / n of OSMD "
                         "and AdaOSMD ([PAPER] 0.4)")
    osmd_lr: float | dict = Field(1e-6, description="OSMD learning rate ([UNSPEC]; the paper "
                                  "tunes it, §4.4, spec §8), or a per-panel table")
    abar_mode: Literal["paper", "squared_over_n2"] = Field(
        "paper", description="a-bar: paper = max_i ||grad f_i(x0)||; squared_over_n2 = the "
        "Zhao code's (pitfall P5)")
    eta_scale: float = Field(1.0, gt=0, description="multiplier of the AdaOSMD expert "
                             "learning rates (P5)")
    duplicates: Literal["add", "overwrite"] = Field(
        "add", description="repeated indices in a mini-batch: add or overwrite (P8)")
    horizon: int | None = auto("T AdaOSMD is tuned for; auto: the iterations the oracle "
                               "budget buys", ge=1)

    @field_validator("osmd_lr")
    @classmethod
    def _osmd_lr(cls, v):
        return _positive_table(v, "osmd_lr")


class StepParams(SamplerParams):
    """A constant step, or a table of steps per data panel (Figs. 1-2, 5)."""

    step: float | dict = Field(0.1, description="constant step, or a table keyed by a value "
                               "the data record, e.g. {nu: {0.0: 0.1, 0.5: 0.05}} (captions "
                               "of Figs. 1-2; tuned per panel for Fig. 5)")

    @field_validator("step")
    @classmethod
    def _step(cls, v):
        return _positive_table(v, "step")


def snapshot_prob(params: dict, n: int) -> float:
    """rho: the snapshot refresh probability; auto means the paper's 1/n (spec 002 §2.5)."""
    return params["rho"] or 1.0 / n


STEP_TABLE_FIX = "e.g. step: {nu: {0.0: 0.1, 0.5: 0.05, 1.0: 0.005}} (Fig. 1-2 captions)"


def step_size(params: dict, problem, name: str = "step") -> float:
    """The constant step: a number, or a table keyed by one value the data source records in
    its info, e.g. {nu: {0.0: 0.1, 0.5: 0.05, 1.0: 0.005}} for the paper's "0.1 when nu = 0,
    0.05 when nu = 0.5, 0.005 when nu = 1.0" (a step per row of a data grid). Tables nest:
    {nu: {0.0: {sigma: {0.1: 1e-3, 1.0: 3e-4}}, ...}} gives a value per grid panel (a step
    tuned per panel, Fig. 5). Also used for other per-panel numbers (osmd_lr)."""
    v = params.get(name)
    while isinstance(v, dict):
        if len(v) != 1 or not isinstance(next(iter(v.values())), dict):
            raise DrocliError(f"a {name} table maps one data value to steps", key=f"{KEY}.{name}",
                              fix=STEP_TABLE_FIX)
        by, table = next(iter(v.items()))
        have = problem.info.get(by)
        if not isinstance(have, (int, float)):
            raise DrocliError(f"the data record no number {by!r} to look the {name} up by",
                              key=f"{KEY}.{name}", fix=STEP_TABLE_FIX)
        hits = [val for k, val in table.items()
                if math.isclose(float(k), float(have), rel_tol=1e-9, abs_tol=1e-12)]
        if not hits:
            raise DrocliError(f"no {name} for {by} = {have} in the table", key=f"{KEY}.{name}",
                              fix=f"add {have} to the table")
        v = hits[0]
    return float(v)


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
        if isinstance(params.get("osmd_lr"), dict):         # a per-panel table (Fig. 5)
            params = {**params, "osmd_lr": step_size(params, problem, "osmd_lr")}
        self.sampler = sampler_from_params(params, problem, batch=batch, horizon=T, abar=abar)
        self.stream = UniformStream(rng, batch, self.sampler.uniforms_per_draw)
        self.optimal = self.sampler.name == "optimal"
        self.idx = np.zeros(batch, dtype=np.int64)
        self.pk = np.zeros(batch)
        self.ak = np.zeros(batch)
        self.g = np.zeros(problem.d)
