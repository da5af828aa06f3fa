"""The seeds any tuning in the repository used for a results folder's settings, whether or
not its spec's `tuning:` block names them.

A tuning is a spec or a recorded folder under the repository's `experiments/tuning/`
(`*.yaml`, and `records/*/spec.yaml` with its manifest's cells). It concerns a results
folder when it runs the same data source and problem and at least one of the same
solvers: its seeds then drew the very randomness the folder's judged seeds draw, and a
claim judged on them is judged on the seeds that chose its settings. The repository is
found by walking up from the results folder (or the working directory) to the first
folder holding `experiments/tuning/`; without one, only the spec's own block counts.
"""

from __future__ import annotations

import json
from pathlib import Path

from drocli.errors import DrocliError
from drocli.results.records import gunzip_bounded

MAX_BYTES = 8 << 20        # a tuning spec or manifest is never larger


def tuning_dir(results_dir: Path) -> Path | None:
    """experiments/tuning/ of the repository holding `results_dir`, else of the working
    directory's, else None."""
    for start in (Path(results_dir).absolute(), Path.cwd()):
        for folder in (start, *start.parents):
            cand = folder / "experiments" / "tuning"
            if cand.is_dir():
                return cand
    return None


def files(results_dir: Path) -> list[Path]:
    """The tuning specs and recorded tuning folders' specs of the repository."""
    where = tuning_dir(results_dir)
    if where is None:
        return []
    return sorted([*where.glob("*.yaml"), *where.glob("records/*/spec.yaml")])


def _load(path: Path) -> dict | None:
    """A tuning file's mapping, or None. Parsed by libyaml where PyYAML has it (the same
    documents, eight times faster than the pure-Python parser: a first `check` reads every
    tuning file of the repository)."""
    import yaml

    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = yaml.load(path.read_text(encoding="utf-8"),
                         Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def _recorded_seeds(spec_path: Path) -> set[str]:
    """The seeds a recorded tuning folder's cells ran (from its manifest)."""
    for name in ("manifest.json", "manifest.json.gz"):
        path = spec_path.parent / name
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            continue
        try:
            raw = path.read_bytes()
            if name.endswith(".gz"):    # bounded: a gzip bomb is not expanded whole
                raw = gunzip_bounded(raw, MAX_BYTES, path, fix="")
            man = json.loads(raw)
        except (OSError, ValueError, DrocliError):
            continue
        cells = man.get("cells") if isinstance(man, dict) else None
        if isinstance(cells, dict):
            return {str(st.get("seed")) for st in cells.values() if isinstance(st, dict)}
    return set()


def _spec_seeds(doc: dict) -> set[str]:
    from drocli.spec.model import seed_list

    out: set[str] = set()
    for raw in [doc.get("seeds"), *[(p or {}).get("seeds") for p in
                                    (doc.get("profiles") or {}).values()
                                    if isinstance(p, dict)]]:
        if raw is None:
            continue
        try:
            out |= {str(s) for s in seed_list(raw)}
        except (ValueError, TypeError):
            continue
    return out


def _names(doc: dict) -> tuple[str, str, set[str]]:
    data = doc.get("data") if isinstance(doc.get("data"), dict) else {}
    problem = doc.get("problem") if isinstance(doc.get("problem"), dict) else {}
    solvers = {str(s.get("name")) for s in doc.get("solvers") or () if isinstance(s, dict)}
    return str(data.get("name")), str(problem.get("name")), solvers


def used_seeds(spec, results_dir: Path) -> dict[str, list[str]]:
    """seed (as text) -> the tuning files (repository paths) that ran it, over the tunings
    that concern this spec's folder."""
    data = spec.data.name
    problem = spec.problem.name
    solvers = {s.name for s in spec.solvers}
    out: dict[str, list[str]] = {}
    where = tuning_dir(results_dir)
    for path in files(results_dir):
        doc = _load(path)
        if doc is None:
            continue
        d, p, s = _names(doc)
        if d != data or p != problem or not (s & solvers):
            continue
        seeds = _recorded_seeds(path) if path.parent.parent.name == "records" else set()
        seeds |= _spec_seeds(doc)
        rel = path.relative_to(where.parent.parent).as_posix() if where else str(path)
        for seed in seeds:
            out.setdefault(seed, []).append(rel)
    return out
