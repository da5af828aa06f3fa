"""`drocli check RESULTS_DIR`: judges the paper's claims (and a reference run) on a results
folder, as lines or as JSON, with the exit code CI reads; answers are cached by content, and
`--plan` says how many seeds each undecided claim needs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from drocli.errors import DrocliError

EPILOG_CHECK = """\b
Examples:
  drocli check results/gdro_synthetic
  drocli check runs/gdro --reference results/gdro_synthetic-smoke   # a new run vs the recorded
Each comparative claim is judged on one summary per seed: a paired t-interval of its effect
at the claim's confidence (default 95 %), Bonferroni over the labels it must beat to refute
it, an exact sign-flip test for seed spreads; fewer than 3 seeds are inconclusive.
Verdicts: HOLDS (interval past the threshold), FAILS (significantly not), INCONCLUSIVE
(the interval contains the threshold: within the noise), NOT REPRODUCED (expected: the
spec marks the paper's claim as not reproduced), UNEXPECTEDLY HOLDS (marked not
reproduced, yet holds: re-examine the mark), NOT JUDGED (some of its cells did not finish:
re-run), SKIPPED (claim not for this profile). FAILS, reference mismatches and edited files
make the exit code 1; else a claim marked reproduced left NOT JUDGED makes it 4. The answer
is kept by the content of the folders, the options and drocli itself: checking the same
bytes again replays it.
"""


def _tolerance(ctx, param, value):
    """--rtol / --atol: finite and >= 0 (NaN compares false, so NaN matched everything)."""
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise DrocliError(f"{value} is not a tolerance", key=f"--{param.name}",
                          fix=f"give a finite number >= 0, e.g. --{param.name} "
                          f"{param.default:g}")
    return value


@click.command(epilog=EPILOG_CHECK)
@click.argument("results_dir", metavar="RESULTS_DIR", type=click.Path(path_type=Path))
@click.option("--reference", type=click.Path(path_type=Path),
              help="Recorded results folder: final values must match within tolerance.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, callback=_tolerance,
              help="Relative tolerance on final values against --reference.")
@click.option("--atol", type=float, default=1e-9, show_default=True, callback=_tolerance,
              help="Absolute tolerance on final values against --reference.")
@click.option("--json", "as_json", is_flag=True, help="The verdicts (and reference "
              "mismatches) as one JSON document on stdout, for machines.")
@click.option("--no-cache", is_flag=True, help="Judge afresh even when the same folder, "
              "options and drocli were checked before (answers are kept in $DROCLI_CACHE).")
@click.option("--plan", "show_plan", is_flag=True, help="Also say, for each undecided claim, "
              "how many seeds it is expected to need at its estimated effect and spread, "
              "beside the spec's sequential plan.")
def check(results_dir, reference, rtol, atol, as_json, no_cache, show_plan):
    """Check the paper's claims (and a reference run) on RESULTS_DIR; exit 1 if any fails."""
    from drocli.results import check_cache

    options = {"rtol": rtol, "atol": atol, "json": as_json,      # the answer prints the paths
               "dir": str(results_dir), "reference": str(reference), "plan": show_plan}
    key = None if no_cache else check_cache.key(results_dir, reference, options)
    answer = check_cache.load(key)
    if answer is None:
        out, err, code = _judge(results_dir, reference, rtol, atol, as_json, show_plan)
        answer = {"out": "".join(f"{line}\n" for line in out),
                  "err": "".join(f"{line}\n" for line in err), "code": code}
        check_cache.store(key, answer["out"], answer["err"], code)
    click.echo(answer["out"], nl=False)
    click.echo(answer["err"], nl=False, err=True)
    sys.exit(answer["code"])


def plan_lines(spec, results) -> list[str]:
    """`check --plan`: for each undecided claim, its look and the seeds it is expected to
    need (80 % power at its estimated effect and spread, drocli.claims.judge)."""
    import math

    from drocli.claims.judge import seeds_to_decide

    plan = spec.plan()
    looks = plan["looks"] if plan else None
    out = []
    if looks:                  # looks that can never decide a claim, from the plan alone
        from drocli.claims.decidable import plan_notes

        out += [f"PLAN     {line}" for line in plan_notes(spec.claims, looks)]
    for r in results:
        if r.status != "inconclusive":
            continue
        need = seeds_to_decide(r.effects) if r.effects else math.nan
        est = ("no number of seeds would decide it (its estimate sits on its threshold)"
               if need == math.inf else "not estimated" if math.isnan(need)
               else f"about {int(need)} seeds would decide it at its estimated effect")
        if looks and r.look:
            j, n = r.look.get("look", 0), r.look.get("seeds", 0)
            where = (f"look {j} of {len(looks)} ({n} seeds); "
                     + ("the last look" if j >= len(looks) else
                        f"next look at {looks[j]} seeds, last at {looks[-1]}"))
        else:
            where = (f"{len(set(r.judged.values())) or '?'} seeds judged; no sequential plan "
                     "(adding seeds after this look is a second look: see docs/verdicts.md)")
        out.append(f"PLAN     {r.id}: {where}; {est}")
    return out


def _judge(results_dir, reference, rtol, atol, as_json, show_plan=False
           ) -> tuple[list, list, int]:
    """check's stdout lines, stderr lines and exit code."""
    from drocli.claims import format_result, summary_counts, summary_line
    from drocli.claims.verdicts import judge_folder
    from drocli.results.integrity import read_checked
    from drocli.results.reference import compare_reference, kernel_note, later_seeds

    judged = judge_folder(results_dir)
    spec, df, completeness, results = (judged.spec, judged.records, judged.completeness,
                                       judged.claims)
    ref_df = read_checked(reference)[0] if reference is not None else None
    note = completeness.note()
    mismatches = kernels = None
    if reference is not None:
        mismatches = compare_reference(df, ref_df, rtol=rtol, atol=atol,
                                       rtol_by_label=spec.reference_rtol)
        kernels = kernel_note(results_dir, reference)
    flags = judged.flags
    ok = (not any(r.failed for r in results) and not mismatches
          and not any(f.tampered for f in flags))
    from drocli.results.status import UNFINISHED_EXIT

    unjudged = any(r.status == "incomplete" and r.reproduced for r in results)
    code = 1 if not ok else UNFINISHED_EXIT if unjudged else 0
    if as_json:
        return [json.dumps({
            "results_dir": str(results_dir), "experiment": spec.name, "profile": spec.profile,
            "cells": {"finished": completeness.finished, "total": completeness.total},
            "claims": [{**r.to_dict(), **({"note": note} if note else {})} for r in results],
            "summary": summary_counts(results),
            "paper": None if judged.paper is None else
            json.loads(judged.paper.to_json(orient="records")),
            "flags": [{"what": f.what, "line": f.line, "tampered": f.tampered}
                      for f in flags],
            "reference": None if reference is None else {
                "path": str(reference), "rtol": rtol, "atol": atol,
                "rtol_by_label": spec.reference_rtol, "mismatches": mismatches,
                "later_seeds": later_seeds(df, ref_df),
                "kernels": kernels},
            "ok": ok}, indent=1)], [], code
    out, err = [], []
    if not results:
        out.append("no claims in this spec: nothing to judge")
    out += [f"FLAG     {f.line}" for f in flags]
    out += [format_result(r) + (f" [{note}]" if note else "") for r in results]
    if judged.paper is not None:
        from drocli.report.paper_vs_ours import lines

        out += lines(judged.paper)
    if note:
        err.append(f"drocli: {results_dir}: {note}; re-run `drocli run` to finish the rest")
    if reference is not None:
        out += [f"MISMATCH {line}" for line in mismatches]
        if mismatches and kernels:
            out.append(f"NOTE     {kernels}")
        later = later_seeds(df, ref_df)
        if later:
            out.append(f"NOTE     the reference also holds {len(later)} seed(s) this run did "
                       f"not run ({', '.join(later[:4])}{' ...' if len(later) > 4 else ''}: "
                       "its later looks); compared on this run's seeds")
        if not mismatches:
            loose = "".join(f", {lab}: {t:g}" for lab, t in spec.reference_rtol.items()
                            if t > rtol)
            out.append(f"MATCHES  reference {reference} (rtol={rtol:g}{loose})")
    if show_plan:
        out += plan_lines(spec, results)
    if results or flags:
        out.append(summary_line(results)
                   + (f"; {len(flags)} flag(s)" if flags else "")
                   + (f"; {len(mismatches)} reference mismatch(es)" if mismatches else "")
                   + (f" [{note}]" if note else ""))
    return out, err, code
