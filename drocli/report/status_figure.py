"""The verdicts of every reported folder in one picture, for the README's status block and
the index: one horizontal bar per folder, stacked by verdict kind (the status line's
counts, `claims.summary_counts`), in the colours of the pages' forest plots.
"""

from __future__ import annotations

from pathlib import Path

from drocli.report.escape import shown
from drocli.report.page import Page
from drocli.report.verdict_kind import KIND_COLORS, words_of

PNG = "status.png"           # in the report folder, beside index.md


def _kinds() -> list[str]:
    from drocli.claims import SUMMARY_ORDER

    return [k for k, _ in SUMMARY_ORDER if k != "skipped"]


def has_picture(pages: list[Page]) -> bool:
    """Whether `draw` draws anything: some page has a claim not skipped."""
    return any(c.status != "skipped" for p in pages for c in p.claims)


def draw(pages: list[Page], out_dir: Path) -> Path | None:
    """out_dir/status.png, or None when no page has a judged claim."""
    from drocli.claims import summary_counts

    if not has_picture(pages):
        return None
    kinds = _kinds()
    counts = [summary_counts(p.claims) for p in pages]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drocli.figures.saving import save_figure

    present = [k for k in kinds if any(n.get(k) for n in counts)]
    fig, ax = plt.subplots(figsize=(8.0, 0.9 + 0.2 * len(pages)), layout="constrained")
    ys = range(len(pages))[::-1]                         # the first folder on top
    left = [0] * len(pages)
    for k in present:
        width = [n.get(k, 0) for n in counts]
        ax.barh(list(ys), width, left=left, color=KIND_COLORS.get(k, "#333333"),
                label=words_of(k), height=0.75, edgecolor="white", linewidth=0.4)
        left = [a + b for a, b in zip(left, width, strict=True)]
    ax.set_yticks(list(ys), [shown(p.name) for p in pages], fontsize=7)   # any bytes
    ax.set_xlabel("claims", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylim(-0.6, len(pages) - 0.4)
    fig.legend(loc="outside upper center", ncols=min(len(present), 5), fontsize=7,
               frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    try:
        return save_figure(fig, out_dir, Path(PNG).stem, ["png"], 100,
                           "verdicts per results folder")[0]
    finally:
        plt.close(fig)
