"""Figure kind `objective_space`: final solutions in objective space, one dot per preference.

The figures of paper 003's VLMOP2 experiment (Liu et al. 2024, Figs. 2 and 4; docs/papers/003.md
§3.1.5) are drawn here. Each panel is one (label, column) pair. A column is a seed or `average`. A
panel shows, in the (f1, f2) plane:

- the analytic Pareto front, as a grey solid line (the cells' `front` artifact);
- the attainable region above/right of the front, shaded light grey: the cells' `region`
  artifact, or else the polygon closing the front at its upper-right corner;
- the preference rays from the origin along 1/w, normalised, as grey dashed lines. Each
  preference is a value of the swept `pref` column (w1, read as w = (w1, 1 - w1), or a list
  [w1, w2]);
- each preference's final solution, as a large dot in the label's colour.

The `average` column follows the paper: for each preference it averages the final θ over the
seeds in decision space (pitfall 11), then evaluates f there. The final θ, the front and
the region are the cells' artifacts (`artifacts.npz` of the results folder, written by the
problem's `artifacts(θ)` hook), and f is the pure function the problem registers as
`objectives`: nothing is rebuilt at plot time.
"""

from __future__ import annotations

import ast
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from drocli.errors import DrocliError, did_you_mean
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN
from drocli.results.records import param_column, read_artifacts

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# docs/papers/003.md §3.1.5 (official plotting code): one colour per method.
DEFAULT_COLORS = {"LS": "red", "TCH": "black", "OMDgd-TCH": "blue", "AdaOMDgd-TCH": "cyan",
                  "OMDeg-TCH": "magenta", "AdaOMDeg-TCH": "plum", "STCH": "brown"}
FRONT_COLOR, REGION_COLOR, RAY_COLOR = "0.45", "0.85", "0.55"
AVERAGE = "average"
Column = int | Literal["average"]


class ObjectiveSpaceFigure(BaseModel):
    """Grid of objective-space panels: `rows` (labels) x `columns` (seeds and/or average)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["objective_space"]
    name: str = Field(pattern=NAME_PATTERN)   # file stem
    title: str | None = None
    caption: str | None = None
    rows: list[str] = Field(min_length=1)              # labels, in order
    columns: list[Column] = Field(default_factory=lambda: [AVERAGE], min_length=1)
    layout: tuple[PositiveInt, PositiveInt] | None = None   # default: len(rows) x len(columns)
    panel_titles: list[str] | None = None              # default: "(a) LS, seed 0", ...
    letters: bool = True                               # prefix (a), (b), ... to the titles
    colors: dict[str, str] = Field(default_factory=dict)   # label -> colour (default §3.1.5)
    x: str = "f1"
    y: str = "f2"
    xlabel: str = "$f_1$"
    ylabel: str = "$f_2$"
    pref: str = "pref"                                 # swept problem parameter of the rays
    theta: str = "theta"                               # the cells' final-θ artifact (average)
    filter: dict[str, str | int | float | bool | list[str | int | float | bool]] = Field(
        default_factory=dict)
    lim: tuple[float, float] = (-0.05, 1.05)           # both axes, equal aspect
    ray_length: PositiveFloat = 1.05
    marker_size: PositiveFloat = 55.0
    front: bool = True
    region: bool = True
    rays: bool = True
    panel_size: tuple[PositiveFloat, PositiveFloat] = (2.9, 2.9)   # inches per panel
    settings_note: bool = True      # no effect (kept for recorded specs): the image has no
                                    # caption; the report's caption names the run's seeds

    @model_validator(mode="after")
    def _check(self):
        n = len(self.rows) * len(self.columns)
        if self.layout is not None and self.layout[0] * self.layout[1] < n:
            raise ValueError(f"layout {list(self.layout)} has room for "
                             f"{self.layout[0] * self.layout[1]} panels, but rows x columns "
                             f"gives {n}")
        if self.panel_titles is not None and len(self.panel_titles) != n:
            raise ValueError(f"panel_titles has {len(self.panel_titles)} entries for {n} panels")
        for what, items in (("rows", self.rows), ("columns", self.columns)):
            if len({str(v) for v in items}) != len(items):
                raise ValueError(f"{what} lists an entry twice: {items}")
        if not self.lim[0] < self.lim[1]:
            raise ValueError(f"lim must be [low, high] with low < high, got {list(self.lim)}")
        return self

    @property
    def grid_shape(self) -> tuple[int, int]:
        return tuple(self.layout) if self.layout else (len(self.rows), len(self.columns))

    def panels(self) -> list[tuple[str, Column]]:
        return [(lab, col) for lab in self.rows for col in self.columns]


# --- data ---------------------------------------------------------------------------------

def pref_vector(value) -> np.ndarray | None:
    """A preference as stored in records: w1 (-> (w1, 1 - w1)) or a list [w1, w2] (or its text)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    w = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if w.size == 1:
        w = np.array([w[0], 1.0 - w[0]])
    return w


def final_table(records: pd.DataFrame, fig: ObjectiveSpaceFigure) -> pd.DataFrame:
    """One row per cell: label, seed, pref value and every metric's final value (wide)."""
    import pandas as pd

    from drocli.results.aggregate import apply_filter

    where = f"figures[{fig.name}]"
    rows = apply_filter(records, fig.filter, where=f"{where}.filter")
    rows = rows[rows["label"].astype(str).isin(fig.rows)]
    if rows.empty:
        return pd.DataFrame(columns=["cell", "label", "seed", "pref"])
    pcol = param_column(fig.pref)
    order = [c for c in ("cell", "step", "oracle_calls") if c in rows.columns]
    last = rows.sort_values(order, kind="stable").groupby(["cell", "metric"], sort=False).tail(1)
    wide = last.pivot(index="cell", columns="metric", values="value")
    ident = last.groupby("cell", sort=False).first()
    wide.insert(0, "label", ident["label"].astype(str))
    wide.insert(1, "seed", ident["seed"])
    wide.insert(2, "pref", ident[pcol] if pcol in ident.columns else np.nan)
    return wide.reset_index()


class CellArrays:
    """The cells' artifacts (results folder's artifacts.npz) and the problem's declared
    pure `objectives(θ)`, both found through the plot context."""

    def __init__(self, context: dict, fig: ObjectiveSpaceFigure):
        self.fig = fig
        results_dir = (context or {}).get("results_dir")
        self.arrays = read_artifacts(results_dir) if results_dir is not None else {}
        spec = (context or {}).get("spec")
        entry = registry.get("problem", spec.problem.name) if spec is not None else None
        self.objectives = entry.extra.get("objectives") if entry is not None else None

    def get(self, cell: str, name: str) -> np.ndarray | None:
        return self.arrays.get(str(cell), {}).get(name)

    def first(self, cells, name: str) -> np.ndarray | None:
        """`name` of the first of `cells` that kept it (fronts are the same in every cell)."""
        for c in cells:
            v = self.get(c, name)
            if v is not None:
                return np.asarray(v, dtype=float)
        return None

    def average_point(self, cells) -> tuple[float, float]:
        """f at the seed-mean final θ of `cells` (decision-space average)."""
        where = f"figures[{self.fig.name}]"
        thetas = [self.get(c, self.fig.theta) for c in cells]
        if any(t is None for t in thetas):
            raise DrocliError(
                f"figure {self.fig.name!r}: the average column needs each cell's final "
                f"{self.fig.theta!r} array (artifacts.npz)", key=f"{where}.columns",
                fix="re-run the spec with `drocli run` (its problem keeps θ as an artifact), "
                    "or drop `average` from columns")
        if self.objectives is None:
            raise DrocliError(f"figure {self.fig.name!r}: the problem registers no "
                              "`objectives` function to evaluate the averaged θ",
                              key=f"{where}.columns",
                              fix="plot from the results folder (`drocli plot RESULTS_DIR`) "
                                  "or drop `average` from columns")
        F = np.asarray(self.objectives(np.mean(np.stack(thetas), axis=0)), dtype=float)
        return float(F[0]), float(F[1])


def panel_points(records: pd.DataFrame, fig: ObjectiveSpaceFigure, context: dict | None = None,
                 table: pd.DataFrame | None = None, arrays: CellArrays | None = None
                 ) -> dict[tuple[str, Column], pd.DataFrame]:
    """(label, column) -> DataFrame[pref, x, y, n_seeds], sorted by pref.

    Seed columns: each cell's final x/y metrics. `average`: f at the seed-mean final θ, per
    preference (decision-space averaging, docs/papers/003.md §3.1.5).
    """
    import pandas as pd

    where = f"figures[{fig.name}]"
    table = final_table(records, fig) if table is None else table
    arrays = arrays or CellArrays(context or {}, fig)
    metrics = [c for c in table.columns if c not in ("cell", "label", "seed", "pref")]
    out = {}
    for label, col in fig.panels():
        sub = table[table["label"] == label]
        if col == AVERAGE:
            if sub.empty:
                out[(label, col)] = pd.DataFrame(columns=["pref", "x", "y", "n_seeds"])
                continue
            rows = []
            for _, g in sub.groupby(sub["pref"].map(repr), sort=False):
                x, y = arrays.average_point(g["cell"].tolist())
                rows.append({"pref": g["pref"].iloc[0], "x": x, "y": y,
                             "n_seeds": int(g["seed"].nunique())})
            out[(label, col)] = _sorted(pd.DataFrame(rows))
        else:
            for m in (fig.x, fig.y):
                if m not in table.columns and not sub.empty:
                    raise DrocliError(f"figure {fig.name!r}: metric {m!r} not in the records",
                                      key=f"{where}.x", fix=did_you_mean(m, map(str, metrics)))
            s = sub[pd.to_numeric(sub["seed"], errors="coerce") == int(col)]
            df = pd.DataFrame({"pref": s["pref"].to_numpy(),
                               "x": pd.to_numeric(s[fig.x], errors="coerce").to_numpy()
                               if not s.empty else [],
                               "y": pd.to_numeric(s[fig.y], errors="coerce").to_numpy()
                               if not s.empty else [],
                               "n_seeds": 1})
            out[(label, col)] = _sorted(df)
    return out


def _isnan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _sorted(df: pd.DataFrame) -> pd.DataFrame:

    if df.empty:
        return df.reset_index(drop=True)
    key = df["pref"].map(lambda v: float(pref_vector(v)[0]) if pref_vector(v) is not None
                         else math.inf)
    return df.assign(_k=key).sort_values("_k", kind="stable").drop(columns="_k") \
        .reset_index(drop=True)


# --- drawing ------------------------------------------------------------------------------

def _colors(fig: ObjectiveSpaceFigure) -> dict[str, str]:
    from drocli.figures.style import PALETTE

    out, k = {}, 0
    for lab in fig.rows:
        if lab in fig.colors:
            out[lab] = fig.colors[lab]
        elif lab in DEFAULT_COLORS:
            out[lab] = DEFAULT_COLORS[lab]
        else:
            out[lab] = PALETTE[k % len(PALETTE)]
            k += 1
    return out


def _region(region: np.ndarray | None, front: np.ndarray | None) -> np.ndarray | None:
    if region is not None:
        return region
    if front is None or len(front) < 2:
        return None
    hi = front.max(axis=0)
    return np.vstack([front, [[hi[0], hi[1]]]])


def _panel_title(fig: ObjectiveSpaceFigure, k: int, label: str, col: Column,
                 seeds: list) -> str:
    if fig.panel_titles is not None:
        return fig.panel_titles[k]
    if col == AVERAGE:
        what = "averaged" if len(seeds) > 1 else "averaged (1 seed)"
    else:
        what = f"seed = {col}"
    prefix = f"({_letter(k)}) " if fig.letters else ""
    return f"{prefix}{label}, {what}"


def _letter(k: int) -> str:
    s = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        s = chr(ord("a") + r) + s
    return s


@registry.figure("objective_space", params=ObjectiveSpaceFigure,
                 description="final solutions in objective space with the Pareto "
                             "front and the preference rays")
def render(records: pd.DataFrame, fig_spec: ObjectiveSpaceFigure, out_dir: Path, formats: list,
           dpi: int, experiment_title: str | None, context: dict) -> list[Path]:
    """Draw the panels (see the module docstring) and save `<name>.<fmt>`."""
    from drocli.figures.saving import save_figure

    fig = make_objective_space(records, fig_spec, experiment_title, context)
    title = " - ".join(t for t in (experiment_title, fig_spec.title) if t) or fig_spec.name
    return save_figure(fig, out_dir, fig_spec.name, formats, dpi, title)


def make_objective_space(records: pd.DataFrame, spec: ObjectiveSpaceFigure,
                         experiment_title: str | None = None, context: dict | None = None
                         ) -> Figure:

    import matplotlib

    from drocli.figures.style import RC

    with matplotlib.rc_context(RC):
        return _make(records, spec, experiment_title, context or {})


def _make(records: pd.DataFrame, spec: ObjectiveSpaceFigure, experiment_title: str | None,
          context: dict) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from drocli.figures.layout import _legend_grid, _wrap
    from drocli.figures.style import LEGEND_FS, TITLE_FS

    table = final_table(records, spec)
    missing = [lab for lab in spec.rows if lab not in set(table["label"])]
    if missing:
        present = sorted(map(str, records["label"].dropna().unique()))
        warnings.warn(f"figure {spec.name!r}: label(s) not in the records, panels left empty: "
                      + "; ".join(f"{m!r}: {did_you_mean(m, present)}" for m in missing),
                      stacklevel=3)
    arrays = CellArrays(context, spec)
    points = panel_points(records, spec, context, table=table, arrays=arrays)
    prefs = list(dict.fromkeys(v for v in table["pref"].tolist() if not _isnan(v)))
    prefs.sort(key=lambda v: float(pref_vector(v)[0]))
    cells = table["cell"].tolist()
    front = arrays.first(cells, "front") if spec.front else None
    region = _region(arrays.first(cells, "region"), front) if spec.region else None
    colors = _colors(spec)
    seeds_all = sorted({int(s) for s in table["seed"].dropna()})

    n_rows, n_cols = spec.grid_shape
    pw, ph = spec.panel_size
    width = pw * n_cols
    title_lines = _wrap(spec.title or experiment_title, width, TITLE_FS, weight="bold")
    # two legend blocks: the reference elements, then one dot per method
    ref_labels, ref_handles = [], []
    if front is not None:
        ref_labels.append("True PF")
        ref_handles.append(Line2D([], [], color=FRONT_COLOR, lw=2))
    if region is not None:
        ref_labels.append("Feasible region")
        ref_handles.append(Patch(facecolor=REGION_COLOR, edgecolor="none"))
    if spec.rays and prefs:
        ref_labels.append("Preference rays (along 1/w)")
        ref_handles.append(Line2D([], [], color=RAY_COLOR, lw=1.3, ls="--"))
    dot_handles = [Line2D([], [], color="none", marker="o", markerfacecolor=colors[lab],
                          markeredgecolor="0.15", markeredgewidth=0.5, markersize=8)
                   for lab in spec.rows]
    blocks = [(h, lab, *_legend_grid(lab, width)) for h, lab in
              ((ref_handles, ref_labels), (dot_handles, list(spec.rows))) if lab]
    pad = 0.08
    row_h = LEGEND_FS * 1.9 / 72
    title_h = len(title_lines) * TITLE_FS * 1.35 / 72
    legend_h = sum(rows for *_, rows in blocks) * row_h + 0.08 * len(blocks)
    head = pad + title_h + legend_h + (0.04 if title_lines else 0.0)
    foot = pad
    height = math.ceil((ph * n_rows + head + foot) * 50) / 50
    fig = Figure(figsize=(math.ceil(width * 50) / 50, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    panels = spec.panels()
    for k, ax in enumerate(axes.flat):
        if k >= len(panels):
            ax.set_visible(False)
            continue
        label, col = panels[k]
        _draw_panel(ax, spec, points[(label, col)], colors[label], front, region, prefs)
        ax.set_title(_panel_title(spec, k, label, col, seeds_all), fontsize=9.5)
        ax.set_xlabel(spec.xlabel)
        ax.set_ylabel(spec.ylabel)

    if title_lines:
        fig.text(0.5, 1 - pad / height, "\n".join(title_lines), ha="center", va="top",
                 fontsize=TITLE_FS, fontweight="bold")
    top = pad + title_h + 0.02
    for handles, labels, per_row, rows in blocks:
        if rows > 1 and per_row * rows == len(labels):
            # legends fill column by column: reorder so rows read in order
            order = [i * per_row + j for j in range(per_row) for i in range(rows)]
            handles = [handles[k] for k in order]
            labels = [labels[k] for k in order]
        fig.legend(handles, labels, loc="upper center", ncol=per_row, frameon=False,
                   bbox_to_anchor=(0.5, 1 - top / height), fontsize=LEGEND_FS,
                   handlelength=2.2, columnspacing=1.4, borderaxespad=0.0, borderpad=0.2)
        top += rows * row_h + 0.08
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout(rect=(0.0, foot / height, 1.0, 1.0 - head / height),
                         h_pad=1.5, w_pad=0.8)
    return fig


def _draw_panel(ax, spec: ObjectiveSpaceFigure, pts: pd.DataFrame, color: str,
                front: np.ndarray | None, region: np.ndarray | None, prefs: list) -> None:
    ax.grid(False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(True)
    if region is not None:
        ax.fill(region[:, 0], region[:, 1], color=REGION_COLOR, lw=0, zorder=0)
    if front is not None:
        ax.plot(front[:, 0], front[:, 1], color=FRONT_COLOR, lw=2, zorder=2)
    if spec.rays:
        for v in prefs:
            w = pref_vector(v)
            if w is None or np.any(w <= 0):
                continue
            d = (1.0 / w) / np.linalg.norm(1.0 / w)
            ax.plot([0, spec.ray_length * d[0]], [0, spec.ray_length * d[1]], color=RAY_COLOR,
                    lw=1.1, ls="--", zorder=1)
    if len(pts):
        ok = np.isfinite(pts["x"].to_numpy(dtype=float)) & np.isfinite(
            pts["y"].to_numpy(dtype=float))
        ax.scatter(pts["x"][ok], pts["y"][ok], s=spec.marker_size, color=color,
                   edgecolors="0.15", linewidths=0.5, zorder=4)
        if (~ok).any():
            ax.text(0.97, 0.97, f"{int((~ok).sum())} diverged", transform=ax.transAxes,
                    ha="right", va="top", fontsize=7, color="#a00000")
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center",
                color="0.4")
    ax.set_xlim(*spec.lim)
    ax.set_ylim(*spec.lim)
    ax.set_aspect("equal", adjustable="box")
    ticks = [t for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) if spec.lim[0] <= t <= spec.lim[1]]
    if ticks and spec.lim == (-0.05, 1.05):
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
