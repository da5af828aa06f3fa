"""Empirical group DRO problem (Yu et al. 2024, eq. (2)-(3)): min_{||W|| <= R} max_i R_i(W).

R_i(W) = (1/n_i) sum_j l(W; x_ij, y_ij) for a linear model W (d, k):
- loss "logistic": binary labels +-1, k = 1 (the synthetic E1/E3 problems);
- loss "softmax": integer classes 0..C-1, k = C (the CIFAR-100 E2/E4 problems; Frobenius ball).

Oracle accounting (docs/papers/000.md §2.6): every per-sample loss-or-gradient evaluation adds 1 to
`counter[0]`; a full pass costs N. The oracles below count themselves, and the compiled solver
kernels receive `counter` and count their own per-sample evaluations. `evaluate` and `risks`
are metrics for plotting and are NOT counted.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops.losses import LOSS_IDS, loss_dscore
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.counted import CountedOracles

LOSSES = tuple(LOSS_IDS)


def _sorted_split(X, y, g, m, what):
    """Rows sorted by group (stable); returns X (float32, C), y (float64), g, offsets."""
    g = np.asarray(g).astype(np.int64, copy=False)
    if g.ndim != 1 or g.shape[0] != X.shape[0] or np.asarray(y).shape[0] != X.shape[0]:
        raise DrocliError(f"{what}: X, y and g must have the same number of rows",
                          fix="check the data source")
    if g.size and (g.min() < 0 or g.max() >= m):
        raise DrocliError(f"{what}: group index out of range 0..{m - 1}",
                          fix="groups must be numbered 0..m-1")
    if g.size > 1 and np.any(np.diff(g) < 0):
        order = np.argsort(g, kind="stable")
        X = X[order]
        y = np.asarray(y)[order]
        g = g[order]
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.float64)
    counts = np.bincount(g, minlength=m)
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return X, y, g, offsets


class GDROProblem(CountedOracles):
    """Grouped linear-model problem with counted oracles.

    Attributes: X (N, d) float32 C-contiguous, rows sorted by group (stable); y (N,) float64;
    g (N,) int64 group of each row; offsets (m+1,); n_i (m,); N, m, d, k; radius; loss;
    counter = np.zeros(1, np.int64). Test split (optional): X_test, y_test, offsets_test.
    The parameter W is a float64 array of shape (d, k) (k = 1 for logistic); the oracles also
    accept a 1-D w when k = 1.
    """

    def __init__(self, data: GroupedData, loss: str = "logistic", radius: float = 10.0):
        if loss not in LOSSES:
            raise DrocliError(f"unknown loss {loss!r}", key="problem.params.loss",
                              fix="use one of " + ", ".join(LOSSES))
        self.loss = loss
        self.loss_id = LOSS_IDS[loss]
        self.radius = float(radius)
        self.name = data.name
        m = int(np.max(data.g_train)) + 1
        self.X, self.y, self.g, self.offsets = _sorted_split(
            data.X_train, data.y_train, data.g_train, m, "train")
        self.m = m
        self.n_i = np.diff(self.offsets)
        if np.any(self.n_i == 0):
            empty = np.flatnonzero(self.n_i == 0).tolist()
            raise DrocliError(f"groups {empty} have no training samples",
                              fix="number the groups 0..m-1 without gaps")
        self.N = int(self.X.shape[0])
        self.d = int(self.X.shape[1])
        self.nbar = self.N / self.m
        if loss == "logistic":
            if not np.all(np.isin(self.y, (-1.0, 1.0))):
                raise DrocliError("logistic loss needs labels in {-1, +1}",
                                  key="problem.params.loss",
                                  fix="use loss: softmax for class labels 0..C-1")
            self.k = 1
        else:
            if np.any(self.y < 0) or np.any(self.y != np.round(self.y)):
                raise DrocliError("softmax loss needs integer class labels 0..C-1",
                                  key="problem.params.loss",
                                  fix="use loss: logistic for +-1 labels")
            ymax = int(self.y.max()) + 1
            self.k = int(max(ymax, data.n_classes or 0))
        self.X_test = self.y_test = self.offsets_test = None
        if data.X_test is not None and data.y_test is not None and data.g_test is not None:
            self.X_test, self.y_test, _, self.offsets_test = _sorted_split(
                data.X_test, data.y_test, data.g_test, m, "test")
        self.init_counter()
        self.info = dict(data.info)

    # ---- bookkeeping --------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """Shape (d, k) of the parameter W."""
        return (self.d, self.k)

    def zero_point(self):
        """z_0 = argmin psi: W = 0 (d, k), q uniform."""
        return np.zeros(self.shape), np.full(self.m, 1.0 / self.m)

    def _as2d(self, w) -> np.ndarray:
        W = np.asarray(w, dtype=np.float64)
        if W.ndim == 1:
            W = W.reshape(-1, 1)
        if W.shape != self.shape:
            raise ValueError(f"parameter has shape {W.shape}, expected {self.shape}")
        return W

    def _scores(self, X: np.ndarray, W: np.ndarray) -> np.ndarray:
        """X @ W with a float32 matmul (X never upcast), returned as float64 (docs/papers/000.md
        pitfall 17)."""
        return (X @ W.astype(np.float32)).astype(np.float64)

    # ---- counted oracles ------------------------------------------------------------------
    def full_oracle(self, w, weights, return_samples: bool = False):
        """Full pass at w (counted: N per-sample evaluations), eq. (16).

        Returns (R, G): R (m,) group risks R_i(w), G (d, k) = sum_i weights_i grad R_i(w).
        With return_samples=True also the per-sample losses (N,) and score derivatives
        (N, k) at w, which VR solvers keep as the snapshot terms of their control variates.
        Gradients are accumulated group by group in float64 from float32 matmuls.
        """
        W = self._as2d(w)
        wts = np.asarray(weights, dtype=np.float64)
        W32 = W.astype(np.float32)
        R = np.empty(self.m)
        G = np.zeros(self.shape)
        if return_samples:
            losses = np.empty(self.N)
            dss = np.empty((self.N, self.k))
        for i in range(self.m):
            lo, hi = self.offsets[i], self.offsets[i + 1]
            Xi = self.X[lo:hi]
            val, ds = loss_dscore((Xi @ W32).astype(np.float64), self.y[lo:hi], self.loss)
            R[i] = val.mean()
            if return_samples:
                losses[lo:hi] = val
                dss[lo:hi] = ds
            if wts[i] != 0.0:
                coef = (ds * (wts[i] / (hi - lo))).astype(np.float32)
                G += (Xi.T @ coef).astype(np.float64)
        self.counter[0] += self.N
        if return_samples:
            return R, G, losses, dss
        return R, G

    def group_oracle(self, w, i: int):
        """R_i(w) and grad R_i(w) (d, k) of one group (counted: n_i)."""
        W = self._as2d(w)
        lo, hi = self.offsets[i], self.offsets[i + 1]
        Xi = self.X[lo:hi]
        val, ds = loss_dscore(self._scores(Xi, W), self.y[lo:hi], self.loss)
        G = (Xi.T @ (ds / (hi - lo)).astype(np.float32)).astype(np.float64)
        self.counter[0] += hi - lo
        return float(val.mean()), G

    def sample_oracle(self, w, rows):
        """Per-sample losses (b,) and score derivatives (b, k) at rows (counted: b).

        The per-sample gradient of row r is X[r][:, None] * dscore[r][None, :].
        Computed in float64 (rows are few).
        """
        W = self._as2d(w)
        rows = np.asarray(rows, dtype=np.int64)
        S = self.X[rows].astype(np.float64) @ W
        val, ds = loss_dscore(S, self.y[rows], self.loss)
        self.counter[0] += rows.size
        return val, ds

    # ---- metrics (not counted) ------------------------------------------------------------
    def risks(self, w, split: str = "train") -> np.ndarray:
        """Group risks R_i(w) on 'train' or 'test' (NOT counted: for metrics only)."""
        W = self._as2d(w)
        if split == "train":
            X, y, off = self.X, self.y, self.offsets
        elif split == "test":
            if self.X_test is None:
                raise ValueError("this problem has no test data")
            X, y, off = self.X_test, self.y_test, self.offsets_test
        else:
            raise ValueError(f"unknown split {split!r}")
        W32 = W.astype(np.float32)
        out = np.full(self.m, np.nan)
        for i in range(self.m):
            lo, hi = off[i], off[i + 1]
            if hi > lo:
                val, _ = loss_dscore((X[lo:hi] @ W32).astype(np.float64), y[lo:hi], self.loss)
                out[i] = val.mean()
        return out

    def evaluate(self, w, q=None) -> dict:
        """Metrics at (w, q), not counted: max/avg group risk and worst group on train (and
        test if present); avg = unweighted mean over groups; with q also
        weighted_risk_train = sum_i q_i R_i(w)."""
        W = self._as2d(w)
        R = self.risks(W, "train")
        Rt = self.risks(W, "test") if self.X_test is not None else None
        return self._metrics(R, Rt, q)

    def _metrics(self, R: np.ndarray, Rt: np.ndarray | None, q=None) -> dict:
        """The metrics from the group risks on train (R) and test (Rt, or None)."""
        out = {"max_risk_train": float(R.max()), "avg_risk_train": float(R.mean()),
               "worst_group_train": float(np.argmax(R))}
        if q is not None:
            out["weighted_risk_train"] = float(np.dot(np.asarray(q, dtype=np.float64), R))
        if Rt is not None:
            out["max_risk_test"] = float(np.nanmax(Rt))
            out["avg_risk_test"] = float(np.nanmean(Rt))
        return out

    @property
    def risk_at_zero(self) -> float:
        """Max train group risk at W = 0 (sanity: ln 2 for logistic, ln C for softmax);
        not counted."""
        return float(self.risks(np.zeros(self.shape)).max())

    @property
    def expected_risk_at_zero(self) -> float:
        return math.log(2.0) if self.loss == "logistic" else math.log(self.k)


class GDROParams(Params):
    """Empirical GDRO (docs/papers/000.md §1): the loss and the radius of the model's ball."""

    loss: Literal["logistic", "softmax"] = Field(
        "logistic", description="logistic (labels +-1) or softmax (multiclass labels)")
    radius: float = Field(10.0, gt=0, description="radius of the l2 / Frobenius ball of W "
                          "(paper silent; [DEFAULT] docs/papers/000.md §4.2: 10)")


GDRO_METRICS = ("max_risk_train", "avg_risk_train", "worst_group_train", "weighted_risk_train",
                "max_risk_test", "avg_risk_test")


@registry.problem("gdro", params=GDROParams, family="gdro", metrics=GDRO_METRICS,
                  tiny={"data": ("gdro_synthetic", {"groups": 3, "dim": 6, "n_train": 40,
                                                    "n_test": 40})},
                  description="empirical group DRO min_W max_i R_i(W), linear model, "
                              "l2/Frobenius ball (Yu et al. 2024 eq. (2))")
def make(data: GroupedData, params: dict) -> GDROProblem:
    """Build the empirical GDRO problem from grouped data (loss: logistic | softmax)."""
    return GDROProblem(data, loss=params["loss"], radius=params["radius"])
