"""Paper claims as data, judged on records.

A claim (`claims:` in the spec) names a kind, a metric, the claimed-better label (`solver`)
and the labels it beats (`others`). Each kind is one plug-in module in this package: its
model (the common fields of `ClaimBase` plus its own, tagged by `kind`) and a pure function
`judge(claim, data) -> (holds, detail, values)` over the records, registered with
`@registry.claim(kind, params=Model)`. Conventions shared by every kind:

- "better" means lower (`direction: below`, the default) or higher (`direction: above`);
- a NaN/inf (diverged) value is the worst possible one, so a diverged solver never wins
  and a diverged other always loses; seed means propagate NaN;
- `per_seed: true` compares seed by seed on the seeds every label has (all must hold);
  `false` compares seed means. Default: the kind's (true for `final_below`);
- curve kinds use the seed curves interpolated on their common grid (`drocli.results.aggregate`).

The verdict is statistical, at the claim's `confidence` (default 95 %), and judged on one
summary per seed whatever the claim compares (`drocli.claims.inference`): the final value,
the best value, the first x at a level, the total variation, a pooled statistic of the seed's
cells. For every other label the paired differences (signed so that > 0 is the claimed
direction, e.g. other - solver for "below") get a paired t-interval. The claim holds when the
interval clears the threshold (`margin`, or `factor` for ratios) against every other; it is
not reproduced when the interval, widened by Bonferroni over the others, lies short of it
against any; otherwise, or with fewer than 3 seeds, it is inconclusive: a margin inside the
seed noise never counts as holding. The seed spread (`spread_below`) is judged by an exact
sign-flip test. The point comparison (every seed, or the seed-mean curves) is still printed.
tests/test_verdict_null.py runs each kind under a true null at 3, 5 and 10 seeds and checks
that false verdicts stay at or below the nominal rate.

Statuses: holds; fails (marked reproduced, significantly not); inconclusive (within the
noise: reported, not a failure); not_reproduced (marked `reproduced: false` and indeed not
reproduced; `reproduced: [paper]` marks it reproduced on the listed profiles only);
unexpectedly_holds (marked not reproduced but holds: re-examine the mark; never a
failure); incomplete (cells it compares did not finish: not judged, drocli.claims.unfinished);
skipped (profile not listed, labels or rows missing).

Each claim of a shipped spec carries `source`: the paper's sentence it encodes, verbatim,
and where it stands (tests/test_claim_sources.py finds every quote in the paper's text).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from drocli.claims.cause import Cause
from drocli.claims.window import Until
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params

STATUSES = ("holds", "fails", "inconclusive", "not_reproduced", "unexpectedly_holds",
            "unsupported", "incomplete", "skipped")
Scalar = str | int | float | bool


class Source(Params):
    """Where a claim comes from: the paper's words, verbatim, and their place."""

    where: str = Field(min_length=2, description="section, figure or theorem, e.g. "
                       "'Sec. 4.2, Fig. 3'")
    quote: str = Field(min_length=10, description="the sentence(s) of the paper the claim "
                       "encodes, verbatim (elisions as ' ... ')")
    fit: str | None = Field(None, min_length=20, description="why the test says what the "
                            "quote says: its subject, methods, metric, direction and "
                            "strength, citing the word rule applied (docs/verdicts.md, "
                            "'Words without numbers', W0-W9)")


class Ablates(Params):
    """The claim of the paper profile that an ablation's claim re-tests, and what differs."""

    claim: str = Field(min_length=1, description="the id of the claim re-tested")
    changes: str = Field(min_length=10, description="the one setting changed, in words, "
                         "with its spec key")


class ClaimBase(Params):
    """The fields every claim has; each kind's model adds its own and fixes `kind`."""

    needs_metric: ClassVar[bool] = True
    per_seed_default: ClassVar[bool] = False
    others_optional: ClassVar[bool] = False

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                    description="short unique name of the claim")
    text: str = Field(description="what is judged, in words")
    source: Source | None = Field(None, description="the paper's sentence it encodes "
                                  "(`where`, `quote`)")
    confidence: float = Field(0.95, gt=0.5, lt=1.0, description="confidence of the "
                              "interval the verdict is judged on")
    kind: str
    metric: str | None = Field(None, description="the recorded metric it is about")
    solver: str = Field(description="the label claimed to be better")
    others: list[str] = Field(default_factory=list,
                              description="the labels it is claimed to beat")
    per_seed: bool | None = Field(None, description="compare seed by seed (all must hold) "
                                  "or seed means; default: the kind's")
    profiles: list[str] | None = Field(None, description="profiles it is judged on; "
                                       "default: every profile")
    reproduced: bool | list[str] = Field(True, description="false (or the profiles on "
                                         "which it does reproduce): marked not reproduced")
    cause: Cause | None = Field(None, description="why its verdict is negative, from one "
                                "list (drocli.claims.cause); needed when marked not "
                                "reproduced")
    filter: dict[str, Scalar | list[Scalar]] = Field(
        default_factory=dict, description="records columns -> value(s) to keep")
    panels: list[dict[str, Scalar]] | None = Field(
        None, description="judge the claim in each of these panels (records columns -> "
        "value) apart: it holds only if it holds in every one, and is refuted if refuted in "
        "any (Bonferroni over panels x others); e.g. 'always' over a figure's panels; a "
        "panel may set its own `metric` and its own size (`margin`, `factor`), from its own "
        "range and in its own units")
    panels_needed: int | None = Field(
        None, ge=1, description="with panels: the claim holds if it holds in at least this "
        "many of them ('in most cases': more than half), each panel judged at "
        "1 - (1 - confidence) / (panels - needed + 1); refuted when refuted in more than "
        "panels - needed; default: every panel")
    until: Until | None = Field(
        None, description="judge the runs as they stand at one point of another axis, e.g. "
        "{x: iteration, at: 5000}: the paper's horizon on its own x-axis "
        "(drocli.claims.window)")
    ablates: Ablates | None = Field(
        None, description="this claim re-tests a claim of the paper profile with one "
        "setting changed: {claim: ID, changes: what differs}; the report shows both verdicts")
    _family: int = PrivateAttr(1)      # comparisons a refutation is corrected for, / others

    @model_validator(mode="after")
    def _common(self):
        if self.needs_metric and not self.metric:
            raise ValueError(f"kind {self.kind!r} needs `metric`")
        if not self.others and not self.others_optional:
            raise ValueError("`others` must list at least one label to compare with")
        if self.solver in self.others:
            raise ValueError(f"solver {self.solver!r} is also listed in others")
        if len(set(self.others)) != len(self.others):
            raise ValueError(f"others lists a label twice: {self.others}")
        if self.panels_needed is not None and (
                not self.panels or self.panels_needed > len(self.panels)):
            raise ValueError(f"panels_needed {self.panels_needed} needs at least that many "
                             f"panels, the claim has {len(self.panels or [])}")
        for i, panel in enumerate(self.panels or []):
            for k in PANEL_SIZES:
                if k in panel and k not in type(self).model_fields:
                    raise ValueError(f"panels[{i}] sets {k!r}, which kind {self.kind!r} "
                                     "does not have")
                if k in panel and (isinstance(panel[k], bool)
                                   or not isinstance(panel[k], (int, float))):
                    raise ValueError(f"panels[{i}].{k} must be a number, got {panel[k]!r}")
        return self

    @property
    def labels(self) -> list[str]:
        return [self.solver, *self.others]

    # -- what the code tests, generated from the fields (the report shows it beside `text`)
    def quantity(self) -> str:
        """The per-seed summary the kind compares (each kind says its own; a plug-in kind
        that does not is named as such)."""
        return f"the {self.kind} summary of {self.metric or 'each run'} per seed"

    def relation(self) -> str:
        """'lower than 1.05 x B, C by more than 0.1' from direction, factor and margin."""
        better = "higher" if getattr(self, "direction", "below") == "above" else "lower"
        factor = getattr(self, "factor", 1.0)
        margin = getattr(self, "margin", 0.0)
        others = ", ".join(self.others)
        return (f"{better} than {f'{factor:g} x ' if factor != 1 else ''}{others}"
                + (f" by more than {margin:g}" if margin > 0 else "")
                + (f" or higher by at most {-margin:g}" if margin < 0 and better == "lower"
                   else f" or lower by at most {-margin:g}" if margin < 0 else ""))

    def procedure(self) -> str:
        """How the verdict is reached over seeds, others and panels."""
        k = len(self.others)
        text = (f"paired t on one value per seed at {self.confidence:.0%}"
                + (f"; holds only if it holds against all {k}, refuted if it fails against "
                   f"any one (each such test stricter, so that all {k} together keep "
                   f"{self.confidence:.0%})" if k > 1 else ""))
        return text + self.panels_clause()

    def panels_clause(self) -> str:
        """'; judged in each of 3 panels, holding in every one' (nothing without panels)."""
        if not self.panels:
            return ""
        need = self.panels_needed or len(self.panels)
        return (f"; judged in each of {len(self.panels)} panels, holding in "
                + (f"at least {need}" if need < len(self.panels) else "every one"))

    def test_text(self) -> str:
        """What drocli tests, in words generated from the claim's fields (not its `text`)."""
        until = f" ({self.until.words()})" if self.until else ""
        return f"{self.quantity()}{until}: {self.solver} {self.relation()}; {self.procedure()}"

    # -- what each effect (a paired difference per seed, `inference`) is, for the report
    def unit(self) -> str:
        """The unit of the effect, as words after 'in': the metric's own by default."""
        return f"units of {self.metric}" if self.metric else "the units of the quantity"

    def effect_text(self) -> str:
        """What each effect of this claim is, in plain words: the per-seed difference its
        intervals are about, its unit, and which sign favours the solver (the sign
        `inference.signed_difference` gives: positive is the claimed direction)."""
        factor = getattr(self, "factor", 1.0)
        scale = f"{factor:g} x " if factor != 1 else ""
        other = f"{self.others[0]}'s" if len(self.others) == 1 else "the other's"
        q = self.quantity()
        diff = (f"{self.solver}'s {q} minus {scale}{other}"
                if getattr(self, "direction", "below") == "above"
                else f"{scale}{other} {q} minus {self.solver}'s")
        return f"effect = mean over seeds of ({diff}), in {self.unit()}; " + self.favours()

    def favours(self) -> str:
        """'positive favours A; a comparison holds when its whole interval lies above 0.1'."""
        margin = getattr(self, "margin", 0.0) or 0.0
        return (f"positive favours {self.solver}; a comparison holds when its whole interval "
                f"lies above {margin:g}")

    @property
    def seedwise(self) -> bool:
        return self.per_seed_default if self.per_seed is None else self.per_seed


class OpaqueClaim(ClaimBase):
    """A claim whose kind's plug-in is not installed here (a results folder's saved spec):
    its fields as saved, no judge; shown with the verdict recorded when its run finished
    (drocli.claims.recorded)."""

    model_config = ConfigDict(extra="allow")
    needs_metric: ClassVar[bool] = False
    others_optional: ClassVar[bool] = True

    kind: str = Field(description="the claim kind, not installed here")
    opaque: bool = True     # read with its recorded verdict, never judged

    def quantity(self) -> str:
        return f"the {self.kind} summary (claim kind not installed here)"

    def effect_text(self) -> str:
        return (f"effect as claim kind {self.kind} computes it (not installed here); by "
                f"drocli's convention positive favours {self.solver}")


def validate_claim(raw: Any, *, file: str | None = None, key: str = "claim",
                   lenient: bool = False) -> ClaimBase:
    """The model of a claim entry, chosen by its `kind` (a tagged union over the registered
    claim kinds; only the kind used is imported). `lenient` (a results folder's saved spec):
    a kind not installed here gives an OpaqueClaim, read with its
    recorded verdict, instead of an error."""
    if isinstance(raw, ClaimBase):
        return raw
    if not isinstance(raw, dict):
        raise DrocliError(f"a claim is a mapping, got {type(raw).__name__}", file=file,
                          key=key, fix="write `- {id: ..., text: ..., kind: final_below, ...}`")
    if "kind" not in raw:
        raise DrocliError("required key is missing", file=file, key=f"{key}.kind",
                          fix="add `kind:` (`drocli list claims` shows the kinds)")
    if lenient and str(raw["kind"]) not in registry.names("claim"):
        try:
            return OpaqueClaim.model_validate(raw)
        except ValidationError as e:
            raise registry.validation_error(e, OpaqueClaim, file=file, prefix=key) from None
    entry = registry.get("claim", str(raw["kind"]), file=file, key=f"{key}.kind")
    try:
        return entry.params.model_validate(raw)
    except ValidationError as e:
        raise registry.validation_error(e, entry.params, file=file, prefix=key) from None


@dataclass
class ClaimResult:
    id: str
    text: str
    kind: str
    status: str
    detail: str
    reproduced: bool = True
    values: dict = field(default_factory=dict)   # label -> compared number (seed mean)
    effects: dict = field(default_factory=dict)  # other -> effect and its interval
    point_status: str = ""   # the status the point comparison alone would give (no noise)
    source: Source | None = None   # the paper's words the claim encodes
    # preregistration (drocli.claims.registration): status preregistered / post_hoc / confirmed,
    # why, the seeds judged, and for a confirmed claim the verdict on every seed
    registration: dict = field(default_factory=dict)
    tuned_on: list = field(default_factory=list)   # judged seeds that tuning used
    judged: dict = field(default_factory=dict, repr=False)   # cell id -> seed judged on
    # sequential plan: the look that decided (or the last reached), of how many, its seeds
    look: dict = field(default_factory=dict)
    # the per-seed summaries judged: label (@ panel) -> {seed: value} (inference.note)
    summaries: dict = field(default_factory=dict, repr=False)
    # the claim read on the paper's own reported numbers (drocli.claims.paper): status
    # supported / unsupported, detail, values, and for an unsupported claim our verdict
    paper: dict = field(default_factory=dict)
    # why a negative verdict is negative (drocli.claims.cause): {kind, note[, key]}
    cause: dict = field(default_factory=dict)
    ablates: dict = field(default_factory=dict)   # {claim, changes}: the claim re-tested

    @property
    def failed(self) -> bool:
        return self.status in ("fails", "error")

    @property
    def post_hoc(self) -> bool:
        return self.registration.get("status") == "post_hoc"

    @property
    def cannot_decide(self) -> bool:
        """Inconclusive by construction: every undecided comparison says no number of
        seeds can decide it (0 against 0, a level no label reaches or every one starts
        past); counted apart from the inconclusive ones (issue 55)."""
        from drocli.claims.inference import CANNOT_DECIDE

        open_ = [e for e in self.effects.values() if e.get("verdict") == "inconclusive"]
        return (self.status == "inconclusive" and bool(open_)
                and all(str(e.get("why", "")).startswith(CANNOT_DECIDE) for e in open_))

    def to_dict(self) -> dict:
        from drocli.claims.judge import overall

        return {"id": self.id, "text": self.text, "kind": self.kind, "status": self.status,
                "detail": self.detail, "reproduced": self.reproduced,
                "values": {k: _json_num(v) for k, v in self.values.items()},
                "effects": self.effects, "point_status": self.point_status,
                "statistical": overall(self.effects) if self.effects else None,
                "registration": self.registration, "tuned_on": self.tuned_on,
                "multiplicity": MULTIPLICITY if len(self.effects) > 1 else None,
                **({"look": self.look} if self.look else {}),
                **({"paper": self.paper} if self.paper else {}),
                **({"cause": self.cause} if self.cause else {}),
                **({"ablates": self.ablates} if self.ablates else {}),
                "summaries": self.summaries}


def _json_num(v):
    v = float(v)
    return v if math.isfinite(v) else str(v)


MULTIPLICITY = ("holds only if it holds against every other (intersection-union, each at "
                "the full level); refuted if refuted against any one at the Bonferroni "
                "level (1 - confidence) / k")


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


def rows_of_seeds(rows, want):
    """The rows whose seed, as text, is in `want`."""
    seed = rows["seed"]
    return rows[seed.isin([v for v in seed.unique() if str(v) in want])]


def evaluate_at_looks(records, claim: ClaimBase, profile: str, plan: dict | None,
                      of_seeds=None) -> ClaimResult:
    """evaluate_claim, at the looks of a sequential plan ({looks, order}: the seed counts
    and the seeds in the order they are added) reached by the records: the first look
    that decides gives the verdict (drocli.claims.sequential); without a plan, one look on
    every seed. `of_seeds(records, seeds)` takes a look's rows (default `rows_of_seeds`;
    evaluate_claims keeps each look's rows for the claims that share them)."""
    if not plan or (claim.profiles is not None and profile not in claim.profiles):
        return evaluate_claim(records, claim, profile)
    from drocli.claims.sequential import at_look

    looks, order = list(plan["looks"]), list(plan["order"])
    have = {str(s) for s in records["seed"].unique()} if "seed" in records.columns else set()
    last = None
    for j, n in enumerate(looks):
        want = {str(s) for s in order[:n]}
        if not want <= have:
            break
        sub = (of_seeds or rows_of_seeds)(records, frozenset(want))
        with at_look(looks, j):
            res = evaluate_claim(sub, claim, profile)
        res.look = {"look": j + 1, "of": len(looks), "seeds": n, "looks": looks}
        last = res
        if res.status != "inconclusive":
            break
    if last is None:
        reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
            else profile in claim.reproduced
        last = ClaimResult(claim.id, claim.text, claim.kind, "inconclusive",
                           f"the plan's first look ({looks[0]} seeds: "
                           f"{', '.join(map(str, order[:looks[0]][:6]))}...) is not reached "
                           "in the records", reproduced, source=claim.source)
        last.look = {"look": 0, "of": len(looks), "seeds": 0, "looks": looks}
        return last
    j = last.look["look"]
    where = (f"decided at look {j} of {len(looks)} ({last.look['seeds']} seeds)"
             if last.status not in ("inconclusive", "skipped") else
             f"undecided at look {j} of {len(looks)} ({last.look['seeds']} seeds)"
             + (": the last look" if j == len(looks) else f"; next look at {looks[j]} seeds"))
    if last.status != "skipped":
        last.detail = f"{last.detail} [{where}]"
    return last


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


def evaluate_claim(records, claim: ClaimBase, profile: str) -> ClaimResult:
    from drocli.errors import did_you_mean
    from drocli.results.aggregate import apply_filter, as_text

    reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
        else profile in claim.reproduced

    def result(status, detail, values=None, effects=None, point=None):
        return ClaimResult(claim.id, claim.text, claim.kind, status, detail, reproduced,
                           dict(values or {}), dict(effects or {}), point or status,
                           claim.source)

    if claim.profiles is not None and profile not in claim.profiles:
        return result("skipped", f"profile {profile!r} not in {claim.profiles}")
    where = f"claims[{claim.id}]"
    if claim.metric is not None:
        metrics = sorted(map(str, as_text(records["metric"]).dropna().unique()))
        if claim.metric not in metrics:
            raise DrocliError(f"claim {claim.id!r}: unknown metric {claim.metric!r}; metrics in "
                              f"the records: {', '.join(metrics) or '(none)'}",
                              key=f"{where}.metric", fix=did_you_mean(claim.metric, metrics))
    rows = apply_filter(records, claim.filter, where=f"{where}.filter")
    if panels_set_metric(claim):           # each panel picks its metric
        metrics = sorted(map(str, as_text(records["metric"]).dropna().unique()))
        for i, panel in enumerate(claim.panels):
            if panel.get("metric") not in metrics:
                raise DrocliError(f"claim {claim.id!r}: panel {i} names unknown metric "
                                  f"{panel.get('metric')!r}", key=f"{where}.panels[{i}].metric",
                                  fix=did_you_mean(str(panel.get("metric")), metrics))
    elif claim.metric is not None:
        rows = rows[rows["metric"] == claim.metric]
    judged = {}
    if "cell" in rows.columns and "seed" in rows.columns:
        in_claim = rows[as_text(rows["label"]).isin(claim.labels)]
        first = in_claim.drop_duplicates("cell", keep="last")      # one seed per cell
        judged = dict(zip(first["cell"], first["seed"], strict=True))
    if claim.panels:
        return _in_panels(rows, claim, result, reproduced, judged)
    out = _judge_rows(rows, claim, result, reproduced)
    out.judged = {str(k): _plain_seed(v) for k, v in judged.items()}
    return out


def _judge_rows(rows, claim: ClaimBase, result, reproduced: bool) -> ClaimResult:
    """The claim's kind on these rows (the claim's metric and filter applied)."""
    import pandas as pd

    from drocli.claims.judge import SkipClaim
    from drocli.results.aggregate import as_text

    lab = as_text(rows["label"])
    codes, names = pd.factorize(lab)            # one pass over the labels, not one per label
    code = {name: i for i, name in enumerate(names)}
    data = {label: rows[codes == code.get(label, -2)] for label in claim.labels}
    missing = [label for label, d in data.items() if d.empty]
    if missing:
        have = sorted(set(lab))
        what = f" with metric {claim.metric!r}" if claim.metric else ""
        filt = f" after filter {claim.filter}" if claim.filter else ""
        return result("skipped", f"label(s) missing from the records{what}{filt}: "
                      f"{', '.join(missing)} (present: {', '.join(have) or 'none'})")
    entry = registry.get("claim", claim.kind)
    from drocli.claims.inference import collecting

    try:
        if claim.until is not None:
            from drocli.claims.window import cut

            data = {label: cut(d, claim.until.x, claim.until.at, label)
                    for label, d in data.items()}
        with collecting() as summaries:
            res = entry.func(claim, data)
        holds, detail, values = res[:3]
        effects = res[3] if len(res) > 3 else {}
    except SkipClaim as exc:
        return result("skipped", str(exc))
    except DrocliError:       # the spec asks what the records cannot give: exit 2, as ever
        raise
    except Exception as exc:  # noqa: BLE001 -- a broken judge errs for its claim alone
        msg = " ".join(str(exc).split())[:200]
        return result("error", f"the judge of claim kind {claim.kind!r} "
                               f"({registry.origin(entry.func)}) raised "
                               f"{type(exc).__name__}: {msg}; the plug-in's fault, not the "
                               f"records': fix or reinstall it")
    point = "holds" if holds else "not_reproduced"
    if effects:                         # the statistical verdict decides
        from drocli.claims.judge import overall

        verdict = overall(effects)
    else:                               # an exact statement about every recorded run
        verdict = point
    out = result(_status(verdict, reproduced), detail, values, effects,
                 _status(point, reproduced))
    out.summaries = summaries
    return out


def panels_set_metric(claim) -> bool:
    """Panels that name a metric each ("fairer in most cases" over settings x metrics): the
    claim's rows are not cut to its own `metric`, every panel filters its own."""
    return bool(claim.panels) and all("metric" in p for p in claim.panels)


PANEL_SIZES = ("margin", "factor")     # a panel's own size, not a records column


def panel_parts(panel: dict) -> tuple[dict, dict]:
    """A panel's records filter (columns -> value, its metric included) and its own size."""
    return ({k: v for k, v in panel.items() if k not in PANEL_SIZES},
            {k: v for k, v in panel.items() if k in PANEL_SIZES})


def _panel_name(panel: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in panel_parts(panel)[0].items())


def _in_panels(rows, claim: ClaimBase, result, reproduced: bool, judged: dict):
    """The claim judged in each panel apart, combined. With P panels of which `needed` = k
    must hold (default all): holds if at least k panels hold, each judged at level
    (1 - confidence) / (P - k + 1); refuted if more than P - k panels are refuted, each
    refutation at the Bonferroni level over k x others; else inconclusive. Both errors stay
    at the claim's level: a false HOLDS needs a false panel held (at most P - k + 1 false
    ones when fewer than k are true), a false refutation needs a true panel refuted (at
    least k true ones when the claim holds). Skipped panels make it skipped."""
    from drocli.claims.judge import overall
    from drocli.results.aggregate import apply_filter

    P = len(claim.panels)
    k = claim.panels_needed or P
    one = claim.model_copy(update={"confidence": 1 - (1 - claim.confidence) / (P - k + 1)})
    one._family = k
    parts, effects, values, summaries = [], {}, {}, {}
    point_held, held, refuted = 0, 0, 0
    for i, panel in enumerate(claim.panels):
        name = _panel_name(panel)
        filt, size = panel_parts(panel)
        sub = apply_filter(rows, filt, where=f"claims[{claim.id}].panels[{i}]")
        mine = one
        if size:
            mine = one.model_copy(update=size)
            mine._family = k
        r = _judge_rows(sub, mine, result, reproduced)
        if r.status in ("skipped", "error"):    # a judge that erred refutes nothing
            return result(r.status, f"panel {name}: {r.detail}")
        point_held += r.point_status in ("holds", "unexpectedly_holds")
        verdict = overall(r.effects) if r.effects else (
            "holds" if r.point_status in ("holds", "unexpectedly_holds") else "not_reproduced")
        held += verdict == "holds"
        refuted += verdict == "not_reproduced"
        parts.append(f"[{name}] {r.detail}")
        effects.update({f"{o} @ {name}": e for o, e in r.effects.items()})
        values.update({f"{key} @ {name}": v for key, v in r.values.items()})
        summaries.update({f"{key} @ {name}": v for key, v in r.summaries.items()})
    point = "holds" if point_held >= k else "not_reproduced"
    verdict = ("holds" if held >= k else "not_reproduced" if refuted > P - k
               else "inconclusive")
    rule = "all must hold" if k == P else f"at least {k} must hold: {held} hold, " \
        f"{refuted} refuted"
    out = result(_status(verdict, reproduced), f"in each of {P} panels ({rule}): "
                 + " | ".join(parts), values, effects, _status(point, reproduced))
    out.judged = {str(k_): _plain_seed(v) for k_, v in judged.items()}
    out.summaries = summaries
    return out


def _plain_seed(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return v
    return int(f) if f.is_integer() else f


def _status(verdict: str, reproduced: bool) -> str:
    """The status of a verdict (holds / not_reproduced / inconclusive) given the claim's
    mark: a claim marked reproduced fails where a marked one is not reproduced."""
    if verdict == "inconclusive":
        return "inconclusive"
    if reproduced:
        return "holds" if verdict == "holds" else "fails"
    return "unexpectedly_holds" if verdict == "holds" else "not_reproduced"


TAGS = {"holds": "HOLDS", "fails": "FAILS", "inconclusive": "INCONCLUSIVE",
        "unsupported": "NOT SUPPORTED BY THE PAPER'S NUMBERS",
        "not_reproduced": "NOT REPRODUCED (expected)",
        "unexpectedly_holds": "UNEXPECTEDLY HOLDS (marked not reproduced)",
        "incomplete": "NOT JUDGED (cells did not finish)",
        "skipped": "SKIPPED", "error": "ERROR"}


UNEXPECTED_HINT = ("the spec marks this claim not reproduced, yet it holds here: re-examine "
                   "the mark (`reproduced:`) against these numbers")


def tag(r: ClaimResult) -> str:
    """The verdict as shown: its status's tag, CANNOT DECIDE for an inconclusive claim no
    number of seeds can decide."""
    return "CANNOT DECIDE" if r.cannot_decide else TAGS.get(r.status, r.status.upper())


def format_result(r: ClaimResult) -> str:
    """One line: `HOLDS  id: detail` (and what to do about an unexpected hold), then the
    registration flags: post hoc, confirmed on fresh seeds, judged on tuning seeds."""
    shown = tag(r)
    if r.post_hoc and r.status != "fails":
        shown += " [POST HOC]"
    if r.status == "unsupported":
        ours = r.paper.get("ours", {})
        line = (f"{shown}  {r.id}: the paper's own numbers: {r.paper.get('detail')}; ours: "
                f"{TAGS.get(ours.get('status'), '?')} {ours.get('detail', '')}")
    else:
        line = f"{shown}  {r.id}: {r.detail}"
    if r.status == "unexpectedly_holds":
        line += f" [{UNEXPECTED_HINT}]"
    reg = r.registration
    if reg.get("status") == "post_hoc":
        line += (f" [post hoc: {reg.get('why')}; to confirm it, run fresh seeds into this "
                 f"folder and check again]")
    elif reg.get("status") == "confirmed":
        seeds = ", ".join(map(str, reg.get("confirmed_seeds", [])))
        line += (f" [written or changed after earlier runs: judged on the seeds first run "
                 f"after it was fixed ({seeds}); on every seed: "
                 f"{TAGS.get(reg.get('post_hoc_status'), '?')}]")
    if r.tuned_on:
        line += (f" [judged on seed(s) {', '.join(map(str, r.tuned_on))} that tuning used: "
                 f"run held-out seeds]")
    if r.paper.get("status") == "supported":
        line += " [the paper's own numbers show it too]"
    if r.cause and r.status in ("fails", "not_reproduced", "unsupported"):
        from drocli.claims.cause import label

        line += f" [cause: {label(r.cause)}]"
    return line


SUMMARY_ORDER = (("holds", "hold"), ("not_reproduced", "not reproduced"),
                 ("inconclusive", "inconclusive"), ("cannot_decide", "cannot decide"),
                 ("post_hoc", "post hoc"),
                 ("unexpectedly_holds", "unexpectedly hold"),
                 ("unsupported", "not supported by the paper's numbers"), ("fails", "fail"),
                 ("error", "judged with an error"),
                 ("incomplete", "not judged (cells did not finish)"), ("skipped", "skipped"))


def summary_counts(results: list[ClaimResult]) -> dict[str, int]:
    """Claims per summary bucket: a post-hoc claim (not confirmed) counts as post hoc
    whatever its verdict, except a failure, which always counts as one, and a claim the
    paper's own numbers do not support, which counts as that."""
    counts = {k: 0 for k, _ in SUMMARY_ORDER}
    for r in results:
        key = "post_hoc" if r.post_hoc and r.status not in ("fails", "error", "unsupported",
                                                             "incomplete") \
            else "cannot_decide" if r.cannot_decide else r.status
        counts[key] = counts.get(key, 0) + 1
    return counts


def summary_line(results: list[ClaimResult]) -> str:
    """'12 claims: 5 hold, 2 not reproduced, 3 inconclusive, 1 post hoc, 0 fail[, ...]'."""
    counts = summary_counts(results)
    shown = [f"{counts[k]} {word}" for k, word in SUMMARY_ORDER
             if counts[k] or k in ("holds", "fails")]
    tuned = sum(1 for r in results if r.tuned_on)
    tail = f"; {tuned} judged on tuning seeds" if tuned else ""
    return f"SUMMARY  {len(results)} claim(s): " + ", ".join(shown) + tail
