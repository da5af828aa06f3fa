"""Algorithm 2 of paper 003 (Liu et al. 2024, AdaOMD-TCH, docs/papers/003.md §2.4): the adaptive
online-to-batch conversion over Pareto-non-dominated iterates. Shared by the VLMOP2 solver
(drocli.solvers.moo) and the federated solvers (drocli.solvers.fl).
"""

from __future__ import annotations

import numpy as np


class AdaptiveConversion:
    """Algorithm 2 of paper 003 (§2.4): the Pareto-non-dominated iterates P with weights γ.

    update(F, θ): A = {e ∈ P : e.F <= F element-wise} (stored iterates dominating the new one,
    ties included). A non-empty: discard θ, each e in A gains 1/|A|. Otherwise θ (copied) enters
    with γ = 1 + Σ_{e∈B} e.γ where B = {e ∈ P : F <= e.F}, and B leaves P.
    Invariant: Σ γ = number of updates. output() = (1/t) Σ_P γ θ.
    """

    def __init__(self):
        self.F = np.zeros((0, 0))        # (|P|, m) objective vectors
        self.theta = np.zeros((0, 0))    # (|P|, d) snapshots (copies)
        self._gamma = np.zeros(0)
        self.t = 0

    @property
    def gamma(self) -> list[float]:
        return self._gamma.tolist()

    def update(self, F, theta) -> bool:
        """Process one iterate; True if it entered P."""
        F = np.array(F, dtype=np.float64).reshape(1, -1)
        theta = np.array(theta, dtype=np.float64).reshape(1, -1)
        self.t += 1
        if self.t == 1:
            self.F, self.theta, self._gamma = F, theta, np.ones(1)
            return True
        A = np.all(self.F <= F, axis=1)
        if A.any():
            self._gamma[A] += 1.0 / int(A.sum())
            return False
        B = np.all(F <= self.F, axis=1)
        gain = 1.0 + float(self._gamma[B].sum())
        keep = ~B
        self.F = np.vstack([self.F[keep], F])
        self.theta = np.vstack([self.theta[keep], theta])
        self._gamma = np.concatenate([self._gamma[keep], [gain]])
        return True

    @property
    def total(self) -> float:
        return float(self._gamma.sum())

    def output(self) -> np.ndarray:
        """θ̃^(t) = (1/t) Σ_{e∈P} γ_e θ_e."""
        if self.t == 0:
            raise ValueError("no iterate yet")
        return (self._gamma @ self.theta) / self.t
