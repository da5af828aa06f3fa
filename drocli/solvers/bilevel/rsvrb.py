"""RSVRB: Algorithm 2 of Guo, Hu, Zhang & Yang (docs/papers/004.md §2.3), m lower problems, in the
mini-batch-of-tasks form of their E.2 [RECON, §2.3 "Mini-batch-of-tasks version"].

Per task i the SVRB estimators of Algorithm 1 (§2.2): G_i (the paper's w_i, grad_w g_i),
v_i (grad_w f_i), the cross Jacobian diag(alpha_i) X~ (V_i, structured storage, §3.2) and the
Hessian H_i >= lam I; u_i = grad_p f_i = 0. Each iteration:
  * RC-STORM (steps 4-8): a set I_t of S tasks, uniform without replacement; each sampled task
    draws one lower and one upper batch, evaluated at the current and the previous point, and
    its increments are scaled by 1/pi_i = m/S (pi_i = S/m, the inclusion probability); every
    other task is only multiplied by (1 - beta_t);
  * d-recursion (steps 10-13): a second STORM over a uniform set J_t of S_d tasks, no 1/p
    scaling, d ~ (1/m) sum_i z_i with z_i = -alpha_i * (X~ H_i^{-1} v_i) [RECON: uniform J_t,
    independent of I_t];
  * x step p <- p - eta_t gamma d (step 14), y step W_i <- W_i - tau_t tau G_i for ALL tasks
    (step 15, ball projection inactive).
Bookkeeping (§2.3 "Simplest exact alternative" [RECON]): the (1 - beta) scalings of G, v,
alpha are applied densely; H_i is lazy: the matrix at its last touch and the product c of the
(1 - beta) factors since, materialised as S^l_lam[c H_i] when task i is in I_t or J_t (exact by
the composition identity S^l[c_k ... S^l[c_1 H]] = S^l[(c_1 ... c_k) H] for H >= lam I).
Memory: m D^2 doubles for the H_i (pitfall 17).

Start-up as SVRB (§2.2 clean version, proof of Theorem 2): plain estimates on init_batch x
the batches at (p_0, W_0) for ALL m tasks, d_0 = (1/m) sum_i z_{i,0}, one plain step.
Samples: m init_batch (batch + batch_val) once, then S (batch + batch_val) per iteration.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from drocli.errors import DrocliError
from drocli.ops.psd import FlooredSPD
from drocli.plugins import registry
from drocli.plugins.registry import auto
from drocli.solvers.bilevel import Batches, StormSteps, clip_weights, decay, storm_lower


class TaskEstimators:
    """The per-task estimator state of Algorithm 2: G (m, D), v (m, D), alpha (m, n), and
    the lazy Hessians F (m FlooredSPD, S^l_lam-projected at the last touch) with their
    pending (1 - beta) products `scale` (m,)."""

    def __init__(self, problem, p, W, draw):
        """Plain estimates at (p, W) for every task on the batches `draw(i)` (start-up)."""
        m, n, D = problem.m, problem.n, problem.D
        self.lam, self.problem = problem.lam, problem
        self.G, self.v = np.empty((m, D)), np.empty((m, D))
        self.alpha = np.zeros((m, n))
        self.F: list[FlooredSPD] = []
        self.scale = np.ones(m)
        for i in range(m):
            B, Bv = draw(i)
            self.G[i], H, a = problem.lower_terms(p, W[i], B, i)
            self.alpha[i, B] = a
            self.v[i] = problem.upper_grad(W[i], Bv, i)
            self.F.append(FlooredSPD(H, self.lam))

    def hess(self, i: int) -> FlooredSPD:
        """Task i's current S^l_lam[scale_i F_i] (materialised: F_i updated, scale_i = 1)."""
        F = self.F[i] = self.F[i].scaled(self.scale[i])
        self.scale[i] = 1.0
        return F

    def z(self, i: int, F: FlooredSPD) -> np.ndarray:
        """z_i = -V_i H_i^{-1} v_i = -alpha_i * (X~ H_i^{-1} v_i), an n-vector (u_i = 0)."""
        return -self.alpha[i] * self.problem.features_dot(F.solve(self.v[i]))

    def rc_storm(self, problem, p, W, p_prev, W_prev, tasks, beta: float, weight: float,
                 draw, facs: dict | None = None) -> dict:
        """Steps 4-8 (RC-STORM): the sampled `tasks` get (1 - beta)(h - weight h(prev)) +
        weight h(cur) on one batch `draw(i)` at both points, every other task (1 - beta) h
        (H_i lazily). `facs` holds factorisations of tasks materialised at t-1 already;
        returns those of the updated tasks at t."""
        c = 1.0 - beta
        facs = facs or {}
        H_prev = {i: (facs[i] if i in facs else self.hess(i)).matrix for i in tasks}
        self.G *= c
        self.v *= c
        self.alpha *= c
        self.scale *= c
        out = {}
        for i in tasks:
            B, Bv = draw(i)
            F, g_cur, g_old = storm_lower(problem, (p_prev, W_prev[i]), (p, W[i]), i, B,
                                          H_prev[i], self.alpha[i], c, weight)
            self.G[i] += weight * (g_cur - c * g_old)
            self.v[i] += weight * (problem.upper_grad(W[i], Bv, i)
                                   - c * problem.upper_grad(W_prev[i], Bv, i))
            out[i] = self.F[i] = F
            self.scale[i] = 1.0
        return out


def sizes(problem, params: dict) -> tuple[int, int, int, int, int]:
    """(batch, batch_val, init_batch, S, S_d), checked; S_d = 0 means S_d = S."""
    b, bv, b0 = params["batch"], params["batch_val"], params["init_batch"]
    S = params["tasks_per_iter"]
    Sd = params["tasks_d"] or S
    for name, val in (("tasks_per_iter", S), ("tasks_d", Sd)):
        if val > problem.m:
            raise DrocliError(f"{name} = {val} exceeds the number of tasks m = {problem.m}",
                              key=f"params.{name}", fix=f"{name}: {problem.m} or less")
    return b, bv, b0, S, Sd


def run(problem, params: dict, rng: np.random.Generator, monitor, schedule, gamma: float,
        tau: float):
    """The RSVRB iteration (Algorithm 2, order of operations of docs/papers/004.md §2.3) with the
    step schedule `schedule(t) -> (eta_t, tau_t, beta_t)` (RSVRB: E.1 decay; RE-RSVRB: stages)."""
    b, bv, b0, S, Sd = sizes(problem, params)
    nonneg = params["nonneg"]
    m = problem.m
    weight = m / S                                           # 1 / pi_i
    p, W = problem.zero_point()
    keep = monitor(p, W)
    est = TaskEstimators(problem, p, W, lambda i: (problem.draw_train(rng, b0 * b),
                                                   problem.draw_val(rng, b0 * bv)))
    d = np.mean([est.z(i, est.hess(i)) for i in range(m)], axis=0)

    def draw(i):
        return problem.draw_train(rng, b), problem.draw_val(rng, bv)

    t = 0
    while keep:
        eta, tau_t, _ = schedule(t)
        p_prev, W_prev = p, W
        p = clip_weights(p - eta * gamma * d, nonneg)        # step 14
        W = W - (tau_t * tau) * est.G                        # step 15, all tasks
        t += 1
        keep = monitor(p, W)
        if not keep:
            break
        beta_t = schedule(t)[2]
        I = np.sort(rng.choice(m, size=S, replace=False))
        J = np.sort(rng.choice(m, size=Sd, replace=False))
        facs = {j: est.hess(j) for j in J}                   # state at t-1
        z_old = np.mean([est.z(j, facs[j]) for j in J], axis=0)
        new = est.rc_storm(problem, p, W, p_prev, W_prev, I, beta_t, weight, draw, facs)
        z_new = np.mean([est.z(j, new[j] if j in new else est.hess(j)) for j in J], axis=0)
        d = (1.0 - beta_t) * (d - z_old) + z_new             # step 13
    return p, W


class TaskSampling(Batches):
    """Batches and task sampling of RSVRB / RE-RSVRB (Algorithms 2-3; §2.3-2.4)."""

    init_batch: int = Field(4, ge=1, description="start-up estimates on init_batch x the "
                            "batches")
    tasks_per_iter: int = Field(10, ge=1, description="S, tasks sampled per iteration "
                                "without replacement (increments x m / S)")
    tasks_d: int | None = auto("S_d, other tasks of the d estimate; auto: S", ge=1)


class RSVRBParams(TaskSampling, StormSteps):
    """RSVRB's parameters (Algorithm 2 with App. E.1's schedules)."""

    beta: float = Field(10.0, gt=0, description="STORM weight min(1, beta eta_t^2)")
    tau: float = Field(1.0, gt=0, description="lower (y) step multiplier")


@registry.solver(
    "rsvrb",
    reference="Guo, Hu, Zhang & Yang, Alg. 2 (docs/papers/004.md §2.3)",
    params=RSVRBParams,
    tiny={"tasks_per_iter": 1},
    family="bilevel",
    description="RSVRB: randomized (task-sampling) STORM bilevel method for m lower problems "
                "(Guo, Hu, Zhang & Yang, Algorithm 2)",
)
def solve(problem, params: dict, rng: np.random.Generator, monitor):
    """RSVRB, Guo, Hu, Zhang & Yang, Algorithm 2 (docs/papers/004.md §2.3), E.1-like schedules:
    eta_t = tau_t = (t + c0)^(-1/3), one STORM weight beta_t = min(1, beta eta_t^2) for all
    estimators and d; x step eta_t gamma d, y step tau_t tau G_i. [RECON] tasks_per_iter
    tasks per iteration scaled by m/S, d over tasks_d (0: = tasks_per_iter) uniform tasks,
    lazy H. d tracks the task MEAN of the hypergradients (pitfall 15: fold m into gamma)."""
    c0, beta = params["c0"], params["beta"]
    gamma, tau = params["gamma"], params["tau"]

    def schedule(t):
        eta = decay(t, c0, 1.0 / 3.0)
        return eta, eta, min(1.0, beta * eta * eta)

    return run(problem, params, rng, monitor, schedule, gamma, tau)
