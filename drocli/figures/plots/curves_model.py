"""The model of the `curves` figure kind (PanelSpec, FigureSpec), apart from its drawing: the
kind's registration (drocli.figures.plots.curves) and the drawing
(drocli.figures.curves_figure) both build on it, and neither imports the other for it. No
matplotlib here, so validating a spec stays light."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from drocli.figures.plots import FilterSpec
from drocli.results.layout import NAME_PATTERN

DEFAULT_XLABELS = {"oracle_calls": "# oracle calls", "time_s": "wall time (s)",
                   "step": "checkpoint", "iteration": "iteration"}


class PanelSpec(BaseModel):
    """One subplot: a metric against the figure's x."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    title: str | None = None
    x: str | None = None               # default: the figure's x (e.g. time_s under oracle_calls)
    xlabel: str | None = None          # default: the figure's xlabel when x is the figure's
    ylabel: str | None = None          # default: the metric name
    ylim: tuple[float | None, float | None] | None = None   # default: zoom to the data
    xlim: tuple[float | None, float | None] | None = None
    logy: bool | None = None           # default: the figure's logy
    logx: bool | None = None           # default: the figure's logx (wall time: see logx)
    filter: FilterSpec = Field(default_factory=dict)   # merged over the figure's filter
    reference_slope: float | None = None   # dashed c * x^slope guide (e.g. -0.5: O(1/sqrt t))

    @model_validator(mode="after")
    def _limits(self):
        for name in ("ylim", "xlim"):
            lim = getattr(self, name)
            if lim and None not in lim and not lim[0] < lim[1]:
                raise ValueError(f"{name} must be [low, high] with low < high, got {list(lim)}")
        return self


class FigureSpec(BaseModel):
    """A figure: panels laid out in a grid, sharing x, band, legend and caption."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["curves"] = "curves"
    name: str = Field(pattern=NAME_PATTERN)   # file stem
    title: str | None = None
    caption: str | None = None
    layout: tuple[PositiveInt, PositiveInt] | None = None       # rows, cols
    x: str = "oracle_calls"
    xlabel: str | None = None
    band: Literal["std", "quantile", "none"] = "std"
    logx: bool = False                 # every panel; a wall-time panel (x: time_s) whose
    logy: bool = False                 # curves end >10x apart is log unless it says logx
    legend: list[str] | None = None     # order and selection of labels
    colors: dict[str, str] = Field(default_factory=dict)   # label -> color (paper's colors)
    panels: list[PanelSpec] = Field(min_length=1)
    filter: FilterSpec = Field(default_factory=dict)
    sharey: bool = False
    panel_size: tuple[PositiveFloat, PositiveFloat] = (3.6, 2.7)   # inches per panel

    @model_validator(mode="after")
    def _check(self):
        if self.layout is not None and self.layout[0] * self.layout[1] < len(self.panels):
            raise ValueError(f"layout {list(self.layout)} has room for "
                             f"{self.layout[0] * self.layout[1]} panels, "
                             f"but {len(self.panels)} are given")
        if self.legend is not None and len(set(self.legend)) != len(self.legend):
            raise ValueError(f"legend lists a label twice: {self.legend}")
        return self

    @property
    def grid_shape(self) -> tuple[int, int]:
        return tuple(self.layout) if self.layout else (1, len(self.panels))

    def x_of(self, panel: PanelSpec) -> str:
        return panel.x or self.x

    def xlabel_of(self, panel: PanelSpec) -> str:
        if panel.xlabel is not None:
            return panel.xlabel
        if panel.x is None and self.xlabel is not None:
            return self.xlabel
        x = self.x_of(panel)
        return DEFAULT_XLABELS.get(x, x)

    def metric_refs(self):
        """(key path, metric) of every metric the figure reads."""
        for j, p in enumerate(self.panels):
            yield f"panels[{j}].metric", p.metric
