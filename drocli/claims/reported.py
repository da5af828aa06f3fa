"""The paper's own reported numbers, as data beside ours (issue 54).

Every number a paper reports about its experiments sits in `experiments/reported/<paper>.csv`,
in the paper's words (method, setting and metric as printed) with its source: the table, row
and column, or the sentence. A spec's `reported:` block says which of those rows its folder
stands for and how the paper's names map to its own labels, cases and metrics:

    reported:
      file: reported/003_omd_tch.csv        # relative to the spec file
      where: {dataset: MNIST}               # the file's rows this folder reproduces
      data: stand-in                        # our data: the paper's, or a stand-in
      labels: {FedAvg: LS(FedAvg), ...}     # spec label -> the paper's method
      settings: {rotation: Rotation, ...}   # spec case -> the paper's setting
      metrics: {acc_test: Average accuracy, ...}

Loading a spec reads the file, checks every mapped name against it and against the spec
(the file, key path and fix named on error), and keeps the mapped rows in the block itself
(`rows`, in the spec's own names), so a results folder's spec.yaml carries the paper's
numbers it is compared with and never needs the file again.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from drocli.errors import DrocliError, did_you_mean

COLUMNS = ("source", "dataset", "setting", "method", "metric", "statistic", "value", "std",
           "n_seeds", "printed")
MAX_BYTES = 2_000_000


class ReportedRow(BaseModel):
    """One number the paper reports, in the spec's names (label, setting, metric)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    label: str
    setting: str | None = None
    metric: str
    value: float
    std: float | None = Field(None, ge=0)
    n_seeds: int | None = Field(None, ge=1)
    printed: str
    source: str


class ReportedSpec(BaseModel):
    """The spec's `reported:` block (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    file: str = Field(description="the paper's numbers (CSV), relative to the spec file")
    where: dict[str, str] = Field(default_factory=dict, description="file column -> value: "
                                  "the rows this folder reproduces (e.g. dataset: MNIST)")
    data: Literal["paper", "stand-in"] = Field(description="whether our data is the "
                                               "paper's or a stand-in")
    labels: dict[str, str] = Field(min_length=1, description="spec label -> the paper's "
                                   "method")
    settings: dict[str, str] = Field(default_factory=dict, description="spec case -> the "
                                     "paper's setting")
    metrics: dict[str, str] = Field(min_length=1, description="spec metric -> the paper's "
                                    "metric")
    rows: list[ReportedRow] | None = Field(None, description="filled on load: the mapped "
                                           "rows, in the spec's names")


def read_file(path: Path, *, spec_file: str) -> list[dict]:
    """The CSV's rows as dicts, every column present and every value a number."""
    key = "reported.file"
    if not path.is_file():
        raise DrocliError(f"no file {path}", file=spec_file, key=key,
                          fix="give the path of a file in experiments/reported/, relative to "
                              "the spec file (e.g. reported/003_omd_tch.csv)")
    if path.stat().st_size > MAX_BYTES:
        raise DrocliError(f"{path} is larger than {MAX_BYTES:,} bytes", file=spec_file,
                          key=key, fix="a paper's reported numbers fit in a small CSV")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DrocliError(f"{path} lacks the column(s) {', '.join(missing)}",
                              file=spec_file, key=key,
                              fix=f"write the header {','.join(COLUMNS)}")
        rows = list(reader)
    for i, r in enumerate(rows, start=2):
        for col in ("value", "std", "n_seeds"):
            text = (r.get(col) or "").strip()
            if col != "value" and not text:
                r[col] = None
                continue
            try:
                r[col] = float(text) if col != "n_seeds" else int(text)
            except ValueError:
                raise DrocliError(f"{path}, line {i}: {col} {text!r} is not a number",
                                  file=spec_file, key=key,
                                  fix=f"write {col} as a plain decimal") from None
            if not math.isfinite(r[col]):
                raise DrocliError(f"{path}, line {i}: {col} {text!r} is not finite",
                                  file=spec_file, key=key, fix="write a finite number")
    return rows


def attach(block: ReportedSpec, *, spec_file: str, labels: list[str], cases: list[str],
           metrics: list[str], known_labels: list[str], known_cases: list[str]) -> None:
    """Read the block's file, check its mapping and keep the mapped rows in `block.rows`.

    `labels`, `cases`, `metrics`: those of the spec as resolved (a profile may run fewer);
    `known_labels`, `known_cases`: those of the spec file before any profile, which a mapped
    name must be one of. Rows of labels or cases the resolved spec does not run are left
    out."""
    path = Path(spec_file).parent / block.file
    rows = read_file(path, spec_file=spec_file)
    for col, want in block.where.items():
        if col not in COLUMNS:
            raise DrocliError(f"unknown column {col!r}", file=spec_file,
                              key=f"reported.where.{col}", fix=did_you_mean(col, COLUMNS))
        have = sorted({r[col] for r in rows})
        if want not in have:
            raise DrocliError(f"{block.file} has no rows with {col} {want!r}", file=spec_file,
                              key=f"reported.where.{col}", fix=did_you_mean(want, have))
        rows = [r for r in rows if r[col] == want]
    for what, mapping, ours, column in (
            ("label", block.labels, known_labels, "method"),
            ("case", block.settings, known_cases, "setting"),
            ("metric", block.metrics, metrics, "metric")):
        have = sorted({r[column] for r in rows})
        key = {"label": "labels", "case": "settings", "metric": "metrics"}[what]
        for mine, theirs in mapping.items():
            if mine not in ours:
                raise DrocliError(f"{mine!r} is not a {what} of this spec", file=spec_file,
                                  key=f"reported.{key}.{mine}",
                                  fix=did_you_mean(mine, ours) if ours else "remove it")
            if theirs not in have:
                raise DrocliError(f"{block.file} has no {column} {theirs!r}"
                                  + (f" among the rows {block.where}" if block.where else ""),
                                  file=spec_file, key=f"reported.{key}.{mine}",
                                  fix=did_you_mean(theirs, have))
    back = {name: {v: k for k, v in m.items()} for name, m in
            (("method", block.labels), ("setting", block.settings), ("metric", block.metrics))}
    kept = []
    for r in rows:
        label = back["method"].get(r["method"])
        metric = back["metric"].get(r["metric"])
        setting = back["setting"].get(r["setting"]) if block.settings else None
        if label is None or metric is None or (block.settings and setting is None):
            continue
        if label not in labels or (setting is not None and setting not in cases):
            continue
        kept.append(ReportedRow(label=label, setting=setting, metric=metric,
                                value=r["value"], std=r["std"], n_seeds=r["n_seeds"],
                                printed=r["printed"], source=r["source"]))
    block.rows = kept


def frame(spec):
    """The paper's numbers in the layout of records (label, setting, metric, value) plus
    std, n_seeds, printed and source; None when the spec has none."""
    import pandas as pd

    block = getattr(spec, "reported", None)
    if block is None or not block.rows:
        return None
    df = pd.DataFrame([r.model_dump() for r in block.rows])
    if not block.settings:
        df = df.drop(columns="setting")
    return df
