"""Discovery text generated from the registry: kind tables and per-entry parameter tables."""

from __future__ import annotations

import textwrap

from drocli.plugins import discovery


def _summaries(kind: str) -> dict[str, tuple[str | None, str]]:
    """name -> (family, one line), from the sources alone when every decorator's arguments
    are literals and no name is claimed twice (then neither pydantic nor a plug-in is
    imported), else from the registry, which refuses a clash or shows an override."""
    idx = discovery.index()[kind]
    static = discovery.STATIC.get(kind, {})
    if set(idx) <= set(static) and not any(len(discovery.claimants(kind, n)) > 1 for n in idx):
        return {n: static[n] for n in sorted(idx)}
    from drocli.plugins import registry

    return registry.static_summaries(kind)


VERDICTS = ("Every kind is judged on one number per seed: the paired differences between "
            "the two methods over the seeds give an interval at the claim's confidence (for "
            "the seed spread, an exact sign-flip test instead). Against several others a "
            "claim HOLDS only if it holds against every one, and is NOT REPRODUCED if it "
            "fails against any one; each of those tests is then made stricter (against 3 "
            "others at 98.33 % instead of 95 %) so that all of them together keep the "
            "claim's confidence. Fewer than 3 seeds are always INCONCLUSIVE. "
            "docs/verdicts.md says why.")


def table(kind: str) -> str:
    """`drocli list solvers`: name, family and one line per entry (read from the sources
    where the decorator's arguments are literals: no plug-in is imported for a listing)."""
    rows = _summaries(kind)
    lines = [f"{discovery.PLURAL[kind]}:"]
    width = max((len(n) for n in rows), default=4)
    fam_w = max((len(f or "") for f, _ in rows.values()), default=0)
    for name, (family, summary) in rows.items():
        fam = f"{family or '':<{fam_w}}  " if fam_w else ""
        lines.append(f"  {name:<{width}}  {fam}{summary}")
    if kind == "claim":
        lines += ["", *textwrap.wrap(VERDICTS, 92)]
    return "\n".join(lines)


def nested_rows(model, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """Rows of the fields of the models a parameter holds (a figure's `panels` are
    PanelSpec entries: `panels[].metric`, ...), so `list` shows every key a spec may use."""
    import typing

    from pydantic import BaseModel

    from drocli.plugins import registry

    out = []
    for name, f in model.model_fields.items():
        stack, inner = [f.annotation], []
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                inner.append(t)
            else:
                stack += list(typing.get_args(t))
        for sub in dict.fromkeys(inner):
            many = typing.get_origin(f.annotation) in (list, tuple) or "list" in str(
                f.annotation)
            head = f"{prefix}{name}{'[]' if many else ''}."
            out += [(head + r[0], *r[1:]) for r in registry.param_rows(sub)]
            out += nested_rows(sub, head)
    return out


def describe(kind: str, name: str) -> str:
    """`drocli list solvers aleg`: the entry's summary, then every parameter with its type,
    range, default and description; problems also list their metrics."""
    from drocli.plugins import registry

    e = registry.get(kind, name, key=f"list {registry.PLURAL[kind]}")
    head = f"{kind} {name}" + (f" [{e.family}]" if e.family else "")
    lines = [head, *textwrap.wrap(e.summary, 92, initial_indent="  ",
                                  subsequent_indent="  ")]
    if e.reference:
        lines += textwrap.wrap(e.reference, 92, initial_indent="reference: ",
                               subsequent_indent="  ")
    lines.append(f"defined in: {registry.origin(e.func)}")
    if e.replaces:
        lines.append(f"replaces: {e.replaces} (registered with replace=True)")
    rows = registry.param_rows(e.params)
    rows += nested_rows(e.params)
    if rows:
        lines.append("parameters:")
        w_name = max(len(r[0]) for r in rows)
        w_type = min(max(len(r[1]) for r in rows), 34)
        w_def = min(max(len(r[2]) for r in rows), 14)
        for pname, ptype, default, desc in rows:
            lead = f"  {pname:<{w_name}}  {ptype:<{w_type}}  {default:<{w_def}}  "
            wrapped = textwrap.wrap(desc, max(30, 100 - len(lead))) or [""]
            lines.append(lead + wrapped[0])
            lines += [" " * len(lead) + w for w in wrapped[1:]]
    else:
        lines.append("parameters: none")
    if e.metrics:
        lines.append("metrics: " + ", ".join(e.metrics))
    if kind == "claim":
        lines += textwrap.wrap("verdict: " + VERDICTS, 92)
    return "\n".join(lines)
