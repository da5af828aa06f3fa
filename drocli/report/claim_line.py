"""One line per claim in plain words, the verdict table's row: the verdict, the effect of
the comparison that decided it with its interval and units (the worst of several), the
size it is judged against and a short reason. Every cell stays under MAX_WORDS words; the
full test, each comparison and the whole cause sit in the claim's details
(claim_details.py). Read from the claim results the page holds, never recomputed.
"""

from __future__ import annotations

import math
import re

from drocli.report.page import Page

MAX_WORDS = 60
REASON_WORDS = 30                 # a cause's note or a 'why' cut to its first clause
LINE_HEAD = ("effect [interval] of the deciding comparison | size (the interval must lie "
             "above it) | why")
LINE_WORDS = ("One line per claim: the comparison that decided it (of several, the worst "
              "for the claim), its effect and interval in the claim's units, the size it "
              "is judged against and a short reason. The claim's name links to the claim "
              "in full: its test, every comparison and the whole cause.")
X_WORDS = {"oracle_calls": "oracle calls", "time_s": "seconds", "step": "checkpoints",
           "iteration": "iterations", "epoch": "epochs", "round": "rounds"}


def clip(text: str, words: int) -> str:
    """`text` cut to its first `words` words, with '...' when cut."""
    parts = " ".join(str(text).split()).split(" ")
    return " ".join(parts) if len(parts) <= words else " ".join(parts[:words]) + " ..."


def first_clause(text: str, words: int = REASON_WORDS) -> str:
    """The text up to its first sentence or clause end ('. ', '; ', outside brackets), if
    that comes within `words` words; else its first `words` words."""
    text = " ".join(str(text).split())
    depth, end = 0, None
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if depth <= 0 and ch in ".;" and text[i + 1: i + 2] == " " and text[i - 1: i] != ".":
            end = i
            break
    head = text if end is None else text[:end]
    cut = end is not None and len(head.split()) <= words
    return clip(head, words) + (" ..." if cut else "")


def _score(e: dict) -> float:
    """How far a comparison's evidence is for the claim, in its own interval's
    half-widths (low: against); the sign-flip test's p-values instead of an interval."""
    if e.get("p_holds") is not None:
        return float(e.get("p_refutes", 1.0)) - float(e["p_holds"])
    if e.get("lo") is None or e.get("mean") is None:
        return math.inf
    d = float(e["mean"]) - float(e.get("threshold") or 0.0)
    half = (float(e["hi"]) - float(e["lo"])) / 2
    if half > 0:
        return d / half
    return 0.0 if d == 0 else math.copysign(math.inf, d)


def deciding(claim) -> tuple[str, dict] | None:
    """(comparison, effect) that decided a claim: among the comparisons whose verdict is
    the claim's overall one (every one for HOLDS, a refuted one for a refutation), the
    worst for the claim; None without effects."""
    from drocli.claims.judge import overall

    effects = claim.effects or {}
    if not effects:
        return None
    word = overall(effects)
    pool = [(k, e) for k, e in effects.items() if e.get("verdict") == word] or list(
        effects.items())
    return min(pool, key=lambda kv: _score(kv[1]))


def metric_name(page: Page, metric: str) -> str:
    """A metric as the spec names it where it draws it (page.metric_names), else its key
    with spaces."""
    return (page.metric_names or {}).get(metric) or X_WORDS.get(metric) or metric.replace(
        "_", " ")


def unit_words(page: Page, claim_id: str, key: str) -> str:
    """The unit of one comparison's effect, readable: a panel's own metric, else the
    claim's unit with its metric or x-column named in words."""
    m = re.search(r"\bmetric=([^,]+)", key.partition(" @ ")[2])
    if m:
        return metric_name(page, m.group(1).strip())
    unit = (page.units or {}).get(claim_id, "")
    if unit.startswith("units of "):
        return metric_name(page, unit[len("units of "):])
    return X_WORDS.get(unit, unit)


def _who(key: str) -> str:
    """A comparison's name without the panel's metric (the unit names it)."""
    other, _, where = key.partition(" @ ")
    where = ", ".join(p for p in where.split(", ") if p and not p.startswith("metric="))
    return f"{other} @ {where}" if where else other


def effect_cell(page: Page, claim, got: tuple[str, dict] | None) -> str:
    """'OMDgd-TCH: -0.0204 [-0.0295, -0.0113] Agnostic loss (worst of 4)' for the deciding
    comparison `got` (`deciding(claim)`)."""
    if got is None:
        return "-"
    key, e = got
    unit = unit_words(page, claim.id, key)
    mean = f"{e['mean']:+.3g}" if e.get("mean") is not None else "n/a"
    if e.get("p_holds") is not None:
        value = f"{mean} {unit} (sign-flip p = {e['p_holds']:.2g} for)"
    elif e.get("lo") is None:
        value = f"{mean} {unit} (no interval)"
    else:
        value = f"{mean} [{e['lo']:+.3g}, {e['hi']:+.3g}] {unit}"
    n = len(claim.effects)
    return f"{_who(key)}: {value}" + (f" (worst of {n})" if n > 1 else "")


def size_cell(page: Page, claim, got: tuple[str, dict] | None) -> str:
    """The threshold the deciding interval (`got`) must clear, in the effect's unit ('-'
    without effects), and the factor a claim scales the other's value by."""
    if got is None:
        return "-"
    thr = float(got[1].get("threshold") or 0.0)
    factor = (page.factors or {}).get(claim.id, 1.0)
    scaled = f" (the other's value x {factor:g})" if factor not in (None, 1, 1.0) else ""
    return f"{thr:g}{scaled}"


def reason_cell(claim, got: tuple[str, dict] | None) -> str:
    """Why the verdict, short: the cause's kind and first clause, the paper's numbers, why
    the deciding interval (`got`) cannot decide, how many seeds would; the registration
    flags after."""
    from drocli.claims.cause import NEGATIVE, SHORT
    from drocli.claims.inference import CANNOT_DECIDE
    from drocli.report.verdict_table import _distance

    e = got[1] if got else {}
    why = str(e.get("why") or "")
    paper = claim.paper or {}
    if claim.status == "unsupported":
        ours = (paper.get("ours") or {}).get("status", "?").replace("_", " ")
        detail = first_clause(paper.get("detail", ""), 20)
        text = f"the paper's own numbers do not show it: {detail}; on ours alone: {ours}"
    elif claim.status in NEGATIVE:
        cause = claim.cause or {}
        kind = SHORT.get(cause.get("kind"), cause.get("kind") or "no cause given")
        key = f" ({cause['key']})" if cause.get("key") else ""
        note = first_clause(cause.get("note", ""), 22)
        text = f"{kind}{key}: {note}" if note else kind
    elif claim.cannot_decide:
        text = first_clause(why, REASON_WORDS) if why.startswith(CANNOT_DECIDE) else \
            "cannot decide"
    elif claim.status == "inconclusive":
        text = "the interval straddles the size"
        if why:
            text += f": {first_clause(why, 22)}"
        need, n = _distance(claim)
        if not math.isnan(need):
            text += ("; no number of seeds would decide it" if need == math.inf else
                     f"; about {need:,.0f} seeds would decide it ({n} judged)")
    elif claim.status in ("holds", "unexpectedly_holds"):
        text = ("exact sign-flip test for the claim" if e.get("p_holds") is not None else
                "the whole interval lies above the size" if e else first_clause(claim.detail))
        if claim.status == "unexpectedly_holds":
            text += ", though the spec marks it not reproduced"
        if paper.get("status") == "supported":
            text += "; the paper's own numbers show it too"
    else:
        text = first_clause(claim.detail, REASON_WORDS)
    if claim.post_hoc:
        text += "; post hoc"
    elif (claim.registration or {}).get("status") == "confirmed":
        text += "; confirmed on seeds run after it was written"
    if claim.tuned_on:
        text += "; judged on tuning seeds"
    return clip(text, MAX_WORDS)


def claim_line(page: Page, claim) -> tuple[str, str, str, str]:
    """(verdict, effect, size, reason) of one claim, each under MAX_WORDS words; the
    deciding comparison is found once and read by the three cells."""
    from drocli.claims import tag

    got = deciding(claim)
    return (tag(claim), clip(effect_cell(page, claim, got), MAX_WORDS),
            clip(size_cell(page, claim, got), MAX_WORDS), reason_cell(claim, got))
