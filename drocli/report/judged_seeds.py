"""The seeds a page's claims were judged on: per claim the seeds of its deciding look (or
of its last look when undecided; a confirmed post-hoc claim's confirmed seeds), their
union written with runs of consecutive seeds as ranges, for the page header."""

from __future__ import annotations


def ranges(seeds) -> str:
    """'300-319, 325': sorted integer seeds with consecutive runs as ranges (others listed
    after, as they are)."""
    ints = sorted({int(s) for s in seeds if _is_int(s)})
    rest = sorted({str(s) for s in seeds if not _is_int(s)})
    parts, start = [], None
    for i, s in enumerate(ints):
        if start is None:
            start = s
        if i + 1 == len(ints) or ints[i + 1] != s + 1:
            parts.append(str(start) if start == s else f"{start}-{s}")
            start = None
    return ", ".join(parts + rest)


def _is_int(s) -> bool:
    try:
        return float(s) == int(float(s))
    except (TypeError, ValueError, OverflowError):
        return False


def claim_seeds(claim) -> list:
    """The seeds one claim result was judged on."""
    reg = claim.registration or {}
    if reg.get("status") == "confirmed" and reg.get("confirmed_seeds"):
        return list(reg["confirmed_seeds"])
    return list(dict.fromkeys((claim.judged or {}).values()))


def seeds_row(claims, spec_seeds) -> str:
    """'300-319 (claims decided at 10 or 20 seeds; the spec's seeds 300-309)': the union
    over the claims of the seeds each was judged on; the spec's seeds alone when no claim
    records its seeds."""
    judged = [c for c in claims if c.status != "skipped" and claim_seeds(c)]
    spec = ranges(spec_seeds) or "none"
    if not judged:
        return f"{spec} (the spec's seeds; no claim judged)"
    union = {s for c in judged for s in claim_seeds(c)}
    counts = sorted({len(claim_seeds(c)) for c in judged})
    how = " or ".join(map(str, counts)) if len(counts) <= 3 else f"{counts[0]} to {counts[-1]}"
    open_ = any(c.status == "inconclusive" for c in judged)
    word = "decided (or last judged, if undecided)" if open_ else "decided"
    tail = "" if ranges(union) == spec else f"; the spec's seeds {spec}"
    return f"{ranges(union)} (claims {word} at {how} seeds{tail})"
