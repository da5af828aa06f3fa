"""The paper's own reported numbers (issue 54): the data files against the papers' texts,
the spec's `reported:` block refused with its key path, each claim read on the paper's
numbers (checked by hand-computed comparisons), and ours beside the paper's (the interval
against scipy's)."""

from __future__ import annotations

import csv
import math
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import TINY_SPEC, call

ROOT = Path(__file__).resolve().parents[1]
REPORTED = ROOT / "experiments" / "reported"
PAPERS = Path(os.environ.get("DROCLI_PAPERS", ROOT.parent / "shared" / "papers" / "seeds"))
TABLE2_METHODS = ["LS(FedAvg)", "qFFL", "PropFair", "FedMGDA+", "FedFV", "TCH", "STCH",
                  "OMDgd-TCH(AFL)", "AdaOMDgd-TCH", "OMDeg-TCH", "AdaOMDeg-TCH"]


def _rows(name: str) -> list[dict]:
    with (REPORTED / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_file_has_the_columns_and_numbers():
    from drocli.claims.reported import COLUMNS, read_file

    files = sorted(REPORTED.glob("*.csv"))
    assert {f.name[:3] for f in files} == {"000", "001", "002", "003", "004"}
    for f in files:
        assert tuple(csv.reader(f.open(encoding="utf-8")).__next__()) == COLUMNS
        for r in read_file(f, spec_file="test"):
            assert math.isfinite(r["value"]) and r["source"] and r["printed"]


def test_table2_is_whole():
    """Paper 003's Table 2: 11 methods x 2 data sets x 3 settings x 3 metrics, mean ± std
    over 10 seeds, each printed as the paper prints it."""
    rows = _rows("003_omd_tch.csv")
    assert len(rows) == 198
    cells = {(r["dataset"], r["setting"], r["metric"], r["method"]) for r in rows}
    assert len(cells) == 198
    assert {r["method"] for r in rows} == set(TABLE2_METHODS)
    for r in rows:
        assert r["printed"] == f"{float(r['value']):.3f}±{float(r['std']):.3f}"
        assert r["n_seeds"] == "10" and r["statistic"] == "mean"
        assert r["dataset"] in r["source"] and r["method"] in r["source"]


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"paper texts not here ({PAPERS})")
def test_table2_equals_the_papers_text():
    """Every value against the paper's own text: its 18 rows of 11 'mean±std', in the
    order MNIST then CIFAR10, rotation, C=2, C=5, each with accuracy, loss, parity."""
    text = next(PAPERS.glob("003_*.txt")).read_text(encoding="utf-8")
    start = text.index("Table 2: Numerical Results of All Methods on Three Metrics.")
    lines = [ln for ln in text[start:].splitlines()[1:40]
             if len(re.findall(r"\d+\.\d+±\d+\.\d+", ln)) == 11][:18]
    assert len(lines) == 18
    ours = {(r["dataset"], r["setting"], r["metric"], r["method"]): r["printed"]
            for r in _rows("003_omd_tch.csv")}
    settings = ["Rotation", "Partial class C=2", "Partial class C=5"]
    metrics = ["Average accuracy", "Agnostic loss", "Accuracy parity"]
    for i, line in enumerate(lines):
        key = ("MNIST" if i < 9 else "CIFAR10", settings[(i // 3) % 3], metrics[i % 3])
        assert key[2] in line
        printed = re.findall(r"\d+\.\d+±\d+\.\d+", line)
        assert [ours[(*key, m)] for m in TABLE2_METHODS] == printed, key


@pytest.mark.skipif(not PAPERS.is_dir(), reason=f"paper texts not here ({PAPERS})")
def test_every_printed_number_is_in_its_paper():
    for f in sorted(REPORTED.glob("*.csv")):
        text = " ".join(next(PAPERS.glob(f"{f.name[:3]}_*.txt")).read_text().split())
        missing = [r["printed"] for r in _rows(f.name) if r["printed"] not in text]
        assert not missing, (f.name, missing[:5])


# --- the spec's block ---------------------------------------------------------------------

CSV_TEXT = textwrap.dedent("""\
    source,dataset,setting,method,metric,statistic,value,std,n_seeds,printed
    "Table 9, row 'a', column 'Alg-G'",synthetic,,Alg-G,max risk,mean,0.50,0.02,5,0.50±0.02
    "Table 9, row 'a', column 'Alg-S'",synthetic,,Alg-S,max risk,mean,0.60,0.03,5,0.60±0.03
    """)
BLOCK = textwrap.dedent("""\
    reported:
      file: reported.csv
      where: {dataset: synthetic}
      data: stand-in
      labels: {ALEG: Alg-G, SMD: Alg-S}
      metrics: {max_risk_train: max risk}
    """)


def _spec(tmp_path: Path, block: str = BLOCK, csv_text: str = CSV_TEXT) -> Path:
    (tmp_path / "reported.csv").write_text(csv_text)
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_SPEC + block)
    return spec


def test_block_keeps_the_mapped_rows_in_the_spec(tmp_path):
    from drocli.spec import load_spec

    spec = load_spec(_spec(tmp_path))
    rows = {(r.label, r.metric): (r.value, r.std, r.n_seeds) for r in spec.reported.rows}
    assert rows == {("ALEG", "max_risk_train"): (0.5, 0.02, 5),
                    ("SMD", "max_risk_train"): (0.6, 0.03, 5)}


@pytest.mark.parametrize("override,key,word", [
    ("reported.labels.ALGE=Alg-G", "reported.labels.ALGE", "ALEG"),
    ("reported.labels.ALEG=Alg-X", "reported.labels.ALEG", "Alg-G"),
    ("reported.metrics.max_risk_tst=max risk", "reported.metrics.max_risk_tst",
     "max_risk_test"),
    ("reported.metrics.max_risk_train=min risk", "reported.metrics.max_risk_train",
     "max risk"),
    ("reported.where.dataset=synthetc", "reported.where.dataset", "synthetic"),
    ("reported.where.datset=synthetic", "reported.where.datset", "dataset"),
    ("reported.file=nowhere.csv", "reported.file", "no file"),
    ("reported.data=ours", "reported.data", "stand-in"),
])
def test_block_refused_with_its_key(override, key, word, tmp_path, capsys):
    spec = _spec(tmp_path)
    out = tmp_path / "out"
    code = call("run", spec, "--out", out, "--set", override, "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert not out.exists()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f": {key}: " in err and word in err and "(fix: " in err, err


def test_a_bad_number_in_the_file_is_refused(tmp_path, capsys):
    spec = _spec(tmp_path, csv_text=CSV_TEXT.replace(",0.60,", ",0.6O,"))
    assert call("show", spec) == 2
    err = capsys.readouterr().err
    assert "reported.file" in err and "line 3" in err and "not a number" in err


# --- claims read on the paper's numbers ---------------------------------------------------

def _paper(values: dict) -> pd.DataFrame:
    """label, setting, metric -> the paper's mean, as drocli.claims.reported.frame gives it."""
    return pd.DataFrame([{"label": lab, "setting": s, "metric": m, "value": v, "std": 0.1,
                          "n_seeds": 10, "printed": f"{v}", "source": "t"}
                         for (lab, s, m), v in values.items()])


def _claim(**kw):
    from drocli.claims import validate_claim

    base = {"id": "c", "text": "A below B", "kind": "final_below", "metric": "loss",
            "solver": "A", "others": ["B"], "per_seed": False}
    return validate_claim({**base, **kw})


@pytest.mark.parametrize("margin,expected", [(0.3, "supported"), (0.49, "supported"),
                                             (0.51, "unsupported"), (0.6, "unsupported")])
def test_reading_uses_the_claims_own_size(margin, expected):
    """A 1.0 against B 1.5: 'A below B by more than m' is shown for m < 0.5 only."""
    from drocli.claims.paper import paper_records, read

    paper = paper_records(_paper({("A", "s", "loss"): 1.0, ("B", "s", "loss"): 1.5}))
    got = read(_claim(margin=margin), paper, "paper")
    assert got["status"] == expected
    assert got["values"] == {"A": 1.0, "B": 1.5}
    assert f"margin {margin:g}" in got["detail"]


def test_reading_counts_panels_as_the_claim_does():
    """Gaps 0.5, 0.1, 0.4 in three settings with margin 0.3: 2 of 3 panels show it, so
    'in most cases' (2 needed) is supported and 'always' (3 needed) is not."""
    from drocli.claims.paper import paper_records, read

    gaps = {"s1": 0.5, "s2": 0.1, "s3": 0.4}
    paper = paper_records(_paper({**{("A", s, "loss"): 1.0 for s in gaps},
                                  **{("B", s, "loss"): 1.0 + g for s, g in gaps.items()}}))
    panels = [{"setting": s} for s in gaps]
    most = read(_claim(margin=0.3, panels=panels, panels_needed=2), paper, "paper")
    every = read(_claim(margin=0.3, panels=panels), paper, "paper")
    assert most["status"] == "supported" and every["status"] == "unsupported"
    assert most["detail"].startswith("2 of 3 panels show it, 2 needed")


def test_reading_covers_only_what_the_paper_reports():
    from drocli.claims.paper import paper_records, read

    paper = paper_records(_paper({("A", "s", "loss"): 1.0, ("B", "s", "loss"): 1.5}))
    assert read(_claim(metric="acc"), paper, "paper") is None            # other metric
    assert read(_claim(others=["C"]), paper, "paper") is None            # other method
    assert read(_claim(filter={"setting": "t"}), paper, "paper") is None  # other setting
    curve = _claim(kind="reach_first", level=1.2, factor=1.0)
    assert read(curve, paper, "paper") is None                           # curves
    assert read(_claim(), None, "paper") is None


def _ours(a: list[float], b: list[float]) -> pd.DataFrame:
    rows = []
    for lab, vals in (("A", a), ("B", b)):
        for seed, v in enumerate(vals):
            rows.append({"experiment": "x", "cell": f"{lab}{seed}", "solver": lab,
                         "label": lab, "dataset": "d", "seed": seed, "step": 1,
                         "oracle_calls": 1.0, "time_s": 0.0, "metric": "loss", "value": v,
                         "setting": "s"})
    return pd.DataFrame(rows)


def test_a_claim_the_paper_does_not_support_is_never_a_failure():
    """Ours: A far above B on every seed (FAILS on ours alone); the paper: A 1.0 against
    B 1.1, short of the margin 0.3: the outcome is `unsupported`, our FAILS kept beside."""
    from drocli.claims import evaluate_claims, format_result, summary_counts
    from drocli.claims.paper import apply, paper_records

    claim = _claim(margin=0.3).model_dump(mode="json")
    ours = _ours([2.0, 2.1, 2.2, 2.05, 2.15, 2.0, 2.1, 2.2],
                 [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.1, 0.9])
    alone = evaluate_claims(ours, [claim], "paper")[0]
    assert alone.status == "fails"
    paper = paper_records(_paper({("A", "s", "loss"): 1.0, ("B", "s", "loss"): 1.1}))
    read = apply(evaluate_claims(ours, [claim], "paper"), [claim], paper, "paper")[0]
    assert read.status == "unsupported" and not read.failed
    assert read.paper["ours"]["status"] == "fails"
    assert summary_counts([read])["unsupported"] == 1
    assert summary_counts([read])["fails"] == 0
    line = format_result(read)
    assert line.startswith("NOT SUPPORTED BY THE PAPER'S NUMBERS  c: the paper's own numbers")
    assert "ours: FAILS" in line
    supported = paper_records(_paper({("A", "s", "loss"): 1.0, ("B", "s", "loss"): 1.5}))
    kept = apply(evaluate_claims(ours, [claim], "paper"), [claim], supported, "paper")[0]
    assert kept.status == "fails" and kept.paper["status"] == "supported"


# --- ours beside the paper's --------------------------------------------------------------

class _Spec:
    """A spec's `reported:` block, as drocli.claims.reported.frame reads it."""

    def __init__(self, reported_rows):
        from drocli.claims.reported import ReportedRow, ReportedSpec

        self.reported = ReportedSpec(
            file="x.csv", data="stand-in", labels={"A": "a", "B": "b"},
            settings={"s": "S"}, metrics={"loss": "L"},
            rows=[ReportedRow(**r) for r in reported_rows])


def test_ours_beside_the_papers():
    from scipy import stats

    from drocli.claims.reported import frame as reported
    from drocli.report.paper_vs_ours import frame, lines, markdown

    a, b = [2.0, 2.1, 2.2, 2.05, 2.15], [1.0, 1.1, 0.9, 1.05, 0.95]
    spec = _Spec([{"label": "A", "setting": "s", "metric": "loss", "value": 1.8, "std": 0.1,
                   "n_seeds": 10, "printed": "1.800±0.100", "source": "Table 9"},
                  {"label": "B", "setting": "s", "metric": "loss", "value": 1.0, "std": 0.2,
                   "n_seeds": 10, "printed": "1.000±0.200", "source": "Table 9"}])
    t = frame(_ours(a, b), reported(spec), spec.reported.data).set_index("label")
    lo, hi = stats.t.interval(0.95, len(a) - 1, loc=np.mean(a), scale=stats.sem(a))
    assert t.loc["A", "ours"] == pytest.approx(np.mean(a))
    assert (t.loc["A", "ours_lo"], t.loc["A", "ours_hi"]) == pytest.approx((lo, hi))
    assert t.loc["A", "z"] == pytest.approx((np.mean(a) - 1.8) / 0.1)
    assert t.loc["B", "z"] == pytest.approx((np.mean(b) - 1.0) / 0.2)
    assert set(t["data"]) == {"stand-in"} and set(t["ours_n"]) == {5}
    text = "\n".join(lines(t.reset_index()))
    assert "paper 1.800±0.100 (10 seeds), ours 2.1 [" in text
    assert "Spearman" in text
    md = markdown(t.reset_index())
    assert md.count("\n") == 4 and "| A | s | loss | 1.800±0.100 |" in md


def test_check_and_report_show_the_papers_numbers(tmp_path, capsys):
    """A run of a spec with `reported:`: check prints the paper's values beside ours and
    reads the claim on them; the report has the section and its picture."""
    spec = _spec(tmp_path)
    out = tmp_path / "out"
    assert call("run", spec, "--out", out, "-q") == 0
    capsys.readouterr()
    code = call("check", out)
    text = capsys.readouterr().out
    assert "PAPER    ALEG, max_risk_train: paper 0.50±0.02 (5 seeds), ours" in text
    assert "PAPER    SMD, max_risk_train: paper 0.60±0.03" in text
    # the paper's ALEG 0.50 below SMD 0.60: its numbers support `below_start`
    assert "NOT SUPPORTED" not in text and code in (0, 1)
    assert call("report", out, "--out", tmp_path / "rep") == 0
    page = (tmp_path / "rep" / "out.md").read_text()
    assert "## The paper's numbers beside ours" in page
    assert (tmp_path / "rep" / "out" / "paper_vs_ours.png").stat().st_size > 1000


# --- a size per panel ---------------------------------------------------------------------

def test_each_panel_has_its_own_size():
    """Two panels in different units: a loss gap 0.05 (margin 0.01 there) and a parity gap
    0.5 points (margin 0.2 there). One margin for both (0.01) would make the parity panel
    trivially easy; 0.2 would make the loss panel impossible. With its own size each panel
    holds, on ours (8 seeds, noise 0.01) and on the paper's means."""
    from drocli.claims import evaluate_claims
    from drocli.claims.paper import paper_records, read

    rng = np.random.default_rng(0)
    rows = []
    for metric, a, b in (("loss", 1.0, 1.05), ("parity", 3.0, 3.5)):
        for seed in range(8):
            for lab, v in (("A", a), ("B", b)):
                rows.append({"experiment": "x", "cell": f"{metric}{lab}{seed}", "solver": lab,
                             "label": lab, "dataset": "d", "seed": seed, "step": 1,
                             "oracle_calls": 1.0, "time_s": 0.0, "metric": metric,
                             "value": v + 0.01 * rng.standard_normal(), "setting": "s"})
    ours = pd.DataFrame(rows)
    panels = [{"metric": "loss", "margin": 0.01}, {"metric": "parity", "margin": 0.2}]
    claim = _claim(metric="loss", margin=0.01, panels=panels)
    got = evaluate_claims(ours, [claim.model_dump(mode="json")], "paper")[0]
    assert got.status == "holds", got.detail
    too_big = _claim(metric="loss", margin=0.2,
                     panels=[{"metric": "loss"}, {"metric": "parity"}])
    assert evaluate_claims(ours, [too_big.model_dump(mode="json")], "paper")[0].status \
        == "fails"
    paper = paper_records(_paper({("A", "s", "loss"): 1.0, ("B", "s", "loss"): 1.05,
                                  ("A", "s", "parity"): 3.0, ("B", "s", "parity"): 3.5}))
    reading = read(claim, paper, "paper")
    assert reading["status"] == "supported"
    assert "(size: margin 0.01)" in reading["detail"] and "(size: margin 0.2)" in \
        reading["detail"]


def test_a_panel_size_the_kind_lacks_is_refused():
    from drocli.errors import DrocliError

    with pytest.raises(DrocliError, match="panels\\[0\\] sets 'margin'"):
        _claim(kind="reach_first", level=1.2, panels=[{"setting": "s", "margin": 0.1}])
    with pytest.raises(DrocliError, match="must be a number"):
        _claim(panels=[{"setting": "s", "margin": "big"}])


# --- every shipped claim the paper's numbers cover ----------------------------------------

SHIPPED = sorted(p for p in (ROOT / "experiments").glob("*.yaml")
                 if "reported:" in p.read_text(encoding="utf-8"))


def _by_hand(claim, paper: pd.DataFrame) -> str | None:
    """A final_below claim on the paper's means, computed here from the claim's fields:
    in each panel, d = factor x other - solver (below) or solver - factor x other (above)
    must exceed the panel's margin against every other; supported when at least
    panels_needed panels (default all) hold. None when a value is not reported."""
    panels = claim.panels or [{}]
    held = 0
    for panel in panels:
        where = {**claim.filter, **{k: v for k, v in panel.items()
                                    if k not in ("margin", "factor")}}
        metric = where.pop("metric", claim.metric)
        margin = panel.get("margin", claim.margin)
        factor = panel.get("factor", claim.factor)
        rows = paper[paper["metric"] == metric]
        for k, v in where.items():
            rows = rows[rows[k].astype(str) == str(v)]
        means = dict(zip(rows["label"], rows["value"], strict=True))
        if any(lab not in means for lab in claim.labels):
            return None
        a = means[claim.solver]
        ds = [(factor * means[o] - a) if claim.direction == "below" else
              (a - factor * means[o]) for o in claim.others]
        held += all(d > margin for d in ds)
    return "supported" if held >= (claim.panels_needed or len(panels)) else "unsupported"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_covered_claim_is_read_as_by_hand(path):
    from drocli.claims.paper import paper_records, read
    from drocli.claims.reported import frame
    from drocli.spec import load_spec

    spec = load_spec(path)
    paper = frame(spec)
    records = paper_records(paper)
    covered = 0
    for c in spec.claims:
        got = read(c, records, "paper")
        want = _by_hand(c, paper) if c.kind == "final_below" else None
        if c.kind == "final_below":
            assert (got or {}).get("status") == want, c.id
        covered += got is not None
    assert covered >= 50
