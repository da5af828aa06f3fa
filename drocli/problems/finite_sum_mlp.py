"""The nonconvex finite-sum objective of Zhao, Lyu & Kolar (TMLR 2023), §4.4, Fig. 5
(docs/papers/002.md §3.6): a two-layer ReLU network trained with squared error on data model A,

  y_hat(a) = w2 . relu(W1 a + c1) + c2,   f_i(x) = (1/2)(b_i - y_hat(a_i))^2,   F = mean_i f_i

with H hidden units ([PAPER] 10) and input dimension d ([PAPER] 100). [UNSPEC] activation,
biases and initialisation: ReLU, both layers biased, PyTorch-style init U(-1/sqrt(fan_in),
+1/sqrt(fan_in)) for every weight and bias (fan_in = d for W1, c1; H for w2, c2), drawn from
`default_rng([init_seed, 1])` where init_seed is the data seed (the run seed r when the data
follow the runs), so every method of a run starts from the same x0.

The parameter vector x is FLAT (D = H d + 2 H + 1):
  x[j d + l]      = W1[j, l]   (j < H, l < d, row-major)
  x[H d + j]      = c1[j]
  x[H d + H + j]  = w2[j]
  x[H d + 2 H]    = c2
Per-sample gradient, with z = W1 a_i + c1, h = relu(z), r = y_hat(a_i) - b_i and
delta_j = r w2_j 1[z_j > 0] (relu'(0) = 0, as PyTorch):
  dW1 = delta a_i^T,  dc1 = delta,  dw2 = r h,  dc2 = r.
Hence Delta_i = grad f_i(x) - grad f_i(w) has the W1 block (delta_x - delta_w) a_i^T (one outer
product) and ||Delta_i||^2 = ||delta_x - delta_w||^2 (||a_i||^2 + 1) + ||r_x h_x - r_w h_w||^2
+ (r_x - r_w)^2 (the sampler feedback of docs/papers/002.md §2.0).

The snapshot (grad F(w), counted n) is computed vectorised in numpy and keeps, per sample,
the pre-activations z_i(w) (n, H) and residuals r_i(w) (n,) (an `MLPSnapshot`), from which
`delta_parts` rebuilds grad f_i(x) - grad f_i(w) without a second forward pass at w (the
solver still counts 2 per draw, the paper's cost model). Importance sampling uses p_i
proportional to ||a_i||^2 ([PAPER] §4.4: "IS does poorly because ||a_i||^2 is a poor proxy
for L_i here"), so `L` holds ||a_i||^2; it is not a smoothness constant. There is no x*:
the metrics are the training loss F(x), log10 F(x) and ||grad F(x)||^2 (not counted).

Targets are raw ([UNSPEC], std ~57 at d = 100); `standardize_y: true` centres and scales them
to unit variance first.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.jit import njit
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.counted import CountedOracles

KEY = "problem.params"
LOSS_FLOOR = 1e-300


# ------------------------------------------------------------------------------------------
# compiled per-sample math (no allocation)
# ------------------------------------------------------------------------------------------
@njit(cache=True, _nrt=False)
def dot_off(A, i, x, off):
    """sum_l A[i, l] x[off + l] (4 accumulators, fixed order)."""
    d = A.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    l = 0
    while l + 4 <= d:
        s0 += A[i, l] * x[off + l]
        s1 += A[i, l + 1] * x[off + l + 1]
        s2 += A[i, l + 2] * x[off + l + 2]
        s3 += A[i, l + 3] * x[off + l + 3]
        l += 4
    while l < d:
        s0 += A[i, l] * x[off + l]
        l += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, _nrt=False)
def mlp_forward(A, i, x, H, z):
    """Pre-activations z = W1 a_i + c1 (written into z[:H]) and the output y_hat(a_i)."""
    d = A.shape[1]
    oc1 = H * d
    ow2 = oc1 + H
    out = x[ow2 + H]
    for j in range(H):
        s = dot_off(A, i, x, j * d) + x[oc1 + j]
        z[j] = s
        if s > 0.0:
            out += x[ow2 + j] * s
    return out


@njit(cache=True, _nrt=False)
def mlp_sample_grad(A, y, H, x, i, z, out):
    """out = grad f_i(x) (D,); returns f_i(x). z: scratch (H,). Not counted."""
    d = A.shape[1]
    oc1 = H * d
    ow2 = oc1 + H
    r = mlp_forward(A, i, x, H, z) - y[i]
    for j in range(H):
        zj = z[j]
        dj = r * x[ow2 + j] if zj > 0.0 else 0.0
        base = j * d
        for l in range(d):
            out[base + l] = dj * A[i, l]
        out[oc1 + j] = dj
        out[ow2 + j] = r * zj if zj > 0.0 else 0.0
    out[ow2 + H] = r
    return 0.5 * r * r


class MLPData(NamedTuple):
    """The network problem as the compiled kernels see it."""

    A: np.ndarray          # (n, d_in) inputs, float64, C order
    y: np.ndarray          # (n,) targets
    H: int                 # hidden units
    row_sq: np.ndarray     # (n,) ||a_i||^2


class MLPSnapshot(NamedTuple):
    """The full pass at the control point w: z (n, H) pre-activations, r (n,) residuals
    and gw = grad F(w)."""

    w: np.ndarray
    gw: np.ndarray
    z: np.ndarray
    r: np.ndarray


@njit(cache=True, _nrt=False)
def delta_parts(data, x, snap, i, z):
    """For sample i: writes z[:H] = z_i(x), z[H:2H] = delta_x - delta_w (the c1 block of
    Delta_i; the W1 block is its outer product with a_i) and z[2H:3H] = r_x h_x - r_w h_w
    (the w2 block); returns (r_x - r_w, ||Delta_i||^2). w enters only through its w2 and the
    snapshot (z_i(w), r_i(w))."""
    A, H, w = data.A, data.H, snap.w
    d = A.shape[1]
    ow2 = H * d + H
    rx = mlp_forward(A, i, x, H, z) - data.y[i]
    rw = snap.r[i]
    sd = 0.0
    se = 0.0
    for j in range(H):
        zx = z[j]
        zw = snap.z[i, j]
        dx = rx * x[ow2 + j] if zx > 0.0 else 0.0
        dw = rw * w[ow2 + j] if zw > 0.0 else 0.0
        hx = rx * zx if zx > 0.0 else 0.0
        hw = rw * zw if zw > 0.0 else 0.0
        dd = dx - dw
        ee = hx - hw
        z[H + j] = dd
        z[2 * H + j] = ee
        sd += dd * dd
        se += ee * ee
    eps = rx - rw
    a = sd * (data.row_sq[i] + 1.0) + se + eps * eps
    return eps, a


# ------------------------------------------------------------------------------------------
# the problem
# ------------------------------------------------------------------------------------------
def pytorch_init(d: int, H: int, seed: int) -> np.ndarray:
    """Flat x0: W1, c1 ~ U(+-1/sqrt(d)), w2, c2 ~ U(+-1/sqrt(H)) from default_rng([seed, 1]),
    drawn in the order W1 (row-major), c1, w2, c2."""
    rng = np.random.default_rng([int(seed), 1])
    b1 = 1.0 / math.sqrt(d)
    b2 = 1.0 / math.sqrt(H)
    W1 = rng.uniform(-b1, b1, (H, d))
    c1 = rng.uniform(-b1, b1, H)
    w2 = rng.uniform(-b2, b2, H)
    c2 = rng.uniform(-b2, b2, 1)
    return np.concatenate([W1.ravel(), c1, w2, c2])


class MLPFiniteSumProblem(CountedOracles):
    """F(x) = (1/n) sum_i (1/2)(b_i - y_hat(a_i; x))^2 for the two-layer ReLU network, with
    counted oracles (per-sample gradient: 1; full gradient: n).

    Arrays for the compiled kernels: A (n, d_in) float64, y (n,), H (hidden units), row_sq
    (n,) = ||a_i||^2, counter. d is the parameter dimension D = H d_in + 2 H + 1 (the size of
    x); L = ||a_i||^2 (the paper's IS weights, §4.4), L_bar, L_max of those. x0 = the seeded
    PyTorch-style init (`zero_point`).
    """

    objective = "mlp"

    def __init__(self, A, y, hidden: int = 10, standardize_y: bool = False, init_seed: int = 0,
                 name: str = "finite_sum_mlp", info: dict | None = None):
        hidden = int(hidden)
        if hidden < 1:
            raise DrocliError(f"hidden must be >= 1, got {hidden}", key=f"{KEY}.hidden",
                              fix="hidden: 10 (the paper's network)")
        A = np.ascontiguousarray(A, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        if A.ndim != 2 or A.shape[0] != y.shape[0] or A.shape[0] < 1:
            raise DrocliError(f"design {A.shape} and targets {y.shape} do not match",
                              fix="check the data source")
        self.info = dict(info or {})
        self.y_mean, self.y_std = 0.0, 1.0
        if standardize_y:
            self.y_mean = float(y.mean())
            self.y_std = float(y.std()) or 1.0
            y = (y - self.y_mean) / self.y_std
        self.name = name
        self.A, self.y = A, np.ascontiguousarray(y)
        self.n, self.d_in = A.shape
        self.N = self.n
        self.H = hidden
        self.d = hidden * self.d_in + 2 * hidden + 1
        self.mu = 0.0
        self.row_sq = np.einsum("ij,ij->i", A, A)
        self.kdata = MLPData(self.A, self.y, self.H, self.row_sq)
        self.L = self.row_sq.copy()
        self.L_bar = float(self.L.mean())
        self.L_max = float(self.L.max())
        self.init_counter()
        self.init_seed = int(init_seed)
        self.x0 = pytorch_init(self.d_in, hidden, self.init_seed)
        self.info.update(hidden=hidden, D=self.d, standardize_y=bool(standardize_y),
                         y_mean=self.y_mean, y_std=self.y_std, init_seed=self.init_seed,
                         loss_x0=self.loss(self.x0))

    # ---- layout --------------------------------------------------------------------------
    def unpack(self, x):
        """(W1 (H, d_in), c1 (H,), w2 (H,), c2 float) views of the flat x."""
        x = np.asarray(x, dtype=np.float64)
        H, d = self.H, self.d_in
        return (x[:H * d].reshape(H, d), x[H * d:H * d + H], x[H * d + H:H * d + 2 * H],
                float(x[H * d + 2 * H]))

    def pack(self, W1, c1, w2, c2) -> np.ndarray:
        return np.concatenate([np.asarray(W1, float).ravel(), np.asarray(c1, float),
                               np.asarray(w2, float), [float(c2)]])

    # ---- bookkeeping ---------------------------------------------------------------------
    def zero_point(self) -> np.ndarray:
        """x0: the seeded PyTorch-style init (docs/papers/002.md §2.5: "NN: seeded random init")."""
        return self.x0.copy()

    # ---- numpy math (vectorised) -----------------------------------------------------------
    def _forward(self, x):
        W1, c1, w2, c2 = self.unpack(x)
        Z = self.A @ W1.T + c1
        Hh = np.maximum(Z, 0.0)
        return Z, Hh, Hh @ w2 + c2

    def _grad_from(self, x, Z, Hh, r):
        W1, c1, w2, c2 = self.unpack(x)
        n = self.n
        Dl = r[:, None] * (w2[None, :] * (Z > 0.0))
        return self.pack(Dl.T @ self.A / n, Dl.mean(0), Hh.T @ r / n, r.mean())

    # ---- counted oracles -----------------------------------------------------------------
    def snapshot(self, w):
        """Full pass at w (counted: n): (snap_z (n, H) pre-activations, snap_r (n,)
        residuals, grad F(w))."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        Z, Hh, yhat = self._forward(w)
        r = yhat - self.y
        gw = self._grad_from(w, Z, Hh, r)
        self.counter[0] += self.n
        return np.ascontiguousarray(Z), np.ascontiguousarray(r), gw

    def snapshot_into(self, w, snap_z, snap_r, gw) -> None:
        """`snapshot(w)` written into existing buffers (counted: n)."""
        z, r, g = self.snapshot(w)
        snap_z[:] = z
        snap_r[:] = r
        gw[:] = g

    def full_gradient(self, x) -> np.ndarray:
        """grad F(x) (counted: n)."""
        return self.snapshot(x)[2]

    def sample_gradients(self, x, rows) -> np.ndarray:
        """Per-sample gradients grad f_i(x), one row per entry of `rows` (counted)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        out = np.empty((rows.size, self.d))
        z = np.empty(self.H)
        for k, i in enumerate(rows):
            mlp_sample_grad(self.A, self.y, self.H, x, int(i), z, out[k])
        self.counter[0] += rows.size
        return out

    def sample_grad_norms(self, snap_z, snap_r, w) -> np.ndarray:
        """||grad f_i(w)|| for every i from a snapshot at w (no new oracle calls)."""
        _, _, w2, _ = self.unpack(w)
        act = snap_z > 0.0
        dl = snap_r[:, None] * (w2[None, :] * act)
        hr = snap_r[:, None] * np.where(act, snap_z, 0.0)
        sq = (dl ** 2).sum(1) * (self.row_sq + 1.0) + (hr ** 2).sum(1) + snap_r ** 2
        return np.sqrt(sq)

    # ---- metrics (not counted) -----------------------------------------------------------
    def loss(self, x) -> float:
        """F(x) (NOT counted)."""
        _, _, yhat = self._forward(x)
        r = yhat - self.y
        return float(0.5 * np.mean(r * r))

    def evaluate(self, x, iteration=None) -> dict:
        """Metrics at x: loss F(x), log10_loss = log10(max(F, 1e-300)) (docs/papers/002.md §3.6: no
        x*, plot log10 of the training loss), grad_norm2 = ||grad F(x)||^2; `iteration` passed
        through."""
        x = np.asarray(x, dtype=np.float64)
        Z, Hh, yhat = self._forward(x)
        r = yhat - self.y
        F = float(0.5 * np.mean(r * r))
        g = self._grad_from(x, Z, Hh, r)
        out = {"loss": F,
               "log10_loss": math.log10(max(F, LOSS_FLOOR)) if math.isfinite(F) else math.nan,
               "grad_norm2": float(g @ g)}
        if iteration is not None:
            out["iteration"] = float(iteration)
        return out


def from_data(data: GroupedData, hidden: int = 10, standardize_y: bool = False,
              init_seed: int = -1) -> MLPFiniteSumProblem:
    """The network problem on GroupedData (X_train, y_train). init_seed < 0: the data seed
    recorded by the source (data.info["seed"], e.g. regression_synthetic), else 0."""
    seed = int(init_seed)
    if seed < 0:
        seed = int(data.info.get("seed", 0))
    return MLPFiniteSumProblem(data.X_train, data.y_train, hidden=hidden,
                               standardize_y=standardize_y, init_seed=seed, name=data.name,
                               info=data.info)


class FiniteSumMLPParams(Params):
    """The two-layer ReLU network of paper 002 §4.4 ([RECON] docs/papers/002.md §3.6)."""

    hidden: int = Field(10, ge=1, description="hidden units (the paper's network: 10)")
    standardize_y: bool = Field(False, description="standardise the targets (raw targets "
                                "by default)")
    init_seed: int = Field(-1, ge=-1, description="seed of the U(+-1/sqrt(fan_in)) "
                           "initialisation; -1: the data seed (the run seed)")


@registry.problem("finite_sum_mlp", params=FiniteSumMLPParams, family="finite_sum",
                  metrics=("loss", "log10_loss", "grad_norm2", "iteration"),
                  description="finite-sum nonconvex problem: two-layer ReLU network, squared "
                              "error (Zhao, Lyu & Kolar 2023, §4.4)")
def make(data: GroupedData, params: dict) -> MLPFiniteSumProblem:
    """Build the two-layer network problem (objective "mlp" of §3.6): hidden units,
    standardize_y (default raw targets), init_seed (-1: the run's data seed)."""
    return from_data(data, hidden=params["hidden"], standardize_y=params["standardize_y"],
                     init_seed=params["init_seed"])
