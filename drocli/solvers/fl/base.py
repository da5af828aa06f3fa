"""The LocalRound loop shared by the federated solvers of paper 003 (Liu et al. 2024,
docs/papers/003.md §2.6).

    θ = problem.initial(rng)
    record the output model
    for each round r = 0, 1, ...:                                    [cost 1 = one round]
        thetas, L = problem.local_round(θ, rng, **method.local_kwargs)
            # thetas (m, P): every client's model after its local SGD from θ (all participate)
            # L (m,): each client's mean local minibatch loss of the round, + 1e-10
        θ = method.aggregate(θ, thetas, L, r)                       (method state updated)
        at the monitor's checkpoints: record method.output(θ)

The monitor records the method's OUTPUT model (θ̄ / θ̃ for the OMD variants, the current θ for
the others; pitfall 10); local training always starts from the current θ.

Problem interface used here: m, lr (local step η_θ), N = 1, oracle_calls (rounds so far),
initial(rng), local_round(θ, rng, loss="ce", M=None, eps0=1.0) -> (thetas, L) which advances
the counter by one, evaluate(θ) (through the monitor).
"""

from __future__ import annotations

import numpy as np


class FLMethod:
    """One aggregation rule: the kwargs of its clients' local round, its server state, its
    output model. Subclasses override `aggregate` (and `start` / `output` when stateful)."""

    local_kwargs: dict = {}

    def start(self, problem, theta: np.ndarray) -> None:
        """Called once with the initial global model, before any round."""
        self.m = int(problem.m)
        self.lr = float(problem.lr)

    def aggregate(self, theta: np.ndarray, thetas: np.ndarray, L: np.ndarray,
                  r: int) -> np.ndarray:
        """New global model from the round-r client models (r = 0, 1, ...)."""
        raise NotImplementedError

    def output(self, theta: np.ndarray) -> np.ndarray:
        """The model that is evaluated and returned (a copy); default: the current θ."""
        return theta.copy()


def run(problem, rng: np.random.Generator, monitor, method: FLMethod) -> np.ndarray:
    """Drive `method` through communication rounds until the monitor stops; return its output."""
    theta = np.array(problem.initial(rng), dtype=np.float64).ravel()
    method.start(problem, theta)
    m = int(problem.m)
    r = 0
    keep = monitor(method.output(theta))
    while keep:
        for _ in range(monitor.steps_until_due(1)):
            thetas, L = problem.local_round(theta, rng, **method.local_kwargs)
            thetas = np.asarray(thetas, dtype=np.float64)
            L = np.asarray(L, dtype=np.float64).ravel()
            if thetas.shape != (m, theta.size) or L.shape != (m,):
                raise ValueError(f"local_round returned thetas {thetas.shape} and L {L.shape}, "
                                 f"expected ({m}, {theta.size}) and ({m},)")
            theta = np.asarray(method.aggregate(theta, thetas, L, r), dtype=np.float64)
            r += 1
        keep = monitor(method.output(theta))
    return method.output(theta)
