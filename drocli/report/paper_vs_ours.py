"""The paper's reported numbers beside ours: the table and the picture (issue 54).

For every row of the spec's `reported:` block (drocli.claims.reported) that our records hold, the
paper's value as printed (mean ± std over its seeds) beside our seed mean of the same final
value with its 95 % t-interval, and how far ours lies from the paper's in the paper's own
stds. Our data is the paper's or a stand-in, as the block says: on a stand-in, absolute
values are not expected to agree, and what can be compared is the methods' order, which the
picture's panels summarise by Spearman's rank correlation.
"""

from __future__ import annotations

import math
from pathlib import Path

CONFIDENCE = 0.95
PNG = "paper_vs_ours.png"     # the picture's file, in the report's folder of the page


def frame(records, rep, data: str):
    """One row per reported number our records hold: label, setting, metric, printed,
    paper, paper_std, paper_n, ours, ours_lo, ours_hi, ours_n, z (ours - paper in paper
    stds), source, data. `rep`: the paper's numbers (drocli.claims.reported.frame); `data`: ours
    is the paper's or a stand-in. None when there are none or our records hold none."""
    import numpy as np
    import pandas as pd

    from drocli.claims.inference import t_quantile
    from drocli.figures.plots.finals import final_frame

    if rep is None:
        return None
    metrics = [m for m in dict.fromkeys(rep["metric"])
               if m in set(map(str, records["metric"].dropna().unique()))]
    if not metrics:
        return None
    finals = final_frame(records, metrics, where="reported")
    by_setting = "setting" in rep.columns and "setting" in finals.columns
    out = []
    for r in rep.itertuples(index=False):
        if r.metric not in metrics:
            continue
        mine = finals[finals["label"].astype(str) == r.label]
        if by_setting:
            mine = mine[mine["setting"].astype(str) == str(r.setting)]
        v = mine[r.metric].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not v.size:
            continue
        mean = float(v.mean())
        half = (t_quantile(v.size - 1, 0.5 + CONFIDENCE / 2) * float(v.std(ddof=1))
                / math.sqrt(v.size)) if v.size > 1 else math.nan
        std = r.std if r.std is not None and not pd.isna(r.std) else math.nan
        out.append({"label": r.label, "setting": getattr(r, "setting", None),
                    "metric": r.metric, "printed": r.printed, "paper": float(r.value),
                    "paper_std": std, "paper_n": r.n_seeds, "ours": mean,
                    "ours_lo": mean - half, "ours_hi": mean + half, "ours_n": int(v.size),
                    "z": (mean - r.value) / std if std and std > 0 else math.nan,
                    "source": r.source, "data": data})
    return pd.DataFrame(out) if out else None


def rank_agreement(table) -> dict:
    """(setting, metric) -> Spearman's rank correlation of ours with the paper's over the
    methods (NaN with fewer than 3)."""
    from scipy.stats import spearmanr

    out = {}
    for key, g in table.groupby(["setting", "metric"], sort=False, dropna=False):
        out[key] = float(spearmanr(g["paper"], g["ours"]).statistic) if len(g) >= 3 \
            else math.nan
    return out


def _num(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def lines(table) -> list[str]:
    """check's lines: one per reported number, then one per panel's rank agreement."""
    out = []
    for r in table.itertuples(index=False):
        where = f" @ {r.setting}" if r.setting is not None else ""
        out.append(f"PAPER    {r.label}{where}, {r.metric}: paper {r.printed}"
                   f"{f' ({r.paper_n} seeds)' if r.paper_n else ''}, ours {_num(r.ours)} "
                   f"[{_num(r.ours_lo)}, {_num(r.ours_hi)}] ({r.ours_n} seeds, {r.data} data)"
                   f"; {_num(r.z)} paper stds")
    for (setting, metric), rho in rank_agreement(table).items():
        where = f"{setting}, " if setting is not None else ""
        out.append(f"PAPER    {where}{metric}: methods ranked alike? Spearman {_num(rho)} "
                   "(1 = the paper's order)")
    return out


HEADER = ("method", "setting", "metric", "paper (as printed)", "ours, mean [95 % CI]", "seeds",
          "ours - paper, in paper stds", "data", "source")
NUMERIC = (4, 6)     # the columns of numbers (right-aligned in HTML)


def cells(table) -> list[tuple[str, ...]]:
    """The table's rows as text, in HEADER's order (the report writes them as Markdown and
    as HTML)."""
    return [(str(r.label), "" if r.setting is None else str(r.setting), str(r.metric),
             str(r.printed), f"{_num(r.ours)} [{_num(r.ours_lo)}, {_num(r.ours_hi)}]",
             str(r.ours_n), _num(r.z), str(r.data), str(r.source))
            for r in table.itertuples(index=False)]


def markdown(table) -> str:
    """The report's table: the paper's value as printed, ours with its interval, the
    difference in the paper's stds, and where the paper prints it."""
    line = "| {} |\n".format
    return (line(" | ".join(HEADER)) + "|" + "---|" * len(HEADER) + "\n"
            + "".join(line(" | ".join(row)) for row in cells(table)))


def draw(table, out_dir: Path, title: str = "") -> Path:
    """out_dir/paper_vs_ours.png: ours against the paper's, per method, one panel per
    setting and metric: x the paper's mean ± its std, y our mean with its 95 % interval;
    Spearman's rho in each title. Saved as every figure is (drocli.figures.saving.save_figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from drocli.figures.saving import save_figure

    rho = rank_agreement(table)
    keys = list(rho)
    settings = list(dict.fromkeys(k[0] for k in keys))
    metrics = list(dict.fromkeys(k[1] for k in keys))
    fig, axes = plt.subplots(len(settings), len(metrics), squeeze=False,
                             figsize=(4.2 * len(metrics), 3.6 * len(settings)))
    for (setting, metric), ax in zip(((s, m) for s in settings for m in metrics),
                                     axes.flat, strict=True):
        g = table[(table["setting"].astype(str) == str(setting)) & (table["metric"] == metric)] \
            if setting is not None else table[table["metric"] == metric]
        if g.empty:
            ax.set_axis_off()
            continue
        yerr = np.vstack([g["ours"] - g["ours_lo"], g["ours_hi"] - g["ours"]])
        ax.errorbar(g["paper"], g["ours"], xerr=g["paper_std"], yerr=np.nan_to_num(yerr),
                    fmt="o", ms=4, capsize=2, lw=0.8)
        for r in g.itertuples(index=False):
            ax.annotate(r.label, (r.paper, r.ours), fontsize=6, xytext=(3, 2),
                        textcoords="offset points")
        if (g["data"] == "paper").all():
            lo = float(min(g["paper"].min(), g["ours"].min()))
            hi = float(max(g["paper"].max(), g["ours"].max()))
            ax.plot([lo, hi], [lo, hi], "k--", lw=0.6)
        where = f"{setting}: " if setting is not None else ""
        ax.set_title(f"{where}{metric} (Spearman {_num(rho[(setting, metric)])})",
                     fontsize=9)
        ax.set_xlabel("paper (mean ± std)", fontsize=8)
        ax.set_ylabel(f"ours (mean, 95 % CI; {g['data'].iloc[0]} data)", fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    try:
        return save_figure(fig, out_dir, Path(PNG).stem, ["png"], 110, title)[0]
    finally:
        plt.close(fig)
