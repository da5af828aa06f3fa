"""`drocli check --reference`: final values of a run against recorded results, within a
tolerance (per label floors from the spec's `reference_rtol`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

KEY = ("label", "dataset", "seed", "metric")
# columns never used to tell cells apart in compare_reference
STANDARD_EXTRA_SKIP = ("experiment", "cell", "solver", "step", "oracle_calls", "time_s",
                       "value", "status", *KEY)


def _finals_by_key(df: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    order = [c for c in ("cell", "step", "oracle_calls") if c in df.columns]
    last = df.sort_values(order, kind="stable").groupby(["cell", "metric"], sort=False).tail(1)
    out = pd.DataFrame({k: last[k].map(_key_text) if k in last.columns else ""
                        for k in (*KEY, *extra)})
    out["value"] = pd.to_numeric(last["value"], errors="coerce").to_numpy(dtype=float)
    return out.reset_index(drop=True)


def _key_text(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | float | np.integer | np.floating):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(v)


def compare_reference(records: pd.DataFrame, reference: pd.DataFrame, rtol: float = 1e-4,
                      atol: float = 1e-9, rtol_by_label: dict | None = None) -> list[str]:
    """Compare the final value of every (label, dataset, seed, metric) with a reference.

    Match: |value - ref| <= atol + r * |ref|, r = max(rtol, rtol_by_label[label]) (the spec's
    `reference_rtol`); NaN matches NaN only. Returns one line per
    mismatch or per key present on one side only, except the reference's keys of seeds the
    run never ran (`later_seeds`); an empty list means all match. When a
    key names several cells (a swept parameter sharing a label), the parameter columns
    that tell them apart are added to the key.
    """
    common = [c for c in records.columns
              if c in reference.columns and c not in STANDARD_EXTRA_SKIP]
    extra: list[str] = []
    for df in (records, reference):
        if "cell" not in df.columns:
            continue
        per_key = df.groupby([k for k in KEY if k in df.columns], dropna=False)["cell"]
        if (per_key.nunique() > 1).any():
            cells = df.groupby("cell").first()
            for c in common:
                if c not in KEY and c not in extra and c in cells.columns and \
                        cells.groupby([k for k in KEY if k in cells.columns and k != "metric"],
                                      dropna=False)[c].nunique(dropna=False).gt(1).any():
                    extra.append(c)
    cur = _finals_by_key(records, extra)
    ref = _finals_by_key(reference, extra)
    keys = [*KEY, *extra]
    lines = []
    for name, df in (("records", cur), ("reference", ref)):
        dup = df[df.duplicated(keys, keep=False)]
        if not dup.empty:
            k = dup.iloc[0]
            lines.append(f"ambiguous key in {name}: {_key_str(k, keys)} names "
                         f"{int(df.duplicated(keys, keep=False).sum())} final values")
    cur = cur.drop_duplicates(keys)
    ref = ref.drop_duplicates(keys)
    merged = cur.merge(ref, on=keys, how="outer", suffixes=("", "_ref"), indicator=True)
    merged = merged.sort_values(keys, kind="stable")
    run_seeds = set(cur["seed"])
    for _, row in merged.iterrows():
        key = _key_str(row, keys)
        a, b = float(row["value"]), float(row["value_ref"])
        if row["_merge"] == "left_only":
            lines.append(f"not in reference: {key} (value {a:.6g})")
        elif row["_merge"] == "right_only" and row["seed"] not in run_seeds:
            continue                 # a seed of the reference's later looks (`later_seeds`)
        elif row["_merge"] == "right_only":
            lines.append(f"missing from records: {key} (reference {b:.6g})")
        elif math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                lines.append(f"{key}: {a:.6g} vs reference {b:.6g} (one is NaN)")
        else:
            r = max(rtol, (rtol_by_label or {}).get(str(row["label"]), 0.0))
            if abs(a - b) > atol + r * abs(b):
                rel = abs(a - b) / abs(b) if b else math.inf
                lines.append(f"{key}: {a:.8g} vs reference {b:.8g} (abs diff "
                             f"{abs(a - b):.2g}, rel diff {rel:.2g} > rtol {r:g}, atol {atol:g})")
    return lines


def later_seeds(records: pd.DataFrame, reference: pd.DataFrame) -> list:
    """The seeds the reference holds and the run never ran: a reference recorded further
    into its sequential plan (`run --until-decided`) than the run being compared, which is
    compared on its own seeds; `check` says how many were left out."""
    have = {_key_text(s) for s in records["seed"].unique()}
    return sorted({_key_text(s) for s in reference["seed"].unique()} - have,
                  key=lambda s: (len(s), s))


def _key_str(row, keys) -> str:
    parts = [str(row[k]) if k != "seed" else f"seed {row[k]}" for k in KEY]
    parts += [f"{k}={row[k]}" for k in keys if k not in KEY]
    return " / ".join(parts)


def blas_kernels(folder) -> str | None:
    """The OpenBLAS kernel families a results folder was computed with (from its manifest's
    `blas` entries, e.g. "Haswell"), or None when the manifest does not say."""
    import json
    from pathlib import Path

    from drocli.errors import DrocliError
    from drocli.results.files import read_bytes
    from drocli.results.integrity import MAX_MANIFEST_BYTES

    try:
        blas = json.loads(read_bytes(Path(folder) / "manifest.json",
                                     MAX_MANIFEST_BYTES)).get("blas") or []
    except (OSError, ValueError, AttributeError, DrocliError, RecursionError):
        return None
    archs = sorted({str(b.get("architecture")) for b in blas
                    if isinstance(b, dict) and b.get("architecture")})
    return "/".join(archs) or None


def kernel_note(run_dir, reference_dir) -> str | None:
    """Why mismatches may not be a regression: the two folders used different OpenBLAS kernel
    families, whose different summation orders are amplified by rounding-sensitive runs."""
    run, ref = blas_kernels(run_dir), blas_kernels(reference_dir)
    if run is None or ref is None or run == ref:
        return None
    return (f"the reference was computed with OpenBLAS {ref} kernels, this run with {run}: "
            f"runs sensitive to rounding differ between kernel families; compare like with "
            f"like by re-running with OPENBLAS_CORETYPE={ref.split('/')[0]}")
