"""A titled figure with a panel grid and an optional shared legend, sized so the panels keep
their size whatever the text: the frame every non-curve kind draws into. No caption is drawn
into the image: captions sit beside it (the report's pages)."""

from __future__ import annotations

import math
import warnings

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from drocli.figures.layout import _legend_grid, _wrap
from drocli.figures.style import LEGEND_FS, TITLE_FS


class Frame:
    """`Frame(rows, cols, panel_size, title, caption, legend_labels)`; draw on `axes`, add
    the legend with `legend(handles)`, then `finish()` lays it out and returns the Figure.
    `caption` is accepted and not drawn (the image stays clean; the report prints it)."""

    def __init__(self, n_rows: int, n_cols: int, panel_size, title: str | None,
                 caption: str | None, legend_labels: list[str] | None = None,
                 sharex: bool = False, sharey: bool = False):
        pw, ph = panel_size
        width = pw * n_cols
        self.labels = list(legend_labels or [])
        self.title_lines = _wrap(title, width, TITLE_FS, weight="bold")
        self.per_row, legend_rows = _legend_grid(self.labels, width)
        self.pad = 0.08
        self.title_h = len(self.title_lines) * TITLE_FS * 1.35 / 72
        legend_h = legend_rows * LEGEND_FS * 1.9 / 72 + (0.1 if legend_rows else 0.0)
        self.head = self.pad + self.title_h + legend_h + (0.04 if self.title_lines else 0.0)
        self.foot = self.pad
        self.height = math.ceil((ph * n_rows + self.head + self.foot) * 50) / 50
        self.fig = Figure(figsize=(math.ceil(width * 50) / 50, self.height))
        FigureCanvasAgg(self.fig)
        self.axes = self.fig.subplots(n_rows, n_cols, squeeze=False, sharex=sharex,
                                      sharey=sharey)
        if self.title_lines:
            self.fig.text(0.5, 1 - self.pad / self.height, "\n".join(self.title_lines),
                          ha="center", va="top", fontsize=TITLE_FS, fontweight="bold")

    def legend(self, handles) -> None:
        if not self.labels:
            return
        self.fig.legend(handles, self.labels, loc="upper center", ncol=self.per_row,
                        frameon=False, fontsize=LEGEND_FS, handlelength=2.0,
                        columnspacing=1.4,
                        bbox_to_anchor=(0.5, 1 - (self.pad + self.title_h + 0.02) / self.height))

    def finish(self, used: int | None = None) -> Figure:
        if used is not None:
            for k, ax in enumerate(self.axes.flat):
                if k >= used:
                    ax.set_visible(False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.fig.tight_layout(rect=(0.0, self.foot / self.height, 1.0,
                                        1.0 - self.head / self.height), h_pad=1.2, w_pad=1.0)
        return self.fig
