"""Why a claim's verdict is negative: one cause from one documented list (issue 55).

A claim marked not reproduced (`reproduced: false`), and any claim whose verdict may come out
negative, says why in `cause: {kind, note[, key]}`, written beside its mark:

- `paper_numbers`: the paper's own reported numbers do not show it either;
- `stand_in`: our data or model stands in for the paper's;
- `setting`: a setting we chose that differs from the paper's, named by its spec `key`;
- `timing`: the times compared were measured apart from the compared methods, or on
  another machine;
- `undecidable`: the test cannot decide it, however many seeds;
- `genuine`: the setting matches the paper's and the claim does not hold;
- `test`: our test does not read the paper's sentence; a claim that corrects it
  (`revises: {claim: ID}`) is judged in a new study on fresh seeds, registered before it
  runs, and the report shows both verdicts.

The cause is an explanation, not part of the test: it stays out of the claim's registration
hash, as `source` does. It is validated twice. On load, against the spec: a `setting` key
must name a key the spec holds, `stand_in` needs a spec whose title says it runs a stand-in,
`paper_numbers` a spec naming the paper's numbers (`reported:`), `timing` a claim on time.
After judging, against the verdict (`apply`): a `paper_numbers` cause on a claim those
numbers do support is wrong, and a negative verdict without a cause says so.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from drocli.plugins.registry import Params

KINDS = {
    "paper_numbers": "not supported by the paper's own numbers",
    "stand_in": "stand-in data or model",
    "setting": "a setting we chose",
    "timing": "timing measured apart or on another machine",
    "undecidable": "a test that cannot decide",
    "genuine": "genuine: the paper's setting, and the claim does not hold",
    "test": "a defect of our test, revised and judged again on fresh seeds",
}
NEGATIVE = ("fails", "not_reproduced")
NONE_GIVEN = "no cause given"


class Cause(Params):
    """Why a negative verdict is negative (drocli.claims.cause)."""

    kind: Literal[tuple(KINDS)] = Field(description="one of: " + "; ".join(
        f"{k} ({v})" for k, v in KINDS.items()))
    note: str = Field(min_length=20, description="the evidence, in a sentence: what differs "
                      "from the paper and what it does to the claim")
    key: str | None = Field(None, min_length=2, description="with kind `setting`: the spec "
                            "key of the setting, e.g. solvers.AS-LSVRG.params.step")


def check_on_load(claim, raw: dict, file: str | None, key: str, claims=()) -> None:
    """A claim's cause against its spec (`raw`: the spec as written, before its profile and
    overrides, so that a key a profile drops still counts; `claims`: the claims' models,
    whose fields a `setting` key may name at their default, e.g. claims.ID.x). A claim
    marked not reproduced must have one, except in a results folder's saved spec, which
    may predate causes. DrocliError."""
    from drocli.errors import DrocliError

    if "profile" in raw:   # a results folder's saved spec: resolved (its cases may be
        return             # dropped), checked when it ran, and it may predate causes
    cause = getattr(claim, "cause", None)
    if cause is None:
        if claim.reproduced is not True:
            raise DrocliError("a claim marked not reproduced needs a cause", file=file,
                              key=f"{key}.cause", fix="add `cause: {kind: ..., note: ...}` "
                              f"with kind one of {', '.join(KINDS)} (docs/verdicts.md, "
                              "'Why a verdict is negative')")
        return
    where = f"{key}.cause"
    if cause.kind == "setting":
        if not cause.key:
            raise DrocliError("a `setting` cause names its spec key", file=file,
                              key=f"{where}.key", fix="add `key:` with the dotted path of the "
                              "setting, e.g. budget.epochs or solvers.ALEG.params.gamma_w")
        if not has_key(raw, cause.key) and not _claim_field(claims, cause.key):
            raise DrocliError(f"no spec key {cause.key!r}", file=file, key=f"{where}.key",
                              fix="give the dotted path of a key the spec sets (list entries "
                              "by label or name, case keys as written)")
    elif cause.key is not None:
        raise DrocliError(f"only a `setting` cause takes `key`, this one is {cause.kind!r}",
                          file=file, key=f"{where}.key", fix="drop `key:`")
    if cause.kind == "stand_in" and "stand-in" not in str(raw.get("title", "")).lower():
        raise DrocliError("a `stand_in` cause needs a spec whose title says it runs a "
                          "stand-in", file=file, key=f"{where}.kind",
                          fix="say 'stand-in' in the spec's title, or choose another kind")
    if cause.kind == "paper_numbers" and not raw.get("reported"):
        raise DrocliError("a `paper_numbers` cause needs the paper's numbers (`reported:`)",
                          file=file, key=f"{where}.kind",
                          fix="add the spec's `reported:` block, or choose another kind")
    on_time = claim.kind == "wall_time_below" or "time" in str(claim.metric or "") \
        or getattr(claim, "x", None) == "time_s"         # e.g. reach_first along seconds
    if cause.kind == "test" and not any(
            isinstance(c, dict) and isinstance(c.get("revises"), dict)
            and c["revises"].get("claim") == claim.id for c in raw.get("claims") or []):
        raise DrocliError("a `test` cause needs the claim that corrects the test", file=file,
                          key=f"{where}.kind", fix=f"add a claim with `revises: {{claim: "
                          f"{claim.id}, changes: ...}}` in a profile of fresh seeds, or "
                          "choose another kind")
    if cause.kind == "timing" and not on_time:
        raise DrocliError("a `timing` cause belongs to a claim on time", file=file,
                          key=f"{where}.kind", fix="choose another kind")


def _claim_field(claims, dotted: str) -> bool:
    """claims.ID.FIELD, a field of that claim's kind (set or at its default)."""
    parts = dotted.split(".")
    if len(parts) != 3 or parts[0] != "claims":
        return False
    return any(c.id == parts[1] and parts[2] in type(c).model_fields for c in claims)


def has_key(node, dotted: str) -> bool:
    """Whether the dotted path names a value in the raw spec: mapping keys (a case's flat
    dotted keys and names such as C=2 as written), list entries by label, name, id or
    index."""
    parts = dotted.split(".")
    if not parts or not parts[0]:
        return False
    if isinstance(node, dict):
        for n in range(len(parts), 0, -1):         # the longest key written with dots first
            head = ".".join(parts[:n])
            if head in node:
                if n == len(parts) or has_key(node[head], ".".join(parts[n:])):
                    return True
        return False
    if isinstance(node, list):
        head, rest = parts[0], ".".join(parts[1:])
        for i, e in enumerate(node):
            names = {str(i)} | ({str(e.get(k)) for k in ("label", "name", "id") if e.get(k)}
                                if isinstance(e, dict) else set())
            if head in names and (not rest or has_key(e, rest)):
                return True
    return False


def apply(results: list, claims: list) -> list:
    """Each result gets its claim's cause ({kind, note[, key]}); a negative verdict without
    one gets {kind: None, note: NONE_GIVEN}; a `paper_numbers` cause on a claim the paper's
    numbers support is said to be contradicted (`wrong`)."""
    by_id = {c.id: c for c in claims}
    for r in results:
        c = getattr(by_id.get(r.id), "cause", None)     # a Cause (opaque claims too)
        if c is not None:
            r.cause = c.model_dump(mode="json", exclude_none=True)
            if c.kind == "paper_numbers" and r.paper.get("status") == "supported":
                r.cause["wrong"] = "the paper's own numbers do show this claim"
        elif r.status in NEGATIVE:
            r.cause = {"kind": None, "note": NONE_GIVEN}
    return results


def label(cause: dict) -> str:
    """'stand-in data or model: NOTE' (or NONE_GIVEN)."""
    if not cause:
        return ""
    if cause.get("kind") is None:
        return NONE_GIVEN
    text = KINDS.get(cause["kind"], cause["kind"])
    if cause.get("key"):
        text += f" ({cause['key']})"
    text += f": {cause.get('note', '')}"
    if cause.get("wrong"):
        text += f" [cause contradicted: {cause['wrong']}]"
    return text


def counts(results: list) -> dict:
    """Negative verdicts (FAILS, NOT REPRODUCED) per cause kind (None: no cause given)."""
    out: dict = {}
    for r in results:
        if r.status in NEGATIVE:
            k = (r.cause or {}).get("kind")
            out[k] = out.get(k, 0) + 1
    return out


SHORT = {"paper_numbers": "paper's numbers", "stand_in": "stand-in", "setting": "setting",
         "timing": "timing", "undecidable": "cannot decide", "genuine": "genuine",
         "test": "test revised", None: "no cause given"}


def summary(by_kind: dict) -> str:
    """'3 stand-in, 1 setting' in the list's order ('' for none)."""
    order = [*KINDS, None]
    return ", ".join(f"{by_kind[k]} {SHORT[k]}" for k in order if by_kind.get(k))
