"""One claim judged on records: its filter and metric, its kind's judge, its panels.

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
"""

from __future__ import annotations

from drocli.claims.base import ClaimBase, judged_on, panel_parts, panels_set_metric
from drocli.claims.result import ClaimResult
from drocli.errors import DrocliError
from drocli.plugins import registry


def evaluate_claim(records, claim: ClaimBase, profile: str) -> ClaimResult:
    from drocli.errors import did_you_mean
    from drocli.results.aggregate import apply_filter, as_text

    reproduced = claim.reproduced if isinstance(claim.reproduced, bool) \
        else profile in claim.reproduced

    def result(status, detail, values=None, effects=None, point=None):
        return ClaimResult(claim.id, claim.text, claim.kind, status, detail, reproduced,
                           dict(values or {}), dict(effects or {}), point or status,
                           claim.source)

    if not judged_on(claim.profiles, profile):
        return result("skipped", f"profile {str(profile)!r} not in {claim.profiles}")
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
