"""A spec file read and resolved: the YAML read within bounds, the chosen profile applied,
then the command-line overrides, the cases' bases and the `-s`/`-d` picks, then the result
validated and checked against the registry. Every error names the file, the key path and
the fix. A results folder's saved spec is read without the registry (`load_saved`)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from pydantic import ValidationError

from drocli.claims.reported import attach
from drocli.errors import DrocliError, did_you_mean
from drocli.results.files import MAX_SPEC_BYTES
from drocli.spec import texts
from drocli.spec.case_bases import expand_case_bases
from drocli.spec.checks import check_cell_count, check_profile_name, validate_outputs
from drocli.spec.lookups import check_names
from drocli.spec.model import Spec, _raise_validation
from drocli.spec.overrides import apply_override, select
from drocli.spec.safe_yaml import YAMLTooLarge, yaml_load


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
