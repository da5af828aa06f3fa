"""Each panel's own size for the multi-panel claims (issue 54; docs/verdicts.md, "Words without
numbers"): R measured per panel on a recorded folder, then V = 0.02 R or S = 0.1 R rounded
down to one significant digit, in that panel's units.

    python docs/panel_sizes.py            # prints each claim's panels with their sizes

R of a panel, as the rule defines it: for a curve, the seed-mean value at the first
checkpoint minus the best final seed mean among the claim's labels; for a final table, the
spread of the final seed means of the table's methods (those the paper reports) in that
setting. `--write` puts the sizes into the specs' `panels:` (each panel's `margin`). The
folder it is measured on is the claim's pilot: a new study judges the sized claims on fresh
seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the pilot a spec's sizes were measured on, where it is not results/<spec>
PILOT = {"omd_tch_fl_cifar10": "omd_tch_fl_cifar10-table1"}
# spec, claim id, fraction of R (0.02 = V, 0.1 = S), sign of the margin, R's definition
CLAIMS = [
    ("as_lsvrg_fig1", "opt_lsvrg_below_opt_sgd_rightmost", 0.02, 1, "curve"),
    ("as_lsvrg_fig1", "opt_lsvrg_always_beats_lsvrg", 0.02, 1, "curve"),
    ("as_lsvrg_fig2", "as_beats_uniform", 0.02, 1, "curve"),
    ("as_lsvrg_fig4", "as_beats_is", 0.02, 1, "curve"),
    ("as_lsvrg_fig5", "as_beats_uniform_and_is", 0.02, 1, "curve"),
    ("as_lsvrg_fig5", "is_does_poorly_nu1", 0.1, -1, "curve"),
    ("re_rsvrb_fig2_digits", "re_rsvrb_lowest_objective", 0.02, 1, "curve"),
    ("omd_tch_fl_mnist", "ada_parity_generally_lower", 0.02, 1, "table"),
    ("omd_tch_fl_mnist", "ada_eg_parity_generally_lower", 0.02, 1, "table"),
    ("omd_tch_fl_cifar10", "ada_parity_generally_lower", 0.02, 1, "table"),
    ("omd_tch_fl_cifar10", "ada_eg_parity_generally_lower", 0.02, 1, "table"),
]


def round_down(x: float) -> float:
    """To one significant digit, toward zero (0.0347 -> 0.03, 3.15 -> 3)."""
    if x <= 0 or not math.isfinite(x):
        return 0.0
    e = math.floor(math.log10(x))
    return math.floor(x / 10**e) * 10**e


def panel_range(records, claim, panel: dict, how: str, table_labels=()) -> float:
    """R of one panel (see the module docstring)."""
    import numpy as np

    from drocli.claims import panel_parts
    from drocli.figures.plots.finals import final_frame
    from drocli.results.aggregate import apply_filter

    filt = {**claim.filter, **panel_parts(panel)[0]}
    metric = filt.pop("metric", claim.metric)
    finals = final_frame(records, [metric], filt).groupby("label", observed=True)[metric].mean()
    if how == "table":      # the table's methods: those the paper reports
        shown = finals[finals.index.astype(str).isin(table_labels)] if table_labels \
            else finals
        return float(shown.max() - shown.min())
    rows = apply_filter(records, filt)
    rows = rows[rows["metric"] == metric].assign(value=lambda r: r["value"].astype(float))
    mine = rows[rows["label"].astype(str).isin(claim.labels)]
    first = mine.sort_values("step").groupby("cell").head(1)
    start = float(np.nanmean(first.groupby("label", observed=True)["value"].mean()))
    best = float(finals[finals.index.astype(str).isin(claim.labels)].min())
    return start - best


def sizes() -> list[tuple[str, str, list[tuple[dict, float, float]]]]:
    """(spec, claim, [(panel, R, margin)]) for every claim of CLAIMS."""
    from drocli.results.integrity import read_checked
    from drocli.spec import load_spec

    out = []
    for name, cid, frac, sign, how in CLAIMS:
        spec = load_spec(ROOT / "experiments" / f"{name}.yaml")
        claim = next(c for c in spec.claims if c.id == cid)
        records = read_checked(ROOT / "results" / PILOT.get(name, name))[0]
        rows = []
        for panel in claim.panels:
            r = panel_range(records, claim, panel, how,
                            list(spec.reported.labels) if spec.reported else ())
            rows.append((panel, r, sign * round_down(frac * r)))
        out.append((name, cid, rows))
    return out


def flow(panels: list[tuple[dict, float, float]]) -> str:
    """The claim's `panels:` as YAML flow lines, each panel with its margin."""
    from drocli.claims import panel_parts

    items = []
    for panel, _, margin in panels:
        keys = ", ".join(f"{k}: {v}" for k, v in panel_parts(panel)[0].items())
        items.append(f"{{{keys}, margin: {margin:g}}}")
    return "    panels: [" + ",\n             ".join(items) + "]\n"


def write(name: str, cid: str, rows) -> None:
    """Replace the claim's `panels:` in experiments/<name>.yaml, keeping the rest."""
    import re

    path = ROOT / "experiments" / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    start = text.index(f"  - id: {cid}\n")
    end = text.find("\n  - id: ", start + 5)
    end = len(text) if end < 0 else end + 1
    block = text[start:end]
    new = re.sub(r"    panels: (\[.*?\]|\*\w+)\n", lambda m: flow(rows), block, count=1,
                 flags=re.S)
    path.write_text(text[:start] + new + text[end:], encoding="utf-8")


def main(argv=None) -> None:
    import sys

    argv = sys.argv[1:] if argv is None else argv
    for name, cid, rows in sizes():
        print(f"{name} {cid}:")
        for panel, r, margin in rows:
            where = ", ".join(f"{k}={v}" for k, v in panel.items() if k != "margin")
            print(f"  [{where}] R = {r:.4g}, margin {margin:g}")
        if "--write" in argv:
            write(name, cid, rows)


if __name__ == "__main__":
    main()
