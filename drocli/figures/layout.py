"""Room that text takes in a figure: a title or note wrapped to the figure's width as the
font measures it, and a shared legend laid out in balanced rows across the width. The
curves figure and the frame of the other kinds (drocli.figures.plots.frame) size their
heads with it, so the panels keep their size whatever the text."""

from __future__ import annotations

from drocli.figures.style import LEGEND_FS


def _text_width(text: str, fontsize: float, weight: str = "normal") -> float:
    """Width in inches of one line of `text` as matplotlib draws it (no mathtext)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(size=fontsize, weight=weight)
    return text_to_path.get_text_width_height_descent(text, prop, ismath=False)[0] / 72


def _wrap(text: str | None, width_in: float, fontsize: float, weight: str = "normal"
          ) -> list[str]:
    """`text` broken into lines that fit `width_in` (less a small margin) at `fontsize`,
    measured with the font (a character count overflowed the edge of narrow figures)."""
    if not text:
        return []
    room = max(1.0, width_in - 0.2)
    lines = []
    for para in str(text).splitlines() or [""]:
        line = ""
        for word in para.split():
            trial = f"{line} {word}" if line else word
            if line and _text_width(trial, fontsize, weight) > room:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return lines


def _legend_grid(labels: list[str], width_in: float) -> tuple[int, int]:
    """(entries per row, rows) of a legend across the figure width, rows balanced."""
    if not labels:
        return 1, 0
    em = LEGEND_FS / 72
    entry = (2.4 + 0.8 + 1.6) * em + 0.6 * em * max(len(lab) for lab in labels)
    fit = max(1, min(len(labels), int((width_in - 0.3) / entry)))
    rows = -(-len(labels) // fit)
    return -(-len(labels) // rows), rows
