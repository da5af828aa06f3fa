"""Helpers shared by the benchmark scripts: timing a command as a fresh child process (wall
time and the child's CPU time, user + sys, from getrusage of the finished children), and for
the rooflines (fl_roofline.py, bilevel_roofline.py) the machine's description, one BLAS
thread, best-of timing of a call, dense kernels by shape with their flop counts and measured
rates, and the copy bandwidth at a given array size."""

from __future__ import annotations

import math
import os
import resource
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def child_cpu() -> float:
    """CPU seconds (user + sys) of every finished child of this process so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], ok=(0,), cwd: Path = ROOT) -> tuple[float, float]:
    """(wall s, CPU s) of `cmd` run in `cwd`; an exit code outside `ok` raises with the
    tail of its stderr."""
    c0, t0 = child_cpu(), time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True)
    if res.returncode not in ok:
        raise RuntimeError(f"{cmd} exited {res.returncode}: {res.stderr.decode()[-300:]}")
    return time.perf_counter() - t0, child_cpu() - c0


# --- rooflines (fl_roofline.py, bilevel_roofline.py): machine, kernel rates, bandwidth -------

def machine_info() -> str:
    """CPU model, cores, the BLAS libraries' kernel family (threadpoolctl's `architecture`)
    and threads, and the load averages: what the rates printed below depend on."""
    from threadpoolctl import threadpool_info

    from drocli.results.provenance import cpu_model

    blas = ", ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
                     f"({i.get('num_threads')} thread(s))" for i in threadpool_info()
                     if i.get("user_api") == "blas") or "none found"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"CPU: {cpu_model() or 'unknown'}, {os.cpu_count()} cores\nBLAS: {blas}\n"
            f"load average (1, 5, 15 min): {load}")


def one_blas_thread():
    """Limit every loaded BLAS / OpenMP pool to one thread, as cells run (blas_threads 1).
    Call it after numpy and scipy are imported; keep the returned object alive."""
    import scipy.linalg  # noqa: F401  (load scipy's own BLAS before limiting)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def seconds_per_call(fn, repeat: int = 5, min_time: float = 2e-3) -> float:
    """Best of `repeat` timings of `fn()`, each over enough back-to-back calls to last at
    least `min_time` seconds (so a microsecond kernel is not lost in the clock's resolution),
    divided by the calls: the fastest this machine did one call in this run."""
    fn()                                   # first touch, lazy loading
    inner = 1
    while True:
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        dt = time.perf_counter() - t
        if dt >= min_time or inner >= 1 << 20:
            break
        inner *= 2 if dt <= 0 else max(2, min(64, int(min_time / dt) + 1))
    best = dt / inner
    for _ in range(repeat - 1):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


class Kernel:
    """One kind of dense call, by its operand shapes and dtype; `flops` is what one call
    counts and `make(rng)` a zero-argument callable doing one such call on random operands
    laid out as in the code (a transposed operand is the .T view of a C-contiguous array).

    kinds and their counts (flops per call):
      matmul     a @ b, a (..., K), b (K, ...) of any rank <= 2: 2 K x (entries of the
                 result) (a vector dot: 2 K); `ta` / `tb`: that operand is a .T view (printed
                 [T] after the operand's shape);
                 `same`: b is a.T of the same array (numpy then calls syrk, which does half
                 the multiply-adds: the count stays 2 M K M and the measured rate doubles)
      cholesky   cho_factor of a (D, D) SPD matrix: D^3 / 3
      cho_solve  both triangular solves, one right-hand side (D,): 2 D^2
      eigh       symmetric eigendecomposition with vectors, (D, D): 9 D^3 (the symmetric-QR
                 estimate of Golub and Van Loan; a convention: the bound divides the count by
                 the rate measured with the same count, so it cancels)
      eigvalsh   eigenvalues only: 4 D^3 / 3 (tridiagonal reduction)
      solve      np.linalg.solve, LU with one right-hand side: 2 D^3 / 3 + 2 D^2
      bitdot     X @ q for a 0/1 X (n, D) by table lookup on packed bits
                 (drocli.ops.bitpacked): counted as the dense product, 2 n D
    """

    __slots__ = ("kind", "a", "b", "dtype", "ta", "tb", "same")

    def __init__(self, kind: str, a: tuple, b: tuple = (), dtype: str = "float64",
                 ta: bool = False, tb: bool = False, same: bool = False):
        self.kind, self.a, self.b, self.dtype = kind, tuple(a), tuple(b), str(dtype)
        self.ta, self.tb, self.same = bool(ta), bool(tb), bool(same)

    def _key(self):
        return (self.kind, self.a, self.b, self.dtype, self.ta, self.tb, self.same)

    def __eq__(self, other):
        return isinstance(other, Kernel) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.kind == "matmul":
            t = lambda s, f: f"{s}{'[T]' if f else ''}"       # noqa: E731
            b = "a.T (same array)" if self.same else t(self.b, self.tb)
            return f"{t(self.a, self.ta)} @ {b} {self.dtype}"
        return f"{self.kind} {self.a} {self.dtype}"

    @property
    def flops(self) -> float:
        if self.kind == "matmul":
            K = self.a[-1]
            out = self.a[:-1] + self.b[1:]
            return 2.0 * K * math.prod(out)
        D = self.a[0]
        return {"cholesky": D ** 3 / 3, "cho_solve": 2.0 * D * D, "eigh": 9.0 * D ** 3,
                "eigvalsh": 4.0 * D ** 3 / 3, "solve": 2.0 * D ** 3 / 3 + 2.0 * D * D,
                "bitdot": 2.0 * self.a[0] * (self.a[1] if len(self.a) > 1 else 1)}[self.kind]

    def make(self, rng):
        from scipy.linalg import cho_factor, cho_solve

        dt = np.dtype(self.dtype)

        def arr(shape, transposed):
            if transposed:
                return np.ascontiguousarray(rng.standard_normal(shape[::-1]), dtype=dt).T
            return np.ascontiguousarray(rng.standard_normal(shape), dtype=dt)

        if self.kind == "matmul":
            a = arr(self.a, self.ta)
            b = a.T if self.same else arr(self.b, self.tb)
            return lambda: a @ b
        if self.kind == "bitdot":
            from drocli.ops.bitpacked import BitMatrix
            bits = BitMatrix((rng.random(self.a) < 0.3).astype(np.float64))
            q = rng.standard_normal(self.a[1])
            return lambda: bits.dot(q)
        D = self.a[0]                                   # LAPACK kinds: an SPD (D, D) matrix
        M = rng.standard_normal((D, D))
        S = M @ M.T / D + np.eye(D)
        v = rng.standard_normal(D)
        if self.kind == "cholesky":
            return lambda: cho_factor(S, check_finite=False)
        if self.kind == "cho_solve":
            c = cho_factor(S, check_finite=False)
            return lambda: cho_solve(c, v, check_finite=False)
        if self.kind == "eigh":
            return lambda: np.linalg.eigh(S)
        if self.kind == "eigvalsh":
            return lambda: np.linalg.eigvalsh(S)
        if self.kind == "solve":
            return lambda: np.linalg.solve(S, v)
        raise ValueError(f"unknown kernel kind {self.kind!r}")


def kernel_seconds(kernels, repeat: int = 5, seed: int = 0) -> dict:
    """{kernel: best seconds per call} measured here, one kernel after another."""
    rng = np.random.default_rng(seed)
    return {k: seconds_per_call(k.make(rng), repeat) for k in kernels}


MIN_COPY = 1 << 20     # smaller arrays are charged the rate of this size (see copy_bandwidth)


def copy_bandwidth(nbytes: int, repeat: int = 5) -> float:
    """Bytes per second of np.copyto between two float64 arrays of `nbytes` each, counting
    the read and the write (2 nbytes per copy): the rate for arrays of that size (in cache
    when they fit, from memory when they do not). Below MIN_COPY bytes the array of
    MIN_COPY is timed instead: a smaller copy's time is mostly numpy's call overhead, which
    the rooflines count as Python, not as memory traffic."""
    n = max(int(nbytes), MIN_COPY) // 8
    src, dst = np.ones(n), np.empty(n)
    return 2.0 * 8 * n / seconds_per_call(lambda: np.copyto(dst, src), repeat)
