"""Overrides of a raw spec, before it is validated: `--set KEY=VALUE` parsed (`parse_set`) and
applied at a dotted key (`apply_override`, also used by profiles and cases), and the
command-line conventions users bring from hydra and benchopt: `drocli run SPEC key=value ...`
(positional, as `--set`), `-m/--multirun` with `key=a,b,c` (a sweep: the spec's grid for
that parameter, so the legend labels carry the value), and `-s/--solver`, `-d/--data` to
run only some of a spec's entries."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import yaml

from drocli.errors import DrocliError, did_you_mean, shorten_middle
from drocli.spec.safe_yaml import MAX_DEPTH, YAMLNotText, YAMLTooLarge, yaml_load

_SWEEPABLE = ((re.compile(r"(data|problem)\.params\.([^.]+)"), r"\1.grid.\2"),
              (re.compile(r"solvers\.([^.]+)\.params\.([^.]+)"), r"solvers.\1.grid.\2"))


def parse_set(items, *, where: str = "--set") -> list[tuple[str, Any]]:
    """`KEY=VALUE` strings -> (dotted key, YAML-parsed value)."""
    out = []
    for item in items or ():
        if "=" not in item:
            raise DrocliError(f"{item!r} is not KEY=VALUE", key=where,
                              fix="write e.g. --set data.params.n_train=200")
        key, raw = item.split("=", 1)
        try:
            value = yaml_load(raw) if raw.strip() else ""
        except YAMLTooLarge as e:
            raise DrocliError(f"the value has {e.problem}",
                              key=f"{where} {shorten_middle(key.strip(), 60)}",
                              fix="give a short YAML value, e.g. --set seeds=[0, 1, 2]") from None
        except YAMLNotText as e:          # taken as text, it kept its quotes and escapes
            raise DrocliError(f"the value has {e.problem}", key=f"{where} "
                              f"{shorten_middle(key.strip(), 60)}",
                              fix="write the character itself, or its \\U escape") from None
        except yaml.YAMLError:
            value = raw
        out.append((key.strip(), value))
    return out


def _child(node, part: str, path: str, file: str):
    """Step into a mapping key, a list index, or a list entry named by its name/label."""
    if isinstance(node, list):
        if part.lstrip("-").isdigit():
            i = int(part)
            if -len(node) <= i < len(node):
                return i
            raise DrocliError(f"index {i} out of range ({len(node)} entries)", file=file, key=path,
                              fix=f"use 0..{len(node) - 1}")
        names = [e.get("label") or e.get("name") for e in node if isinstance(e, dict)]
        for i, e in enumerate(node):
            if isinstance(e, dict) and part in (e.get("label"), e.get("name"), e.get("id")):
                return i
        raise DrocliError(f"no entry named {part!r}", file=file, key=path,
                          fix=did_you_mean(part, [n for n in names if n]))
    return part


def apply_override(raw: dict, dotted: str, value: Any, *, file: str) -> None:
    """Set `dotted` (e.g. solvers.ALEG.params.gamma_w) in the raw spec dict."""
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        raise DrocliError("empty key", file=file, fix="give a dotted key such as budget.epochs")
    if len(parts) > MAX_DEPTH:           # each part nests a level: bounded as YAML nesting is
        raise DrocliError(f"the key has more than {MAX_DEPTH} dotted parts", file=file,
                          key=shorten_middle(dotted, 60),
                          fix="give the dotted path of a spec key, e.g. data.params.n_train")
    node = raw
    for depth, part in enumerate(parts[:-1]):
        path = ".".join(parts[: depth + 1])
        k = _child(node, part, path, file)
        if isinstance(node, dict) and (k not in node or node[k] is None):
            node[k] = {}
        node = node[k]
        if not isinstance(node, (dict, list)):
            raise DrocliError(f"cannot set inside a {type(node).__name__}", file=file, key=path,
                              fix="check the key path")
    k = _child(node, parts[-1], dotted, file)
    node[k] = value


def split_top(text: str) -> list[str]:
    """Split on commas outside brackets and quotes: 'a,[1, 2],b' -> ['a', '[1, 2]', 'b']."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def sweep_key(key: str) -> str:
    """Where a swept parameter goes: data/problem/solver params -> that entry's grid."""
    if key == "seeds":
        return key
    for pattern, target in _SWEEPABLE:
        if pattern.fullmatch(key):
            return pattern.sub(target, key)
    raise DrocliError(f"{key!r} cannot be swept", key=f"-m {key}",
                      fix="sweep data.params.X, problem.params.X, solvers.LABEL.params.X or "
                          "seeds, e.g. -m solvers.ALEG.params.gamma_w=0.01,0.1")


def positional(overrides, multirun: bool) -> list[tuple[str, Any]]:
    """Positional `key=value` overrides as (key, value) pairs; with multirun, a value with
    top-level commas becomes a list set on the parameter's grid."""
    out = []
    for item in overrides or ():
        if "=" not in item:
            raise DrocliError(f"{item!r} after SPEC is not an override KEY=VALUE",
                              key="SPEC [KEY=VALUE]...",
                              fix="write e.g. data.params.groups=5 (or --set data.params."
                                  "groups=5)")
        key, value = item.split("=", 1)
        parts = split_top(value)
        if multirun and len(parts) > 1:
            values = [v for _, v in parse_set([f"{key}={p}" for p in parts],
                                              where=f"-m {key}")]
            out.append((sweep_key(key.strip()), values))
        else:
            out += parse_set([item], where="SPEC [KEY=VALUE]...")
    return out


@contextlib.contextmanager
def comma_hint(overrides, multirun: bool):
    """A value refused at load that is a KEY=a,b override without -m: say that -m sweeps
    it (a comma list is read as one text value otherwise)."""
    commas = [] if multirun else [item.split("=", 1) for item in overrides or ()
                                  if "=" in item and len(split_top(item.split("=", 1)[1])) > 1]
    try:
        yield
    except DrocliError as e:
        hit = next(((k, v) for k, v in commas if v in e.detail), None)
        if hit is None:
            raise
        raise DrocliError(e.detail, file=e.file, key=e.key,
                          fix=f"to run each of the values, add -m: `-m {hit[0]}={hit[1]}`"
                          ) from None


def _names_dropped(key: str, dropped: set[str]) -> bool:
    """Whether a dotted override key (solvers.LABEL.params.x) sets an entry left out."""
    parts = key.split(".")
    return len(parts) > 1 and parts[0] == "solvers" and parts[1] in dropped


def select(raw: dict, solvers=(), data=(), *, file: str, profile: str | None = None,
           known_cases=()) -> None:
    """Keep only the named solver entries (by label or name) and cases (by name), in place;
    claims, legends and case settings that name a solver left out are dropped with it."""
    if solvers:
        entries = raw.get("solvers") or []
        names = {str(e.get("label") or e.get("name")) for e in entries if isinstance(e, dict)}
        names |= {str(e.get("name")) for e in entries if isinstance(e, dict)}
        for s in solvers:
            if s not in names:
                raise DrocliError(f"no solver entry {s!r} in this spec", file=file,
                                  key=f"-s {s}", fix=did_you_mean(s, sorted(names)))
        keep = [e for e in entries if isinstance(e, dict)
                and ({str(e.get("label") or e.get("name")), str(e.get("name"))} & set(solvers))]
        kept = {str(e.get("label") or e.get("name")) for e in keep}
        dropped = {str(e.get("label") or e.get("name")) for e in entries} - kept
        raw["solvers"] = keep
        raw["claims"] = [c for c in raw.get("claims") or []
                         if not (isinstance(c, dict)
                                 and {c.get("solver"), *(c.get("others") or [])} & dropped)]
        for fig in raw.get("figures") or []:
            if isinstance(fig, dict) and isinstance(fig.get("legend"), list):
                fig["legend"] = [x for x in fig["legend"] if x not in dropped]
        for case in (raw.get("cases") or {}).values():   # a case's settings of a dropped entry
            if isinstance(case, dict):
                for key in [k for k in case if _names_dropped(str(k), dropped)]:
                    del case[key]
    if data:
        cases = raw.get("cases") or {}
        if cases:
            for d in data:
                if d in known_cases and d not in cases:
                    raise DrocliError(f"profile {profile!r} drops case {d!r} (its cases: "
                                      f"{', '.join(map(str, cases))})", file=file,
                                      key=f"-d {d}", fix=f"give -d {' or -d '.join(cases)}, or "
                                      "a profile that keeps it (the spec as written has it)")
                if d not in cases:
                    raise DrocliError(f"no case {d!r} in this spec", file=file, key=f"-d {d}",
                                      fix=did_you_mean(d, list(cases)))
            raw["cases"] = {k: v for k, v in cases.items() if k in data}
        else:
            name = str((raw.get("data") or {}).get("name"))
            wrong = [d for d in data if d != name]
            if wrong:
                raise DrocliError(f"this spec has one data source, {name!r}, and no cases",
                                  file=file, key=f"-d {wrong[0]}",
                                  fix=f"give -d {name}, or leave -d out")
