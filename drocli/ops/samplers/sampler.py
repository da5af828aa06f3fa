"""Building a sampler: its checks, its compiled state, and the Python view of it.

`make_sampler` checks a solver's sampler params and fills a `SamplerState` for the kernels;
`Sampler` wraps it with the full distribution, draws and updates from Python (tests,
benchmarks); `UniformStream` hands a solver the uniforms of its index draws and snapshot
coins in fixed blocks, so that a trajectory does not depend on how a run is cut into chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from drocli.errors import DrocliError
from drocli.ops.samplers.adaptive import _init_experts, adaosmd_constants, sampler_update
from drocli.ops.samplers.alias import alias_table
from drocli.ops.samplers.draw import sampler_draw_batch, sampler_set_weights
from drocli.ops.samplers.state import (
    ABAR_MODES,
    ADAOSMD,
    DUPLICATES,
    IMPORTANCE,
    KINDS,
    OPTIMAL,
    OSMD,
    UNIFORM,
    UNIFORMS_PER_DRAW,
    SamplerState,
)


@dataclass
class Sampler:
    """A sampler: its name and kind, and its compiled `state` (a SamplerState) that goes to
    the kernels."""

    name: str
    kind: int
    n: int
    state: SamplerState
    info: dict = field(default_factory=dict)

    @property
    def uniforms_per_draw(self) -> int:
        return UNIFORMS_PER_DRAW[self.kind]

    @property
    def adaptive(self) -> bool:
        return self.kind in (OSMD, ADAOSMD)

    def expert_distributions(self) -> np.ndarray:
        """p_h for every expert (H, n) (OSMD: one row)."""
        st = self.state
        H = st.H
        return np.where(st.ehpos[:H] < 0, st.floor, st.eC[:H, None] * st.ew[:H])

    def distribution(self) -> np.ndarray:
        """The current p (n,)."""
        if self.kind == UNIFORM:
            return np.full(self.n, 1.0 / self.n)
        if self.kind in (IMPORTANCE, OPTIMAL):
            return self.state.pfix[: self.n].copy()
        theta = self.state.theta[: self.state.H]
        return theta @ self.expert_distributions()

    def set_optimal(self, weights) -> None:
        """Optimal sampler: p proportional to `weights` (uniform if all 0)."""
        self.state.pfix[:] = weights
        sampler_set_weights(self.state)

    def draw(self, U: np.ndarray):
        """Draw len(U) indices i.i.d. from the current p (U: (m, uniforms_per_draw)); returns
        (idx, pk). The expert scratch keeps the p_{h,i} of the last `batch` draws."""
        U = np.ascontiguousarray(U, dtype=np.float64)
        m = U.shape[0]
        width = self.state.ph.shape[1]
        idx = np.zeros(m, dtype=np.int64)
        pk = np.zeros(m)
        for lo in range(0, m, width):
            hi = min(m, lo + width)
            sampler_draw_batch(self.state, U[lo:hi], idx[lo:hi], pk[lo:hi])
        return idx, pk

    def update(self, idx, ak, pk) -> None:
        sampler_update(self.state, np.asarray(idx, dtype=np.int64),
                       np.asarray(ak, dtype=np.float64), np.asarray(pk, dtype=np.float64))


def make_sampler(name: str, n: int, *, batch: int = 1, L=None, alpha: float = 0.4,
                 osmd_lr: float = 1e-6, horizon: int = 1000, abar: float = 1.0,
                 abar_mode: str = "paper", eta_scale: float = 1.0,
                 duplicates: str = "add") -> Sampler:
    """Build a sampler of n indices for mini-batches of `batch` draws.

    importance needs L (n,) (p_i = L_i / sum L). osmd uses `osmd_lr`. adaosmd needs the
    horizon T and abar = max_i ||grad f_i(x0)|| (turned into ā¹ by `abar_mode`).
    """
    key = "solver.params"
    if name not in KINDS:
        from drocli.errors import did_you_mean

        raise DrocliError(f"unknown sampler {name!r}", key=f"{key}.sampler",
                          fix=did_you_mean(name, KINDS))
    if duplicates not in DUPLICATES:
        raise DrocliError(f"unknown duplicates mode {duplicates!r}", key=f"{key}.duplicates",
                          fix="use add or overwrite")
    if abar_mode not in ABAR_MODES:
        raise DrocliError(f"unknown abar_mode {abar_mode!r}", key=f"{key}.abar_mode",
                          fix="use " + " or ".join(ABAR_MODES))
    kind = KINDS[name]
    n = int(n)
    b = max(1, int(batch))
    info: dict = {"sampler": name}
    H = 0
    size = 1
    nn = 1
    if kind in (OSMD, ADAOSMD):
        if n < 2:
            raise DrocliError(f"the {name} sampler needs n >= 2 samples", key=f"{key}.sampler",
                              fix="use sampler: uniform")
        if not 0.0 < alpha <= 1.0:
            raise DrocliError(f"alpha must lie in (0, 1], got {alpha}", key=f"{key}.alpha",
                              fix="alpha: 0.4 (the paper's value)")
        size = 1 << max(0, int(math.ceil(math.log2(n))))
        nn = n
    if kind == OSMD:
        H = 1
        eta = np.array([float(osmd_lr)])
        gamma = 0.0
        theta = np.ones(1)
        info.update(osmd_lr=float(osmd_lr))
    elif kind == ADAOSMD:
        a1 = float(abar) if abar_mode == "paper" else (float(abar) / n) ** 2
        if not a1 > 0.0 or not math.isfinite(a1):
            a1 = 1.0
        H, eta, gamma, theta = adaosmd_constants(n, horizon, alpha, a1, b, eta_scale)
        info.update(H=H, abar1=a1, gamma=gamma, expert_lrs=eta.tolist(), horizon=int(horizon))
    Hs = max(H, 1)
    pfix = np.zeros(n if kind in (IMPORTANCE, OPTIMAL) else 1)
    cfix = np.zeros(n if kind in (IMPORTANCE, OPTIMAL) else 1)
    alias = np.zeros(n if kind == IMPORTANCE else 1, dtype=np.int64)
    if kind == IMPORTANCE:
        if L is None:
            raise DrocliError("the importance sampler needs the per-sample smoothness L_i",
                              key=f"{key}.sampler", fix="use a finite_sum problem")
        Lv = np.asarray(L, dtype=np.float64)
        if Lv.shape != (n,) or not np.all(Lv >= 0) or not Lv.sum() > 0:
            raise DrocliError("importance weights L_i must be n values >= 0, not all 0",
                              key=f"{key}.sampler", fix="check the problem's L")
        pfix[:] = Lv / Lv.sum()
        cfix[:], alias[:] = alias_table(pfix)
    elif kind == OPTIMAL:
        pfix[:] = 1.0 / n
        cfix[:] = np.arange(1, n + 1) / n
    state = SamplerState(
        kind=kind, n=n, H=H, size=size, dup_add=duplicates == "add", floor=alpha / n,
        gamma=float(gamma) if H else 0.0, counts=np.zeros(2, dtype=np.int64),
        pfix=pfix, cfix=cfix, alias=alias,
        ew=np.zeros((Hs, nn)), eC=np.ones(Hs), etree=np.zeros((Hs, 2 * size)),
        eheap=np.zeros((Hs, nn), dtype=np.int64), ehpos=np.full((Hs, nn), -1, dtype=np.int64),
        ehsize=np.zeros(Hs, dtype=np.int64), efl=np.zeros((Hs, nn), dtype=np.int64),
        eflpos=np.full((Hs, nn), -1, dtype=np.int64), enfl=np.zeros(Hs, dtype=np.int64),
        eeta=np.asarray(eta if H else np.zeros(1), dtype=np.float64),
        ltheta=np.log(np.asarray(theta if H else np.ones(1), dtype=np.float64)),
        theta=np.asarray(theta if H else np.ones(1), dtype=np.float64).copy(),
        ph=np.zeros((Hs, b)), scb=np.zeros((2, b)), sch=np.zeros(Hs), scn=np.zeros(nn),
        suffix=np.zeros(nn + 1), order=np.zeros(nn, dtype=np.int64))
    if H:
        _init_experts(state)
    return Sampler(name, kind, n, state, info)


def sampler_from_params(params: dict, problem, *, batch: int, horizon: int,
                        abar: float) -> Sampler:
    """The sampler a finite-sum solver's params ask for (the fields of
    `drocli.solvers.finite_sum.SamplerParams`)."""
    return make_sampler(
        params["sampler"], problem.n, batch=batch, L=problem.L, alpha=float(params["alpha"]),
        osmd_lr=float(params["osmd_lr"]), horizon=horizon, abar=abar,
        abar_mode=params["abar_mode"], eta_scale=float(params["eta_scale"]),
        duplicates=params["duplicates"])


class UniformStream:
    """Blocks of uniforms for the index draws and, from an independent child stream, for the
    snapshot coins (docs/papers/002.md P15). Blocks have a fixed size, so a trajectory does not
    depend on where the monitor cuts the run into chunks."""

    def __init__(self, rng: np.random.Generator, batch: int, per_draw: int, block: int = 4096):
        self.g_idx, self.g_coin = rng.spawn(2)
        self.shape = (block, max(1, int(batch)), int(per_draw))
        self.block = block
        self.pos = block
        self.U = None
        self.coins = None

    def take(self, n: int):
        """(U (m, b, k), coins (m,)) with m = min(n, what is left of the block)."""
        if self.pos == self.block:
            self.U = self.g_idx.random(self.shape)
            self.coins = self.g_coin.random(self.block)
            self.pos = 0
        m = min(int(n), self.block - self.pos)
        sl = slice(self.pos, self.pos + m)
        self.pos += m
        return self.U[sl], self.coins[sl]
