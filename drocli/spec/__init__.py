"""Experiment specs: YAML -> validated model, with profiles and `--set` overrides.

A spec names data, problem, solvers, seeds, budget, metrics, figures, claims and
profiles. Loading applies the chosen profile, then the command-line overrides, then
validates the result; every error names the file, the key path and the fix.

This module holds the schema and the loading. Below it, each with one job: the bounded
YAML reader (drocli.spec.safe_yaml), the override engine (drocli.spec.overrides) and the checks
against the registry (drocli.spec.lookups); their names stay importable from here.
"""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from drocli.claims.reported import ReportedSpec, attach
from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import registry
from drocli.results.files import MAX_SPEC_BYTES
from drocli.results.layout import NAME_PATTERN  # one safe path component
from drocli.spec import texts
from drocli.spec.lookups import (  # noqa: F401 -- kept importable from here
    _check_block,
    _figure_metrics,
    check_metrics,
    check_names,
    dump_spec,
    grid_product,
    panels,
)
from drocli.spec.overrides import _child, apply_override, parse_set, select  # noqa: F401 (API here)
from drocli.spec.safe_yaml import (  # noqa: F401 -- kept importable from here
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_NODES,
    YAMLTooLarge,
    _expanded_size,
    _Loader,
    yaml_load,
)

PROFILES = ("smoke", "quick", "paper")


MAX_SEEDS = 10_000
NAME_RULE = ("letters, digits, '_', '.', '-', starting with a letter or digit, at most 100 "
             "characters")
MAX_SEED = 2**63 - 1       # seeds are int64 in the records
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
SEEDS_FIX = 'seeds are integers >= 0: a count (3), a range ("0-9") or a list ([0, 1, 2])'
# budgets past these are typos (1e30), not experiments; the variables raise them up to what
# an int64 oracle counter holds
BUDGET_LIMITS = {"oracle_calls": ("DROCLI_MAX_ORACLE_CALLS", 1e12, "oracle calls per cell",
                                  2.0**62),
                 "epochs": ("DROCLI_MAX_EPOCHS", 1e6, "epochs per cell", 1e15)}
MAX_CELLS = ("DROCLI_MAX_CELLS", 100_000)   # a grid past this is a typo, refused at load


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _check_template(label: str | None, params: dict, grid: dict) -> None:
    """A label with braces names only swept or given parameters (it is filled per cell)."""
    if not label or "{" not in label or not grid:
        return
    import string

    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(label) if f is not None]
    except ValueError as e:
        raise ValueError(f"label {label!r} is not a valid template ({e}); double a literal "
                         "brace: '{{'") from None
    for f in fields:
        base = f.split(".")[0].split("[")[0]
        if base not in grid and base not in params:
            raise ValueError(f"label {label!r} names {{{f}}}, which is neither swept (grid) "
                             f"nor given (params); name one of: "
                             f"{', '.join(sorted({*grid, *params}))}")


class SpecValueError(ValueError):
    """A value refused by a spec validator, with its fix (shown instead of the generic one)."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.fix = fix


def check_text(v: str | None, what: str = "label") -> str | None:
    """A name shown in records, legends and reports: no control characters (NUL, newline,
    escape, ...) nor line separators, which corrupt the records and break every line they
    are printed on."""
    if v is None:
        return v
    import unicodedata

    for ch in str(v):
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            raise SpecValueError(f"{what} {v!r} holds the control character {ch!r}",
                                 fix=f"write the {what} in printable characters")
    return v


class DataSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    seed: int | None = 0  # fixed data seed; null: the data follow each run seed

    @field_validator("label")
    @classmethod
    def _printable(cls, v):
        return check_text(v)

    @model_validator(mode="after")
    def _label_fields(self):
        _check_template(self.label, self.params, self.grid)
        return self


class ProblemSpec(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)   # e.g. one cell per preference


class SolverSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("label")
    @classmethod
    def _printable(cls, v):
        return check_text(v)

    @model_validator(mode="after")
    def _label_fields(self):
        _check_template(self.label, self.params, self.grid)
        return self

    @property
    def display(self) -> str:
        return self.label or self.name


class BudgetSpec(_Strict):
    epochs: float | None = Field(None, gt=0, description="budget in units of N oracle calls")
    oracle_calls: int | None = Field(None, gt=0)
    checkpoints: int = Field(50, ge=1)
    spacing: Literal["linear", "log"] = "linear"
    max_time_s: float | None = Field(
        None, gt=0, allow_inf_nan=False,
        description="each cell's wall limit in seconds (warm-up, solver, evaluation): the "
                    "monitor stops the solver there, a solver that never returns is killed "
                    "3 s later; default DROCLI_CELL_LIMIT_S, else 10 x the pace of its 1 % "
                    "warm-up, within [300 s, 6 h] (drocli.run.limits)")

    @field_validator("oracle_calls", "epochs", mode="before")
    @classmethod
    def _bounded(cls, v, info):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return v                              # the field's own type check says why
        var, default, unit, most = BUDGET_LIMITS[info.field_name]
        if v > most:
            raise SpecValueError(f"{v:g} is past the largest budget drocli counts ({most:g} "
                                 f"{unit})", fix=f"lower budget.{info.field_name} (a typo?)")
        limit = budget_limit(var, default)
        if v > limit:
            raise SpecValueError(f"{v:g} is past the limit of {limit:g} {unit}",
                                 fix=f"lower budget.{info.field_name} (a typo?), or raise the "
                                 f"limit: {var}={int(v) if float(v).is_integer() else v}")
        return v

    @model_validator(mode="after")
    def _one_unit(self):
        if (self.epochs is None) == (self.oracle_calls is None):
            raise ValueError("give exactly one of budget.epochs or budget.oracle_calls")
        return self


def budget_limit(var: str, default: float, allow_inf: bool = False) -> float:
    """A limit that an environment variable can raise (budgets, DROCLI_MAX_CELLS): `var`
    (a number > 0, finite unless `allow_inf`: no limit), else `default`."""
    raw = os.environ.get(var)
    if raw is None or not raw.strip():
        return default
    try:
        limit = float(raw)
    except ValueError:
        limit = float("nan")
    if not (0 < limit < math.inf or (allow_inf and limit == math.inf)):
        raise DrocliError(f"{raw!r} is not a {'' if allow_inf else 'finite '}number > 0",
                          key=var,
                          fix=f"set e.g. {var}={default:.0e}, or unset it")
    return limit


def seed_list(v):
    """A seeds entry (count, "first-last" range or list) as a list of seeds."""
    if isinstance(v, bool):
        raise ValueError("seeds must be a count or a list of integers")
    if isinstance(v, int):
        if not 1 <= v <= MAX_SEEDS:
            raise ValueError(f"a seed count must lie in [1, {MAX_SEEDS}]"
                             + ("; for the one seed 0 write [0]" if v == 0 else ""))
        return list(range(v))
    if isinstance(v, str) and "-" in v:  # "0-9"
        a, b = v.split("-", 1)
        try:
            lo, hi = int(a), int(b)
        except ValueError:
            raise ValueError(f"a seed range is \"first-last\", e.g. \"0-9\", got {v!r}")\
                from None
        if not 0 <= lo <= hi or hi - lo >= MAX_SEEDS:
            raise ValueError(f"seed range {v!r} must run from a first seed >= 0 up to a "
                             f"last seed >= it (at most {MAX_SEEDS} seeds), e.g. \"0-9\"")
        return list(range(lo, hi + 1))
    if isinstance(v, list):
        if not 1 <= len(v) <= MAX_SEEDS:
            raise ValueError(f"the seed list must hold 1 to {MAX_SEEDS} seeds")
        if any(isinstance(x, bool) for x in v):
            raise SpecValueError("a seed is true or false, not an integer", fix=SEEDS_FIX)
        if len({repr(x) for x in v}) != len(v):
            raise ValueError("the seed list repeats a seed")
    return v


class TuningSpec(_Strict):
    """Where the spec's tuned settings came from, so check can tell judged seeds from tuned
    ones (drocli.claims.registration)."""

    source: list[str] = Field(min_length=1, description="the tuning specs or records the "
                              "settings were chosen from (paths in the repository)")
    seeds: list[Seed] = Field(description="every seed the tuning ran")
    rule: str = Field("", description="how the settings were chosen, in words")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v):
        return seed_list(v)


class SequentialPlan(_Strict):
    """When claims are judged and where later seeds come from (drocli.claims.sequential):
    `looks`, the seed counts at which every claim is judged (the first is the spec's own
    `seeds`), and `pool`, the seeds added in order after them. Registered with the claims:
    changing it after a run makes them post hoc."""

    looks: list[int] = Field(min_length=1, description="seed counts at which the claims "
                             "are judged, increasing; the first is len(seeds)")
    pool: list[Seed] = Field(default_factory=list, description="the seeds added after "
                             "the spec's seeds, in order (a count, \"first-last\" or a list)")

    @field_validator("pool", mode="before")
    @classmethod
    def _pool(cls, v):
        return seed_list(v) if v not in (None, [], "") else []

    @field_validator("looks")
    @classmethod
    def _looks(cls, v):
        if any(n < 3 for n in v) or any(b <= a for a, b in zip(v, v[1:], strict=False)):
            raise ValueError(f"looks must increase and start at 3 seeds or more, got {v}")
        return v


class Spec(_Strict):
    _unread: list = PrivateAttr(default_factory=list)   # figures of kinds not installed
    name: str = Field(pattern=NAME_PATTERN)   # one safe path component
    title: str = ""
    paper: str = ""
    description: str = ""
    data: DataSpec
    problem: ProblemSpec
    solvers: list[SolverSpec] = Field(min_length=1)
    seeds: list[Seed]
    budget: BudgetSpec
    metrics: list[str] = Field(default_factory=list)
    figures: list[Any] = Field(default_factory=list)
    claims: list[Any] = Field(default_factory=list)
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    tuning: TuningSpec | None = None
    sequential: SequentialPlan | None = None
    # the paper's own reported numbers this folder is compared with (drocli.claims.reported)
    reported: ReportedSpec | None = None
    # named settings (e.g. rotation, C=2), each dotted overrides as --set; every case runs,
    # its name is the records column `setting`
    cases: dict[str, dict[str, Any]] = Field(default_factory=dict)
    default_profile: str = Field("paper", pattern=NAME_PATTERN)   # a path component too
    # label -> relative tolerance floor for `drocli check --reference` (a trajectory whose
    # last digits differ between CPUs, e.g. AVX-512 vs AVX2 BLAS kernels; say why in a comment)
    reference_rtol: dict[str, float] = Field(default_factory=dict)
    profile: str | None = Field(None, pattern=NAME_PATTERN)  # set on load: the profile used
    blas_threads: int = Field(1, ge=1)
    # set by a profile that is another study of the same claims (e.g. `table1`, a previous
    # study's values): its claims are judged as on this profile (their `profiles:` lists and
    # `reproduced:` marks), so keeping a study as a profile does not re-register them
    judge_as: str | None = Field(None, pattern=NAME_PATTERN)

    @property
    def claims_profile(self) -> str | None:
        """The profile the claims are judged as: `judge_as`, else the profile run."""
        return self.judge_as or self.profile

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v):
        return seed_list(v)

    @field_validator("cases")
    @classmethod
    def _case_names(cls, v):
        for name in v:
            check_text(name, "case name")
        return v

    @model_validator(mode="after")
    def _plan(self):
        plan = self.sequential
        if plan is None:
            return self
        if plan.looks[0] != len(self.seeds):
            raise SpecValueError(f"the first look is {plan.looks[0]} seeds but `seeds` holds "
                                 f"{len(self.seeds)}", fix="make sequential.looks start at "
                                 "the number of seeds (a profile with other seeds sets "
                                 "`sequential: null`)")
        clash = {repr(x) for x in self.seeds} & {repr(x) for x in plan.pool}
        if clash:
            raise SpecValueError(f"the pool repeats seed(s) of `seeds`: "
                                 f"{', '.join(sorted(clash)[:5])}",
                                 fix="take the pool from seeds no run has used")
        if len(self.seeds) + len(plan.pool) < plan.looks[-1]:
            raise SpecValueError(f"the last look needs {plan.looks[-1]} seeds, `seeds` and "
                                 f"the pool hold {len(self.seeds) + len(plan.pool)}",
                                 fix="enlarge sequential.pool")
        return self

    def plan(self) -> dict | None:
        """The sequential plan as judging takes it: the looks, the seeds in order, and what
        is registered with the claims (looks and pool); None without one."""
        if self.sequential is None:
            return None
        return {"looks": list(self.sequential.looks), "order": self.seed_order(),
                "registered": self.sequential.model_dump(mode="json")}

    def seed_order(self) -> list:
        """The seeds in the order the looks take them: `seeds`, then the plan's pool."""
        return [*self.seeds, *(self.sequential.pool if self.sequential else [])]

    def labels(self) -> list[str]:
        return [s.display for s in self.solvers]

    def case_specs(self, file: str = "spec") -> list[tuple[str | None, Spec]]:
        """(case name, the spec with that case's overrides applied); [(None, self)] without
        cases."""
        if not self.cases:
            return [(None, self)]
        base = self.model_dump(mode="python", exclude={"figures", "claims", "cases"})
        out = []
        for name, overrides in self.cases.items():
            raw = copy.deepcopy(base)
            for k, v in (overrides or {}).items():
                apply_override(raw, str(k), copy.deepcopy(v), file=f"{file} (cases.{name})")
            try:
                out.append((name, Spec.model_validate(raw)))
            except ValidationError as e:
                _raise_validation(e, f"{file} (cases.{name})", raw)
        return out


# --- loading --------------------------------------------------------------------------------

def _loc(err) -> str:
    return registry.loc_path(err.get("loc", ()))


def _raise_validation(e: ValidationError, file: str, raw: dict) -> None:
    errors = e.errors()
    # a typo shows up as an unknown key and a missing one: report the typo, it names both
    err = next((x for x in errors if x.get("type") == "extra_forbidden"), errors[0])
    key = _loc(err)
    msg = err.get("msg", "invalid value")
    fix = "see the spec format in the README"
    if err.get("type") == "extra_forbidden":
        parent = raw
        parts = list(err["loc"])
        for p in parts[:-1]:
            try:
                parent = parent[p]
            except (KeyError, IndexError, TypeError):
                parent = None
                break
        bad = parts[-1]
        fields = _fields_at(parts[:-1], parent)
        fix = did_you_mean(str(bad), fields) if fields else "remove this key"
        msg = f"unknown key {bad!r}"
    elif err.get("type") == "missing":
        msg = "required key is missing"
        fix = f"add `{key.split('.')[-1]}:`"
    elif isinstance((err.get("ctx") or {}).get("error"), SpecValueError):
        msg, fix = str(err["ctx"]["error"]), err["ctx"]["error"].fix
    elif key.split("[")[0] in ("seeds", "tuning.seeds"):
        msg, fix = f"{msg} (got {err.get('input')!r})", SEEDS_FIX
    elif "input" in err:
        msg = f"{msg} (got {err['input']!r})"
    raise DrocliError(msg, file=file, key=key or None, fix=fix) from None


def _fields_at(parts, parent) -> list[str]:
    """Known field names of the model at a location (for did-you-mean on typos)."""
    model: Any = Spec
    for p in parts:
        if isinstance(p, int):
            continue
        if p not in model.model_fields:
            return []
        sub = {"data": DataSpec, "problem": ProblemSpec, "solvers": SolverSpec,
               "budget": BudgetSpec}.get(p)
        if sub is None:
            return []
        model = sub
    return list(model.model_fields)


def read_yaml(path: str | Path) -> dict:
    from drocli.results.files import read_text, refuse_link_loop

    path = Path(path)
    if not path.exists():
        refuse_link_loop(path)            # exists() says False for a link loop too
        raise DrocliError("file not found", file=str(path),
                          fix="check the path; `drocli list experiments` shows the shipped specs")
    if path.is_dir():
        raise DrocliError("is a folder, not a spec file", file=str(path),
                          fix="give a .yaml file, e.g. experiments/gdro_synthetic.yaml")
    try:                       # a regular file only (a FIFO blocked, /dev/zero filled memory)
        text = read_text(path, MAX_SPEC_BYTES, too_large="too large for a spec",
                         fix="give a YAML spec file, e.g. experiments/gdro_synthetic.yaml",
                         too_large_fix="a spec is a short YAML file; generate long grids "
                                       "with `grid:`")
    except UnicodeDecodeError:
        raise DrocliError("not a UTF-8 text file", file=str(path),
                          fix="give a YAML spec, e.g. experiments/gdro_synthetic.yaml") from None
    try:
        raw = yaml_load(text)
    except YAMLTooLarge as e:              # an alias bomb, nesting past MAX_DEPTH
        raise DrocliError(f"refused YAML: {e.problem}", file=str(path),
                          fix="a spec is a short YAML file: write its values out, without "
                              "deep nesting or chains of aliases") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(e, "problem", None) or "malformed YAML"
        raise DrocliError(f"malformed YAML: {problem}", file=str(path), key=where,
                          fix="fix the YAML syntax (indentation, colons, quotes)") from None
    if not isinstance(raw, dict):
        raise DrocliError("the spec must be a YAML mapping", file=str(path),
                          fix="start with keys such as `name:`, `data:`, `solvers:`")
    return raw


def load_spec(path: str | Path, profile: str | None = None, overrides=(),
              solvers=(), data=()) -> Spec:
    """Read, profile, override, select (`-s`, `-d`) and validate a spec file."""
    file = str(path)
    raw = read_yaml(path)
    return resolve(raw, file=file, profile=profile, overrides=overrides, solvers=solvers,
                   data=data)


def load_saved(path: str | Path) -> Spec:
    """A results folder's spec.yaml, for reading the results (plot, check, report): its
    structure, figures and claims are validated; its data, problem and solver entries are
    not checked against the registry, so a folder stays readable after the plug-in that
    made it is uninstalled (the records, not the plug-ins, are what is read)."""
    file = str(path)
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise DrocliError("a saved spec is a mapping", file=file,
                          fix="re-run `drocli run` to write it again")
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as e:
        _raise_validation(e, file, raw)
    validate_outputs(spec, file, lenient=True)
    return spec


def resolve(raw: dict, *, file: str, profile: str | None = None, overrides=(),
            solvers=(), data=()) -> Spec:
    raw = copy.deepcopy(raw)
    written = copy.deepcopy(raw)       # before profile and overrides: what causes name
    known = _names_before_profile(raw)
    profiles = raw.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise DrocliError("profiles must be a mapping of name -> overrides", file=file,
                          key="profiles", fix="write `profiles: {smoke: {budget.epochs: 2}}`")
    for name, body in profiles.items():    # results/<name>-<profile>: one path component
        check_profile_name(name, file=file, key=f"profiles.{name}")
        if body is not None and not isinstance(body, dict):    # (.items() was exit 3)
            raise DrocliError(f"profile {name!r} is a {type(body).__name__}, not a mapping "
                              "of key -> value", file=file, key=f"profiles.{name}",
                              fix=f"write `profiles: {{{name}: {{budget.epochs: 2}}}}`")
    if profile is not None:
        check_profile_name(profile, file=None, key="--profile")
    for key in ("profile", "default_profile"):
        if raw.get(key) is not None:
            check_profile_name(raw[key], file=file, key=key)
    chosen = profile or raw.get("profile") or raw.get("default_profile") or "paper"
    if chosen not in profiles and chosen != "paper":
        raise DrocliError(f"unknown profile {chosen!r}", file=file, key="profiles",
                          fix=did_you_mean(chosen, list(profiles) + ["paper"]))
    if raw.get("profile") != chosen:
        for k, v in (profiles.get(chosen) or {}).items():
            apply_override(raw, str(k), copy.deepcopy(v), file=file)
    for k, v in overrides:
        apply_override(raw, k, v, file=f"{file} (--set {k})")
    expand_case_bases(raw, file)
    if solvers or data:
        select(raw, solvers, data, file=file, profile=chosen, known_cases=known[1])
    texts.fill(raw, file)
    raw["profile"] = chosen
    if raw.get("judge_as") is not None and raw["judge_as"] not in (*profiles, "paper"):
        raise DrocliError(f"judge_as names no profile: {raw['judge_as']!r}", file=file,
                          key=f"profiles.{chosen}.judge_as",
                          fix=did_you_mean(str(raw["judge_as"]), [*profiles, "paper"]))
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as e:
        _raise_validation(e, file, raw)
    check_cell_count(spec, file)
    if spec.reported is not None and spec.reported.rows is None:
        attach(spec.reported, spec_file=file, labels=spec.labels(), cases=list(spec.cases),
               metrics=list(spec.metrics), known_labels=sorted({*spec.labels(), *known[0]}),
               known_cases=sorted({*spec.cases, *known[1]}))
    validate_outputs(spec, file, written=written)
    check_names(spec, file)
    for name, case in spec.case_specs(file):
        if name is not None:
            check_names(case, f"{file} (cases.{name})")
    return spec


def _names_before_profile(raw: dict) -> tuple[set, set]:
    """The solver labels and case names of the spec file as written (a profile may run
    fewer; `reported:` may still name the others)."""
    solvers = raw.get("solvers") if isinstance(raw.get("solvers"), list) else []
    labels = {str(s.get("label") or s.get("name")) for s in solvers if isinstance(s, dict)}
    cases = raw.get("cases") if isinstance(raw.get("cases"), dict) else {}
    return labels, {str(c) for c in cases}


CASE_BASE = "base"     # in a case: the case whose overrides it starts from


def expand_case_bases(raw: dict, file: str) -> None:
    """A case may start from another: `base: NAME` applies that case's overrides (and its
    base's, and so on) before its own, which win on the same key. Resolved here, after the
    profile and --set and before -d picks cases, so a picked case keeps what it inherits;
    the saved spec holds each case's merged overrides and no `base`."""
    cases = raw.get("cases")
    if not isinstance(cases, dict) or not any(isinstance(c, dict) and CASE_BASE in c
                                              for c in cases.values()):
        return
    done: dict = {}

    def merged(name):
        """Walk up the bases (a loop, not recursion: a spec may chain thousands of cases),
        then merge from the root down."""
        chain, on_chain = [name], {name}
        while name not in done and isinstance(cases[name], dict) \
                and cases[name].get(CASE_BASE) is not None:
            base = cases[name][CASE_BASE]
            where = f"cases.{name}.{CASE_BASE}"
            if not isinstance(base, str) or base not in cases or base == name:
                others = [str(c) for c in cases if c != name]
                raise DrocliError(f"case {name!r} starts from {base!r}, which is not another "
                                  "case of this spec", file=file, key=where,
                                  fix=did_you_mean(str(base), others) if others
                                  else "remove `base:`")
            if base in on_chain:
                shown = chain[:6] + ["..."] if len(chain) > 6 else chain
                raise DrocliError("cases start from each other in a cycle: "
                                  + " -> ".join(map(str, [*shown, base])), file=file,
                                  key=where, fix="let one of them start from no case")
            chain.append(base)
            on_chain.add(base)
            name = base
        out = done.get(name)
        if out is None:
            out = cases[name] if not isinstance(cases[name], dict) else \
                {k: v for k, v in cases[name].items() if k != CASE_BASE}
            done[name] = out
        for child in reversed(chain[:-1]):
            body = cases[child]
            merged_child = copy.deepcopy(out) if isinstance(out, dict) else {}
            merged_child.update({k: v for k, v in body.items() if k != CASE_BASE})
            done[child] = out = merged_child
        return out

    raw["cases"] = {name: merged(name) for name in cases}


def cell_count(spec: Spec) -> int:
    """How many cells the spec expands into, counted without expanding: cases x data grid x
    problem grid x (each solver's grid, summed) x seeds."""
    def size(grid: dict) -> int:
        n = 1
        for values in (grid or {}).values():
            n *= max(1, len(values))
        return n

    solvers = sum(size(s.grid) for s in spec.solvers)
    return (max(1, len(spec.cases)) * size(spec.data.grid) * size(spec.problem.grid)
            * solvers * len(spec.seeds))


def check_cell_count(spec: Spec, file: str) -> None:
    """Refuse a spec whose grids multiply past DROCLI_MAX_CELLS (default 100,000) cells,
    before anything expands them: a typo there would run (or list) for hours."""
    var, default = MAX_CELLS
    limit = budget_limit(var, default, allow_inf=True)     # inf: no limit
    n = cell_count(spec)
    if n > limit:                          # so the limit is finite (int(inf) was exit 3)
        raise DrocliError(f"the spec expands to {n:,} cells, more than {int(limit):,}",
                          file=file,
                          key="seeds, solvers[].grid, data.grid, problem.grid, cases",
                          fix=f"shrink the grids or seeds, or raise the limit with {var}={n}")


def check_profile_name(name, *, file: str | None, key: str) -> None:
    """A profile name becomes part of the results folder's name (results/<spec>-<profile>):
    one safe path component, as spec names (no '/', no '..', no control characters)."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise DrocliError(f"profile name {name!r} is not a single safe path component",
                          file=file, key=key, fix=f"name profiles with {NAME_RULE}, e.g. smoke")


def _check_ablates(claims: list, written: dict, file: str) -> None:
    """An ablation's claim names a claim of the spec as written (its paper claims)."""
    ids = [c.get("id") for c in written.get("claims") or [] if isinstance(c, dict)]
    for i, c in enumerate(claims):
        a = getattr(c, "ablates", None)
        if a is not None and a.claim not in ids:
            raise DrocliError(f"claim {c.id!r} ablates {a.claim!r}, which is not a claim of "
                              "the spec", file=file, key=f"claims[{i}].ablates.claim",
                              fix=did_you_mean(a.claim, [str(x) for x in ids]))


def validate_outputs(spec: Spec, file: str, lenient: bool = False,
                     written: dict | None = None) -> None:
    """Figures and claims as their kinds' models (tagged unions on `kind`), in place.
    `lenient` (a results folder's saved spec): a claim of a kind not installed here is kept
    as an OpaqueClaim, shown with its recorded verdict, and a figure of a kind not installed
    is left out, named in `spec._unread` (`plot` says so). `written`: the spec as written,
    before its profile and overrides, which the claims' causes are checked against
    (drocli.claims.cause)."""
    from drocli.claims import validate_claim
    from drocli.figures.plots import validate_figure

    figures, unread = [], []
    for i, f in enumerate(spec.figures):
        kind = str(f.get("kind", "curves")) if isinstance(f, dict) else None
        if lenient and kind is not None and kind not in registry.names("figure"):
            unread.append(f"figure {f.get('name', i)!r}: kind {kind!r} is not installed here")
            continue
        figures.append(validate_figure(f, file=file, key=f"figures[{i}]"))
    spec.figures = figures
    spec._unread = unread
    spec.claims = [validate_claim(c, file=file, key=f"claims[{i}]", lenient=lenient)
                   for i, c in enumerate(spec.claims)]
    if written is not None:            # causes against the spec as written
        from drocli.claims.cause import check_on_load

        for i, c in enumerate(spec.claims):
            check_on_load(c, written, file, f"claims[{i}]", spec.claims)
        if written.get("profile") is None:   # a saved spec holds the profile's claims only
            _check_ablates(spec.claims, written, file)
    for what, items in (("figure names", [f.name for f in spec.figures]),
                        ("claim ids", [c.id for c in spec.claims])):
        dup = sorted({n for n in items if items.count(n) > 1})
        if dup:
            raise DrocliError(f"{what} must be unique, repeated: {', '.join(dup)}", file=file,
                              key=what.split()[0] + "s", fix="rename one of them")


def run_caption(caption: str | None, profile: str, seeds) -> str:
    """A figure's caption followed by what this run actually shows: its profile and seeds (the
    spec's caption describes the paper's setting, which a smoke or quick profile shrinks)."""
    seeds = list(seeds)
    shown = ", ".join(map(str, seeds[:12])) + (", ..." if len(seeds) > 12 else "")
    plural = "s" if len(seeds) != 1 else ""
    note = f"This run: profile {profile}, {len(seeds)} seed{plural} ({shown})"
    if profile == "smoke":
        note += "; a smoke run (fewer seeds or a shorter budget than the paper's), not a result"
    text = " ".join((caption or "").split())
    if text and text[-1] not in ".!?":          # "... over 5 seeds This run:" ran on
        text += "."
    return f"{text} {note}.".strip()
