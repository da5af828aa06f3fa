"""drocli.solvers.finite_sum: SGD, L-SVRG and L-Katyusha with any index sampler (Zhao, Lyu &
Kolar, TMLR 2023; spec 002 §2). Shared glue: parameter checks, the AdaOSMD horizon and the
initial snapshot; the compiled loops live in the solver modules."""

from __future__ import annotations

import math

import numpy as np

from drocli.errors import DrocliError
from drocli.ops.samplers import SAMPLER_PARAMS, UniformStream, sampler_from_params
from drocli.solvers.checks import positive as _positive

KEY = "solver.params"
COMMON_PARAMS = {"batch": 1, **SAMPLER_PARAMS}


def batch_size(params: dict) -> int:
    b = int(params.get("batch", 1))
    if b < 1:
        raise DrocliError(f"batch must be >= 1, got {b}", key=f"{KEY}.batch", fix="e.g. batch: 1")
    return b


def snapshot_prob(params: dict, n: int) -> float:
    """rho: the snapshot refresh probability; 0 means the paper's 1/n (spec 002 §2.5)."""
    rho = float(params.get("rho", 0.0))
    if not 0.0 <= rho <= 1.0:
        raise DrocliError(f"rho must lie in [0, 1], got {rho}", key=f"{KEY}.rho",
                          fix="rho: 0.0 (= 1/n, the paper's choice)")
    return 1.0 / n if rho == 0.0 else rho


STEP_TABLE_FIX = "e.g. step: {nu: {0.0: 0.1, 0.5: 0.05, 1.0: 0.005}} (Fig. 1-2 captions)"


def positive(params: dict, name: str) -> float:
    return _positive(params, name, example=0.1)


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
    return positive({name: v}, name)


def horizon(params: dict, monitor, cost_per_iter: float) -> int:
    """T, the number of iterations AdaOSMD is tuned for: the `horizon` param, or the number
    of iterations the remaining oracle budget buys at the expected cost per iteration."""
    T = int(params.get("horizon", 0) or 0)
    if T > 0:
        return T
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
