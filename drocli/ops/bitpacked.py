"""X @ q for a 0/1 matrix X stored as bits, by table lookup (the "four Russians" trick).

The example-weight problems of paper 004 have binary features (a1a / w8a and their
stand-ins), and SVRB / STABLE / RSVRB form the n-vector X~ H^{-1} v every iteration
(docs/papers/004.md
§3.2): a dense float64 X of 20,000 x 197 is 31 MB to stream per step. Packed, it is 0.5 MB;
each step first tabulates, for every block of 8 columns, the 256 possible partial sums of q
(256 x D / 8 additions), then sums D / 8 table entries per row. Exact up to the order of the
additions (rounding level).
"""

from __future__ import annotations

import numpy as np

from drocli.ops.jit import njit


class BitMatrix:
    """A 0/1 matrix (n, D) as packed bits (n, ceil(D / 8)) uint8, little bit order."""

    def __init__(self, X: np.ndarray):
        X = np.asarray(X)
        self.shape = X.shape
        self.bits = np.ascontiguousarray(np.packbits(X != 0, axis=1, bitorder="little"))

    @classmethod
    def of(cls, X: np.ndarray) -> BitMatrix | None:
        """The packed form of X if every entry is 0 or 1, else None."""
        X = np.asarray(X)
        if X.ndim != 2 or X.size == 0 or not np.all((X == 0) | (X == 1)):
            return None
        return cls(X)

    def dot(self, q: np.ndarray) -> np.ndarray:
        """X @ q (n,) float64 for q (D,)."""
        q = np.asarray(q, dtype=np.float64)
        if q.shape != (self.shape[1],):
            raise ValueError(f"q has shape {q.shape}, X has {self.shape[1]} columns")
        padded = np.zeros(8 * self.bits.shape[1])
        padded[: q.size] = q
        return _dot(self.bits, padded)


@njit(cache=True)
def _dot(bits, q):
    nb = bits.shape[1]
    table = np.empty((nb, 256))
    for k in range(nb):
        table[k, 0] = 0.0
        for b in range(1, 256):
            low = b & -b                      # lowest set bit, its index i: q[8k + i]
            i = 0
            while (1 << i) != low:
                i += 1
            table[k, b] = table[k, b ^ low] + q[8 * k + i]
    n = bits.shape[0]
    out = np.empty(n)
    for r in range(n):
        s = 0.0
        for k in range(nb):
            s += table[k, bits[r, k]]
        out[r] = s
    return out
