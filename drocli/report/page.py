"""A report page's content, loaded from one results folder (`_load`): the spec's title,
captions and claim tests, the verdicts as `check --json` gives them, the manifest and the
solver times. The pages, the index and the README block render it without reading the
folder again.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from drocli.errors import DrocliError
from drocli.results import history


@dataclass
class Page:
    name: str            # results folder name (page stem)
    experiment: str
    title: str
    profile: str
    seeds: list
    manifest: dict
    claims: list         # ClaimResult
    figures: list[Path]
    note: str            # incomplete note or ""
    description: str = ""             # the spec's description (settings, stand-ins)
    captions: dict | None = None      # figure name -> (title, caption) from the spec
    links: list[str] | None = None    # figure paths relative to the report folder
    cell_times: dict = field(default_factory=dict)   # cell -> solver seconds (last time_s)
    tests: dict = field(default_factory=dict)   # claim id -> the test, generated from its fields
    effect_words: dict = field(default_factory=dict)   # claim id -> what its effects are
    flags: list = field(default_factory=list)   # flags.Flag: what was edited after the run
    seeds_used: int | None = None     # distinct seeds in the records (looks add to `seeds`)
    looks: list | None = None         # the sequential plan's looks, if any
    paper: object = None              # the paper's numbers beside ours (paper_vs_ours)
    history: str | None = None        # the commits that changed the records (results.history)
    docs: str | None = None           # drocli's docs/ relative to the report folder
    ablations: list = field(default_factory=list)   # claims.ablation.Pair shown on this page
    units: dict = field(default_factory=dict)   # claim id -> its effects' unit (claim.unit())
    factors: dict = field(default_factory=dict)   # claim id -> factor on the other's value
    metric_names: dict = field(default_factory=dict)   # metric -> its name (metric_words)
    effects_png: str | None = None    # the forest plot, relative to the report folder


def _load(results_dir: Path) -> Page:
    from drocli.claims.verdicts import judge_folder

    results_dir = Path(results_dir)
    spec_path = results_dir / "spec.yaml"
    if not spec_path.is_file():
        from drocli.results.files import refuse_link_loop

        refuse_link_loop(results_dir, spec_path)      # not "no spec.yaml": a link loop
        raise DrocliError("no spec.yaml in this folder", file=str(results_dir),
                          fix="give folders written by `drocli run`")
    judged = judge_folder(results_dir)      # the same verdicts as `check --json`
    spec, completeness, claims = judged.spec, judged.completeness, judged.claims
    figures = sorted((results_dir / "figures").glob("*.png"))
    from drocli.spec import run_caption

    captions = {f.name: (f.title or "", " ".join(
        t for t in (run_caption(f.caption, spec.profile, spec.seeds), _drawn(f)) if t))
        for f in spec.figures}
    df = judged.records
    times = _solver_times(df)
    words = metric_words(spec)
    profile = "?" if spec.profile is None else spec.profile     # a saved spec without one
    return Page(page_name(results_dir), spec.name, spec.title or spec.name, profile,
                list(spec.seeds), judged.manifest, claims, figures, completeness.note(),
                " ".join((spec.description or "").split()), captions, cell_times=times,
                tests={c.id: c.test_text() for c in spec.claims}, flags=judged.flags,
                effect_words={c.id: _readable(c.effect_text(), c, words)
                              for c in spec.claims},
                seeds_used=int(df["seed"].nunique()) if df is not None and "seed" in df
                else None, looks=list(spec.sequential.looks) if spec.sequential else None,
                paper=judged.paper, history=history.summary(results_dir),
                units={c.id: c.unit() for c in spec.claims}, metric_names=words,
                factors={c.id: _factor(c) for c in spec.claims})


def _factor(claim) -> float:
    """The factor a claim scales the other's value by (1 when it has none)."""
    f = getattr(claim, "factor", 1.0)
    return float(f) if isinstance(f, int | float) and not isinstance(f, bool) else 1.0


def metric_words(spec) -> dict[str, str]:
    """metric -> what the spec calls it where it draws it (a panel's y-label, else the
    paper's name in `reported:`), so that an effect reads 'in units of mer (max excess
    risk)', not 'of mer' alone."""
    out: dict[str, str] = {}
    for f in spec.figures:
        panels = getattr(f, "panels", None)      # a figure kind may have none (a table)
        for p in panels if isinstance(panels, list | tuple) else []:
            metric, label = getattr(p, "metric", None), getattr(p, "ylabel", None)
            if metric and label and metric not in out and label != metric:
                out[metric] = " ".join(str(label).split())
    reported = getattr(spec, "reported", None)       # else the paper's name for it
    for metric, name in (getattr(reported, "metrics", None) or {}).items():
        out.setdefault(metric, str(name))
    return out


def _readable(text: str, claim, words: dict[str, str]) -> str:
    """`text` with the claim's metric named as the spec draws it."""
    m = getattr(claim, "metric", None)
    if m in words and f"units of {m}" in text:
        return text.replace(f"units of {m}", f"units of {m} ({words[m]})", 1)
    return text


def _solver_times(df) -> dict[str, float]:
    """cell -> its solver time (the records' last `time_s`, finite ones only); {} when the
    records have none."""
    if df is None or not len(df) or not {"cell", "time_s"} <= set(df.columns):
        return {}
    import pandas as pd

    t = pd.to_numeric(df["time_s"], errors="coerce").groupby(df["cell"]).max()
    return {str(k): float(v) for k, v in t.items() if math.isfinite(v)}


def page_name(results_dir) -> str:
    """A results folder's page name: its own name, taken from the absolute path so that
    `report .` is named after the folder (it wrote `.md` and spilled the figures into the
    report folder)."""
    return Path(os.path.abspath(results_dir)).name


def _drawn(fig) -> str:
    """How a curves figure draws its seeds (the image says nothing of it)."""
    if getattr(fig, "kind", None) != "curves":
        return ""
    logy = bool(fig.logy) or any(p.logy for p in fig.panels)
    lin = not fig.logy or any(p.logy is False for p in fig.panels)
    band = fig.band
    if band == "none":
        what = "seed mean" + (" (geometric on log axes)" if logy else "")
    elif band == "quantile":
        what = "seed median, band 25-75 % quantiles"
    else:
        what = ("seed mean, band +-1 std" if lin else "") + (
            ("; " if lin else "") + "on log y-axes the geometric mean, band x/÷ one "
            "geometric std" if logy else "")
    return f"[Drawn: {what}.]"


def _caption(page: Page, png: Path) -> tuple[str, str]:
    """The spec's title and caption of the figure a PNG was drawn from (its name, or its
    name with a panel suffix)."""
    caps = page.captions or {}
    name = max((n for n in caps if png.stem == n or png.stem.startswith(n + "_")),
               key=len, default=None)
    if name is None:
        return "", ""
    title, caption = caps[name]
    return " ".join(title.split()), " ".join(caption.split())
