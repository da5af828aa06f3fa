"""The figures engine's names in one place, as before it was split: drawing every figure
(drocli.figures.render), the curves figure (curves_figure) and its panels (curve_panel,
axis_limits, panel_notes), the shared look (style), text room (layout) and saving (saving).
Import from those modules; this one hands their names on."""

from drocli.figures.axis_limits import (  # noqa: F401
    BAND_SPIKE,
    HEAD_ZOOM_FRACTION,
    MIN_TICK_GAP_IN,
    SQUASH_RATIO,
    _log_ticks,
    auto_ylim,
)
from drocli.figures.curve_panel import LOG10_LABEL, LOG10_METRIC, auto_logx  # noqa: F401
from drocli.figures.curves_figure import _label_order, make_figure, problem_metric_label  # noqa: F401
from drocli.figures.layout import _legend_grid, _wrap  # noqa: F401
from drocli.figures.plots import validate_figure  # noqa: F401
from drocli.figures.plots.curves_model import DEFAULT_XLABELS, FigureSpec, PanelSpec  # noqa: F401
from drocli.figures.render import matches_nothing, plot_figures  # noqa: F401
from drocli.figures.saving import FORMATS, _save_png, save_figure  # noqa: F401
from drocli.figures.style import (  # noqa: F401
    BAND_ALPHA,
    BAND_EDGE_ALPHA,
    BAND_EDGE_LW,
    CAPTION_FS,
    DASH,
    GAP_DECADES,
    GUIDE_COLOR,
    LEGEND_FS,
    MARKERS,
    NOTE_COLOR,
    NOTE_FS,
    OVERLAP,
    PALETTE,
    RC,
    TITLE_FS,
    WARN_COLOR,
)
