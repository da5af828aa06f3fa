"""Exact solutions x* kept on disk, one file per data set and problem (issue 29: F* once).

A problem whose reference optimum costs seconds (the damped Newton solve of the logistic
finite sum at w8a size and above) stores x* and the solve's info under
`<data folder>/cache/solutions/<key>.npz`, the key naming the CRC-32 of the data's bytes, the
shape, the objective and mu. Nothing read here is trusted: the caller uses a stored x* only
when it passes the problem's own convergence test on the data at hand
(`FiniteSumProblem.check_solution`), so a stale, colliding or forged file costs a fresh
solve, never a wrong F*. DROCLI_NO_CACHE=1 (as for the data cache) turns it off; a folder
that cannot be written only costs the speed.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from drocli.results.atomic import atomic_write

SUB = "solutions"
_SAFE = re.compile(r"[^A-Za-z0-9_.+-]")


def _path(name: str):
    if os.environ.get("DROCLI_NO_CACHE"):
        return None
    from drocli.data.cache import cache_dir

    try:
        return cache_dir(SUB) / f"{_SAFE.sub('_', name)}.npz"
    except OSError:
        return None


def load(name: str, d: int) -> tuple[np.ndarray, dict] | None:
    """(x, info) stored under `name`, or None (absent, unreadable, or not a (d,) float64)."""
    path = _path(name)
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            x = np.array(z["x"], dtype=np.float64)
            info = json.loads(str(z["info"]))
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    if x.shape != (d,) or not isinstance(info, dict):
        return None
    return x, info


def store(name: str, x: np.ndarray, info: dict) -> None:
    """Keep (x, info) under `name`, atomically; silently skipped when it cannot be written."""
    path = _path(name)
    if path is None:
        return
    try:
        atomic_write(path, lambda fh: np.savez(fh, x=np.asarray(x, dtype=np.float64),
                                               info=np.array(json.dumps(info))))
    except OSError:
        pass
