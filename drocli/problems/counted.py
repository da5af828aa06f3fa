"""Oracle-call bookkeeping shared by every problem: an int64 array of length 1 that the
oracles and the compiled solver kernels increment in place (the monitor reads it)."""

from __future__ import annotations

import numpy as np


class CountedOracles:
    """Mixin: `counter` (int64[1]), `oracle_calls` and `reset_counter()`."""

    counter: np.ndarray

    def init_counter(self) -> None:
        self.counter = np.zeros(1, dtype=np.int64)

    @property
    def oracle_calls(self) -> int:
        return int(self.counter[0])

    def reset_counter(self) -> None:
        self.counter[0] = 0
