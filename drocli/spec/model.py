"""The spec's schema: what a spec names (data, problem, solvers, seeds, budget, metrics,
figures, claims, profiles, cases), the pydantic models that check it, the limits a value
must keep (seed counts, budgets, printable names), and how a refused value is reported: the
key path and the fix, instead of pydantic's generic message."""

from __future__ import annotations

import copy
import math
import os
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from drocli.claims.reported import ReportedSpec
from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN  # one safe path component
from drocli.spec.overrides import apply_override

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


def check_grid(grid: dict) -> dict:
    """A swept key with no values would make no cells at all: refused at load."""
    for key, values in grid.items():
        if not values:
            raise SpecValueError(f"grid key {key!r} lists no values, so it makes no cells",
                                 fix="give it at least one value, or remove the key")
    return grid


# a sweep (data, problem and solver grids): key -> the values it takes, never none
Grid = Annotated[dict[str, list[Any]], AfterValidator(check_grid)]


class DataSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    grid: Grid = Field(default_factory=dict)
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
    grid: Grid = Field(default_factory=dict)   # e.g. one cell per preference


class SolverSpec(_Strict):
    name: str
    label: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    grid: Grid = Field(default_factory=dict)

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
    def claims_profile(self):
        """The profile the claims are judged as: `judge_as`, else the profile run, carrying
        the run's own name too (drocli.claims.base.StudyProfile); None without a profile."""
        from drocli.claims.base import StudyProfile

        name = self.judge_as or self.profile
        return None if name is None else StudyProfile(name, self.profile)

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
