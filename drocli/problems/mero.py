"""Empirical minimax excess risk optimization, MERO (Yu et al. 2024, eq. (4)-(5)):

    min_{||W|| <= R} max_i  R_i(W) - R_i^*,    R_i^* = min_{||W|| <= R} R_i(W).

`MEROProblem` is a `GDROProblem` (same data layout and counted oracles) that also holds the
ground-truth minimal risks (docs/papers/000.md §4.1), computed once by the ERM oracle of
`drocli.ops.erm` (FISTA, uncounted) and cached on disk:
- `rstar_train` (m,): ERM on each group's training rows;
- `rstar_test` (m,): ERM on each group's TEST rows (param test_rstar: "test", [DEFAULT] spec
  §4.1), or the train values (test_rstar: "train").
`evaluate` adds max_excess_risk_train, avg_excess_risk_train and max_excess_risk_test to the
GDRO metrics (uncounted, like every metric).

The approximate problem (24) R_i(W) - Rhat_i^*: while `problem.shift` is set (use the
`shifted(rhat)` context), the counted `full_oracle` returns R_i(W) - shift_i. Per-sample
losses and all gradients are unchanged, so the ALEG machinery runs on (24) as is: the
stochastic correction l(w_h; xi) - l(w_s; xi) is shift-free (docs/papers/000.md §2.8).

Cache: `<data folder>/cache/rstar/<key>.npz` (`drocli.data.cache.cache_dir("rstar")`;
`$DROCLI_DATA`, default the platformdirs user cache folder), key = sha256 of the split's
shapes, a strided subsample of its rows, its labels, group offsets and the ERM parameters.
Written atomically; a cache that cannot be read or written is skipped; DROCLI_NO_CACHE=1
disables it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tempfile
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.ops.erm import erm_groups
from drocli.plugins import registry
from drocli.plugins.registry import Params
from drocli.problems.gdro import GDRO_METRICS, GDROProblem

TEST_RSTAR = ("test", "train")
CACHE_SUB = "rstar"
CACHE_VERSION = "rstar-v1"
HASH_ROWS = 512           # rows of X hashed (evenly strided, plus the last one)
RESULT_KEYS = ("rstar", "reached", "grad_map_norm", "iterations", "lipschitz")


# ---- cache ------------------------------------------------------------------------------------
def _cache_root() -> Path | None:
    if os.environ.get("DROCLI_NO_CACHE", "").strip() not in ("", "0"):
        return None
    try:
        from drocli.data.cache import cache_dir
    except ImportError:
        cache_dir = None
    try:
        if cache_dir is not None:
            return cache_dir(CACHE_SUB)
        import platformdirs

        root = Path(os.environ.get("DROCLI_DATA") or platformdirs.user_cache_dir("drocli"))
        path = root / CACHE_SUB
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        return None


def split_key(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, loss: str, k: int,
              radius: float, tol: float, max_iter: int) -> str:
    """Hash of a split and the ERM parameters: shapes, dtypes, HASH_ROWS strided rows of X,
    all labels and group offsets (cheap: about 2 MB hashed at N = 125k, d = 1024)."""
    h = hashlib.sha256()
    h.update(repr((CACHE_VERSION, X.shape, str(X.dtype), y.shape, loss, int(k),
                   float(radius), float(tol), int(max_iter))).encode())
    n = X.shape[0]
    if n:
        rows = np.unique(np.concatenate([np.linspace(0, n - 1, min(n, HASH_ROWS)).astype(np.int64),
                                         [n - 1]]))
        h.update(np.ascontiguousarray(X[rows]).tobytes())
    h.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(offsets, dtype=np.int64).tobytes())
    return h.hexdigest()[:32]


def _load(path: Path, m: int) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {key: np.array(z[key]) for key in RESULT_KEYS}
    except (OSError, ValueError, KeyError):
        return None
    if any(v.shape != (m,) for v in out.values()):
        return None
    return out


def _save(path: Path, res: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, **{key: res[key] for key in RESULT_KEYS})
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buf.getvalue())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass


def cached_erm(X, y, offsets, loss: str, k: int, radius: float, tol: float,
               max_iter: int) -> dict:
    """`erm_groups` of one split, memoised on disk (see the module docstring)."""
    m = len(offsets) - 1
    root = _cache_root()
    path = None
    if root is not None:
        path = root / (split_key(X, y, offsets, loss, k, radius, tol, max_iter) + ".npz")
        if path.is_file():
            hit = _load(path, m)
            if hit is not None:
                return hit
    res = erm_groups(X, y, offsets, loss, k, radius, tol, max_iter)
    if path is not None:
        _save(path, res)
    return res


# ---- problem ----------------------------------------------------------------------------------
class MEROProblem(GDROProblem):
    """Empirical MERO on grouped data; see the module docstring.

    Extra attributes: rstar_train (m,), rstar_test (m,) or None without a test split,
    erm_train / erm_test (dicts of the ERM oracle's per-group diagnostics: rstar, reached,
    grad_map_norm, iterations, lipschitz), lhat_train (m,) = the groups' L-hat (a data
    constant the ERMEG baseline uses for its step), shift (m,) = zeros.
    """

    def __init__(self, data: GroupedData, loss: str = "logistic", radius: float = 10.0,
                 test_rstar: str = "test", erm_tol: float = 1e-7, erm_max_iter: int = 5000):
        super().__init__(data, loss=loss, radius=radius)
        self.test_rstar = test_rstar
        self.erm_tol = float(erm_tol)
        self.erm_max_iter = int(erm_max_iter)
        self.erm_train = cached_erm(self.X, self.y, self.offsets, self.loss, self.k,
                                    self.radius, self.erm_tol, self.erm_max_iter)
        self.rstar_train = self.erm_train["rstar"].copy()
        self.lhat_train = self.erm_train["lipschitz"].copy()
        self.erm_test = None
        self.rstar_test = None
        if self.X_test is not None:
            if test_rstar == "test":
                self.erm_test = cached_erm(self.X_test, self.y_test, self.offsets_test,
                                           self.loss, self.k, self.radius, self.erm_tol,
                                           self.erm_max_iter)
                self.rstar_test = self.erm_test["rstar"].copy()
            else:
                self.rstar_test = self.rstar_train.copy()
        self.shift = np.zeros(self.m)
        self.info["erm_reached_train"] = bool(np.all(self.erm_train["reached"]))

    # ---- approximate problem (24) -------------------------------------------------------------
    def full_oracle(self, w, weights, return_samples: bool = False):
        """GDRO's counted full pass (cost N); the returned group risks are R_i(w) - shift_i."""
        out = super().full_oracle(w, weights, return_samples=return_samples)
        if not np.any(self.shift):
            return out
        return (out[0] - self.shift,) + tuple(out[1:])

    @contextlib.contextmanager
    def shifted(self, shift):
        """Within the block, full_oracle returns R_i - shift_i (problem (24)); restored after."""
        shift = np.asarray(shift, dtype=np.float64)
        if shift.shape != (self.m,):
            raise ValueError(f"shift has shape {shift.shape}, expected ({self.m},)")
        old = self.shift
        self.shift = shift.copy()
        try:
            yield self
        finally:
            self.shift = old

    # ---- metrics (not counted) ----------------------------------------------------------------
    def evaluate(self, w, q=None) -> dict:
        """GDRO's metrics plus max/avg excess risk on train and max excess risk on test
        (R_i(w) - R_i^*, with the train or test R_i^* as set by test_rstar)."""
        W = self._as2d(w)
        R = self.risks(W, "train")
        Rt = self.risks(W, "test") if self.X_test is not None else None
        out = self._metrics(R, Rt, q)
        ex = R - self.rstar_train
        out.update(max_excess_risk_train=float(ex.max()), avg_excess_risk_train=float(ex.mean()),
                   worst_excess_group_train=float(np.argmax(ex)))
        if Rt is not None:
            out["max_excess_risk_test"] = float(np.nanmax(Rt - self.rstar_test))
        return out


def group_view(problem: GDROProblem, i: int) -> GDROProblem:
    """Group i alone as a one-group GDROProblem (m = 1) sharing the parent's rows (no copy)
    and its oracle COUNTER, so solvers can run GDRO machinery on R_i (ALEM stage 1, TSA stage
    1) and every evaluation is counted on the parent. The view has no shift and no test split.
    """
    lo, hi = int(problem.offsets[i]), int(problem.offsets[i + 1])
    v = GDROProblem.__new__(GDROProblem)
    v.loss, v.loss_id, v.radius, v.k = problem.loss, problem.loss_id, problem.radius, problem.k
    v.name = f"{problem.name}[group {i}]"
    v.X = problem.X[lo:hi]
    v.y = problem.y[lo:hi]
    v.g = np.zeros(hi - lo, dtype=np.int64)
    v.offsets = np.array([0, hi - lo], dtype=np.int64)
    v.m = 1
    v.n_i = np.diff(v.offsets)
    v.N = hi - lo
    v.d = problem.d
    v.nbar = float(hi - lo)
    v.X_test = v.y_test = v.offsets_test = None
    v.counter = problem.counter
    v.info = {}
    return v


class MEROParams(Params):
    """Empirical MERO (docs/papers/000.md §1.4, §4.1): loss, ball radius and the ERM ground
    truth."""

    loss: Literal["logistic", "softmax"] = Field(
        "logistic", description="logistic (§4.4, synthetic) or softmax (class groups)")
    radius: float = Field(10.0, gt=0, description="l2 / Frobenius ball radius ([DEFAULT] "
                          "docs/papers/000.md §1.4)")
    test_rstar: Literal["test", "train"] = Field(
        "test", description="R_i^* of the test panel: ERM on each group's test split "
        "[DEFAULT] docs/papers/000.md §4.1, or the train R_i^*")
    erm_tol: float = Field(1e-7, ge=0, description="FISTA gradient-mapping norm tolerance "
                           "([DEFAULT] docs/papers/000.md §4.1)")
    erm_max_iter: int = Field(5000, ge=1, description="FISTA iteration cap ([DEFAULT] "
                              "docs/papers/000.md §4.1)")


MERO_METRICS = (*GDRO_METRICS, "max_excess_risk_train", "avg_excess_risk_train",
                "worst_excess_group_train", "max_excess_risk_test")


@registry.problem(
    "mero",
    params=MEROParams, metrics=MERO_METRICS,
    tiny={"data": ("gdro_synthetic", {"groups": 3, "dim": 5, "n_train": 40, "n_test": 40,
                                      "label_noise": [0.05, 0.15, 0.25]})},
    family="mero",
    description="empirical MERO min_W max_i R_i(W) - R_i^*, linear model, l2/Frobenius ball; "
                "R_i^* from a cached FISTA ERM oracle (Yu et al. 2024 eq. (4))",
)
def make(data: GroupedData, params: dict) -> MEROProblem:
    """Build the empirical MERO problem; computes (or loads) the ground-truth R_i^*."""
    return MEROProblem(data, loss=params["loss"], radius=params["radius"],
                       test_rstar=params["test_rstar"], erm_tol=params["erm_tol"],
                       erm_max_iter=params["erm_max_iter"])
