"""The common contract of drocli plug-ins, runnable from any package (the idea of
scikit-learn's `parametrize_with_checks` and `benchopt test`).

    from drocli.testing import check_entry, parametrize_entries

    check_entry("solver", "my_sgd")            # raises AssertionError naming what fails

    @parametrize_entries(module="mypkg")       # every entry registered by mypkg's modules
    def test_drocli_contract(check):
        check()

Every entry: a one-line description, a parameter model that refuses unknown keys, valid
defaults, described parameters, and invalid values generated from each parameter's
constraints (ge / gt / le / lt bounds, Literal choices, numbers, NaN) refused with the key
path. Solvers also: an algorithm reference (`reference=` at registration), and a run on the
tiny problem of their family (`tiny=` in the problem's registration) in a worker killed at
a wall limit (drocli.run.pool): it returns, its metrics move (not stalled), finite values, the
oracle counter moves and reaches the budget without overrunning it, the same seed gives the
same numbers, nothing printed, no file written. Problems declare metrics
and a family; data sources estimate their memory.

Each check runs under `time_limit` (SIGALRM; a no-op outside the main thread or where the
platform has no alarm), so a stuck plug-in fails in seconds instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import signal
import tempfile
import threading
import typing
from collections.abc import Callable, Iterable, Iterator
from functools import partial

from drocli.plugins import registry
from drocli.plugins.discovery import KINDS
from drocli.run.limits import TimeLimit

TIME_LIMIT_S = 120.0        # per check of one entry (a stuck solver fails sooner: NoProgress)
RUN_LIMIT_S = 30.0          # a tiny cell's wall limit, warm-up and kernel compilation included
TAGGED = ("figure", "claim")   # kinds whose model is tagged by `kind` (spec entries)
# words of a docstring that named the algorithm box before `reference=` existed
_DOC_REFERENCE = ("Algorithm", "Alg.", "reconstruct", "Reconstruct", "eq.", "eqs.",
                  "docs/papers/")


class CheckTimeout(TimeLimit):
    """A check ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str = "check") -> Iterator[None]:
    """Raise CheckTimeout when the block runs longer than `seconds` (SIGALRM on the main
    thread; elsewhere, or with `seconds` None, the block runs unguarded). The previous alarm
    handler and timer are restored."""
    if not seconds or not hasattr(signal, "setitimer") or \
            threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise CheckTimeout(f"{what} ran past its time limit of {seconds:g} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, _ = signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay:
            signal.setitimer(signal.ITIMER_REAL, old_delay)


# --- invalid values from a model's constraints ------------------------------------------------

def _base_types(ann) -> list:
    """The non-None members of an annotation (Annotated and unions unwrapped)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _base_types(typing.get_args(ann)[0])
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        out = []
        for a in typing.get_args(ann):
            out += _base_types(a)
        return out
    return [] if ann is type(None) else [ann]


def invalid_values(model: type) -> list[tuple[str, object, str]]:
    """(field, value, why) for every field of `model`: a value its declared constraints
    refuse. Just past each bound (ge / gt / le / lt), a word outside a Literal's choices, a
    word for a number, NaN for a finite float. A field's legacy `auto` sentinel, which reads
    as "automatic", is never offered."""
    out = []
    for name, f in model.model_fields.items():
        if name == "kind":
            continue
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        legacy = extra.get("auto")
        types = _base_types(f.annotation)
        numeric = [t for t in types if t in (int, float)]
        literal = [t for t in types if typing.get_origin(t) is typing.Literal]
        cands = []
        if numeric and len(numeric) == len(types):
            step = 1 if numeric == [int] else 0.5
            # ge v: v - step, ...; gt v: v, v - step, ...; le / lt: the same above
            offsets = {"ge": (-1, 1), "gt": (-1, 0), "le": (1, 1), "lt": (1, 0)}
            for meta in f.metadata:
                for attr, (sign, first) in offsets.items():
                    v = getattr(meta, attr, None)
                    if not isinstance(v, (int, float)) or isinstance(v, bool):
                        continue
                    for k in range(first, first + 3):
                        bad = v + sign * step * k
                        if legacy is None or bad != legacy:
                            cands.append((bad, f"{attr}={v:g}"))
                            break
            cands.append(("not a number", "a number"))
            if float in numeric and not _allows_nan(f, model):
                cands.append((math.nan, "finite"))
        elif literal and len(literal) == len(types):
            choices = [a for t in literal for a in typing.get_args(t)]
            cands.append(("__no_such_choice__", "one of " + ", ".join(map(str, choices))))
        elif types == [bool]:
            cands.append(("maybe", "a bool"))
        out += [(name, v, why) for v, why in cands]
    return out


def _allows_nan(f, model) -> bool:
    metas = [getattr(m, "allow_inf_nan", None) for m in f.metadata]
    if any(m is not None for m in metas):
        return any(metas)
    return bool(model.model_config.get("allow_inf_nan", True))


# --- the checks -------------------------------------------------------------------------------

def _tagged(kind: str, name: str) -> dict:
    return {"kind": name} if kind in TAGGED else {}


def check_described(kind: str, name: str) -> None:
    """A one-line description; a pydantic model that forbids unknown keys; for spec-level
    entries (not figures and claims, whose base fields are documented once) every parameter
    described and shown by `drocli list KIND NAME`."""
    from pydantic import BaseModel

    from drocli.cli.listing import describe

    e = registry.get(kind, name)
    assert e.kind == kind and e.name == name
    assert issubclass(e.params, BaseModel), f"{kind} {name}: params is not a pydantic model"
    assert e.params.model_config.get("extra") == "forbid", \
        f"{kind} {name}: its model must refuse unknown keys (subclass drocli.registry.Params)"
    assert e.summary, f"{kind} {name}: no one-line description (description= or a docstring)"
    text = describe(kind, name)
    if kind in TAGGED:
        assert "kind" in e.params.model_fields, f"{kind} {name}: its model has no `kind` tag"
        return
    for field, info in e.params.model_fields.items():
        assert info.description, f"{kind} {name}: parameter {field} has no description"
        assert field in text, f"{kind} {name}: `drocli list` does not show {field}"


def check_defaults_valid(kind: str, name: str) -> None:
    """The defaults pass the entry's own model and are what an empty `params:` resolves to."""
    e = registry.get(kind, name)
    registry.check_defaults(kind, name, e.params)
    if kind in TAGGED:
        return
    defaults = e.params()
    assert registry.resolve_params(e, {}) == defaults.model_dump(), \
        f"{kind} {name}: resolving no parameters does not give the defaults"


def check_unknown_key_refused(kind: str, name: str) -> None:
    """An unknown parameter is refused with its name."""
    e = registry.get(kind, name)
    try:
        registry.validate_params(e, {"no_such_param": 1, **_tagged(kind, name)})
    except registry.DrocliError as err:
        assert "no_such_param" in str(err), str(err)
    else:
        raise AssertionError(f"{kind} {name}: an unknown parameter was accepted")


def check_invalid_values_refused(kind: str, name: str) -> None:
    """Each value `invalid_values` generates from a parameter's constraints is refused, and
    the error names the parameter's key path (`params.<field>`)."""
    from pydantic import ValidationError

    e = registry.get(kind, name)
    required = [n for n, f in e.params.model_fields.items() if f.is_required()]
    for field, value, why in invalid_values(e.params):
        given = {**_tagged(kind, name), field: value}
        try:
            e.params.model_validate(given)
        except ValidationError as err:
            paths = [registry.loc_path(x.get("loc", ())) for x in err.errors()
                     if x.get("type") != "missing"]
            assert any(p == field or p.startswith((field + ".", field + "[")) for p in paths), \
                f"{kind} {name}: {field}={value!r} refused, but not at its key ({paths})"
        else:
            raise AssertionError(f"{kind} {name}: {field}={value!r} accepted although its "
                                 f"declaration says {why}")
        if set(required) <= set(given):
            try:
                registry.validate_params(e, given, key="params")
            except registry.DrocliError as err:
                assert err.key and err.key.startswith(f"params.{field}"), \
                    f"{kind} {name}: the error for {field}={value!r} names {err.key!r}"


def check_reference(kind: str, name: str) -> None:
    """A solver says which algorithm of which paper it implements: `reference=` at
    registration (or, for older entries, its docstring names the box), and it has a
    docstring."""
    import sys

    e = registry.get(kind, name)
    doc = (e.func.__doc__ or "").strip()
    assert len(doc) > 20, f"{kind} {name}: its function needs a docstring citing the paper"
    if e.reference:
        return
    text = doc + (sys.modules[e.func.__module__].__doc__ or "")
    assert any(w in text for w in _DOC_REFERENCE), \
        f"{kind} {name}: declare the algorithm it implements: reference=\"Alg. 1, eq. (3)\""


def check_problem_declares(kind: str, name: str) -> None:
    """A problem declares the metrics it records and its family."""
    e = registry.get(kind, name)
    assert e.metrics, f"problem {name}: declare metrics=(...)"
    assert e.family, f"problem {name}: declare family="


def check_data_memory(kind: str, name: str) -> None:
    """A data source estimates the bytes of its arrays (memory=)."""
    e = registry.get(kind, name)
    assert e.memory is not None, f"data {name}: declare memory= (bytes of its arrays)"
    assert int(e.memory(e.params().model_dump())) >= 0


def family_fixtures() -> dict:
    """family -> (data name, data params, problem name, problem params): the tiny instance
    each family's problem registers (`tiny=` in its registration)."""
    out = {}
    for pname, p in registry.entries("problem").items():
        tiny = p.extra.get("tiny")
        if tiny is not None and p.family not in out:
            dname, dparams = tiny["data"]
            out[p.family] = (dname, dparams, pname, tiny.get("params", {}))
    return out


def tiny_cell(name: str, seed: int = 0, epochs: float = 6.0, checkpoints: int = 6,
              limit_s: float | None = None):
    """A cell running solver `name` (with its `tiny=` overrides) on its family's tiny
    problem; `limit_s`: its wall limit (budget.max_time_s)."""
    from drocli.run.cells import Cell

    entry = registry.get("solver", name)
    fixtures = family_fixtures()
    assert entry.family in fixtures, \
        f"solver {name}: no problem of family {entry.family!r} registers a tiny= instance"
    dname, dparams, pname, pparams = fixtures[entry.family]
    return Cell(experiment="contract", solver=name, label=name, dataset=dname, seed=seed,
                data_name=dname,
                data_params=registry.resolve_params(registry.get("data", dname), dparams),
                data_seed=0, problem_name=pname,
                problem_params=registry.resolve_params(registry.get("problem", pname), pparams),
                solver_params=registry.resolve_params(entry, entry.extra.get("tiny", {})),
                budget={"epochs": epochs, "checkpoints": checkpoints, "spacing": "linear",
                        **({"max_time_s": float(limit_s)} if limit_s else {})},
                metrics=())


@contextlib.contextmanager
def _quiet_cwd() -> Iterator[tuple[io.StringIO, str]]:
    """Run in an empty temporary folder with stdout and stderr captured."""
    out = io.StringIO()
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="drocli-check-") as tmp:
        os.chdir(tmp)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                yield out, tmp
        finally:
            os.chdir(old)


def _run_quietly(cell, blas_threads: int) -> tuple:
    """A cell in a pool worker with what it prints captured into its status (`printed`)."""
    from drocli.run.worker import _run_remote

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        cell_id, rows, status, artifacts = _run_remote(cell, blas_threads)
    return cell_id, rows, {**status, "printed": out.getvalue()}, artifacts


def check_solver_runs(kind: str, name: str) -> None:
    """On its family's tiny problem, in a worker under a wall limit of `RUN_LIMIT_S` (a
    solver that never returns is killed there): status done (not timed out, not stalled:
    its metrics move), finite values, the monitor called at the checkpoints, the oracle
    counter increasing up to the budget and not far past it (one checkpoint interval), the
    same seed giving the same numbers, nothing printed, no file written."""
    import numpy as np

    from drocli.run.pool import supervised

    cells = [tiny_cell(name, limit_s=RUN_LIMIT_S), tiny_cell(name, limit_s=RUN_LIMIT_S),
             tiny_cell(name, seed=1, limit_s=RUN_LIMIT_S)]
    with _quiet_cwd() as (_, tmp):
        outs = []
        for _, rows, status, _ in supervised(cells, 1, 1, run=_run_quietly):
            outs.append((rows, status))
            if status["status"] != "done":
                break
        written = os.listdir(tmp)
    where = f"solver {name} on its tiny problem"
    for _, st in outs:
        assert st["status"] == "done", f"{where}: {st['status']}: {st.get('error', '')}"
    (rows, status), (again, _), (other, _) = outs
    printed = "".join(st.get("printed", "") for _, st in outs)
    assert printed == "", f"{where}: solvers never print ({printed[:80]!r})"
    assert written == [], f"{where}: solvers never write files ({written})"
    steps = [r[0] for r in rows]
    calls = np.array([r[1] for r in rows])
    budget = status["budget"]
    assert steps == sorted(steps) and calls[0] <= calls[-1], f"{where}: rows out of order"
    assert np.all(np.diff(np.unique(calls)) > 0)
    assert len(set(steps)) >= 4, f"{where}: the monitor was not called at the checkpoints"
    assert calls[-1] >= budget > 0, f"{where}: stopped at {calls[-1]} of {budget} oracle calls"
    assert status["oracle_calls"] <= 2 * budget, \
        f"{where}: spent {status['oracle_calls']} oracle calls for a budget of {budget}"
    assert all(math.isfinite(r[4]) for r in rows), f"{where}: non-finite values"
    assert all(isinstance(r[3], str) for r in rows)
    assert [r[4] for r in rows] == [r[4] for r in again], f"{where}: same seed, other numbers"
    assert [r[1] for r in other][0] == calls[0]


def _tiny_data_params(name: str, tmp: str) -> dict | None:
    """The parameters a data source is loaded with in the contract: its own `tiny=` (a dict,
    or a function of an empty folder that writes tiny files there and returns them), else
    the ones a problem's `tiny=` instance gives it, else its defaults (None for a file-backed
    source without `tiny=`: its files cannot be had here)."""
    e = registry.get("data", name)
    tiny = e.extra.get("tiny")
    if callable(tiny):
        return dict(tiny(tmp))
    if isinstance(tiny, dict):
        return dict(tiny)
    if e.preflight is not None or e.extra.get("files"):
        return None
    for dname, dparams, _, _ in family_fixtures().values():
        if dname == name:
            return dict(dparams)
    return {}


def check_data_loads(kind: str, name: str) -> None:
    """The loader on its tiny parameters (`_tiny_data_params`) returns data that pass
    drocli's checks (drocli.data.checks); a file-backed source without `tiny=` is pointed at
    an empty folder and must refuse it in one line (a DrocliError). Anything else it raises
    is the plug-in's fault, named here."""
    from drocli.data.checks import check_grouped
    from drocli.errors import DrocliError

    e = registry.get(kind, name)
    with tempfile.TemporaryDirectory(prefix="drocli-check-data-") as tmp:
        params = _tiny_data_params(name, tmp)
        missing = params is None
        if missing:
            params = {"path": os.path.join(tmp, "missing")} \
                if "path" in e.params.model_fields else {}
        old = os.environ.get("DROCLI_DATA")
        os.environ["DROCLI_DATA"] = os.path.join(tmp, "cache") if missing else (old or tmp)
        try:
            data = e.func(registry.resolve_params(e, params), 0)
        except DrocliError as err:
            assert missing, f"data {name}: its loader refused its tiny parameters: {err}"
            assert "\n" not in str(err), f"data {name}: a refusal takes one line: {err}"
            return
        except Exception as exc:  # noqa: BLE001 -- the plug-in's fault: named
            raise AssertionError(f"data {name}: its loader raised {type(exc).__name__}: "
                                 f"{exc} (the plug-in's fault)") from None
        finally:
            if old is None:
                os.environ.pop("DROCLI_DATA", None)
            else:
                os.environ["DROCLI_DATA"] = old
        if not e.extra.get("no_rows"):       # a problem without data (no_rows=True)
            from drocli.data.base import GroupedData

            assert isinstance(data, GroupedData), \
                f"data {name}: its loader returned {type(data).__name__}, not GroupedData"
            check_grouped(data)


def tiny_records(datasets=("tiny",)):
    """A tiny results table for a claim judge: labels A and B, seeds 0-7, 5 checkpoints of
    metric `m` falling from 1, A's faster than B's, on each of `datasets` (the columns
    `drocli run` writes)."""
    import numpy as np
    import pandas as pd

    rows = []
    for di, dataset in enumerate(datasets):
        for li, label in enumerate(("A", "B")):
            for seed in range(8):
                jitter = 0.01 * ((seed * 7 + li * 3) % 5)
                for step in range(5):
                    rows.append({"experiment": "contract", "cell": f"{label}{seed}d{di}",
                                 "solver": label.lower(), "label": label, "dataset": dataset,
                                 "seed": seed, "step": step, "oracle_calls": 100 * step,
                                 "time_s": 0.01 * step * (1 + li), "metric": "m",
                                 "value": float(np.exp(-(2.0 - li) * (1 + di) * step / 4)
                                                + jitter)})
    return pd.DataFrame(rows)


def tiny_claim(name: str):
    """A claim of kind `name` on `tiny_records`: A better than B in metric `m`, with the
    kind's own `tiny=` fields (its registration) where it needs more (a kind judged across
    panels gives `across: dataset` and the datasets as its `values`)."""
    from drocli.claims import validate_claim

    e = registry.get("claim", name)
    raw = {"id": "tiny", "text": f"tiny {name}", "kind": name, "metric": "m",
           "solver": "A", "others": ["B"], **e.extra.get("tiny", {})}
    return validate_claim(raw, key="contract")


def check_claim_judges(kind: str, name: str) -> None:
    """The kind's judge, run on `tiny_records` through `check`'s evaluation, returns a
    verdict: it does not raise (a raise is the plug-in's fault, named here)."""
    from drocli.claims import evaluate_claim

    claim = tiny_claim(name)
    across = registry.get("claim", name).extra.get("tiny", {}).get("values")
    res = evaluate_claim(tiny_records(tuple(across or ("tiny",))), claim, "paper")
    assert res.status != "error", f"claim kind {name}: {res.detail}"
    assert res.status in ("holds", "fails", "inconclusive", "skipped"), \
        f"claim kind {name}: status {res.status!r}"
    assert isinstance(res.detail, str) and res.detail, f"claim kind {name}: no detail"
    if res.status != "skipped":       # what its folder keeps for readers without the kind
        bare = {key.split(" @ ")[0] for key in res.summaries}
        missing = [label for label in claim.labels if label not in bare]
        assert not missing, (
            f"claim kind {name}: no per-seed summaries recorded for {', '.join(missing)}: "
            "call drocli.claims.judge.note(label -> Series(seed -> value)) on what it "
            "judges (judge() and paired_effects() do it), so that a results folder keeps "
            "them")


COMMON = (check_described, check_defaults_valid, check_unknown_key_refused,
          check_invalid_values_refused)
BY_KIND: dict[str, tuple[Callable, ...]] = {
    "solver": (check_reference, check_solver_runs),
    "problem": (check_problem_declares,),
    "data": (check_data_memory, check_data_loads),
    "claim": (check_claim_judges,),
}


def checks(kind: str) -> tuple[Callable[[str, str], None], ...]:
    """The checks an entry of `kind` must pass, in order."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    return COMMON + BY_KIND.get(kind, ())


def check_entry(kind: str, name: str, *, time_limit_s: float | None = TIME_LIMIT_S,
                skip: Iterable[str] = ()) -> None:
    """Run every check of `kind` on the registered entry `name` (importing it the way a spec
    would), each under `time_limit_s`; raises AssertionError naming the first that fails.
    `skip` names checks to leave out (e.g. "check_solver_runs" for a solver without a tiny
    problem of its family)."""
    registry.get(kind, name)
    for check in checks(kind):
        if check.__name__ in set(skip):
            continue
        with time_limit(time_limit_s, f"{check.__name__} of {kind} {name}"):
            check(kind, name)


def selected_entries(kinds: Iterable[str] | str = KINDS, names: Iterable[str] | None = None,
                     module: str | None = None) -> list[tuple[str, str]]:
    """(kind, name) of the registered entries of `kinds` (built-in and `drocli.plugins`
    entry points), restricted to `names` and to entries whose function is defined in
    `module` or a module under it."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    wanted = set(names) if names is not None else None
    out = []
    for kind in kinds:
        for name, e in registry.entries(kind).items():
            mod = getattr(e.func, "__module__", "") or ""
            if wanted is not None and name not in wanted:
                continue
            if module and not (mod == module or mod.startswith(module + ".")):
                continue
            out.append((kind, name))
    return out


def entry_checks(kinds: Iterable[str] | str = KINDS, names: Iterable[str] | None = None,
                 module: str | None = None, *, time_limit_s: float | None = TIME_LIMIT_S,
                 skip: Iterable[str] = ()) -> list[Callable[[], None]]:
    """Every (entry, check) pair of the selection as a callable with no arguments, each
    running under the time limit."""
    def guarded(check, kind, name):
        with time_limit(time_limit_s, f"{check.__name__} of {kind} {name}"):
            check(kind, name)

    out = []
    for kind, name in selected_entries(kinds, names, module):
        for check in checks(kind):
            if check.__name__ in set(skip):
                continue
            out.append(partial(guarded, check, kind, name))
    return out


def _check_id(c) -> str:
    check, kind, name = c.args
    return f"{kind}-{name}-{check.__name__.removeprefix('check_')}"


def parametrize_entries(kinds: Iterable[str] | str = KINDS, names: Iterable[str] | None = None,
                        module: str | None = None, *, time_limit_s: float | None = TIME_LIMIT_S,
                        skip: Iterable[str] = ()):
    """A `pytest.mark.parametrize("check", ...)` over every check of every selected entry
    (see `selected_entries`); the test calls `check()`. Ids read kind-name-check."""
    import pytest

    cs = entry_checks(kinds, names, module, time_limit_s=time_limit_s, skip=skip)
    return pytest.mark.parametrize("check", cs, ids=[_check_id(c) for c in cs])
