"""The Walker/Vose alias table of the importance sampler: O(1) draws from a fixed p."""

from __future__ import annotations

import numpy as np


def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker/Vose alias table of p: draw j uniform, keep j with probability prob[j], else
    alias[j]."""
    p = np.asarray(p, dtype=np.float64)
    n = p.size
    scaled = p * n / p.sum()
    prob = np.ones(n)
    alias = np.arange(n, dtype=np.int64)
    small = [i for i in range(n) if scaled[i] < 1.0]
    large = [i for i in range(n) if scaled[i] >= 1.0]
    while small and large:
        s = small.pop()
        g = large[-1]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            large.pop()
            small.append(g)
    return prob, alias
