"""A folder's effect intervals at a glance (a forest plot, after rliable's interval
plots): one small panel per claim, and per unit where a claim's panels judge several
metrics, on its own x-scale and in its own units; per comparison the effect (dot) and its
interval (bar), against the claim's size (dashed tick at the threshold) and 0 (grey line),
coloured by the claim's verdict. Drawn from the effects the claims evaluation computed
(`ClaimResult.effects`, the verdict table's numbers), with matplotlib's Agg backend.
"""

from __future__ import annotations

import math
from pathlib import Path

from drocli.report.claim_line import _who, unit_words
from drocli.report.escape import shown
from drocli.report.page import Page
from drocli.report.verdict_kind import KIND_COLORS, kind_of, words_of

PNG = "effects.png"          # in the page's folder of the report, beside its figures
COLUMN_INCHES = 5.0          # one column of panels
LABEL_CHARS = 30             # a comparison's name on the y-axis, cut to this
CAPTION = ("Each panel is one claim (one per unit where a claim judges several metrics) "
           "on its own x-scale, in its own units. Per comparison, the dot is the effect "
           "(mean over seeds of the paired difference; positive favours the claim) and the "
           "bar its interval at the claim's confidence, made stricter where it has several "
           "comparisons (paler: a comparison whose own verdict is not the claim's); a "
           "hollow dot is an exact sign-flip test (no interval). The dashed tick marks "
           "the claim's size, the threshold the interval must lie above; the grey line is "
           "0. Colour: the claim's verdict.")


def panels(page: Page) -> list[tuple[object, str, list[tuple[str, dict]]]]:
    """(claim, unit, [(comparison, effect)]) per panel, in the page's order: a claim's
    comparisons with a mean, split by unit."""
    out = []
    for c in page.claims:
        groups: dict[str, list] = {}
        for key, e in (c.effects or {}).items():
            if _finite(e.get("mean")):
                groups.setdefault(unit_words(page, c.id, str(key)), []).append((str(key), e))
        out += [(c, unit, comps) for unit, comps in groups.items()]
    return out


def _finite(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def layout(n: int) -> int:
    """Columns for n panels: 1 for a few, 2 up to 8, 3 beyond."""
    return 1 if n <= 2 else 2 if n <= 8 else 3


def _short(text: str) -> str:
    text = shown(text)
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _draw_panel(ax, claim, unit: str, comps: list[tuple[str, dict]]) -> None:
    from drocli.claims.judge import overall

    color = KIND_COLORS.get(kind_of(claim), "#333333")
    word = overall(claim.effects)
    xs = [0.0]
    for y, (_key, e) in enumerate(reversed(comps)):
        mean, thr = float(e["mean"]), float(e.get("threshold") or 0.0)
        lo, hi = e.get("lo"), e.get("hi")
        alpha = 1.0 if e.get("verdict") == word else 0.4    # not what decided the claim
        if _finite(lo) and _finite(hi):
            ax.hlines(y, lo, hi, color=color, lw=2.4, alpha=alpha)
            ax.plot(mean, y, "o", color=color, ms=4.5, mec="black", mew=0.4, alpha=alpha)
            xs += [lo, hi]
        else:
            ax.plot(mean, y, "o", mfc="white", mec=color, ms=5, mew=1.4, alpha=alpha)
        ax.plot([thr, thr], [y - 0.42, y + 0.42], color="black", ls="--", lw=0.9)
        xs += [mean, thr]
    lo, hi = min(xs), max(xs)
    pad = (hi - lo) * 0.08 or max(abs(hi), 1.0) * 0.1
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(-0.6, len(comps) - 0.4)
    ax.axvline(0, color="#999999", lw=0.8, zorder=0)
    ax.set_yticks(range(len(comps)), [_short(_who(k)) for k, _ in reversed(comps)],
                  fontsize=6.5)
    ax.tick_params(axis="x", labelsize=6.5, pad=1)
    ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4), useOffset=False)
    ax.xaxis.get_offset_text().set_fontsize(6)
    ax.set_title(f"{shown(claim.id)}: {words_of(kind_of(claim))}", fontsize=7, color=color,
                 loc="left", fontweight="bold")
    ax.set_xlabel(unit, fontsize=6.5, labelpad=1)


def draw(page: Page, out_dir: Path) -> Path | None:
    """out_dir/effects.png, or None when no claim of the page has an effect to draw."""
    shown = panels(page)
    if not shown:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from drocli.figures.saving import save_figure

    cols = layout(len(shown))
    rows = [shown[i: i + cols] for i in range(0, len(shown), cols)]
    heights = [0.62 + 0.2 * max(len(p[2]) for p in row) for row in rows]
    fig = plt.figure(figsize=(COLUMN_INCHES * cols, sum(heights) + 0.7),
                     layout="constrained")
    grid = fig.add_gridspec(len(rows), cols, height_ratios=heights)
    for r, row in enumerate(rows):
        for k, (claim, unit, comps) in enumerate(row):
            _draw_panel(fig.add_subplot(grid[r, k]), claim, unit, comps)
    kinds = list(dict.fromkeys(kind_of(c) for c, _, _ in shown))
    handles = [Line2D([], [], color=KIND_COLORS.get(k, "#333333"), lw=2.4, marker="o",
                      ms=4.5, label=words_of(k)) for k in kinds]
    handles += [Line2D([], [], color="black", ls="--", lw=0.9, label="size (threshold)"),
                Line2D([], [], color="#999999", lw=0.8, label="0")]
    fig.legend(handles=handles, loc="outside upper center", ncols=min(len(handles), 8),
               fontsize=7, frameon=False)
    try:
        return save_figure(fig, out_dir, Path(PNG).stem, ["png"], 100,
                           f"{page.title}: effect intervals")[0]
    finally:
        plt.close(fig)
