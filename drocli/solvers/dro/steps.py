"""The GDRO / MERO solvers' shared step and schedule parameters (docs/papers/000.md §2.5,
§4.1), as small field pieces each solver's model puts together.

Pieces are fields, not mixin models: a model's field order is the order of its resolved
dump (spec.yaml, and the spec digest in the manifest), and each solver interleaves its own
fields with the shared ones, with its own defaults."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from drocli.plugins.registry import added, auto

GAMMA_W = ("effective w-step (decoupled steps, §2.5); tuned by the §4.1 protocol, "
           "grids in docs/reproduction/tuning.md")
GAMMA_Q = ("effective q-step of the entropic (Hedge) update (§2.5); tuned by the "
           "§4.1 protocol, grids in docs/reproduction/tuning.md")
ETA = ("coupled theory geometry instead of gamma_w, gamma_q: gamma_w = R^2 eta, "
       "gamma_q = 2 ln(m) eta (docs/papers/000.md §1.4); auto: the decoupled gamma_w, gamma_q")
STAGE1_SHARE = ("stage-1 budget as a share of the run's budget, split by n_i (replaces "
                "stage1_epochs); 0.5 = the paper's rule: Algorithm 2 runs both stages with "
                "the same S, K, alpha, so stage 1 costs as much as stage 2 (Thm 5.2, proof of "
                "Cor. 5.4; docs/papers/000.md §2.8). Unset: stage1_epochs")

EvalPoint = Literal["output", "last"]
EpochSchedule = Literal["decay", "constant"]


def gamma_w(default: float, stage: str = "") -> Any:
    """gamma_w: float, the decoupled w-step; `stage` names the one it steps ("stage-2 ")."""
    return Field(default, gt=0, description=stage + GAMMA_W)


def gamma_q(default: float, stage: str = "") -> Any:
    """gamma_q: float, the decoupled q-step (0 freezes q)."""
    return Field(default, ge=0, description=stage + GAMMA_Q)


def eta() -> Any:
    """eta: float | None, the coupled steps; auto: gamma_w, gamma_q."""
    return auto(ETA, legacy=0.0, gt=0)


def eval_point(output: str, last: str = "the last iterate") -> Any:
    """eval_point: EvalPoint, the point the monitor evaluates (output [DEFAULT], §4.1)."""
    return Field("output", description=f"output = {output} [DEFAULT] §4.1; last = {last}")


def epoch_schedule(decay: str) -> Any:
    """schedule: EpochSchedule, ALEG's step factor h_s per epoch (decay [DEFAULT], §2.5)."""
    return Field("decay", description=f"{decay} [DEFAULT] docs/papers/000.md §2.5; "
                                      "constant = 1")


def stage1_epochs() -> Any:
    """stage1_epochs: float, the two-stage solvers' stage-1 budget in units of N."""
    return Field(10.0, ge=0, description="stage-1 budget in units of N, split by n_i "
                                         "([DEFAULT] docs/papers/000.md §4.4: 10)")


def stage1_share() -> Any:
    """stage1_share: float | None, or the stage-1 budget as a share of the run's."""
    return added(None, STAGE1_SHARE, gt=0, le=0.5)
