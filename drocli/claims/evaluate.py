"""A spec's claims evaluated on a folder's records (`evaluate_claims`).

Each claim is validated, its margin checked against its metric's range, and judged on its
metric's rows (split once, `_ByMetric`) at the looks of the plan; with the folder's
manifest, its registration decides which seeds judge it (drocli.claims.registration); a
claim whose kind is not installed here shows the verdict recorded when its run finished.
"""

from __future__ import annotations

from drocli.claims.base import ClaimBase, panels_set_metric, validate_claim
from drocli.claims.evaluate_one import evaluate_claim
from drocli.claims.looks import evaluate_at_looks, rows_of_seeds
from drocli.claims.result import ClaimResult
from drocli.claims.verdict_text import TAGS
from drocli.errors import DrocliError


def evaluate_claims(records, claims: list, profile: str, manifest: dict | None = None,
                    tuning: dict | None = None, plan: dict | None = None,
                    recorded: dict | None = None) -> list[ClaimResult]:
    """Evaluate every claim (model or dict) on the records for the given profile.

    A metric absent from the records is a spec error (DrocliError); labels absent from the
    records (e.g. a profile that runs fewer solvers) make the claim `skipped`. With the
    folder's `manifest`, each claim's registration is assessed (`drocli.claims.registration`): a
    post-hoc claim with seeds run after it was fixed is judged on those seeds (confirmed);
    with the spec's `tuning`, judged seeds that tuning used are listed.
    """
    specs = [validate_claim(c, key=f"claims[{i}]") for i, c in enumerate(claims)]
    ids = [c.id for c in specs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise DrocliError(f"claim ids must be unique, repeated: {', '.join(dup)}",
                          key="claims")
    _sane_margins(specs, records)
    split = _ByMetric(records)
    out = []
    for c in specs:
        if getattr(c, "opaque", False):
            out.append(_as_recorded(c, profile, (recorded or {}).get(c.id)))
        elif manifest is None:
            out.append(evaluate_at_looks(split.rows(c), c, profile, plan, split.of_seeds))
        else:
            out.append(_registered(split.rows(c), c, profile, manifest, tuning, plan,
                                   split.of_seeds))
        if getattr(c, "ablates", None) is not None:
            out[-1].ablates = c.ablates.model_dump()
        if getattr(c, "revises", None) is not None:
            out[-1].revises = c.revises.model_dump()
    return out


def _as_recorded(claim: ClaimBase, profile: str, rec: dict | None) -> ClaimResult:
    """A claim whose kind is not installed: its verdict as recorded when its run finished
    (verdicts.json), said to be such; SKIPPED when the folder holds none."""
    reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
        else profile in claim.reproduced
    if not isinstance(rec, dict) or rec.get("status") not in TAGS:
        return ClaimResult(claim.id, claim.text, claim.kind, "skipped",
                           f"claim kind {claim.kind!r} is not installed here and the folder "
                           "holds no verdict recorded at run time: install the package that "
                           "brings it to judge this claim", reproduced, source=claim.source)
    by = rec.get("judged_by") or "its plug-in"
    out = ClaimResult(claim.id, claim.text, claim.kind, str(rec["status"]),
                      f"{rec.get('detail', '')} [as recorded when the run finished, judged "
                      f"by {by}: claim kind {claim.kind!r} is not installed here, so it is "
                      "not judged afresh]", reproduced,
                      dict(rec.get("values") or {}), dict(rec.get("effects") or {}),
                      source=claim.source)
    summaries = rec.get("summaries")
    out.summaries = summaries if isinstance(summaries, dict) else {}
    return out


MAX_MARGIN_RANGES = 1e6     # a margin this many times its metric's whole range is a typo


def _sane_margins(specs: list, records) -> None:
    """Refuse a `margin` (the claim's or a panel's) more than MAX_MARGIN_RANGES times the
    range of its metric's values in the records: a size no data could ever clear or miss,
    judged as INCONCLUSIVE [-inf, +inf] before (issue 56)."""
    import numpy as np
    import pandas as pd

    if records is None or not {"metric", "value"} <= set(records.columns):
        return
    spans: dict = {}
    for i, c in enumerate(specs):
        sizes = [(f"claims[{i}].margin", c.metric, getattr(c, "margin", None))]
        sizes += [(f"claims[{i}].panels[{j}].margin", p.get("metric", c.metric), p.get("margin"))
                  for j, p in enumerate(getattr(c, "panels", None) or [])]
        for key, metric, margin in sizes:
            if not margin or metric is None:
                continue
            if metric not in spans:
                vals = pd.to_numeric(records.loc[records["metric"].astype(str) == str(metric),
                                                 "value"], errors="coerce").to_numpy(float)
                vals = vals[np.isfinite(vals)]
                spans[metric] = float(vals.max() - vals.min()) if len(vals) else 0.0
            span = spans[metric]
            if span > 0 and abs(float(margin)) > MAX_MARGIN_RANGES * span:
                raise DrocliError(f"claim {c.id!r}: margin {float(margin):g} is more than "
                                  f"{MAX_MARGIN_RANGES:g} times the whole range of {metric} in "
                                  f"the records ({span:.3g})", key=key,
                                  fix=f"give the margin in {metric}'s units, within its range")


class _ByMetric:
    """The records split by metric once, so that each claim filters only its metric's rows
    (a paper folder's records hold several metrics over hundreds of thousands of rows). A
    metric absent from the records leaves the whole frame: evaluate_claim names it."""

    def __init__(self, records):
        self.records, self._parts = records, None
        self._looks: dict = {}
        self._attached: dict = {}

    def of_seeds(self, rows, want: frozenset):
        """rows_of_seeds, kept per frame and seed set: the claims of one metric share each
        look's rows (taking them cost a copy of the frame per claim and look)."""
        key = (id(rows), want)
        hit = self._looks.get(key)
        if hit is None or hit[0] is not rows:
            hit = self._looks[key] = (rows, rows_of_seeds(rows, want))
        return hit[1]

    def rows(self, claim: ClaimBase):
        rows = self._rows(claim)
        for x in _axes(claim):
            if x not in rows.columns:      # kept per frame: the claims of a metric share it
                from drocli.claims.window import attach

                hit = self._attached.get((id(rows), x))
                if hit is None or hit[0] is not rows:
                    hit = self._attached[(id(rows), x)] = (rows, attach(rows, self.records, x))
                rows = hit[1]
        return rows

    def _rows(self, claim: ClaimBase):
        if claim.metric is None or "metric" not in self.records.columns or \
                panels_set_metric(claim):
            return self.records
        if self._parts is None:
            from drocli.results.aggregate import as_text

            metric = as_text(self.records["metric"])
            self._parts = {m: _compact(self.records[metric == m])
                           for m in metric.dropna().unique()}
        return self._parts.get(claim.metric, self.records)


def _axes(claim) -> list[str]:
    """The axes a claim's curves or cut run along that are not plain records columns
    (a recorded metric such as `iteration` is attached as a column)."""
    axes = [claim.until.x] if claim.until else []
    x = getattr(claim, "x", None)
    if isinstance(x, str) and x not in ("oracle_calls", "time_s", "step"):
        axes.append(x)
    return axes


def _compact(rows):
    """Text columns as categoricals: every label, panel and seed subset a claim takes then
    copies integer codes instead of Python strings (most of check's time otherwise)."""
    import pandas as pd

    text = [c for c in rows.columns if rows[c].dtype == object
            and pd.api.types.infer_dtype(rows[c], skipna=False) == "string"]
    return rows.astype(dict.fromkeys(text, "category")) if text else rows


def _registered(records, claim: ClaimBase, profile: str, manifest: dict,
                tuning: dict | None, plan: dict | None = None, of_seeds=None) -> ClaimResult:
    """evaluate_claim with the claim's registration and tuning overlap; a post-hoc claim is
    re-judged on its confirmed seeds when it has any."""
    from drocli.claims.registration import assess, tuning_overlap

    res = evaluate_at_looks(records, claim, profile, plan, of_seeds)
    if res.status == "skipped" or not res.judged:
        return res
    reg = assess(manifest, claim, res.judged, plan=(plan or {}).get("registered"))
    seeds = sorted(set(res.judged.values()), key=str)
    res.tuned_on = tuning_overlap(tuning, seeds)
    reg["seeds"] = seeds
    if reg["status"] == "post_hoc" and reg["confirmed_seeds"]:
        keep = {str(s) for s in reg["confirmed_seeds"]}
        seed = records["seed"]
        sub = records[seed.isin([v for v in seed.unique() if str(v) in keep])]
        conf = evaluate_claim(sub, claim, profile)
        if conf.status != "skipped":
            reg = {**reg, "status": "confirmed", "post_hoc_status": res.status,
                   "post_hoc_detail": res.detail}
            conf.registration, conf.tuned_on, conf.judged = reg, res.tuned_on, res.judged
            return conf
    res.registration = reg
    return res
