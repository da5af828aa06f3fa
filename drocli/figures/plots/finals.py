"""Final values per cell, the input of tables, scatter plots and box plots."""

from __future__ import annotations

from typing import TYPE_CHECKING

from drocli.errors import DrocliError, did_you_mean

if TYPE_CHECKING:
    import pandas as pd


def final_frame(records: pd.DataFrame, metrics: list[str], filt: dict | None = None,
                where: str = "figure") -> pd.DataFrame:
    """One row per cell: label, seed, the swept parameters and each metric's value at the
    cell's last checkpoint (NaN where a metric is missing or not finite)."""
    import pandas as pd

    from drocli.results.aggregate import STANDARD_COLUMNS, apply_filter

    have = sorted(map(str, records["metric"].dropna().unique()))
    for m in metrics:
        if m not in have:
            raise DrocliError(f"{where}: unknown metric {m!r}; metrics in the records: "
                              f"{', '.join(have) or '(none)'}", key=where,
                              fix=did_you_mean(m, have))
    rows = apply_filter(records, filt, where=f"{where}.filter")
    rows = rows[rows["metric"].isin(metrics)]
    order = [c for c in ("cell", "metric", "step", "oracle_calls") if c in rows.columns]
    last = rows.sort_values(order, kind="stable").groupby(["cell", "metric"], sort=False).tail(1)
    params = [c for c in records.columns if c not in STANDARD_COLUMNS]
    keys = ["cell", "label", "seed", *params]
    wide = last.pivot_table(index="cell", columns="metric", values="value", aggfunc="last")
    first = rows.drop_duplicates("cell")["cell"]          # keep the records' cell order
    info = last.drop_duplicates("cell").set_index("cell")[keys[1:]].reindex(first)
    out = info.join(wide).reset_index()
    for m in metrics:
        if m not in out.columns:
            out[m] = float("nan")
        out[m] = pd.to_numeric(out[m], errors="coerce")
    return out


def ordered_labels(frame: pd.DataFrame, labels: list[str] | None) -> list[str]:
    """The labels to show: the given order restricted to those present, else as recorded."""
    present = list(dict.fromkeys(map(str, frame["label"])))
    return [lab for lab in labels if lab in present] if labels else present
