"""The cells of a page's verdict table: a claim's status with its flags, one row per
comparison (effect, interval, verdict), the note its rows share, and how many seeds would
decide an inconclusive claim. The Markdown and the HTML page lay out the same cells.
"""

from __future__ import annotations

import html
import math

from drocli.report.page import Page


def _effects(c) -> str:
    from drocli.claims.judge import effects_text

    return effects_text(c.effects) if c.effects else ""


def flags(c) -> str:
    """The registration and tuning flags of a claim result, in words ('' if none)."""
    reg = c.registration or {}
    out = []
    if reg.get("status") == "post_hoc":
        out.append(f"post hoc ({reg.get('why')})")
    elif reg.get("status") == "confirmed":
        out.append("written after earlier runs; judged on the seeds first run after it was "
                   "fixed (" + ", ".join(map(str, reg.get("confirmed_seeds", []))) + ")")
    if c.tuned_on:
        out.append("judged on tuning seed(s) " + ", ".join(map(str, c.tuned_on)))
    paper = getattr(c, "paper", None) or {}
    if paper.get("status") == "supported":
        out.append("the paper's own numbers show it")
    elif paper.get("status") == "unsupported":
        ours = paper.get("ours", {})
        out.append(f"the paper's own numbers do not show it: {paper.get('detail', '')}; on "
                   f"ours alone: {ours.get('status', '?').replace('_', ' ')}")
    from drocli.claims.cause import NEGATIVE, label

    why = getattr(c, "cause", None) or {}
    if why and c.status in NEGATIVE:
        out.append(f"cause: {label(why)}")
    return "; ".join(out)


def _source(c) -> str:
    """The paper's words of a claim result: 'where: "quote"' (empty without a source)."""
    s = c.source
    return f"{s.where}: \u201c{' '.join(s.quote.split())}\u201d" if s is not None else ""


def _note_of(effects: dict) -> str:
    """The procedure and sample of a claim's effects: 'paired-t 95 % over 10 seeds'."""
    first = next(iter(effects.values()))
    n = max(e["n"] for e in effects.values())
    unit = first.get("unit", "seed")
    return (f"{first.get('method', 'paired-t')} {first['confidence']:.0%} over {n} "
            f"{unit}{'s' if n != 1 else ''}")


def comparisons(c) -> list[tuple[str, str, str, str]]:
    """One (other, effect, interval, verdict) per comparison of a claim result."""
    from drocli.claims.inference import CANNOT_DECIDE
    from drocli.claims.judge import _word

    out = []
    for other, e in (c.effects or {}).items():
        thr = f" vs threshold {e['threshold']:g}" if e.get("threshold") else ""
        mean = f"{e['mean']:+.3g}" if e.get("mean") is not None else "n/a"
        if e.get("p_holds") is not None:
            interval = f"p = {e['p_holds']:.3g} for, {e['p_refutes']:.3g} against"
        elif e.get("lo") is None:
            interval = f"no interval: {e.get('why', 'n = ' + str(e.get('n')))}"
        else:
            interval = f"[{e['lo']:+.3g}, {e['hi']:+.3g}]{thr}"
        extra = []
        cannot = str(e.get("why", "")).startswith(CANNOT_DECIDE)   # said on the claim's row
        if e.get("why") and e.get("lo") is not None and not cannot:
            extra.append(e["why"])
        if e.get("unpaired"):
            extra.append(f"{e['unpaired']} diverged pair(s) left out")
        if "seeds_to_decide" in e and not cannot:
            extra.append(_decide(e["seeds_to_decide"]))
        verdict = "-" if e.get("lo") is None and e.get("p_holds") is None else _word(e["verdict"])
        out.append((str(other), mean, interval + (f" ({'; '.join(extra)})" if extra else ""),
                    verdict))
    return out


def _decide(need) -> str:
    """'about 40 seeds to decide' for an inconclusive effect (None or inf: no number)."""
    if need is None or need == math.inf:
        return "no number of seeds decides at this estimate"
    return f"about {need:,.0f} seeds to decide"


def _distance(c) -> tuple[float, int]:
    """(seeds that would decide the claim at its estimates, seeds it was judged on); nan
    when not estimated (no effects, or none with an interval)."""
    from drocli.claims.judge import seeds_to_decide

    if not c.effects:
        return math.nan, 0
    return seeds_to_decide(c.effects), max(e["n"] for e in c.effects.values())


def _cannot(c) -> str:
    """The reason an inconclusive claim can never decide, when its kind gave one for each
    undecided comparison ('' otherwise)."""
    from drocli.claims.inference import CANNOT_DECIDE

    whys = {str(e.get("why", "")) for e in (c.effects or {}).values()
            if e.get("verdict") == "inconclusive"}
    why = next(iter(whys)) if len(whys) == 1 else ""
    return why if why.startswith(CANNOT_DECIDE) else ""


def decision_note(c) -> str:
    """For an inconclusive claim: how many seeds would decide it at its estimates, or why
    none can."""
    if c.status != "inconclusive":
        return ""
    if _cannot(c):
        return _cannot(c)
    need, n = _distance(c)
    if math.isnan(need):
        return ""
    if need == math.inf:
        return "no number of seeds would decide it at the estimated effects"
    return (f"about {need:,.0f} seeds would decide it at the estimated effects "
            f"({need / max(n, 1):.3g}x the {n} judged; 80 % power)")


def seeds_note(page: Page) -> str:
    """The procedure and seed count of the page's intervals, said once when they agree."""
    notes = {_note_of(c.effects) for c in page.claims if c.effects}
    return next(iter(notes)) if len(notes) == 1 else ""


def _status(c) -> str:
    from drocli.claims import tag

    return tag(c) + (f" ({flags(c)})" if flags(c) else "")


def _overall(c) -> str:
    """The verdict column: the effects' overall word, or the claim's own verdict where it
    has no effects (an exact statement about every run, a recorded verdict)."""
    from drocli.claims import tag
    from drocli.claims.judge import _word, overall

    return _word(overall(c.effects)) if c.effects else tag(c).lower()


def _claim_note(c, shared: str, words: str = "") -> str:
    """What a claim's comparison rows share beyond the page's note: what its effects are
    (unit and sign), its own procedure when the page's differ, its multiple-comparison
    level, how many seeds would decide it."""
    from drocli.claims.judge import refute_words

    if not c.effects:
        return "not judged on this profile" if c.status == "skipped" else "no effect computed"
    bits = [words] + ([] if shared else [_note_of(c.effects)])
    bits.append(refute_words(c.effects))
    bits.append(decision_note(c))
    return "; ".join(b for b in bits if b)


def _verdicts_text(page: Page, as_html: bool) -> str:
    """The procedure paragraph, its closing 'docs/verdicts.md says why.' a link."""
    from drocli.cli.listing import VERDICTS

    tail = "docs/verdicts.md says why."
    body = VERDICTS[: -len(tail)] if VERDICTS.endswith(tail) else VERDICTS
    if page.docs is None:
        return html.escape(VERDICTS) if as_html else VERDICTS
    href = f"{page.docs}/verdicts.md"
    if as_html:
        return f'{html.escape(body)}<a href="{html.escape(href)}">docs/verdicts.md</a> says why.'
    return f"{body}[docs/verdicts.md]({href}) says why."
