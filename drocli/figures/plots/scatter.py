"""`kind: scatter`: one point per label per panel, from final values aggregated over seeds
(mean, or root mean square: paper 003's Fig. 6 x = sqrt(mean over seeds of the variance)),
with dashed guides to both axes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from drocli.figures.plots.finals import final_frame, ordered_labels
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN

STATS = {"mean": lambda v: float(np.mean(v)),
         "rms": lambda v: float(np.sqrt(np.mean(np.square(v))))}


class ScatterPanel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    filter: dict = Field(default_factory=dict)
    xlim: tuple[float, float] | None = None
    ylim: tuple[float, float] | None = None


class ScatterSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["scatter"]
    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    caption: str | None = None
    x: str
    y: str
    x_stat: Literal["mean", "rms"] = "mean"
    y_stat: Literal["mean", "rms"] = "mean"
    xlabel: str | None = None
    ylabel: str | None = None
    labels: list[str] | None = None
    colors: dict[str, str] = Field(default_factory=dict)
    markers: dict[str, str] = Field(default_factory=dict)   # default "o"
    panels: list[ScatterPanel] = Field(default_factory=lambda: [ScatterPanel()])
    layout: tuple[PositiveInt, PositiveInt] | None = None
    panel_size: tuple[PositiveFloat, PositiveFloat] = (3.8, 3.4)
    filter: dict = Field(default_factory=dict)
    guides: bool = True


def points(records, spec: ScatterSpec, panel: ScatterPanel) -> dict[str, tuple[float, float]]:
    """label -> (x, y) of one panel."""
    where = f"figures[{spec.name}]"
    finals = final_frame(records, [spec.x, spec.y], {**spec.filter, **panel.filter}, where)
    out = {}
    for lab in ordered_labels(finals, spec.labels):
        sub = finals[finals["label"].astype(str) == lab]
        out[lab] = (STATS[spec.x_stat](sub[spec.x].to_numpy(float)),
                    STATS[spec.y_stat](sub[spec.y].to_numpy(float)))
    return out


@registry.figure("scatter", params=ScatterSpec,
                 description="one point per label: a statistic of one final "
                             "metric against another's")
def render(records, spec: ScatterSpec, out_dir: Path, formats, dpi, experiment_title,
           context) -> list[Path]:
    from matplotlib.lines import Line2D

    from drocli.figures.plots.frame import Frame
    from drocli.figures.saving import save_figure
    from drocli.figures.style import PALETTE

    per_panel = [points(records, spec, p) for p in spec.panels]
    labels = list(dict.fromkeys(lab for pts in per_panel for lab in pts))
    if spec.labels:
        labels = [lab for lab in spec.labels if lab in labels]
    color = {lab: spec.colors.get(lab, PALETTE[i % len(PALETTE)]) for i, lab in
             enumerate(labels)}
    marker = {lab: spec.markers.get(lab, "o") for lab in labels}
    n_rows, n_cols = spec.layout or (1, len(spec.panels))
    frame = Frame(n_rows, n_cols, spec.panel_size, spec.title or experiment_title,
                  spec.caption, labels)
    for ax, panel, pts in zip(frame.axes.flat, spec.panels, per_panel, strict=False):
        for lab, (x, y) in pts.items():
            big = marker[lab] == "*"
            ax.scatter([x], [y], s=160 if big else 70, marker=marker[lab], color=color[lab],
                       edgecolor="black", linewidth=0.4, zorder=3)
        if panel.xlim:
            ax.set_xlim(*panel.xlim)
        if panel.ylim:
            ax.set_ylim(*panel.ylim)
        if not (panel.xlim and panel.ylim):
            ax.margins(0.15)
        if spec.guides:
            xlim, ylim = ax.get_xlim(), ax.get_ylim()
            for lab, (x, y) in pts.items():
                ax.plot([xlim[0], x, x], [y, y, ylim[0]], ls="--", lw=0.7, color=color[lab],
                        zorder=2)
            ax.set_xlim(*xlim)
            ax.set_ylim(*ylim)
        ax.set_title(panel.title or "")
        ax.set_xlabel(spec.xlabel or f"{spec.x} ({spec.x_stat} over seeds)")
        ax.set_ylabel(spec.ylabel or f"{spec.y} ({spec.y_stat} over seeds)")
    frame.legend([Line2D([], [], ls="", marker=marker[lab], color=color[lab],
                         markeredgecolor="black", markersize=9 if marker[lab] == "*" else 7)
                  for lab in labels])
    fig = frame.finish(len(spec.panels))
    title = " - ".join(t for t in (experiment_title, spec.title) if t) or spec.name
    return save_figure(fig, out_dir, spec.name, formats, dpi, title)
