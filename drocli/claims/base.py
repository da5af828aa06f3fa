"""The claim model: the fields every claim has (`ClaimBase`) and choosing a kind's model.

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

Each claim of a shipped spec carries `source`: the paper's sentence it encodes, verbatim,
and where it stands (tests/test_claim_sources.py finds every quote in the paper's text).
A panel of a claim (`panels:`) is a records filter and, optionally, its own size
(`panel_parts`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from drocli.claims.cause import Cause
from drocli.claims.window import Until
from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.plugins.registry import Params

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
    """The claim of the paper profile that another claim re-tests, and what differs: an
    ablation changes one setting we chose, a revision corrects the test itself."""

    claim: str = Field(min_length=1, description="the id of the claim re-tested")
    changes: str = Field(min_length=10, description="what differs, in words: an ablation's "
                         "one setting with its spec key, or what a revised test now reads")


class StudyProfile(str):
    """The profile claims are judged as (`judge_as`, else the run's own), carrying the run's
    own name too: a profile that is another study of the paper profile's claims
    (`judge_as: paper`) judges them as the paper profile does, and also the claims written
    for it by name (a revision's corrected claims, `profiles: [revised]`)."""

    names: frozenset

    def __new__(cls, judged_as: str | None, own: str | None = None):
        obj = super().__new__(cls, judged_as or "")
        obj.names = frozenset(n for n in (judged_as, own) if n)
        return obj


def judged_on(profiles, profile) -> bool:
    """Whether a claim with these `profiles` is judged on `profile` (a name, or a
    StudyProfile with its two names)."""
    return profiles is None or bool(set(profiles) & getattr(profile, "names", {profile}))


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
    revises: Ablates | None = Field(
        None, description="this claim corrects the test of a claim of the paper profile "
        "(a new study on fresh seeds, registered before it runs): {claim: ID, changes: what "
        "the test now reads}; that claim's cause is `test`; the report shows both verdicts")
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


def panels_set_metric(claim) -> bool:
    """Panels that name a metric each ("fairer in most cases" over settings x metrics): the
    claim's rows are not cut to its own `metric`, every panel filters its own."""
    return bool(claim.panels) and all("metric" in p for p in claim.panels)


PANEL_SIZES = ("margin", "factor")     # a panel's own size, not a records column


def panel_parts(panel: dict) -> tuple[dict, dict]:
    """A panel's records filter (columns -> value, its metric included) and its own size."""
    return ({k: v for k, v in panel.items() if k not in PANEL_SIZES},
            {k: v for k, v in panel.items() if k in PANEL_SIZES})
