"""Sum-tree, heap and sort primitives of the adaptive samplers' experts (no allocation).

One expert is one row of the 2-D state arrays: a sum-tree over its active weights (draws and
the normaliser), a min-heap over them (which coordinates cross the floor) and an in-place
heapsort for the exact rebuild (docs/papers/002.md §2.4). Kept apart so that the expert
steps read as the algorithm, not as index arithmetic.
"""

from __future__ import annotations

from drocli.ops.jit import njit


@njit(cache=True, _nrt=False)
def _tree_set(tree, size, i, val):
    node = size + i
    tree[node] = val
    node >>= 1
    while node >= 1:
        tree[node] = tree[2 * node] + tree[2 * node + 1]
        node >>= 1


@njit(cache=True, _nrt=False)
def _tree_build(tree, size):
    for node in range(size - 1, 0, -1):
        tree[node] = tree[2 * node] + tree[2 * node + 1]


@njit(cache=True, _nrt=False)
def _tree_find(tree, size, u):
    """Leaf index of the mass point u in [0, tree[1]) (never a zero leaf)."""
    node = 1
    while node < size:
        left = 2 * node
        lv = tree[left]
        if (u < lv and lv > 0.0) or tree[left + 1] <= 0.0:
            node = left
        else:
            u -= lv
            node = left + 1
    return node - size


@njit(cache=True, _nrt=False)
def _sift_up(heap, hpos, key, pos):
    i = heap[pos]
    k = key[i]
    while pos > 0:
        parent = (pos - 1) >> 1
        j = heap[parent]
        if key[j] <= k:
            break
        heap[pos] = j
        hpos[j] = pos
        pos = parent
    heap[pos] = i
    hpos[i] = pos


@njit(cache=True, _nrt=False)
def _sift_down(heap, hpos, key, pos, size):
    i = heap[pos]
    k = key[i]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and key[heap[c + 1]] < key[heap[c]]:
            c += 1
        j = heap[c]
        if key[j] >= k:
            break
        heap[pos] = j
        hpos[j] = pos
        pos = c
    heap[pos] = i
    hpos[i] = pos


@njit(cache=True, _nrt=False)
def _sift_max(keys, order, pos, size):
    i = order[pos]
    k = keys[i]
    while True:
        c = 2 * pos + 1
        if c >= size:
            break
        if c + 1 < size and keys[order[c + 1]] > keys[order[c]]:
            c += 1
        if keys[order[c]] <= k:
            break
        order[pos] = order[c]
        pos = c
    order[pos] = i


@njit(cache=True, _nrt=False)
def _argsort(keys, order):
    """order <- indices sorting keys ascending (in-place heapsort, no allocation)."""
    n = keys.shape[0]
    for i in range(n):
        order[i] = i
    for start in range(n // 2 - 1, -1, -1):
        _sift_max(keys, order, start, n)
    for end in range(n - 1, 0, -1):
        tmp = order[0]
        order[0] = order[end]
        order[end] = tmp
        _sift_max(keys, order, 0, end)
