"""The public plug-in check suite (drocli.testing), the registry's default check, the
monitor's progress guard and the step-loop helper: a plug-in with a bad default or a stuck
step fails in seconds with one line."""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
import pytest
from pydantic import Field, field_validator

from drocli import testing
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.run.monitor import Monitor, NoProgress, run_steps
from drocli.run.runner import execute


@pytest.fixture
def scratch():
    """Names registered by a test are removed again (the registry is process-wide)."""
    made: list[tuple[str, str]] = []
    yield made
    for kind, name in made:
        registry._REGISTRY[kind].pop(name, None)


class _Batch(registry.Params):
    batch: int = Field(1, ge=1, description="rows per step")
    step: float = Field(0.1, gt=0, description="step size")


def _sgd(problem, params, rng, monitor):
    """Plain SGD on a finite sum, Robbins & Monro (1951), eq. (1)."""
    x = problem.zero_point()
    b, step = params["batch"], params["step"]

    def one_step():
        nonlocal x
        g = problem.sample_gradients(x, rng.integers(problem.n, size=b)).mean(axis=0)
        x = x - step * g

    return run_steps(monitor, one_step, lambda: x, cost_per_step=b)


def test_bad_default_is_refused_at_registration(scratch):
    class Wrong(registry.Params):
        batch: int = Field(0.5, ge=1, description="rows per step")

    with pytest.raises(DrocliError) as err:
        registry.solver("toy_bad_default", params=Wrong, family="finite_sum")(_sgd)
    scratch.append(("solver", "toy_bad_default"))
    line = str(err.value)
    assert "toy_bad_default" in line and "batch" in line and "\n" not in line
    assert "toy_bad_default" not in registry._REGISTRY["solver"]

    class OutOfRange(registry.Params):
        batch: int = Field(0, ge=1, description="rows per step")

    with pytest.raises(DrocliError, match="default of batch"):
        registry.solver("toy_bad_default", params=OutOfRange, family="finite_sum")(_sgd)


def test_required_fields_and_auto_defaults_pass():
    class Tagged(registry.Params):
        kind: Literal["x"]
        k: int | None = registry.auto("auto: n", ge=1)

    registry.check_defaults("claim", "x", Tagged)


def test_monitor_refuses_a_step_of_no_cost():
    class P:
        oracle_calls = 0

        def evaluate(self, *a):
            return {"v": 0.0}

    m = Monitor(P(), budget=100, checkpoints=4)
    with pytest.raises(NoProgress, match="cost per step"):
        m.steps_until_due(0)
    with pytest.raises(NoProgress, match="no oracle progress"):
        for _ in range(1000):
            m(np.zeros(2))


def test_a_stuck_solver_fails_in_seconds_with_one_line(scratch):
    """The 59-minute hang of issue 30: a step that spends no oracle call."""
    @registry.solver("toy_stuck", params=_Batch, family="finite_sum",
                     description="toy: never calls an oracle", reference="none")
    def stuck(problem, params, rng, monitor):
        """A solver whose steps spend nothing, Algorithm 0 of nobody."""
        x = problem.zero_point()
        return run_steps(monitor, lambda: None, lambda: x)

    @registry.solver("toy_zero_cost", params=_Batch, family="finite_sum",
                     description="toy: says its steps cost 0", reference="none")
    def zero_cost(problem, params, rng, monitor):
        """A solver that declares a cost of 0 per step, Algorithm 0 of nobody."""
        x = problem.zero_point()
        return run_steps(monitor, lambda: None, lambda: x, cost_per_step=0)

    scratch += [("solver", "toy_stuck"), ("solver", "toy_zero_cost")]
    for name, words in (("toy_stuck", "no oracle progress"), ("toy_zero_cost", "cost per step")):
        t0 = time.perf_counter()
        rows, status = execute(testing.tiny_cell(name))
        assert time.perf_counter() - t0 < 120       # no hang (it was 59 minutes)
        assert status["status"] == "failed" and words in status["error"], status
        assert "\n" not in status["error"] and "traceback" not in status
        with pytest.raises(AssertionError, match=words):
            testing.check_entry("solver", name, time_limit_s=20)


def test_time_limit_stops_a_hang():
    t0 = time.perf_counter()
    with pytest.raises(testing.CheckTimeout, match="time limit of 0.3 s"):
        with testing.time_limit(0.3, "a hang"):
            while True:
                time.sleep(0.01)
    assert time.perf_counter() - t0 < 60          # no hang
    with testing.time_limit(5):        # a quick block is left alone, the alarm cleared
        pass
    time.sleep(0.01)


def test_run_steps_solver_passes_the_whole_contract(scratch):
    registry.solver("toy_sgd", params=_Batch, family="finite_sum",
                    description="toy: plain SGD through run_steps",
                    reference="Robbins & Monro (1951), eq. (1)")(_sgd)
    scratch.append(("solver", "toy_sgd"))
    testing.check_entry("solver", "toy_sgd", time_limit_s=60)
    from drocli.cli.listing import describe

    assert "reference: Robbins & Monro (1951), eq. (1)" in describe("solver", "toy_sgd")


def test_invalid_values_follow_the_constraints():
    class M(registry.Params):
        a: int = Field(1, ge=1, description="a")
        b: float = Field(0.5, gt=0, lt=1, description="b")
        c: Literal["x", "y"] = Field("x", description="c")
        d: int | None = registry.auto("auto", legacy=0, ge=1)
        e: float = Field(1.0, allow_inf_nan=True, description="e")

    got = {(f, v if v == v else "nan") for f, v, _ in testing.invalid_values(M)}
    assert {("a", 0), ("b", 0), ("b", 1), ("c", "__no_such_choice__"), ("d", -1),
            ("b", "nan")} <= got
    assert ("d", 0) not in got, "the legacy sentinel reads as auto"
    assert ("e", "nan") not in got


def test_a_constraint_the_model_does_not_enforce_is_caught(scratch):
    class Lenient(registry.Params):
        step: float = Field(0.1, gt=0, description="step size")

        @field_validator("step", mode="before")
        @classmethod
        def _clip(cls, v):       # silently replaces what the declaration refuses
            return 0.1 if isinstance(v, (int, float)) and not v > 0 else v

    registry.solver("toy_lenient", params=Lenient, family="finite_sum",
                    description="toy", reference="none")(_sgd)
    scratch.append(("solver", "toy_lenient"))
    with pytest.raises(AssertionError, match="step=0.0 accepted"):
        testing.check_invalid_values_refused("solver", "toy_lenient")


def test_solver_without_reference_or_docstring_is_flagged(scratch):
    def bare(problem, params, rng, monitor):
        return None

    registry.solver("toy_bare", params=_Batch, family="finite_sum", description="toy")(bare)
    scratch.append(("solver", "toy_bare"))
    with pytest.raises(AssertionError, match="docstring"):
        testing.check_reference("solver", "toy_bare")


def test_selection_by_module_and_ids():
    picked = testing.selected_entries("solver", module="drocli.solvers.finite_sum")
    assert ("solver", "sgd") in picked and ("solver", "aleg") not in picked
    mark = testing.parametrize_entries("data", names=["gdro_synthetic"])
    ids = mark.kwargs["ids"]
    assert "data-gdro_synthetic-defaults_valid" in ids
