"""Expand a spec into cells: cases x data-grid x problem-grid x solver-grid x seed, each with
a stable id and stream."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from dataclasses import dataclass, field

import numpy as np

from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.spec import paired
from drocli.spec.lookups import dump_spec, grid_product, spec_digest
from drocli.spec.model import Spec, check_text


def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Cell:
    """One run: a data set, a problem, a solver configuration and a seed."""

    experiment: str
    solver: str
    label: str
    dataset: str
    seed: int
    data_name: str
    data_params: dict
    data_seed: int
    problem_name: str
    problem_params: dict
    solver_params: dict
    budget: dict
    metrics: tuple
    swept: dict = field(default_factory=dict)
    # the parameters as the id hashes them (`Params.key_dict`), where they differ from the
    # resolved ones (an `auto` field's None is hashed as its legacy value)
    key_forms: dict | None = field(default=None, compare=False, repr=False)

    def key(self) -> dict:
        """Everything that determines the cell's numbers (labels and names excluded); the
        parameters in their key form (`Params.key_dict`), which keeps recorded ids stable."""
        k = self.key_forms or {}
        return {"data": [self.data_name, k.get("data", self.data_params), self.data_seed],
                "problem": [self.problem_name, k.get("problem", self.problem_params)],
                "solver": [self.solver, k.get("solver", self.solver_params)],
                "seed": self.seed,
                "budget": self.budget, "metrics": list(self.metrics)}

    @functools.cached_property
    def id(self) -> str:
        return hashlib.sha1(_canon(self.key()).encode()).hexdigest()[:12]

    def seed_sequence(self) -> np.random.SeedSequence:
        """The cell's own stream: from its seed and its key, never from worker or order, nor
        from where the data files are (`data.params.path` hashed as if unset: the same file
        moved elsewhere gives the same numbers)."""
        key = dict(self.key())
        name, params, data_seed = key["data"]
        if isinstance(params, dict) and params.get("path"):
            key["data"] = [name, {**params, "path": ""}, data_seed]
        key.pop("seed")
        key.pop("budget")
        key.pop("metrics")
        h = int(hashlib.sha1(_canon(key).encode()).hexdigest()[:16], 16)
        return np.random.SeedSequence([self.seed, h])


def _label(base: str, combo: dict, fixed: dict | None = None, key: str = "solvers") -> str:
    """A swept entry's label: its template filled with the swept values (and the entry's
    fixed parameters), or the base with the swept values appended."""
    if not combo:
        return base
    if "{" in base:
        try:
            label = base.format(**{**(fixed or {}), **combo})
        except (KeyError, IndexError, ValueError) as e:
            raise DrocliError(f"label template {base!r} cannot be filled ({type(e).__name__}: "
                              f"{e})", key=f"{key}.label",
                              fix="name only swept or given parameters in braces, e.g. "
                                  "'SGD {step}'") from None
    else:
        label = base + " (" + ", ".join(f"{k}={v}" for k, v in combo.items()) + ")"
    try:
        return check_text(label)
    except ValueError as e:            # a swept text value filled in
        raise DrocliError(str(e), key=f"{key}.grid", fix="sweep printable values") from None


def expand(spec: Spec) -> list[Cell]:
    """All cells of a resolved spec (every case, if it has cases), in a stable order."""
    cells = []
    for name, case in spec.case_specs():
        cells += _expand_one(case, {} if name is None else {"setting": name})
    return cells


def _expand_one(spec: Spec, case: dict) -> list[Cell]:
    d_entry = registry.get("data", spec.data.name)
    p_entry = registry.get("problem", spec.problem.name)
    budget = spec.budget.model_dump()
    cells = []
    for dcombo, pcombo in itertools.product(grid_product(spec.data.grid),
                                            grid_product(spec.problem.grid)):
        dmodel = registry.validate_params(d_entry, {**spec.data.params, **dcombo})
        pmodel = registry.validate_params(p_entry, {**spec.problem.params, **pcombo})
        data_params, problem_params = dmodel.model_dump(), pmodel.model_dump()
        dbase = spec.data.label or spec.data.name
        dataset = _label(dbase, dcombo, spec.data.params, key="data")
        for s in spec.solvers:
            s_entry = registry.get("solver", s.name)
            for scombo in grid_product(s.grid):
                given = {**s.params, **scombo}
                resolved, tables = paired.resolve(given, {**data_params, **problem_params})
                smodel = registry.validate_params(s_entry, resolved)
                params = smodel.model_dump()
                # the id hashes a paired value as the spec writes it (its table)
                forms = {"data": dmodel.key_dict(), "problem": pmodel.key_dict(),
                         "solver": {**smodel.key_dict(), **{k: given[k] for k in tables}}}
                label = _label(s.display, scombo, s.params)
                for seed in spec.seeds:
                    cells.append(Cell(
                        experiment=spec.name, solver=s.name, label=label, dataset=dataset,
                        seed=int(seed), data_name=spec.data.name, data_params=data_params,
                        data_seed=int(seed if spec.data.seed is None else spec.data.seed),
                        problem_name=spec.problem.name, problem_params=problem_params,
                        solver_params=params, budget=budget, metrics=tuple(spec.metrics),
                        swept={**dcombo, **case, **pcombo, **scombo}, key_forms=forms))
    return cells


@dataclass(frozen=True)
class Batch:
    """A spec resolved into cells once: every cell its sequential plan can run (its seeds,
    then its pool), in the order of `expand`; what the run, its looks and `--dry-run` take
    their cells from, so that the spec is expanded a single time. Beside the cells, what a
    run records of the spec: its resolved YAML (spec.yaml) and that text's digest, its name,
    profile, BLAS threads, claims and sequential plan. From `resolve` on only the batch
    travels: the runner, the looks and the folder's manifest read it, not the spec."""

    cells: tuple
    first: tuple        # the spec's own seeds (the first look's)
    name: str
    profile: str
    blas_threads: int
    claims: tuple       # the spec's claims, as registered before the run
    plan: dict | None   # `Spec.plan()`: looks, seed order, what is registered; None: none
    text: str           # the resolved spec as saved (`dump_spec`)
    sha1: str           # `spec_digest(text)`, the manifest's spec_sha1

    def for_seeds(self, seeds=None) -> list[Cell]:
        """The cells of these seeds (default: the spec's own), in the batch's order (the
        order `expand` gives a spec with just these seeds)."""
        want = {int(s) for s in (self.first if seeds is None else seeds)}
        return [c for c in self.cells if c.seed in want]

    @functools.cached_property
    def ids(self) -> set[str]:
        """The ids of every cell of the plan."""
        return {c.id for c in self.cells}


def plan_spec(spec: Spec) -> Spec:
    """The spec over every seed of its sequential plan (`Spec.seed_order`), without the
    plan: what `expand` turns into every cell the plan may run."""
    if spec.sequential is None:
        return spec
    return spec.model_copy(update={"seeds": spec.seed_order(), "sequential": None})


def resolve(spec: Spec) -> Batch:
    """The spec's batch: `expand` over the seeds of its plan (`plan_spec`), with the
    spec's text, digest and what its run records."""
    text = dump_spec(spec)
    return Batch(tuple(expand(plan_spec(spec))), tuple(int(s) for s in spec.seeds),
                 name=spec.name, profile=spec.profile, blas_threads=spec.blas_threads,
                 claims=tuple(spec.claims), plan=spec.plan(), text=text,
                 sha1=spec_digest(text))
