"""`drocli list experiments` (issue 57): each shipped spec with its title, its profiles and,
where a folder under results/ recorded a profile, its cells and the compute they took (the
cells' summed wall times): what running it costs, measured rather than guessed. Read from
the files alone (the YAML and the manifests), so the list is instant."""

from __future__ import annotations

import json
from pathlib import Path

from drocli.results.durations import span, wall_times
from drocli.spec.safe_yaml import yaml_load


def _recorded(results: Path, name: str, profile: str, default: str) -> str:
    folder = results / (name if profile == default else f"{name}-{profile}")
    try:
        man = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "not recorded here"
    cells = man.get("cells") if isinstance(man, dict) else None
    if not isinstance(cells, dict):
        return "not recorded here"
    walls = wall_times(cells)
    cost = f", {span(sum(walls))} of compute" if walls else ", its compute time not recorded"
    return f"{len(cells)} cells{cost} ({folder.as_posix()})"


def listing(root: Path = Path("experiments"), results: Path = Path("results")) -> str:
    """The text `drocli list experiments` prints."""
    specs = sorted(root.glob("*.yaml")) if root.is_dir() else []
    if not specs:
        return (f"experiments: no spec in {root.resolve()} (drocli lists the experiments/ "
                "folder of the directory it runs in: run it from a drocli checkout, or give "
                "any spec's path to `drocli run`)")
    lines = [f"experiments ({root.as_posix()}/*.yaml; cost: the recorded cells' wall time):"]
    for path in specs:
        try:
            raw = yaml_load(path.read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 -- a broken spec is listed, `run` names its fault
            lines.append(f"  {path.as_posix()}  (cannot be read: `drocli show` says why)")
            continue
        raw = raw if isinstance(raw, dict) else {}
        name = str(raw.get("name") or path.stem)
        profiles = raw.get("profiles") if isinstance(raw.get("profiles"), dict) else {}
        default = str(raw.get("default_profile") or "paper")
        order = [default, *[p for p in profiles if p != default]]
        lines.append(f"  {path.as_posix()}  {' '.join(str(raw.get('title') or '').split())}")
        for prof in order:
            lines.append(f"      {prof}: {_recorded(results, name, str(prof), default)}")
    return "\n".join(lines)
