"""`drocli run SPEC --until-decided`: the looks of the spec's sequential plan, one after the
other, until every claim is decided or the last look is reached.

The first look runs the spec's own seeds. After each look the folder is judged as `check`
judges it (the plan's levels at each look reached, drocli.claims.sequential); if claims are
still undecided, the next look adds the pool's next seeds, for the labels (solvers) those
claims compare only: a federated folder does not re-run what is already decided. Each look
is an ordinary run, so an interrupted look resumes; spec.yaml stays the committed spec.
"""

from __future__ import annotations

from pathlib import Path

from drocli.errors import DrocliError


def _seeds_present(out: Path) -> set[str]:
    """The seeds of the cells the folder holds (its manifest's, its cell files')."""
    from drocli.results.integrity import manifest as read_manifest

    try:
        man = read_manifest(out)
    except DrocliError:
        man = {}
    listed = man.get("cells") or {}
    seeds = {str(st.get("seed")) for st in listed.values() if isinstance(st, dict)}
    cells = Path(out) / "cells"
    if cells.is_dir():          # cells of an interrupted look, not yet in the manifest
        import json

        for p in cells.glob("*.json"):
            if p.stem in listed:
                continue
            try:
                seeds.add(str(json.loads(p.read_text()).get("seed")))
            except (OSError, ValueError, AttributeError):
                continue
    return seeds


def reached(plan: dict | None, out: Path) -> int:
    """The number of seeds of the last look of the sequential `plan` (`Spec.plan()`) the
    folder has begun (0: none, or no plan)."""
    if plan is None:
        return 0
    have = _seeds_present(out)
    n = 0
    for look in plan["looks"]:
        if any(str(s) in have for s in plan["order"][n:look]):
            n = look
        else:
            break
    return n


def needed_labels(batch, claims) -> set[str]:
    """The labels the undecided claims compare (solver and others)."""
    by_id = {c.id: c for c in batch.claims}
    out: set[str] = set()
    for r in claims:
        c = by_id.get(r.id)
        if c is not None:
            out |= set(c.labels)
    return out


def undecided(claims, looks: list[int]) -> list:
    """Claims still inconclusive before the plan's last look."""
    return [r for r in claims if r.status == "inconclusive" and r.look
            and r.look.get("seeds", 0) < looks[-1]]


def plan_unchanged(batch, out: Path) -> None:
    """Refuse (exit 2) a spec whose sequential plan (its looks, or the seeds in the order
    the looks take them) differs from the plan the folder's looks were run under: a plan is
    fixed once its first look has run; a new plan is a new study on fresh seeds, in a
    folder of its own (docs/verdicts.md)."""
    from drocli.spec.load import load_saved

    saved = Path(out) / "spec.yaml"
    if batch.plan is None or not saved.is_file():
        return
    try:
        old = load_saved(saved).plan()
    except DrocliError:
        return                     # an unreadable saved spec: the run's own checks say so
    if old is None or not reached(old, out):
        return
    if (old["looks"], old["order"]) == (batch.plan["looks"], batch.plan["order"]):
        return
    what = ("its looks" if old["looks"] != batch.plan["looks"] else
            "the seeds its looks take")
    raise DrocliError(f"{out}: the spec's sequential plan changes {what} "
                      f"({old['looks']} -> {batch.plan['looks']}) after the folder's first "
                      "look ran under the old plan", key="sequential",
                      fix="restore the plan the folder was run under, or start a new study: "
                          "fresh seeds and pool, committed first, with --out a new folder")


def open_claims(out: Path, looks: list[int]) -> list | None:
    """The claims still undecided before the plan's last look, judged as the folder stands
    (None when it cannot be judged yet: no records, or no manifest)."""
    from drocli.claims.verdicts import judge_folder

    try:
        return undecided(judge_folder(out).claims, looks)
    except (DrocliError, OSError):
        return None


def run_until_decided(batch, out: Path, *, log, **run_kw):
    """Run the plan's looks into `out`; the last look's RunSummary. Every look takes its
    cells from `batch` (the spec resolved once, drocli.run.cells.resolve)."""
    from drocli.claims.verdicts import judge_folder
    from drocli.run import runner

    plan = batch.plan
    if plan is None:
        raise DrocliError("the spec has no sequential plan", key="sequential",
                          fix="add `sequential: {looks: [10, 20, 40], pool: \"1000-1039\"}` "
                              "(its first look is the number of `seeds`), or run without "
                              "--until-decided")
    looks, order = plan["looks"], plan["order"]
    n = max(reached(plan, out), looks[0])
    labels = None
    retried = False
    if n > looks[0]:        # a look begun or ended: only the claims still open need cells
        open_ = open_claims(out, looks)
        if open_ is not None:
            labels = needed_labels(batch, open_)
            if not open_:
                log(f"drocli: {batch.name}: every claim decided or at the last look "
                    f"({n} seeds): nothing to run")
                return runner.run(batch, out, seeds=order[:n], log=log, **run_kw,
                                  only=lambda c: False)
    while True:
        log(f"drocli: {batch.name}: look {looks.index(n) + 1} of {len(looks)}, {n} seeds"
            + (f", for {len(labels)} label(s) of undecided claims" if labels else ""))
        summary = runner.run(batch, out, seeds=order[:n], log=log, **run_kw,
                             only=None if labels is None else
                             (lambda c, labels=labels: c.label in labels))
        if summary.unfinished:         # no seeds added over cells that did not finish
            log(f"drocli: {batch.name}: {len(summary.unfinished)} cell(s) did not finish at "
                f"look {looks.index(n) + 1}: the plan waits for them")
            return summary
        judged = summary.judged or judge_folder(out)     # judged once, at the run's end
        open_ = undecided(judged.claims, looks)
        later = [r for r in open_ if r.look.get("seeds", 0) >= n]   # judged at this look
        if not open_:
            log(f"drocli: {batch.name}: every claim decided or at the last look "
                f"({n} seeds)")
            return summary
        if n == looks[-1]:
            return summary
        if not later:          # undecided claims whose look was not reached: finish it once
            if retried:
                return summary
            labels, retried = needed_labels(batch, open_), True
            continue
        n, retried = looks[looks.index(n) + 1], False
        labels = needed_labels(batch, open_)
        log(f"drocli: {batch.name}: {len(open_)} claim(s) undecided: next look {n} seeds")
