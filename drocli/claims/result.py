"""The verdict of one claim (`ClaimResult`) and the statuses it can take.

Statuses: holds; fails (marked reproduced, significantly not); inconclusive (within the
noise: reported, not a failure); not_reproduced (marked `reproduced: false` and indeed not
reproduced; `reproduced: [paper]` marks it reproduced on the listed profiles only);
unexpectedly_holds (marked not reproduced but holds: re-examine the mark; never a
failure); incomplete (cells it compares did not finish: not judged, drocli.claims.unfinished);
skipped (profile not listed, labels or rows missing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from drocli.claims.base import Source

STATUSES = ("holds", "fails", "inconclusive", "not_reproduced", "unexpectedly_holds",
            "unsupported", "incomplete", "skipped")


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
    revises: dict = field(default_factory=dict)   # {claim, changes}: the test it corrects

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
                **({"revises": self.revises} if self.revises else {}),
                "summaries": self.summaries}


def _json_num(v):
    v = float(v)
    return v if math.isfinite(v) else str(v)


MULTIPLICITY = ("holds only if it holds against every other (intersection-union, each at "
                "the full level); refuted if refuted against any one at the Bonferroni "
                "level (1 - confidence) / k")
