"""The notes under a curves figure's legend: what each panel left out, cut or drew
specially (seeds diverged, values <= 0 on a log axis, coinciding curves, runs ending
short, bands cut, gaps on a log x-axis), gathered once for the figure and never written
over the curves."""

from __future__ import annotations

from dataclasses import dataclass, field

from drocli.figures.style import GAP_DECADES, NOTE_COLOR, OVERLAP, WARN_COLOR


@dataclass
class _Drawn:
    """What a drawn panel tells the figure: its notes (category -> details, written once
    under the legend, never over the curves) and the slope of its dashed guide, if any."""

    name: str
    notes: dict = field(default_factory=dict)
    guide: float | None = None

    def note(self, category: str, detail) -> None:
        self.notes.setdefault(category, []).append(detail)


def _fmt_x(v: float) -> str:
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _figure_notes(drawn: list[_Drawn], xlabels: list[str]) -> list[tuple[str, str]]:
    """The panels' notes as lines under the legend (text, colour): what was left out, cut or
    drawn specially, and in which panels (named by their titles; none when the figure has
    one panel)."""
    single = len(drawn) == 1

    def and_list(names) -> str:
        names = list(dict.fromkeys(names))
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    def by_panel(category, fmt) -> str | None:
        groups: dict[str, list[str]] = {}
        for d in drawn:
            if d.notes.get(category):
                groups.setdefault(fmt(d.notes[category]), []).append(d.name)
        if not groups:
            return None
        if single:
            return "; ".join(groups)
        return "; ".join(f"{text} in {and_list(f'‘{n}’' for n in names)}"
                         for text, names in groups.items())

    out = []
    text = by_panel("diverged", lambda ds: ", ".join(ds))
    if text:
        out.append((f"Diverged seeds, left out from their first non-finite value: {text}.",
                    WARN_COLOR))
    text = by_panel("nonpos", lambda ds: ", ".join(ds))
    if text:
        out.append((f"Values <= 0 left out (log axis): {text}.", WARN_COLOR))
    text = by_panel("overlap", lambda gs: "; ".join(and_list(g) for g in gs))
    if text:
        out.append((f"Coinciding curves (within {OVERLAP:.1%} of the axis height) are drawn "
                    f"with interleaved dashes: {text}.", NOTE_COLOR))
    short: dict[str, list[float]] = {}
    for d in drawn:
        for lab, lo, hi in d.notes.get("short", ()):
            r = short.setdefault(lab, [lo, hi])
            r[0], r[1] = min(r[0], lo), max(r[1], hi)
    if short:
        what = "; ".join(f"{lab} {_fmt_x(lo)}-{_fmt_x(hi)}"
                         for lab, (lo, hi) in short.items())
        xname = next((x for d, x in zip(drawn, xlabels, strict=True) if d.notes.get("short")),
                     "x")
        out.append((f"Seeds' runs end at different points ({xname}: {what}); each mean "
                    "curve stops where its shortest run ends.", NOTE_COLOR))
    text = by_panel("cut", lambda labs: and_list(labs))
    if text:
        out.append(("Bands cut at the y-axis, as in full they would more than double the "
                    f"curves' y-range: {text}.", NOTE_COLOR))
    if any(d.notes.get("gap") for d in drawn):
        out.append((f"Log x: no line across checkpoints more than {10 ** GAP_DECADES:g}x "
                    "apart; lone checkpoints are markers.", NOTE_COLOR))
    return out
