"""The command-line conventions users bring from hydra and benchopt, turned into drocli's
own overrides: `drocli run SPEC key=value ...` (positional, as `--set`), `-m/--multirun`
with `key=a,b,c` (a sweep: the spec's grid for that parameter, so the legend labels carry
the value), and `-s/--solver`, `-d/--data` to run only some of a spec's entries."""

from __future__ import annotations

import re
from typing import Any

from drocli.errors import DrocliError, did_you_mean

_SWEEPABLE = ((re.compile(r"(data|problem)\.params\.([^.]+)"), r"\1.grid.\2"),
              (re.compile(r"solvers\.([^.]+)\.params\.([^.]+)"), r"solvers.\1.grid.\2"))


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
    from drocli.spec import parse_set

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


def select(raw: dict, solvers=(), data=(), *, file: str) -> None:
    """Keep only the named solver entries (by label or name) and cases (by name), in place;
    claims and legends that name a solver left out are dropped with it."""
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
    if data:
        cases = raw.get("cases") or {}
        if cases:
            for d in data:
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
