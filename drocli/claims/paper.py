"""Each claim read on the paper's own reported numbers before it is judged on ours (issue 54).

A paper's sentence describes its own numbers. Where those numbers cover a claim's subject
(every label, setting and metric it compares is among the spec's `reported:` rows, and the
claim's kind compares final values: FINAL_KINDS), the claim's own judge runs on them: one
value per label and setting, the paper's mean, compared as seed means (`per_seed: false`)
with the claim's own size (margin, factor, panels needed). There is no noise to weigh on a
single mean, so the reading is the point comparison:

- supported: the paper's means show what the claim says, at its size;
- not supported: they do not. The claim then demands more than the paper's own numbers
  show, and its outcome is `unsupported` ("not supported by the paper's own numbers"),
  whatever our runs give: never a FAILS, never counted among them (docs/verdicts.md).

A claim the reported numbers do not cover (curves, other metrics or settings) is judged on
ours alone, as before.
"""

from __future__ import annotations

import copy

from drocli.errors import DrocliError

# kinds whose judge reads each cell's final value only: the paper's tables give exactly that
FINAL_KINDS = ("final_below", "pooled", "trend")


def paper_records(reported, experiment: str = "paper"):
    """The paper's numbers (drocli.claims.reported.frame) as records: one cell per label and
    setting, one seed, one checkpoint, so that the claims' judges read them as they read
    ours."""
    import pandas as pd

    df = reported.copy()
    keys = ["label", *(["setting"] if "setting" in df.columns else [])]
    df["cell"] = ["paper:" + ":".join(str(r[k]) for k in keys) for _, r in df.iterrows()]
    df["solver"] = df["label"]
    df["experiment"] = experiment
    df["dataset"] = "paper"
    df["seed"] = 0
    df["step"] = 0
    df["oracle_calls"] = 0.0
    df["time_s"] = 0.0
    cols = ["experiment", "cell", "solver", "label", "dataset", "seed", "step",
            "oracle_calls", "time_s", "metric", "value", *keys[1:]]
    return pd.DataFrame(df[cols])


def read(claim, records, profile: str) -> dict | None:
    """The claim read on the paper's records (paper_records): {status: supported |
    unsupported, detail, values}; None when they do not cover its subject."""
    from drocli.claims.base import panel_parts, validate_claim
    from drocli.claims.evaluate_one import evaluate_claim

    if records is None or claim.kind not in FINAL_KINDS or getattr(claim, "opaque", False):
        return None
    metrics = set(records["metric"])
    needed = [p["metric"] for p in claim.panels] if claim.panels and all(
        "metric" in p for p in claim.panels) else [claim.metric]
    if any(m not in metrics for m in needed):
        return None
    columns = {*claim.filter, *(k for p in (claim.panels or []) for k in panel_parts(p)[0])
               } - {"metric"}
    if any(c not in records.columns for c in columns):
        return None
    raw = claim.model_dump(mode="json", exclude_none=True)
    raw.update(per_seed=False, reproduced=True)
    raw.pop("profiles", None)
    panels = raw.pop("panels", None) or [{}]
    needed = raw.pop("panels_needed", None) or len(panels)
    parts, values, held = [], {}, 0
    for panel in panels:
        one = copy.deepcopy(raw)
        filt, own = panel_parts(panel)
        one.update(own)
        if "metric" in filt:
            one["metric"] = filt["metric"]
        one["filter"] = {**one.get("filter", {}), **{k: v for k, v in filt.items()
                                                      if k != "metric"}}
        try:
            valid = validate_claim(one)
            res = evaluate_claim(records, valid, profile)
        except DrocliError:
            return None
        if res.status in ("skipped", "error"):
            return None
        name = ", ".join(f"{k}={v}" for k, v in filt.items())
        held += res.point_status == "holds"
        parts.append((f"[{name}] " if name else "") + _detail(res.detail)
                     + (f" ({size(valid)})" if own else ""))
        values.update({(f"{k} @ {name}" if name else k): float(v)
                       for k, v in res.values.items()})
    detail = " | ".join(parts) + (f" ({size(claim)})" if not any(
        panel_parts(p)[1] for p in panels) else "")
    if len(panels) > 1:
        detail = f"{held} of {len(panels)} panels show it, {needed} needed: " + detail
    return {"status": "supported" if held >= needed else "unsupported", "detail": detail,
            "values": values}


def size(claim) -> str:
    """The claim's size as its fields give it (margin, factor)."""
    out = [f"{k} {getattr(claim, k):g}" for k, none in (("margin", None), ("factor", 1.0))
           if isinstance(getattr(claim, k, None), (int, float)) and getattr(claim, k) != none]
    return "size: " + (", ".join(out) if out else "none")


def apply(results: list, claims: list, records, profile: str) -> list:
    """Each result (drocli.claims.evaluate.evaluate_claims) with its claim read on the paper's
    records: the reading kept in `paper`; a claim they do not support becomes `unsupported`,
    our verdict kept in the reading. Skipped claims stay skipped."""
    from drocli.claims.base import validate_claim

    if records is None:
        return results
    for res, raw in zip(results, claims, strict=True):
        reading = read(validate_claim(raw), records, profile) if res.status != "skipped" \
            else None
        if reading:
            res.paper = reading
            if reading["status"] == "unsupported":
                reading["ours"] = {"status": res.status, "detail": res.detail}
                res.status = "unsupported"
    return results


def _detail(text: str) -> str:
    """The judge's comparison without what it says of seeds and intervals (one mean per
    label: there are none)."""
    cut = text.find(" (seed means over")
    return text[:cut] if cut >= 0 else text
