"""Cases that start from another case (`base: NAME`): each case's overrides merged with its
bases', resolved before a spec is validated, so the saved spec holds each case's merged
overrides and no `base`."""

from __future__ import annotations

import copy

from drocli.errors import DrocliError, did_you_mean

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
