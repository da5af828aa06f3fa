"""A client's first-layer columns taken out of the global model and written back, compiled.

The federated problem trains each client on the input columns it ever uses (drocli.problems.
federated): its working copy holds W1[:, cols] cast to the training dtype, and after its
local steps those columns go back into a float64 copy of θ. numpy does this with a fancy
index through its strided casting loops (a gather, a concatenation and a cast one way; a
copy and a scatter with a cast the other), about 6 % of a federated cell. These loops move
the same values with the same casts (float64 -> float32 rounds to nearest as numpy's cast
does; float32 -> float64 is exact), so the bits are numpy's.
"""

from __future__ import annotations

from drocli.ops.jit import njit


@njit(cache=True)
def gather(W1, cols, out):
    """out[r, j] = W1[r, cols[j]] in out's dtype (W1 (h, d), out (h, len(cols)))."""
    h = W1.shape[0]
    m = cols.size
    for r in range(h):
        for j in range(m):
            out[r, j] = W1[r, cols[j]]


@njit(cache=True)
def scatter(W1_local, cols, W1):
    """W1[r, cols[j]] = W1_local[r, j] in W1's dtype (the other columns are left alone)."""
    h = W1.shape[0]
    m = cols.size
    for r in range(h):
        for j in range(m):
            W1[r, cols[j]] = W1_local[r, j]
