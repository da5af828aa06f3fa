"""Server-side aggregation rules of the fair federated-learning methods of paper 003
(Liu et al. 2024, docs/papers/003.md §2.6). Pure numpy, no state: the solvers in drocli.solvers.fl
keep the state (λ, histories, output averages) and call these.

Conventions (docs/papers/003.md §2.6), for a round started from the global model θ (P,):
  thetas (m, P)  the locally-updated client models θ_i,
  L (m,)         each client's mean local minibatch loss of the round (+1e-10),
  lr             the local SGD step η_θ,
  u_i = θ_i - θ  client update direction,   g_i = (θ - θ_i)/lr = -u_i/lr  pseudo-gradient.
Every `*_step` returns the new global model (a fresh array).
"""

from __future__ import annotations

import math

import numpy as np

from drocli.ops.simplex import project_simplex


def _as2d(thetas) -> np.ndarray:
    thetas = np.asarray(thetas, dtype=np.float64)
    if thetas.ndim != 2:
        raise ValueError(f"client models must be (m, P), got shape {thetas.shape}")
    return thetas


def pseudo_gradients(theta, thetas, lr: float) -> np.ndarray:
    """g_i = (θ - θ_i)/η_θ, one row per client."""
    return (np.asarray(theta, dtype=np.float64)[None, :] - _as2d(thetas)) / float(lr)


def updates(theta, thetas, out: np.ndarray | None = None) -> np.ndarray:
    """u_i = θ_i - θ, one row per client; into `out` (m, P) float64 when given (a
    caller's array kept between rounds)."""
    return np.subtract(_as2d(thetas), np.asarray(theta, dtype=np.float64)[None, :], out=out)


# --- FedAvg / PropFair ------------------------------------------------------------------------

def fedavg_step(thetas) -> np.ndarray:
    """LS = FedAvg (code `FedAvg`): θ ← (1/m) Σ_i θ_i, unweighted (§2.6, pitfall 14).

    PropFair aggregates the same way; only its clients' local loss differs.
    """
    return _as2d(thetas).mean(axis=0)


# --- qFFL -------------------------------------------------------------------------------------

def qffl_step(theta, thetas, L, lr: float, q: float) -> np.ndarray:
    """q-FedAvg (code `qFFL`, docs/papers/003.md §2.6):
    Δ_i = L_i^q g_i,  h_i = q L_i^(q-1) ||g_i||² + L_i^q / η_θ,  θ ← θ - Σ_i Δ_i / Σ_i h_i.
    """
    theta = np.asarray(theta, dtype=np.float64)
    L = np.asarray(L, dtype=np.float64)
    g = pseudo_gradients(theta, thetas, lr)
    Lq = L ** q
    delta = Lq @ g
    h = q * L ** (q - 1.0) * np.einsum("ij,ij->i", g, g) + Lq / float(lr)
    return theta - delta / h.sum()


# --- TCH / STCH -------------------------------------------------------------------------------

def tch_step(thetas, L) -> np.ndarray:
    """TCH (code `Tche`): θ ← θ_{i*}, i* = argmax_i L_i (first index on ties)."""
    return _as2d(thetas)[int(np.argmax(np.asarray(L, dtype=np.float64)))].copy()


def stch_weights(L, mu: float) -> np.ndarray:
    """STCH/TERM weights p = softmax((1/m) L / μ) (code `STche`, momentum off)."""
    L = np.asarray(L, dtype=np.float64)
    z = L / (L.size * float(mu))
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


def stch_step(thetas, L, mu: float) -> np.ndarray:
    """STCH (code `STche`): θ ← Σ_i p_i θ_i with p = stch_weights(L, μ)."""
    return stch_weights(L, mu) @ _as2d(thetas)


# --- (Ada)OMD-TCH -----------------------------------------------------------------------------

def omd_weights(lam, w=None) -> np.ndarray:
    """Aggregation weights p = λ∘w / Σ(λ∘w) (= λ for w = None, the code's uniform case)."""
    lam = np.asarray(lam, dtype=np.float64)
    p = lam if w is None else lam * np.asarray(w, dtype=np.float64)
    return p / p.sum()


def omd_lambda_gd(lam, L, eta: float, w=None) -> np.ndarray:
    """OMDgd λ-step (code `AFL`): λ ← Π_Δ(λ + η'_λ w∘L), exact sort-based projection."""
    g = np.asarray(L, dtype=np.float64)
    if w is not None:
        g = g * np.asarray(w, dtype=np.float64)
    return project_simplex(np.asarray(lam, dtype=np.float64) + float(eta) * g)


def omd_loglambda_eg(loglam, L, eta: float, w=None) -> np.ndarray:
    """OMDeg λ-step (code `AFLeg`) in the log domain (pitfall 8):
    log λ ← log λ + η'_λ w∘L, renormalised with log-sum-exp. Returns log λ."""
    g = np.asarray(L, dtype=np.float64)
    if w is not None:
        g = g * np.asarray(w, dtype=np.float64)
    z = np.asarray(loglam, dtype=np.float64) + float(eta) * g
    return z - np.logaddexp.reduce(z)


# --- FedMGDA+ ---------------------------------------------------------------------------------

def project_box_simplex(v, lo: float, hi: float) -> np.ndarray:
    """Exact Euclidean projection of v onto {x : Σx = 1, lo <= x_i <= hi}.

    x(τ) = clip(v - τ, lo, hi); s(τ) = Σ x_i(τ) is non-increasing and piecewise linear with
    breakpoints v_i - lo, v_i - hi, so τ with s(τ) = 1 is found exactly by locating its segment
    and interpolating linearly. Needs m·lo <= 1 <= m·hi.
    """
    v = np.asarray(v, dtype=np.float64)
    m = v.size
    if not (m * lo <= 1.0 + 1e-12 and m * hi >= 1.0 - 1e-12 and lo <= hi):
        raise ValueError(f"empty set: m={m}, lo={lo}, hi={hi}")
    b = np.sort(np.concatenate([v - lo, v - hi]))
    s = np.clip(v[None, :] - b[:, None], lo, hi).sum(axis=1)   # non-increasing in b
    k = int(np.searchsorted(-s, -1.0, side="right")) - 1       # last k with s[k] >= 1
    k = min(max(k, 0), b.size - 2)
    s0, s1 = s[k], s[k + 1]
    tau = b[k] if s0 == s1 else b[k] + (s0 - 1.0) * (b[k + 1] - b[k]) / (s0 - s1)
    return np.clip(v - tau, lo, hi)


def fedmgda_box(m: int, eps: float) -> tuple[float, float]:
    """The box of FedMGDA+'s QP: |λ_i - 1/m| <= ε intersected with [0, 1]."""
    return max(0.0, 1.0 / m - eps), min(1.0, 1.0 / m + eps)


def fedmgda_weights(U, eps: float, tol: float = 1e-13, max_iter: int = 200_000) -> np.ndarray:
    """λ* = argmin_λ ||Σ_i λ_i û_i||², û_i = u_i/||u_i||, s.t. λ ∈ Δ_m, |λ_i - 1/m| <= ε.

    The code solves it with quadprog on the Gram matrix; here FISTA with gradient-based
    adaptive restart on the Gram matrix G = Û Ûᵀ (objective λᵀGλ), with the exact projection
    `project_box_simplex`, run until the iterates move less than `tol` (sup norm).
    A zero update keeps û_i = 0.
    """
    U = _as2d(U)
    m = U.shape[0]
    norms = np.linalg.norm(U, axis=1)
    Uh = U / np.where(norms > 0, norms, 1.0)[:, None]
    G = Uh @ Uh.T
    lo, hi = fedmgda_box(m, eps)
    x = np.full(m, 1.0 / m)
    Lip = 2.0 * float(np.linalg.eigvalsh(G)[-1])
    if hi - lo <= 0 or Lip <= 0:
        return x
    y, t = x.copy(), 1.0
    for _ in range(max_iter):
        x_new = project_box_simplex(y - (2.0 / Lip) * (G @ y), lo, hi)
        if np.max(np.abs(x_new - x)) <= tol:
            x = x_new
            break
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        if (y - x_new) @ (x_new - x) > 0:        # restart (O'Donoghue & Candès 2015)
            t_new, y = 1.0, x_new.copy()
        else:
            y = x_new + ((t - 1.0) / t_new) * (x_new - x)
        x, t = x_new, t_new
    return x


def fedmgda_step(theta, thetas, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """FedMGDA+ (code `FedMGDA`, docs/papers/003.md §2.6): θ ← Σ_i λ*_i θ_i. Returns (θ_new, λ*)."""
    thetas = _as2d(thetas)
    lam = fedmgda_weights(updates(theta, thetas), eps)
    return lam @ thetas, lam


# --- FedFV ------------------------------------------------------------------------------------

def fedfv_keep(L, alpha: float) -> np.ndarray:
    """Clients that keep their own direction: order[ceil((m-1)(1-α)):] with `order` the clients
    sorted by ascending loss (the ~αm largest losses); none when α = 0 [RECON: FedFV's code
    guards the slice with `if alpha > 0`, the formula alone would keep the worst client]."""
    order = np.argsort(np.asarray(L, dtype=np.float64), kind="stable")
    if alpha <= 0:
        return order[:0]
    return order[math.ceil((order.size - 1) * (1.0 - alpha)):]


def fedfv_internal(U, L, alpha: float) -> np.ndarray:
    """FedFV internal-conflict mitigation (§2.6): every client not in `fedfv_keep` has its
    u_i' projected, for j in ascending-loss order (j ≠ i), against the ORIGINAL u_j whenever
    <u_j, u_i'> < 0: u_i' ← u_i' - u_j <u_j, u_i'>/||u_j||². Returns the rows u_i'."""
    U = _as2d(U)
    order = np.argsort(np.asarray(L, dtype=np.float64), kind="stable")
    keep = set(fedfv_keep(L, alpha).tolist())
    sq = np.einsum("ij,ij->i", U, U)
    out = U.copy()
    tmp = np.empty(U.shape[1])
    for i in range(U.shape[0]):
        if i in keep:
            continue
        ui = out[i]                           # projected in place: ui - U[j] (dot / ||u_j||²)
        for j in order:
            if j == i:
                continue
            dot = float(U[j] @ ui)
            if dot < 0:
                np.multiply(U[j], dot / sq[j], out=tmp)
                np.subtract(ui, tmp, out=ui)
    return out


def fedfv_external(g, stored) -> np.ndarray:
    """FedFV external-conflict mitigation against stored client directions: for each group
    (k, P) of `stored`, in the order given, g_con = Σ{u_c : <g, u_c> < 0}; if <g, g_con> < 0
    then g ← g - g_con <g, g_con>/||g_con||²."""
    g = np.asarray(g, dtype=np.float64).copy()
    for group in stored:
        group = np.asarray(group, dtype=np.float64).reshape(-1, g.size)
        conflict = group[group @ g < 0]
        if conflict.shape[0] == 0:
            continue
        gcon = conflict.sum(axis=0)
        dot = float(g @ gcon)
        if dot < 0:
            g = g - gcon * (dot / float(gcon @ gcon))
    return g


def fedfv_direction(U, L, alpha: float, stored=()) -> np.ndarray:
    """FedFV's global update g_t (§2.6): internal projections, g_t = mean(u_i'), external
    projections against `stored` (empty when round < τ), rescaled to ||mean(u_i)||."""
    U = _as2d(U)
    g = fedfv_internal(U, L, alpha).mean(axis=0)
    g = fedfv_external(g, stored)
    gn = float(np.linalg.norm(g))
    target = float(np.linalg.norm(U.mean(axis=0)))
    return g * (target / gn) if gn > 0 else g


def fedfv_step(theta, thetas, L, alpha: float, stored=(), U=None) -> np.ndarray:
    """FedFV (code `FedFV`): θ ← θ + g_t with g_t = fedfv_direction(u, L, α, stored); `U`:
    the updates u = updates(θ, thetas) when the caller has them."""
    theta = np.asarray(theta, dtype=np.float64)
    U = updates(theta, thetas) if U is None else U
    return theta + fedfv_direction(U, L, alpha, stored)
