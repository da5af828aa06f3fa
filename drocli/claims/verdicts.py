"""The verdicts of a results folder, judged once by one code path for `check`, `check
--json` and `report`: the saved spec's claims on the records, with the manifest's claim
registrations, the spec's tuning seeds and those any tuning in the repository used
(drocli.claims.registration, drocli.results.tuning_records), the paper's own numbers the spec names
(drocli.claims.reported, drocli.claims.paper), the cells that did not finish
(drocli.claims.unfinished), and the folder's flags (drocli.results.flags)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from drocli.errors import DrocliError


@dataclass
class Judged:
    spec: object          # the saved, resolved spec
    records: object       # pandas DataFrame
    completeness: object  # integrity.Completeness
    manifest: dict
    claims: list          # ClaimResult
    flags: list           # flags.Flag: edits after the run
    paper: object = None  # the paper's numbers beside ours (drocli.report.paper_vs_ours.frame)


def judge_folder(results_dir: Path) -> Judged:
    from drocli.claims.evaluate import evaluate_claims
    from drocli.results.flags import folder_flags
    from drocli.results.integrity import manifest as read_manifest
    from drocli.results.integrity import read_checked
    from drocli.results.records import results_file
    from drocli.spec.load import load_saved

    spec = load_saved(results_file(results_dir, "spec.yaml"))
    df, completeness = read_checked(results_dir)
    try:
        man = read_manifest(results_dir)
    except DrocliError:
        man = {}
    tuning = tuning_seeds(spec, results_dir)
    from drocli.claims import cause, recorded, unfinished
    from drocli.claims.paper import apply, paper_records
    from drocli.claims.reported import frame
    from drocli.report import paper_vs_ours

    reported = frame(spec)        # the paper's own numbers, None without `reported:`
    paper = None if reported is None else paper_records(reported, spec.name)
    profile = spec.claims_profile
    judged = unfinished.apply(evaluate_claims(df, spec.claims, profile, manifest=man,
                                              tuning=tuning, plan=spec.plan(),
                                              recorded=recorded.read(results_dir)),
                              spec.claims, man, profile)
    claims = cause.apply(apply(judged, spec.claims, paper, profile), spec.claims)
    return Judged(spec, df, completeness, man, claims, folder_flags(results_dir, spec, man, df),
                  paper_vs_ours.frame(df, reported, spec.reported and spec.reported.data))


def tuning_seeds(spec, results_dir: Path) -> dict | None:
    """The spec's `tuning:` block, its seeds joined by those any tuning in the repository
    ran for the same data, problem and solvers."""
    from drocli.results.tuning_records import used_seeds

    block = spec.tuning.model_dump(mode="json") if spec.tuning else {}
    used = used_seeds(spec, results_dir)
    if not block and not used:
        return None
    seeds = [*block.get("seeds", []), *(s for s in used if s not in
                                         {str(x) for x in block.get("seeds", [])})]
    sources = [*block.get("source", []), *sorted({p for ps in used.values() for p in ps}
                                                 - set(block.get("source", [])))]
    return {**block, "seeds": seeds, "source": sources}


def record_verdicts(results_dir: Path) -> Judged | None:
    """At the end of a run: the folder's verdicts, judged now, into verdicts.json with each
    claim kind's description and judging function and the per-seed summaries judged
    (drocli.claims.recorded), so that the folder can be judged and reported where those
    plug-ins are not installed. Returns the judgement (a look of a sequential plan decides
    on it, not judging again); None, and nothing recorded, for a folder whose claims cannot
    be judged (a spec error `check` reports)."""
    from drocli.claims import recorded
    from drocli.plugins import registry

    try:
        judged = judge_folder(results_dir)
    except DrocliError:
        return None
    kinds = {}
    for c in judged.spec.claims:
        if not getattr(c, "opaque", False) and c.kind not in kinds:
            e = registry.get("claim", c.kind)
            kinds[c.kind] = (e.summary, registry.origin(e.func))
    recorded.write(results_dir, judged.claims, kinds)
    return judged
