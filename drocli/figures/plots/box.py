"""`kind: box`: per panel, one box per label over the seeds' final values of a metric
(paper 003's Fig. 7: all methods on three metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt

from drocli.figures.plots.finals import final_frame, ordered_labels
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN


class BoxPanel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    title: str | None = None
    ylabel: str | None = None
    filter: dict = Field(default_factory=dict)


class BoxSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["box"]
    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    caption: str | None = None
    labels: list[str] | None = None
    colors: dict[str, str] = Field(default_factory=dict)
    panels: list[BoxPanel] = Field(min_length=1)
    layout: tuple[PositiveInt, PositiveInt] | None = None
    panel_size: tuple[PositiveFloat, PositiveFloat] = (4.6, 3.6)
    filter: dict = Field(default_factory=dict)


@registry.figure("box", params=BoxSpec,
                 description="box plots of final values, one box per label "
                             "(seeds and clients pooled)")
def render(records, spec: BoxSpec, out_dir: Path, formats, dpi, experiment_title,
           context) -> list[Path]:
    from drocli.figures.plots.frame import Frame
    from drocli.figures.saving import save_figure
    from drocli.figures.style import PALETTE

    n_rows, n_cols = spec.layout or (1, len(spec.panels))
    frame = Frame(n_rows, n_cols, spec.panel_size, spec.title or experiment_title,
                  spec.caption)
    for k, (ax, panel) in enumerate(zip(frame.axes.flat, spec.panels, strict=False)):
        where = f"figures[{spec.name}].panels[{k}]"
        finals = final_frame(records, [panel.metric], {**spec.filter, **panel.filter}, where)
        labels = ordered_labels(finals, spec.labels)
        data = [finals.loc[finals["label"].astype(str) == lab, panel.metric]
                .to_numpy(float) for lab in labels]
        data = [v[np.isfinite(v)] for v in data]
        ax.set_title(panel.title or panel.metric)
        ax.set_ylabel(panel.ylabel or panel.metric)
        if not labels:                  # a run of other cases or solvers: nothing here
            filt = {**spec.filter, **panel.filter}
            ax.text(0.5, 0.5, "no data" + (f"\nfilter {filt}" if filt else ""),
                    transform=ax.transAxes, ha="center", va="center", color="0.4")
            continue
        bp = ax.boxplot(data, patch_artist=True, widths=0.6,
                        medianprops={"color": "black", "linewidth": 1.2})
        for i, (patch, lab) in enumerate(zip(bp["boxes"], labels, strict=True)):
            patch.set_facecolor(spec.colors.get(lab, PALETTE[i % len(PALETTE)]))
            patch.set_alpha(0.85)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=45, ha="right")
    fig = frame.finish(len(spec.panels))
    title = " - ".join(t for t in (experiment_title, spec.title) if t) or spec.name
    return save_figure(fig, out_dir, spec.name, formats, dpi, title)
