"""Claims whose cells did not finish (issue 56): a cell stopped at its wall limit or failed
leaves no rows in the records, and judging the claim on the seeds that did finish would
judge a sample chosen by how the runs ended. Such a claim is not judged: its status is
`incomplete`, and its line names each missing cell and why. `check` exits with
drocli.results.status.UNFINISHED_EXIT when a claim marked reproduced is left so.

Which cells a claim needs is read from the manifest alone (each unfinished cell's label,
seed and identity columns, `manifest.where`), matched against the claim's labels, filter
and panels, so it needs none of the plug-ins."""

from __future__ import annotations

from drocli.results.status import unfinished

SHOWN = 4       # cells named on a claim's line; the rest counted


def cells(manifest: dict) -> list[dict]:
    """The manifest's cells that ran and did not finish, each with its id as `cell`."""
    listed = manifest.get("cells") if isinstance(manifest.get("cells"), dict) else {}
    return [{**st, "cell": cid} for cid, st in listed.items() if unfinished(st)]


def _matches(where: dict, filt: dict | None) -> bool:
    """Whether a cell's identity columns pass a records filter (columns the cell does not
    carry, and the metric, select nothing out: the cell counts)."""
    for col, want in (filt or {}).items():
        if col == "metric" or col not in where:
            continue
        wanted = want if isinstance(want, list | tuple | set) else [want]
        have = where[col]
        if not any(str(have) == str(w) or _same_number(have, w) for w in wanted):
            return False
    return True


def _same_number(a, b) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def needed(claim, missing: list[dict]) -> list[dict]:
    """The unfinished cells a claim would judge: its labels, inside its filter and, for a
    claim judged in panels, inside one of them."""
    from drocli.claims.base import panel_parts

    out = []
    for st in missing:
        where = {"label": st.get("label"), "seed": st.get("seed"), **(st.get("where") or {})}
        if str(st.get("label")) not in claim.labels or not _matches(where, claim.filter):
            continue
        panels = [panel_parts(p)[0] for p in (claim.panels or [])]
        if panels and not any(_matches(where, p) for p in panels):
            continue
        out.append(st)
    return out


def describe(missing: list[dict]) -> str:
    """'2 cell(s) it compares did not finish: ALEG seed 3 (timeout: ...), ...'."""
    shown = []
    for st in missing[:SHOWN]:
        where = st.get("where") or {}
        at = "".join(f", {k}={v}" for k, v in where.items() if k != "dataset")
        why = " ".join(str(st.get("error") or "no reason recorded").split())[:120]
        shown.append(f"{st.get('label')} seed {st.get('seed')}{at} ({st.get('status')}: "
                     f"{why})")
    more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
    return (f"not judged: {len(missing)} cell(s) it compares did not finish, and judging "
            f"the seeds that did would judge a sample chosen by how runs ended: "
            f"{'; '.join(shown)}{more}; re-run the spec with `drocli run` to run them again")


def apply(results: list, claims: list, manifest: dict, profile: str) -> list:
    """`results` with each claim whose cells did not finish made `incomplete` (a claim
    skipped because its labels are missing from the records is among them; one not for
    this profile stays skipped)."""
    from drocli.claims.base import judged_on, validate_claim

    missing = cells(manifest or {})
    if not missing:
        return results
    for r, raw in zip(results, claims, strict=True):
        claim = validate_claim(raw)
        if not judged_on(claim.profiles, profile):
            continue
        gone = needed(claim, missing)
        if gone:
            r.status, r.detail, r.effects = "incomplete", describe(gone), {}
    return results
