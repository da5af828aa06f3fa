"""A spec read against the registry: its data, problem and solver names and typed parameters
(grid values and paired values per panel included), the metrics its figures and claims read,
and the resolved spec with the registry's defaults filled in (`dump_spec`, saved beside the
results) with its digest (`spec_digest`, the manifest's spec_sha1). `drocli.spec.resolve`
runs these checks when a spec is loaded to run; a results folder's saved spec (`load_saved`)
skips them, so reading results needs no plug-in."""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

import yaml

from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import registry
from drocli.spec import paired

Spec = Any      # a drocli.spec.Spec: not imported, drocli.spec imports this module


def grid_product(grid: dict) -> list[dict]:
    """Every combination of a grid's values, in the order the spec lists them."""
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, vals, strict=True))
            for vals in itertools.product(*(grid[k] for k in keys))]


def _check_block(kind: str, name: str, params: dict, grid: dict, *, file: str, key: str,
                 panels: list[dict] | None = None):
    """An entry's name, its params and every grid value, checked against its model; solver
    values paired with the panels (`drocli.spec.paired`) are checked for every panel."""
    entry = registry.get(kind, name, file=file, key=f"{key}.name")
    cases = [(f"{key}.params", params)] + [
        (f"{key}.grid.{k}[{j}]", {**params, k: v})
        for k, values in grid.items() for j, v in enumerate(values)]
    for where, given in cases:
        for panel in panels or [{}]:
            try:
                given_p, _ = paired.resolve(given, panel)
            except paired.PairingError as e:
                raise DrocliError(str(e), file=file, key=f"{where}.{e.name}.{e.path}"
                                  if where.endswith(".params") else where, fix=e.fix) from None
            try:
                registry.validate_params(entry, given_p, file=file, key=f"{key}.params")
            except DrocliError as e:
                if where.endswith(".params"):
                    raise
                raise DrocliError(e.detail, file=file, key=where, fix=e.fix) from None
    return entry


def panels(spec: Spec) -> list[dict]:
    """The data and problem parameters of every (data grid x problem grid) panel, resolved
    as the cells get them: what a paired solver value is looked up in."""
    d = registry.get("data", spec.data.name)
    p = registry.get("problem", spec.problem.name)
    return [{**registry.resolve_params(d, {**spec.data.params, **dc}),
             **registry.resolve_params(p, {**spec.problem.params, **pc})}
            for dc in grid_product(spec.data.grid) for pc in grid_product(spec.problem.grid)]


def check_names(spec: Spec, file: str) -> None:
    """Registry names and typed parameters (grids included) are valid; metric names are
    recorded by the problem; figure and claim labels name solvers."""
    _check_block("data", spec.data.name, spec.data.params, spec.data.grid, file=file,
                 key="data")
    p = _check_block("problem", spec.problem.name, spec.problem.params, spec.problem.grid,
                     file=file, key="problem")
    panel_list = panels(spec)
    for i, s in enumerate(spec.solvers):
        e = _check_block("solver", s.name, s.params, s.grid, file=file, key=f"solvers[{i}]",
                         panels=panel_list)
        if p.family and e.family and p.family != e.family:
            raise DrocliError(f"solver {s.name!r} is for {e.family} problems, not {p.family}",
                              file=file, key=f"solvers[{i}].name",
                              fix=f"pick a {p.family} solver (`drocli list solvers`)")
    check_metrics(spec, p, file)
    labels = spec.labels()
    if len(set(labels)) != len(labels):
        dup = sorted({x for x in labels if labels.count(x) > 1})
        raise DrocliError(f"duplicate solver label {dup[0]!r}", file=file, key="solvers",
                          fix="give each solver entry its own `label:`")
    for i, c in enumerate(spec.claims):
        for lab in [c.solver, *c.others]:
            if not any(lab == x or x.startswith(lab + " ") for x in labels):
                raise DrocliError(f"claim names unknown solver label {lab!r}", file=file,
                                  key=f"claims[{i}]", fix=did_you_mean(lab, labels))
    for lab, tol in spec.reference_rtol.items():
        if lab not in labels:
            raise DrocliError(f"reference_rtol names unknown solver label {lab!r}", file=file,
                              key=f"reference_rtol.{lab}", fix=did_you_mean(lab, labels))
        if not 0 < tol < 1:
            raise DrocliError(f"reference_rtol.{lab} must lie in (0, 1), got {tol}", file=file,
                              key=f"reference_rtol.{lab}", fix="e.g. 0.01 (1 %)")
    for i, f in enumerate(spec.figures):
        for lab in getattr(f, "legend", None) or []:
            if lab not in labels:
                raise DrocliError(f"legend names unknown solver label {lab!r}", file=file,
                                  key=f"figures[{i}].legend", fix=did_you_mean(lab, labels))


def check_metrics(spec: Spec, problem: registry.Entry, file: str) -> None:
    """Every metric named in `metrics`, in figure panels and in claims is one the problem
    records (its declared `metrics`)."""
    if not problem.metrics:
        return
    known = [m for m in problem.metrics if not any(c in m for c in "*?[")]

    def ok(name, key):
        if name is None or problem.records_metric(name):
            return
        raise DrocliError(f"problem {problem.name!r} records no metric {name!r}", file=file,
                          key=key, fix=did_you_mean(name, known)
                          + f"; `drocli list problems {problem.name}` shows its metrics")

    for i, m in enumerate(spec.metrics):
        ok(m, f"metrics[{i}]")
    for i, f in enumerate(spec.figures):
        for key, name in _figure_metrics(f):
            ok(name, f"figures[{i}].{key}")
    for i, c in enumerate(spec.claims):
        ok(getattr(c, "metric", None), f"claims[{i}].metric")
    declared = set(spec.metrics)
    if declared:
        for i, f in enumerate(spec.figures):
            for key, name in _figure_metrics(f):
                if name is not None and name not in declared:
                    raise DrocliError(f"metric {name!r} is not recorded by this spec", file=file,
                                      key=f"figures[{i}].{key}",
                                      fix=f"add it to `metrics:` ({', '.join(spec.metrics)})")
        for i, c in enumerate(spec.claims):
            name = getattr(c, "metric", None)
            if name is not None and name not in declared:
                raise DrocliError(f"metric {name!r} is not recorded by this spec", file=file,
                                  key=f"claims[{i}].metric",
                                  fix=f"add it to `metrics:` ({', '.join(spec.metrics)})")


def _figure_metrics(fig) -> list[tuple[str, str | None]]:
    """(key path, metric name) of every metric a figure reads."""
    fn = getattr(fig, "metric_refs", None)
    return list(fn()) if fn is not None else []


def dump_spec(spec: Spec) -> str:
    """The resolved spec as YAML (saved beside the results), registry defaults filled in."""
    data = spec.model_dump(mode="json", exclude={"figures", "claims"})
    if data.get("reported") is None:   # a spec without the paper's numbers is written as
        data.pop("reported", None)     # before `reported:` existed: its recorded digest holds
    data["data"]["params"] = registry.resolve_params(registry.get("data", spec.data.name),
                                                     spec.data.params)
    data["problem"]["params"] = registry.resolve_params(
        registry.get("problem", spec.problem.name), spec.problem.params)
    panel = panels(spec)[0]
    for entry, s in zip(data["solvers"], spec.solvers, strict=True):
        given, tables = paired.resolve(s.params, panel)     # paired values stay tables
        entry["params"] = {**registry.resolve_params(registry.get("solver", s.name), given),
                           **{k: s.params[k] for k in tables}}
    data["figures"] = [f.model_dump(mode="json", exclude_none=True) for f in spec.figures]
    data["claims"] = [c.model_dump(mode="json", exclude_none=True) for c in spec.claims]
    for key in ("tuning", "judge_as"):    # absent rather than null: specs without them
        if data.get(key) is None:         # dump as before they existed
            data.pop(key, None)
    order = list(type(spec).model_fields)
    data = {k: data[k] for k in order if k in data}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def spec_digest(spec_text: str) -> str:
    """SHA-1 of the resolved spec's YAML (`spec_sha1`): a manifest of another spec is stale."""
    return hashlib.sha1(spec_text.encode()).hexdigest()
