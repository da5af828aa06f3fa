"""The verdicts of a results folder, judged once by one code path for `check`, `check
--json` and `report`: the saved spec's claims on the records, with the manifest's claim
registrations and the spec's tuning seeds (drocli.registration)."""

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


def judge_folder(results_dir: Path) -> Judged:
    from drocli.claims import evaluate_claims
    from drocli.integrity import manifest as read_manifest
    from drocli.integrity import read_checked
    from drocli.records import results_file
    from drocli.spec import load_saved

    spec = load_saved(results_file(results_dir, "spec.yaml"))
    df, completeness = read_checked(results_dir)
    try:
        man = read_manifest(results_dir)
    except DrocliError:
        man = {}
    tuning = spec.tuning.model_dump(mode="json") if spec.tuning else None
    claims = evaluate_claims(df, spec.claims, spec.profile, manifest=man, tuning=tuning)
    return Judged(spec, df, completeness, man, claims)
