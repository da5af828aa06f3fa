"""`kind: table`: final values as mean +- std over seeds (ddof 0), one row per setting and
metric, one column per label; written as CSV (tidy) and Markdown (paper layout, best in bold).
Paper 003's Table 2 is this kind."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from drocli.errors import DrocliError, did_you_mean
from drocli.figures.plots.finals import final_frame, ordered_labels
from drocli.plugins import registry
from drocli.results.layout import NAME_PATTERN
from drocli.results.records import atomic_write_text

if TYPE_CHECKING:
    import pandas as pd


class TableMetric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    title: str | None = None
    better: Literal["above", "below"] = "below"
    digits: int = Field(3, ge=0, le=10)


class TableSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["table"]
    name: str = Field(pattern=NAME_PATTERN)
    title: str | None = None
    caption: str | None = None
    rows: str | None = None              # column whose values give the row groups (setting)
    row_order: list[str] | None = None
    metrics: list[TableMetric] = Field(min_length=1)
    labels: list[str] | None = None       # columns, in order
    filter: dict = Field(default_factory=dict)


def table_frame(records: pd.DataFrame, spec: TableSpec) -> pd.DataFrame:
    """Tidy statistics: row, metric, label, mean, std (ddof 0), n (seeds)."""
    import pandas as pd

    where = f"figures[{spec.name}]"
    finals = final_frame(records, [m.metric for m in spec.metrics], spec.filter, where)
    if spec.rows is not None and spec.rows not in finals.columns:
        raise DrocliError(f"{where}: rows column {spec.rows!r} is not in the records",
                          key=f"{where}.rows", fix=did_you_mean(spec.rows, finals.columns))
    groups = (list(dict.fromkeys(map(str, finals[spec.rows]))) if spec.rows else ["all"])
    if spec.row_order:
        groups = [g for g in spec.row_order if g in groups]
    out = []
    for g in groups:
        sub = finals if spec.rows is None else finals[finals[spec.rows].astype(str) == g]
        for m in spec.metrics:
            for lab in ordered_labels(finals, spec.labels):
                v = sub.loc[sub["label"].astype(str) == lab, m.metric].to_numpy(dtype=float)
                out.append({"row": g, "metric": m.metric, "label": lab,
                            "mean": float(np.mean(v)) if v.size else np.nan,
                            "std": float(np.std(v)) if v.size else np.nan, "n": int(v.size)})
    return pd.DataFrame(out)


def markdown(stats: pd.DataFrame, spec: TableSpec) -> str:
    labels = list(dict.fromkeys(stats["label"]))
    lines = []
    if spec.title:
        lines += [f"**{spec.title}**", ""]
    lines += ["| " + " | ".join(["Setting", "Metric", *labels]) + " |",
              "|" + "---|" * (len(labels) + 2)]
    for g in dict.fromkeys(stats["row"]):
        for m in spec.metrics:
            sub = stats[(stats["row"] == g) & (stats["metric"] == m.metric)]
            means = sub["mean"].to_numpy(dtype=float)
            ok = np.isfinite(means)
            best = (np.nanargmax if m.better == "above" else np.nanargmin)(means) \
                if ok.any() else -1
            cells = []
            for k, r in enumerate(sub.itertuples()):
                txt = (f"{r.mean:.{m.digits}f}±{r.std:.{m.digits}f}" if np.isfinite(r.mean)
                       else "n/a")
                cells.append(f"**{txt}**" if k == best else txt)
            arrow = "↑" if m.better == "above" else "↓"
            lines.append("| " + " | ".join([str(g), f"{m.title or m.metric} ({arrow})",
                                            *cells]) + " |")
    if spec.caption:
        lines += ["", spec.caption.strip()]
    return "\n".join(lines) + "\n"


@registry.figure("table", params=TableSpec,
                 description="a Markdown table of final values, mean ± std over "
                             "seeds, best in bold")
def render(records, spec: TableSpec, out_dir: Path, formats, dpi, experiment_title,
           context) -> list[Path]:
    """Write <name>.csv and <name>.md (figure formats do not apply to tables)."""
    stats = table_frame(records, spec)
    csv_path, md_path = Path(out_dir) / f"{spec.name}.csv", Path(out_dir) / f"{spec.name}.md"
    atomic_write_text(csv_path, stats.to_csv(index=False, float_format="%.6g"))
    atomic_write_text(md_path, markdown(stats, spec))
    return [csv_path, md_path]
