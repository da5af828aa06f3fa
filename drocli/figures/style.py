"""The look every figure shares: palette, markers, matplotlib settings, font sizes and the
sizes of bands, dashes and notes. A label keeps its colour and marker across panels (a fixed
palette in legend order). matplotlib draws off-screen (Agg), set here, where every drawing
module takes its look from."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")


# Okabe-Ito (color-blind safe, minus the yellow that vanishes on white), then tab10 extras.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#9467bd")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p")
RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "xtick.labelsize": 8,
    "ytick.labelsize": 8, "legend.fontsize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.35, "grid.linewidth": 0.5,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "drocli",
}
TITLE_FS, LEGEND_FS, CAPTION_FS = 11.0, 9.0, 7.5
BAND_ALPHA = 0.10           # band face: two overlapping bands keep their own hues ...
BAND_EDGE_ALPHA = 0.6       # ... and an outline in the curve's colour shows where each ends
BAND_EDGE_LW = 0.6
GAP_DECADES = 1.0           # log x: no line across checkpoints more than 10x apart
OVERLAP = 0.015             # curves this close (fraction of the axis height) coincide ...
DASH = 2.5                  # ... and are drawn with interleaved dashes (x line width)
NOTE_FS = 7.5               # the figure's notes, under the legend
NOTE_COLOR, WARN_COLOR, GUIDE_COLOR = "0.3", "#a00000", "0.35"
