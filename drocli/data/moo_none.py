"""Placeholder data source for synthetic multi-objective problems (paper 003, VLMOP2).

VLMOP2 (docs/papers/003.md §3.1.1) has closed-form objectives and needs no samples; the runner
always loads `data.name` first, so specs name this source. It returns an empty GroupedData whose
info says kind = "none".
"""

from __future__ import annotations

import numpy as np

from drocli.data.base import GroupedData
from drocli.plugins import registry


@registry.data(
    "moo_none",
    memory=lambda params: 0,
    no_rows=True,             # the contract does not ask its empty data set for rows
    description="paper 003: no data (closed-form synthetic multi-objective problems)",
)
def load(params: dict, seed: int) -> GroupedData:
    """An empty data set (one dummy group, zero rows); the seed is unused."""
    return GroupedData("moo_none", np.zeros((0, 1)), np.zeros(0), np.zeros(1, dtype=np.int64),
                       info={"kind": "none"})
