"""Fair federated learning of paper 003 (Liu et al., OMD-TCH; docs/papers/003.md §2.6, §3.2).

m clients (objectives) hold the paper's partition of a labelled image set (rotation or
partial class, drocli.ops.partition); the model is the 2-layer ReLU MLP d-h-k of
drocli.ops.mlp (784-200-10 for MNIST) on a flat float64 parameter vector θ.

Oracle: `local_round(θ, rng)` is the paper code's LocalRound (§2.6): every client starts from
θ and runs τ = local_steps local passes of plain SGD with step lr on its train split:
batch = 0 — τ full-batch GD steps (the MNIST setting); batch = b > 0 — τ epochs over the
client's data shuffled each epoch (rng), in minibatches of b, the last one smaller (the CIFAR
setting: τ = 1, b = 100). It returns the m local models and L_i = mean of the minibatch
losses seen during client i's local updates (each computed before its step) + 1e-10, and
counts ONE oracle call = one communication round; N = 1, so `budget: {epochs: R}` = R rounds.
With loss="propfair" every minibatch CE is replaced by PropFair's loss (§2.6)
ℓ_PF = CE/M if M - CE < eps0 else -log(1 - CE/M), whose gradient is ℓ_PF'(CE) ∇CE; L_i then
averages the PropFair losses actually optimised (the code's `losses_i.append(ℓ)`).

Seeds (pitfall 19, data_seed = train_seed): the partition and, with init="seed", the initial
model derive from `partition_seed`, else from the data seed that the data source stores in
data.info["seed"] (the runner sets it to the run seed unless the spec fixes data.seed), else
0 (sources without info["seed"], e.g. digits). Two streams are spawned from
SeedSequence(seed): [0] partition, [1] model init. So all solvers of a seed share the
partition and, by default, the initial model (paired comparisons; the code seeds torch the
same way for every method).

Images are rotated with np.rot90 on the (H, W) axes of data.info["shape"] ((28, 28),
(3, 32, 32); a square side is inferred when missing). Rotation applies to partition
"rotation" only; partial class has no rotation [PAPER].

Metrics (`evaluate`, not counted; docs/papers/003.md §3.2.5), for the train and test splits of every
client i: loss_{split}_i = mean CE over the client's samples (the code averages over batches
of 100 for CIFAR: equal when all batches are full), acc_{split}_i = correct_i / n_i x 100;
acc_{split} = Σ correct_i / Σ n_i x 100 (pooled), max_loss_{split} = max_i loss_i,
mean_loss_{split} = mean_i loss_i (unweighted over clients), parity_{split} = population
std (ddof 0) of the client accuracies x 100 (percentage points).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from drocli.data.base import GroupedData
from drocli.errors import DrocliError
from drocli.ops import client_columns, mlp, mlp_gram
from drocli.ops.partition import SCHEMES, partition, rotate_rows, rotation_k
from drocli.plugins import registry
from drocli.plugins.registry import Params, added, auto
from drocli.problems.counted import CountedOracles

KEY = "problem.params"
LOSSES = ("ce", "propfair")
DTYPES = {"float32": np.float32, "float64": np.float64}
FORMS = ("auto", "direct", "gram")


def propfair(ce: float, M: float, eps0: float = 1.0) -> tuple[float, float]:
    """(ℓ_PF, dℓ_PF/dCE) of PropFair's loss (docs/papers/003.md §2.6, [CODE]):
    CE/M (slope 1/M) if M - CE < eps0, else -log(1 - CE/M) (slope 1/(M - CE))."""
    if M - ce < eps0:
        return ce / M, 1.0 / M
    return -math.log1p(-ce / M), 1.0 / (M - ce)


def _views(arr: np.ndarray, off: np.ndarray) -> list[np.ndarray]:
    """Client i's rows arr[off[i]:off[i+1]] (views, no copy)."""
    return [arr[off[i]:off[i + 1]] for i in range(off.size - 1)]


def _image_shape(data: GroupedData, d: int):
    shape = data.info.get("shape") if isinstance(data.info, dict) else None
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != d:
            raise DrocliError(f"data.info shape {shape} does not match {d} features",
                              key=f"{KEY}.angles", fix="use a data source without bias/extra "
                              "features (e.g. bias: false)")
        return shape
    side = math.isqrt(d)
    return (side, side) if side * side == d else None


class FederatedProblem(CountedOracles):
    """See the module docstring. Attributes: m, P, lr, N = 1, counter (1,) int64, dims,
    local_steps, batch, partition, angles, classes ((m, C) or None), seed, sizes_train,
    sizes_test, X_train[i] / y_train[i] / X_test[i] / y_test[i] (client views), info."""

    def __init__(self, data: GroupedData, clients: int = 10, partition_scheme: str = "rotation",
                 classes_per_client: int = 2, angles=None, hidden: int = 200, lr: float = 0.1,
                 local_steps: int = 10, batch: int = 0, seed: int = 0, init: str = "seed",
                 dtype: str = "float32", local_form: str = "auto"):
        if data.X_test is None or data.y_test is None:
            raise DrocliError(f"data source {data.name!r} gave no test split; the federated "
                              "problem partitions train and test", key="data.params",
                              fix="keep a test split (e.g. n_test > 0)")
        if partition_scheme not in SCHEMES:
            raise DrocliError(f"unknown partition {partition_scheme!r}",
                              key=f"{KEY}.partition", fix=f"one of {', '.join(SCHEMES)}")
        if init not in ("seed", "rng"):
            raise DrocliError(f"unknown init {init!r}", key=f"{KEY}.init",
                              fix="seed (same θ0 for every solver of a seed) or rng (the "
                                  "solver's stream)")
        if dtype not in DTYPES:
            raise DrocliError(f"unknown dtype {dtype!r}", key=f"{KEY}.dtype",
                              fix="float32 or float64")
        if local_form not in FORMS:
            raise DrocliError(f"unknown local_form {local_form!r}", key=f"{KEY}.local_form",
                              fix=f"one of {', '.join(FORMS)}")
        if not (isinstance(lr, (int, float)) and lr > 0 and math.isfinite(lr)):
            raise DrocliError(f"lr must be > 0, got {lr!r}", key=f"{KEY}.lr", fix="e.g. lr: 0.1")
        y_tr = np.asarray(data.y_train)
        y_te = np.asarray(data.y_test)
        if not (np.issubdtype(y_tr.dtype, np.integer) or np.all(y_tr == np.round(y_tr))) \
                or y_tr.min() < 0:
            raise DrocliError(f"data source {data.name!r} has labels {np.unique(y_tr)[:5]}..., "
                              "the federated problem needs classes 0..K-1", key="data.name",
                              fix="use a multiclass source (mnist5k, mnist, cifar10, "
                                  "fashion_mnist, digits)")
        y_tr = y_tr.astype(np.int64)
        y_te = y_te.astype(np.int64)
        K = int(data.n_classes) if data.n_classes and data.n_classes > 2 else \
            int(max(y_tr.max(), y_te.max())) + 1
        X_tr = np.asarray(data.X_train)
        X_te = np.asarray(data.X_test)
        d = int(X_tr.shape[1])
        m = int(clients)
        if partition_scheme == "partial_class" and not 1 <= classes_per_client <= K:
            raise DrocliError(f"classes_per_client must lie in 1..{K}, got "
                              f"{classes_per_client}", key=f"{KEY}.classes_per_client",
                              fix="the paper uses 2 or 5")
        if partition_scheme == "rotation":
            angles = [0] * m if angles is None else list(angles)
            if len(angles) != m:
                raise DrocliError(f"{len(angles)} rotation angles for {m} clients",
                                  key=f"{KEY}.angles", fix="give one angle per client, e.g. "
                                  "[0,0,0,0,0,0,0,90,90,180] (MNIST) or [0,0,0,0,0,0,0,180,"
                                  "180,180] (CIFAR-10)")
            try:
                ks = [rotation_k(a) for a in angles]
            except ValueError as exc:
                raise DrocliError(str(exc), key=f"{KEY}.angles", fix="use 0, 90, 180 or 270")\
                    from exc
        else:
            angles, ks = [0] * m, [0] * m
        shape = _image_shape(data, d)
        if any(ks) and shape is None:
            raise DrocliError(f"cannot rotate {d}-feature rows: no image shape in data.info",
                              key=f"{KEY}.angles", fix="use an image source or angles all 0")

        self.name = "federated"
        self.m = m
        self.seed = int(seed)
        self.partition = partition_scheme
        self.angles = [float(a) for a in angles]
        self.rot_k = ks
        self.shape = shape
        self.n_classes = K
        self.dims = mlp.Dims(d, int(hidden), K)
        self.P = self.dims.size
        self.lr = float(lr)
        self.local_steps = int(local_steps)
        self.batch = int(batch)
        self.init_mode = init
        self.dtype = np.dtype(DTYPES[dtype])
        self.N = 1
        self.init_counter()
        ss_part, ss_init = np.random.SeedSequence(self.seed).spawn(2)
        self._init_seq = ss_init
        tr_idx, te_idx, classes = partition(y_tr, y_te, partition_scheme, m,
                                            np.random.default_rng(ss_part),
                                            C=int(classes_per_client), n_classes=K)
        self.classes = classes
        self.idx_train, self.idx_test = tr_idx, te_idx
        for split, parts in (("train", tr_idx), ("test", te_idx)):
            empty = [i for i, p in enumerate(parts) if p.size == 0]
            if empty:
                raise DrocliError(f"client(s) {empty} get no {split} sample: fewer {split} "
                                  f"samples per class than clients", key=f"{KEY}.clients",
                                  fix="use fewer clients or more data")
        # pooled, contiguous, rotated client data; client i = rows off[i]:off[i+1]
        self.Xtr_all, self.ytr_all, self.off_train = self._pool(X_tr, y_tr, tr_idx)
        self.Xte_all, self.yte_all, self.off_test = self._pool(X_te, y_te, te_idx)
        self.sizes_train = np.diff(self.off_train)
        self.sizes_test = np.diff(self.off_test)
        self.X_train = _views(self.Xtr_all, self.off_train)
        self.y_train = _views(self.ytr_all, self.off_train)
        self.X_test = _views(self.Xte_all, self.off_test)
        self.y_test = _views(self.yte_all, self.off_test)
        # Local training works on the input columns a client ever uses: on the others (e.g.
        # MNIST's empty border pixels, ~25% of a client's 784) ∇W1 is exactly 0, so those
        # weights stay at the global θ all round; the two big matmuls shrink by as much.
        self._cols, self._Xloc, self._dims_loc = [], [], []
        for X in self.X_train:
            cols = np.flatnonzero(np.any(X != 0, axis=0))
            if cols.size == d:
                cols = None
            self._cols.append(cols)
            self._Xloc.append(X if cols is None else np.ascontiguousarray(X[:, cols]))
            self._dims_loc.append(self.dims if cols is None
                                  else mlp.Dims(int(cols.size), self.dims.h, K))
        # Full-batch local GD in the Gram form (drocli.ops.mlp_gram) where it costs fewer flops
        gram = [self.batch <= 0 and (local_form == "gram" or (
            local_form == "auto" and mlp_gram.worth_it(X.shape[0], X.shape[1], self.local_steps)))
            for X in self._Xloc]
        self._K = [mlp_gram.kernel(X) if g else None for X, g in zip(self._Xloc, gram,
                                                                      strict=True)]
        self._work: dict = {}                          # mlp_gram.Workspace by client shape
        self.info = {"seed": self.seed, "partition": partition_scheme, "angles": self.angles,
                     "classes": None if classes is None else classes.tolist(),
                     "sizes_train": self.sizes_train.tolist(),
                     "sizes_test": self.sizes_test.tolist(), "P": self.P,
                     "model": f"MLP {d}-{int(hidden)}-{K}", "dtype": dtype,
                     "local_form": ["gram" if g else "direct" for g in gram]}

    def _pool(self, X, y, parts):
        blocks = [rotate_rows(X[idx], self.shape, k) if k else X[idx]
                  for idx, k in zip(parts, self.rot_k, strict=True)]
        Xall = np.ascontiguousarray(np.concatenate(blocks), dtype=self.dtype)
        yall = np.concatenate([y[idx] for idx in parts]).astype(np.int64)
        off = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
        return Xall, yall, off

    # ---- bookkeeping --------------------------------------------------------------------------
    def initial(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """θ0 float64 (P,), PyTorch's default init U(±1/sqrt(fan_in)). init="seed": from the
        problem's seed (the same θ0 for every solver, rng unused); init="rng": from rng."""
        if self.init_mode == "seed" or rng is None:
            return mlp.init(self.dims, np.random.default_rng(self._init_seq))
        return mlp.init(self.dims, rng)

    # ---- the oracle: one communication round ----------------------------------------------------
    def local_round(self, theta, rng: np.random.Generator | None = None, loss: str = "ce",
                    M: float | None = None, eps0: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """(thetas (m, P) float64 local models, L (m,) float64 mean local losses + 1e-10);
        one oracle call (module docstring). rng shuffles the minibatches (batch > 0)."""
        if loss not in LOSSES:
            raise DrocliError(f"unknown local loss {loss!r}", key="solvers.params.loss",
                              fix=f"one of {', '.join(LOSSES)}")
        if loss == "propfair" and (M is None or not M > 0):
            raise DrocliError(f"PropFair needs a base M > 0, got {M!r}", key="solvers.params.M",
                              fix="the paper tries M in 2, 3, 4, 5")
        if loss == "propfair" and not eps0 > 0:
            raise DrocliError(f"PropFair needs eps0 > 0, got {eps0!r}",
                              key="solvers.params.eps0", fix="the code's default is 1.0")
        if self.batch > 0 and rng is None:
            raise ValueError("local_round with batch > 0 needs rng to shuffle the minibatches")
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.size != self.P:
            raise ValueError(f"θ has {theta.size} entries, the model needs {self.P}")
        thetas = np.empty((self.m, self.P))
        L = np.empty(self.m)
        lr = self.dtype.type(self.lr)
        pf = loss == "propfair"
        for i in range(self.m):
            X, y, dims = self._Xloc[i], self.y_train[i], self._dims_loc[i]
            phi = self._local_params(theta, i)  # the client's working copy, self.dtype
            if self._K[i] is not None:
                def step_size(ce):
                    if pf:
                        val, slope = propfair(ce, float(M), float(eps0))
                        return val, self.lr * slope
                    return ce, self.lr
                shape = (X.shape[0], dims, self.dtype)
                if shape not in self._work:            # one per shape, shared by clients
                    self._work[shape] = mlp_gram.Workspace(*shape)
                total = mlp_gram.gd_steps(phi, X, self._K[i], y, dims, self.local_steps,
                                          step_size, self._work[shape])
                self._store_local(phi, theta, i, thetas[i])
                L[i] = total / self.local_steps + 1e-10
                continue
            grad = np.empty_like(phi)
            step = np.empty_like(phi)
            n = y.shape[0]
            total, count = 0.0, 0
            for _ in range(self.local_steps):
                if self.batch <= 0:
                    batches = (None,)
                else:
                    perm = rng.permutation(n)
                    batches = [perm[j:j + self.batch] for j in range(0, n, self.batch)]
                for b in batches:
                    Xb, yb = (X, y) if b is None else (X[b], y[b])
                    ce, g = mlp.loss_grad(phi, Xb, yb, dims, out=grad)
                    if pf:
                        val, slope = propfair(ce, float(M), float(eps0))
                        np.multiply(g, self.dtype.type(self.lr * slope), out=step)
                    else:
                        val = ce
                        np.multiply(g, lr, out=step)
                    phi -= step
                    total += val
                    count += 1
            self._store_local(phi, theta, i, thetas[i])
            L[i] = total / count + 1e-10
        self.counter[0] += 1
        return thetas, L

    def _local_params(self, theta: np.ndarray, i: int) -> np.ndarray:
        """Client i's trainable parameters [W1[:, cols], b1, W2, b2] in self.dtype."""
        cols = self._cols[i]
        if cols is None:
            return theta.astype(self.dtype)
        dims = self._dims_loc[i]
        phi = np.empty(dims.size, dtype=self.dtype)
        W1, b1, W2, b2 = mlp.unpack(theta, self.dims)
        pW1, pb1, pW2, pb2 = mlp.unpack(phi, dims)
        client_columns.gather(W1, cols, pW1)          # W1[:, cols], cast
        pb1[:], pW2[:], pb2[:] = b1, W2, b2
        return phi

    def _store_local(self, phi: np.ndarray, theta: np.ndarray, i: int, out: np.ndarray) -> None:
        """out (P,) float64 = θ with client i's trained parameters phi written back."""
        cols = self._cols[i]
        if cols is None:
            out[:] = phi
            return
        out[:] = theta
        W1, b1, W2, b2 = mlp.unpack(out, self.dims)
        pW1, pb1, pW2, pb2 = mlp.unpack(phi, self._dims_loc[i])
        client_columns.scatter(pW1, cols, W1)         # W1[:, cols] = pW1
        b1[:] = pb1
        W2[:] = pW2
        b2[:] = pb2

    # ---- metrics (not counted) ----------------------------------------------------------------
    def client_stats(self, theta, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
        """(mean CE per client (m,), number correct per client (m,)) on a split."""
        X, y, off = ((self.Xtr_all, self.ytr_all, self.off_train) if split == "train"
                     else (self.Xte_all, self.yte_all, self.off_test))
        lg = mlp.logits(np.asarray(theta, dtype=np.float64).reshape(-1), X, self.dims)
        ce = mlp.per_sample_ce(lg, y).astype(np.float64)
        correct = (np.argmax(lg, axis=1) == y).astype(np.float64)
        sizes = np.diff(off)
        return np.add.reduceat(ce, off[:-1]) / sizes, np.add.reduceat(correct, off[:-1])

    def evaluate(self, theta, t=None) -> dict:
        out = {}
        per_client = {}
        for split, sizes in (("train", self.sizes_train), ("test", self.sizes_test)):
            loss, correct = self.client_stats(theta, split)
            acc = correct / sizes
            out[f"acc_{split}"] = float(correct.sum() / sizes.sum() * 100.0)
            out[f"max_loss_{split}"] = float(loss.max())
            out[f"mean_loss_{split}"] = float(loss.mean())
            out[f"parity_{split}"] = float(np.std(acc) * 100.0)
            for i in range(self.m):
                per_client[f"loss_{split}_{i}"] = float(loss[i])
                per_client[f"acc_{split}_{i}"] = float(acc[i] * 100.0)
        out.update(per_client)
        if t is not None:
            out["iteration"] = float(t)
        return out


class FederatedParams(Params):
    """Fair federated learning (paper 003 §5, App. B.2; docs/papers/003.md §3.2)."""

    clients: int = Field(10, ge=1, description="m clients, all participating every round "
                         "([PAPER] 10)")
    partition: Literal["rotation", "partial_class"] = Field(
        "rotation", description="how train and test are split over the clients [PAPER]")
    classes_per_client: int = Field(2, ge=1, description="C, classes per client "
                                    "(partial_class only; [PAPER] 2 or 5)")
    angles: list[int | float] = Field(
        [0, 0, 0, 0, 0, 0, 0, 90, 90, 180], description="rotation of each client's images "
        "in degrees ([PAPER App. B.2 + CODE] MNIST; CIFAR-10: 7 x 0 + 3 x 180)")
    hidden: int = Field(200, ge=1, description="hidden units of the MLP ([PAPER] 784-200-10)")
    lr: float = Field(0.1, gt=0, description="local SGD step η_θ [PAPER]")
    local_steps: int = Field(10, ge=1, description="τ local steps per round ([PAPER] MNIST "
                             "10 full-batch steps; CIFAR one epoch)")
    batch: int | None = auto("local minibatch ([CODE] CIFAR 100); auto: full batch (MNIST)",
                             ge=1)
    partition_seed: int | None = Field(None, ge=0, description="seed of the partition; "
                                       "null: the data seed ([RECON] pitfall 19)")
    init: Literal["seed", "rng"] = Field(
        "seed", description="seed: the same θ0 for every method of a seed [CODE]; rng: from "
        "the solver's stream")
    dtype: Literal["float32", "float64"] = Field(
        "float32", description="data and matmuls (θ stays float64), as PyTorch [RECON]")
    local_form: Literal["auto", "direct", "gram"] = added(
        "auto", "full-batch local GD computed directly or in the Gram form (same "
        "iterates, other rounding; drocli.ops.mlp_gram); auto: the form with fewer flops")


FL_METRICS = tuple(f"{m}_{s}" for s in ("train", "test")
                   for m in ("acc", "max_loss", "mean_loss", "parity")) + (
    "loss_train_*", "acc_train_*", "loss_test_*", "acc_test_*", "iteration")


@registry.problem(
    "federated",
    params=FederatedParams,
    tiny={"data": ("mnist5k", {}), "params": {"clients": 4, "angles": [0, 0, 90, 180],
                                              "hidden": 16, "local_steps": 2}},
    metrics=FL_METRICS,
    family="federated",
    description="paper 003: fair federated learning, m clients (rotation / partial class "
                "partition of train and test), 2-layer ReLU MLP, one oracle call = one round "
                "of local SGD on every client",
)
def make(data: GroupedData, params: dict) -> FederatedProblem:
    """Build the federated problem of docs/papers/003.md §3.2 from a labelled image source."""
    seed = params["partition_seed"]
    if seed is None:
        seed = (data.info or {}).get("seed", 0)
    return FederatedProblem(data, clients=params["clients"], partition_scheme=params["partition"],
                            classes_per_client=params["classes_per_client"],
                            angles=params["angles"], hidden=params["hidden"], lr=params["lr"],
                            local_steps=params["local_steps"], batch=params["batch"] or 0,
                            seed=int(seed), init=params["init"], dtype=params["dtype"],
                            local_form=params["local_form"])
