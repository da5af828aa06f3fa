"""The compiled state of a sampler and the constants its kernels share.

State: a `SamplerState` named tuple (the same field types for every sampler, so that each
solver kernel compiles once). The kind codes, the uniforms each kind uses per draw and the
guards of the expert weights live here, beside it, so that every kernel module reads them
from one place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

UNIFORM, IMPORTANCE, OPTIMAL, OSMD, ADAOSMD = 0, 1, 2, 3, 4
KINDS = {"uniform": UNIFORM, "importance": IMPORTANCE, "optimal": OPTIMAL, "osmd": OSMD,
         "adaosmd": ADAOSMD}
UNIFORMS_PER_DRAW = {UNIFORM: 1, IMPORTANCE: 2, OPTIMAL: 1, OSMD: 1, ADAOSMD: 2}
ABAR_MODES = ("paper", "squared_over_n2")
DUPLICATES = ("add", "overwrite")

REBUILDS, RENORMS = 0, 1   # slots of SamplerState.counts
LOG_W_MAX = 700.0      # exp overflow guard for the expert weights (docs/papers/002.md P6)
W_MAX = 1e300          # larger weights: rebuild from log p~ instead
C_MIN = 1e-150         # fold C into w below this


class SamplerState(NamedTuple):
    """The compiled state of a sampler. Scalars are fixed at construction; arrays change in
    place. Expert arrays have one row per expert h (H rows; OSMD: 1)."""

    kind: int                  # UNIFORM .. ADAOSMD
    n: int                     # number of indices
    H: int                     # experts (0 for the fixed and oracle samplers)
    size: int                  # sum-tree leaves (power of 2 >= n)
    dup_add: bool              # repeated indices in a batch add their gains (else overwrite)
    floor: float               # alpha / n
    gamma: float               # AdaOSMD meta learning rate
    counts: np.ndarray         # [rebuilds, renorms] (int64)
    pfix: np.ndarray           # fixed p (importance) / oracle weights then p (optimal)
    cfix: np.ndarray           # alias keep-probabilities (importance) / cumulative p (optimal)
    alias: np.ndarray          # alias table (importance)
    ew: np.ndarray             # (H, n) active weights: p_{h,i} = eC[h] ew[h, i]
    eC: np.ndarray             # (H,) global scale C of each expert
    etree: np.ndarray          # (H, 2 size) sum-trees over the active weights
    eheap: np.ndarray          # (H, n) min-heaps over the active weights
    ehpos: np.ndarray          # (H, n) heap position of i, -1 when floored
    ehsize: np.ndarray         # (H,) heap sizes
    efl: np.ndarray            # (H, n) floored sets (swap-remove lists)
    eflpos: np.ndarray         # (H, n) position of i in the floored list, -1 when active
    enfl: np.ndarray           # (H,) floored set sizes
    eeta: np.ndarray           # (H,) expert learning rates eta_h
    ltheta: np.ndarray         # (H,) log mixture weights
    theta: np.ndarray          # (H,) mixture weights theta_h
    ph: np.ndarray             # (H, b) scratch: p_{h,i_k} of the last draws
    scb: np.ndarray            # (2, b) scratch: gains, new weights
    sch: np.ndarray            # (H,) scratch: expert losses
    scn: np.ndarray            # (n,) scratch: log p~ for a rebuild
    suffix: np.ndarray         # (n + 1,) scratch: suffix sums (rebuild)
    order: np.ndarray          # (n,) scratch: sort order (rebuild)
