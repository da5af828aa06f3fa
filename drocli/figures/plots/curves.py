"""Figure kind `curves` (the default): one panel per metric against a shared x (oracle calls,
time, iterations), seed mean with a +-1 std band (or median and quartiles; geometric on a
log y-axis), one legend. Drawn by `drocli.figures.curves_figure`."""

from __future__ import annotations

from pathlib import Path

from drocli.figures.plots.curves_model import DEFAULT_XLABELS, FigureSpec, PanelSpec  # noqa: F401 (kept here)
from drocli.plugins import registry


@registry.figure("curves", params=FigureSpec,
                 description="metric curves against oracle calls / time / iterations, "
                             "seed bands, one legend")
def render(records, spec: FigureSpec, out_dir: Path, formats, dpi, experiment_title,
           context) -> list[Path]:
    """Draw and save one curves figure."""
    from drocli.figures.curves_figure import make_figure, problem_metric_label
    from drocli.figures.saving import save_figure

    context = context or {}
    fig = make_figure(records, spec, experiment_title=experiment_title,
                      metric_label=problem_metric_label(context.get("spec")),
                      subset=bool(context.get("subset")))
    title = " - ".join(t for t in (experiment_title, spec.title) if t) or spec.name
    return save_figure(fig, out_dir, spec.name, formats, dpi, title)
