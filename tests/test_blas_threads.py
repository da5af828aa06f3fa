"""A cell's BLAS thread limit reaches every BLAS library of its process, also one that a
plug-in loads after the limit was set (issue 41: scipy's own OpenBLAS, loaded with a problem
module by the first cell of a fresh worker, ran its 197 x 197 Cholesky on two threads, 60 ms
instead of 0.3 ms, while the other core was busy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from drocli.run import worker

PROBE = """
import json, sys
from drocli.run import worker
before = "scipy.linalg" in sys.modules
worker._limit_blas(1)
import scipy.linalg  # noqa: F401 -- loaded after the limit, as a plug-in's import would be
from threadpoolctl import threadpool_info
print(json.dumps({"before": before,
                  "pools": [(i["filepath"], i["num_threads"]) for i in threadpool_info()
                            if i["user_api"] == "blas"]}))
"""


def test_limit_reaches_a_blas_loaded_later():
    env = {k: v for k, v in os.environ.items() if k not in worker.BLAS_ENV}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert not got["before"], "scipy.linalg was loaded before the limit: the probe tests nothing"
    assert got["pools"], "no BLAS library found"
    assert all(n == 1 for _, n in got["pools"]), got["pools"]    # scipy's wheel brings its own
