"""Software prefetch for the compiled loops whose next row is known a step ahead.

A stochastic step on a large design reads one random row per iteration, and at n = 1e6,
d = 100 (800 MB) that row comes from memory: the loop waits on it. When the next index is
known before the current step's arithmetic (pre-drawn uniforms, a sampler whose draw is
O(1) and has no side effect), asking for the next row's cache lines first lets the memory
work overlap the arithmetic: 1.7-2x fewer ns per iteration at n = 5e4 and 1e6 in a
standalone loop (benchmarks/finite_sum_throughput.py measures drocli's). A prefetch is a
hint: it never changes a result, and a wrong address costs only bandwidth.

`prefetch(A, i, j)` hints the cache line holding A[i, j] (LLVM's `llvm.prefetch`, read,
high locality); `prefetch_row(A, i)` every line of row i of a C-contiguous float64 matrix.
"""

from __future__ import annotations

from drocli.ops.jit import LazyIntrinsic, njit

LINE = 8            # float64 entries per 64-byte cache line
PREFETCH_FROM = 1 << 18   # entries (2 MB of float64): smaller designs stay in cache


def _make_prefetch():
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, arr, i, j):
        sig = types.void(arr, i, j)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]],
                                           wraparound=False)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0i8")
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return sig, codegen

    return prefetch


prefetch = LazyIntrinsic(_make_prefetch)


@njit(cache=True, _nrt=False, inline="always")
def prefetch_row(A, i):
    """Hint every cache line of row i of A (n, d) C-contiguous float64."""
    for j in range(0, A.shape[1], LINE):
        prefetch(A, i, j)
