"""A figure's caption as a run shows it: the spec's caption describes the paper's setting,
so it is followed by the profile and the seeds this run used."""

from __future__ import annotations


def run_caption(caption: str | None, profile: str, seeds) -> str:
    """A figure's caption followed by what this run actually shows: its profile and seeds (the
    spec's caption describes the paper's setting, which a smoke or quick profile shrinks)."""
    seeds = list(seeds)
    shown = ", ".join(map(str, seeds[:12])) + (", ..." if len(seeds) > 12 else "")
    plural = "s" if len(seeds) != 1 else ""
    note = f"This run: profile {profile}, {len(seeds)} seed{plural} ({shown})"
    if profile == "smoke":
        note += "; a smoke run (fewer seeds or a shorter budget than the paper's), not a result"
    text = " ".join((caption or "").split())
    if text and text[-1] not in ".!?":          # "... over 5 seeds This run:" ran on
        text += "."
    return f"{text} {note}.".strip()
