"""Index samplers for finite-sum solvers (Zhao, Lyu & Kolar, TMLR 2023; docs/papers/002.md §2.4).

Five samplers ("uniform", "importance", "optimal", "osmd", "adaosmd") share one compiled
interface, so a solver's per-sample loop draws from any of them without leaving numba. This
face hands on their names; the code lives by family: state (SamplerState and the kind
codes), trees (sum-tree and heaps), adaptive (the OSMD / AdaOSMD experts), draw (the draws
the kernels call), alias (the importance sampler's table), sampler (make_sampler, Sampler,
UniformStream).
"""

from drocli.ops.samplers.adaptive import (
    adaosmd_constants,
    expert_prob,
    project_floored,
    sampler_learns,
    sampler_update,
)
from drocli.ops.samplers.alias import alias_table
from drocli.ops.samplers.draw import (
    sampler_draw,
    sampler_draw_batch,
    sampler_peekable,
    sampler_set_weights,
)
from drocli.ops.samplers.sampler import Sampler, UniformStream, make_sampler, sampler_from_params
from drocli.ops.samplers.state import (
    ABAR_MODES,
    ADAOSMD,
    C_MIN,
    DUPLICATES,
    IMPORTANCE,
    KINDS,
    LOG_W_MAX,
    OPTIMAL,
    OSMD,
    REBUILDS,
    RENORMS,
    UNIFORM,
    UNIFORMS_PER_DRAW,
    W_MAX,
    SamplerState,
)

__all__ = ["ABAR_MODES", "ADAOSMD", "C_MIN", "DUPLICATES", "IMPORTANCE", "KINDS", "LOG_W_MAX",
           "OPTIMAL", "OSMD", "REBUILDS", "RENORMS", "UNIFORM", "UNIFORMS_PER_DRAW", "W_MAX",
           "Sampler", "SamplerState", "UniformStream", "adaosmd_constants", "alias_table",
           "expert_prob", "make_sampler", "project_floored", "sampler_draw",
           "sampler_draw_batch", "sampler_from_params", "sampler_learns", "sampler_peekable",
           "sampler_set_weights", "sampler_update"]
