"""Pick the best swept setting of a tuning run (used for experiments/as_lsvrg_fig5.yaml).

    python experiments/tuning/select_best.py RESULTS_DIR [RESULTS_DIR ...] [--metric M]
        [--by nu,sigma] [--max]

The records of several runs (e.g. a grid and its refinement) are pooled. For every method
(the label up to its first swept value, e.g. "AS-LSVRG" of "AS-LSVRG 0.001 1e-06") and every
data panel (the --by columns), the mean over seeds of the metric at each cell's last
checkpoint is computed per swept setting (step, osmd_lr, ...); a diverged cell (non-finite
last value) counts as +inf, so a setting is only eligible when every seed finished. Prints
one line per (method, panel): the best setting, its mean and the runner-up, and whether it
sits on its grid's edge (then the grid is extended), then a YAML-ready nested table
{by1: {v: {by2: {v: value}}}} per swept parameter. Paper 003's Table 1 procedure:
`--metric max_loss_train --by setting` on experiments/tuning/omd_tch_fl_*_table1.yaml.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from drocli.results.aggregate import STANDARD_COLUMNS


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--metric", default="log10_loss",
                    help="metric, or a comma-separated list: the worse final value counts")
    ap.add_argument("--by", default="nu,sigma", help="data columns that define a panel")
    ap.add_argument("--max", action="store_true", help="larger is better")
    ap.add_argument("--finite", default="", help="a metric whose final value must be finite "
                    "for a cell to be eligible (e.g. objective_exact)")
    a = ap.parse_args(argv)
    from drocli.results.records import read_records

    df = pd.concat([read_records(Path(r)) for r in a.results], ignore_index=True)
    by = [c for c in a.by.split(",") if c]
    metrics = [m for m in a.metric.split(",") if m]
    final = df.sort_values(["cell", "step"], kind="stable").drop_duplicates(
        ["cell", "metric"], keep="last")                 # each cell's last value per metric
    last = final[final.metric.isin(metrics)]
    if len(metrics) > 1:     # the worse of the listed metrics, per cell (NaN: diverged)
        worst = pd.to_numeric(last["value"], errors="coerce").groupby(last["cell"]).agg(
            lambda x: (x.min() if a.max else x.max()) if x.notna().all() else np.nan)
        last = last.drop_duplicates("cell").copy()
        last["value"] = last["cell"].map(worst)
    last = last.copy()
    swept = [c for c in last.columns if c not in STANDARD_COLUMNS and c not in by
             and last[c].notna().any()]
    last["method"] = last["label"].str.split(" ").str[0]
    v = pd.to_numeric(last["value"], errors="coerce").to_numpy(float).copy()
    if a.finite:
        fin = pd.to_numeric(final[final.metric == a.finite].set_index("cell")["value"],
                            errors="coerce")
        ok = last["cell"].map(np.isfinite(fin)).fillna(False).to_numpy(bool)
        v[~ok] = np.nan
    v[~np.isfinite(v)] = -np.inf if a.max else np.inf
    last["score"] = v
    tables: dict = {}
    for (method, *panel), g in last.groupby(["method", *by], sort=True):
        keys = [c for c in swept if g[c].notna().any()]
        # dropna=False: a value given as a fixed parameter in one stage and swept in another
        # is NaN in the first; its cells still count (the label names the setting)
        means = g.groupby(keys, dropna=False).agg(
            mean=("score", "mean"), count=("score", "count"), label=("label", "first")
        ).sort_values("mean", ascending=not a.max)
        best, nxt = means.index[0], (means.index[1] if len(means) > 1 else None)
        best = best if isinstance(best, tuple) else (best,)
        panel = [_key(p) for p in panel]
        where = ", ".join(f"{c}={p}" for c, p in zip(by, panel, strict=True))
        nxt = nxt if isinstance(nxt, tuple) else (nxt,)
        runner = "" if len(means) < 2 else (
            "; runner-up " + ", ".join(f"{float(x):g}" for x in nxt)
            + f" ({means['label'].iloc[1]}) {means['mean'].iloc[1]:.4f}")
        setting = ", ".join(f"{k}={float(x):g}" for k, x in zip(keys, best, strict=True))
        edges = [k for k, x in zip(keys, best, strict=True) if g[k].nunique() > 1
                 and float(x) in (float(g[k].min()), float(g[k].max()))]
        edge = f" [ON THE GRID'S EDGE in {', '.join(edges)}: extend the grid]" if edges else ""
        print(f"{method:>10} [{where}]: best {setting} ({means['label'].iloc[0]}) "
              f"mean {means['mean'].iloc[0]:.4f} over {int(means['count'].iloc[0])} seeds"
              f"{runner}{edge}")
        for k, val in zip(keys, best, strict=True):
            node = tables.setdefault(method, {}).setdefault(k, {})
            for c, p in zip(by[:-1], panel[:-1], strict=True):
                node = node.setdefault(c, {}).setdefault(p, {})
            node.setdefault(by[-1], {})[panel[-1]] = float(val) if math.isfinite(
                float(val)) else val
    for method, params in tables.items():
        for k, tab in params.items():
            print(f"{method} {k}: {_yaml(tab)}")


def _key(v):
    """A panel value as a float when it is numeric (nu, sigma), else as text (dataset)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def _yaml(node) -> str:
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in node.items()) + "}"
    return f"{node:.3g}" if isinstance(node, float) else str(node)


if __name__ == "__main__":
    main()
