"""Experiment specs: YAML -> validated model, with profiles and `--set` overrides.

A spec names data, problem, solvers, seeds, budget, metrics, figures, claims and
profiles. Loading applies the chosen profile, then the command-line overrides, then
validates the result; every error names the file, the key path and the fix.

Each module here has one job: the schema (drocli.spec.model), reading and resolving a spec
file (load), cases starting from another (case_bases), the checks on load (checks), a run's
figure captions (captions), the bounded YAML reader (safe_yaml), the override engine
(overrides) and the checks against the registry (lookups). This module hands on their names,
so `from drocli.spec import name` keeps working.
"""

from drocli.spec.captions import run_caption  # noqa: F401
from drocli.spec.case_bases import CASE_BASE, expand_case_bases  # noqa: F401
from drocli.spec.checks import (  # noqa: F401
    cell_count,
    check_cell_count,
    check_profile_name,
    validate_outputs,
)
from drocli.spec.load import load_saved, load_spec, read_yaml, resolve  # noqa: F401
from drocli.spec.lookups import (  # noqa: F401 -- kept importable from here
    _check_block,
    _figure_metrics,
    check_metrics,
    check_names,
    dump_spec,
    grid_product,
    panels,
)
from drocli.spec.model import (  # noqa: F401
    BUDGET_LIMITS,
    MAX_CELLS,
    MAX_SEED,
    MAX_SEEDS,
    NAME_RULE,
    PROFILES,
    SEEDS_FIX,
    BudgetSpec,
    DataSpec,
    ProblemSpec,
    Seed,
    SequentialPlan,
    SolverSpec,
    Spec,
    SpecValueError,
    TuningSpec,
    budget_limit,
    check_text,
    seed_list,
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
