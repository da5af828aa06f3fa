"""What `check` flags in a results folder besides its verdicts: edits made after the run.

Each flag is one line naming what was edited. A flag marks the folder as not what its run
recorded, so `check` exits 1 on the tamper flags (`Flag.tampered`); claims dropped from a
profile or from the spec after their run are reported and counted, as post-hoc claims are:

- spec.yaml whose digest is not the manifest's `spec_sha1` (edited by hand: a claim can
  then be changed together with its registered hash, and only this digest tells);
- a claim the manifest registered that spec.yaml no longer has (removed after its run);
- a claim skipped on the folder's profile that was registered for it (its `profiles`
  changed after its run; an edit the ledger never saw, its registered `profiles` still
  naming the profile, is tampering); a claim judged with changed `profiles` is post hoc already
  (drocli.claims.registration.assess); a removal or move made before every cell the folder now
  holds ran (a confirm run on fresh seeds keeps its pilot's ledger) is history, not flagged;
- records whose rows for a cell are not those of the cell's file in cells/ (when the
  folder still has them: recorded folders keep only the records and their checksum);
- records whose cells are not those spec.yaml expands to (drocli.results.rederive: labels,
  parameters, seeds, budget, cases), whatever the digests say;
- a tracked folder's manifest that differs from its committed version while naming the
  same run (a digest recomputed, `git_dirty` unset by hand), and a folder under results/
  recorded from a dirty work tree.

Reading needs only the folder's files; the re-derivation alone needs the plug-ins the spec
names, and without them it is skipped with one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SHOWN = 3


@dataclass(frozen=True)
class Flag:
    what: str            # spec_digest | claim_removed | claim_profiles | cell_rows |
    #                      cells_rederived | cells_not_rederived | manifest_edited | dirty_tree
    line: str
    tampered: bool       # an edit of the folder's files, not a revision `run` recorded


def _spec_digest(results_dir: Path, man: dict) -> list[Flag]:
    from drocli.spec.lookups import spec_digest

    want = man.get("spec_sha1")
    path = Path(results_dir) / "spec.yaml"
    if not want or not path.is_file():
        return []
    try:
        have = spec_digest(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
    if have == want:
        return []
    return [Flag("spec_digest", f"spec.yaml is not the spec the run recorded (digest "
                 f"{have[:10]}, the manifest's {str(want)[:10]}): edited after the run; "
                 "its claims cannot be trusted to be the registered ones", True)]


def _first_cell(man: dict):
    """When the earliest cell the folder holds first ran (None: unknown)."""
    from drocli.claims.registration import cell_times

    times = [t for t in cell_times(man).values() if t is not None]
    return min(times) if times else None


def _before(stamp, first) -> bool:
    """The registration time `stamp` lies before every cell of the folder ran: the change
    was made before this folder's runs (a confirm run on fresh seeds inherits the ledger of
    its pilot), not after them."""
    from drocli.claims.registration import _time

    t = _time(stamp) if stamp else None
    return t is not None and first is not None and t <= first


def _claims(spec, man: dict) -> list[Flag]:
    from drocli.claims.base import judged_on

    registered = man.get("claims") if isinstance(man.get("claims"), dict) else {}
    first = _first_cell(man)
    have = {}
    for c in spec.claims:
        cid = c.get("id") if isinstance(c, dict) else getattr(c, "id", None)
        have[cid] = c
    out = []
    for cid, entry in registered.items():
        if not isinstance(entry, dict):
            continue
        if cid not in have:
            if _before(entry.get("removed"), first):
                continue
            when = str(entry.get("removed") or "")[:16]
            out.append(Flag("claim_removed", f"claim {cid!r} was registered "
                            f"{str(entry.get('fixed', '?'))[:16]} and is not in spec.yaml: "
                            f"removed after its run{f' ({when})' if when else ''}", False))
            continue
        claim = have[cid]
        profiles = claim.get("profiles") if isinstance(claim, dict) else claim.profiles
        prof = spec.claims_profile
        if judged_on(profiles, prof):
            continue
        if "profiles" in entry and judged_on(entry["profiles"], prof):
            out.append(Flag("claim_profiles", f"claim {cid!r} is registered for profile "
                            f"{prof!r} (profiles {entry['profiles'] or 'every'}) and spec.yaml "
                            f"skips it there (profiles {list(profiles)}): the ledger never saw "
                            "the move, so spec.yaml was edited after the run", True))
            continue
        if _before(entry.get("fixed"), first):
            continue
        for version in [*entry.get("earlier", []), entry]:
            if not isinstance(version, dict) or "profiles" not in version:
                continue
            was = version["profiles"]
            if judged_on(was, prof):
                out.append(Flag("claim_profiles", f"claim {cid!r} was registered for profile "
                                f"{prof!r} ({str(version.get('fixed', '?'))[:16]}) and is now "
                                f"skipped there (profiles {was or 'every'} -> "
                                f"{list(profiles)}): moved after its run", False))
                break
    return out


def _same(a, b) -> bool:
    """One recorded field against the cell file's: numbers equal (NaN, or a cell file's
    None, matching NaN), anything else by its text."""
    a, b = (math.nan if v is None else v for v in (a, b))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b or str(a) == str(b)


class _Recorded:
    """The records' rows of each cell, compared with a cell file's rows by `_same`: on
    numpy arrays when the records' number columns are numbers (a paper folder holds
    hundreds of thousands of rows; `_same` on each field cost seconds), field by field
    otherwise and wherever the arrays differ."""

    NUMBERS = ("step", "oracle_calls", "time_s", "value")

    def __init__(self, df):
        import numpy as np
        import pandas as pd

        from drocli.results.records import ROW_FIELDS

        self.fields = list(ROW_FIELDS)
        code, names = pd.factorize(df["cell"].astype(str))
        order = np.argsort(code, kind="stable")          # each cell's rows in record order
        bounds = np.searchsorted(code[order], np.arange(len(names) + 1))
        self.where = {str(n): order[bounds[i]:bounds[i + 1]] for i, n in enumerate(names)}
        self.rows = df[self.fields]
        self.numbers = None
        if all(pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
               for c in self.NUMBERS):
            self.numbers = df[list(self.NUMBERS)].to_numpy(dtype=float, na_value=np.nan)
            self.metric = df["metric"].to_numpy()

    def equal(self, cid: str, rows: list) -> bool:
        import numpy as np

        idx = self.where.get(cid, np.empty(0, dtype=np.intp))
        if len(idx) != len(rows):
            return False
        if self.numbers is not None:     # rows passed read_cell's check: numbers, metric text
            mine = np.array([[r[0], r[1], r[2], math.nan if r[4] is None else r[4]]
                             for r in rows], dtype=float).reshape(len(rows), 4)
            if np.array_equal(self.numbers[idx], mine, equal_nan=True) and \
                    [str(m) for m in self.metric[idx]] == [r[3] for r in rows]:
                return True
        recorded = self.rows.iloc[idx].values.tolist()
        return all(_same(a, b) for r, q in zip(recorded, rows, strict=True)
                   for a, b in zip(r, q, strict=True))


def _cell_rows(results_dir: Path, man: dict, df) -> list[Flag]:
    """Cells whose file in cells/ holds other rows than the records (count or values)."""
    from drocli.results.records import read_cell
    from drocli.results.status import finished

    cells_dir = Path(results_dir) / "cells"
    cells = man.get("cells") if isinstance(man.get("cells"), dict) else {}
    if not cells_dir.is_dir() or not cells or "cell" not in df.columns:
        return []
    bad = []
    recorded = _Recorded(df)
    for cid, st in cells.items():
        if not (isinstance(st, dict) and finished(st)):
            continue
        status, rows = read_cell(Path(results_dir), cid)
        if rows is None:
            continue                         # no cell file: the manifest and checksum rule
        if not recorded.equal(cid, rows):
            bad.append(cid)
    if not bad:
        return []
    return [Flag("cell_rows", f"{len(bad)} cell(s) have other rows in the records than in "
                 f"their cell files (e.g. {', '.join(bad[:SHOWN])}): records edited after the "
                 "run", True)]


RUN = ("started", "finished", "spec_revised")      # what says which run wrote a manifest


def _committed(results_dir: Path, man: dict) -> list[Flag]:
    """A tracked folder whose manifest differs from its committed version while naming the
    same run (its start, end and revision): edited by hand, e.g. `records_sha1` recomputed
    after the records' numbers were changed, or `git_dirty` set to false. A folder recorded
    from a work tree with uncommitted changes and found under the repository's results/
    (moved there: `run` refuses to record it there) is flagged too, not as an edit."""
    from drocli.results import tree

    out = []
    committed = tree.committed_manifest(results_dir)
    if committed and committed != man and all(committed.get(k) == man.get(k) for k in RUN):
        keys = sorted(k for k in {*committed, *man} if committed.get(k) != man.get(k))
        out.append(Flag("manifest_edited", f"manifest.json differs from its committed "
                        f"version in {', '.join(keys)} while naming the same run (finished "
                        f"{str(man.get('finished'))[:16]}): edited after the run", True))
    top = tree.toplevel(results_dir)
    if man.get("git_dirty") is True and top is not None and \
            Path(results_dir).resolve().parent == Path(top).resolve() / "results":
        out.append(Flag("dirty_tree", f"recorded from a work tree with uncommitted changes "
                        f"(commit {str(man.get('git_commit'))[:10]}): its numbers may come "
                        "from code no commit holds; record it again from a clean tree", False))
    return out


def folder_flags(results_dir: Path, spec, man: dict, df) -> list[Flag]:
    """Every flag of a results folder (empty for a folder as its run left it)."""
    if not isinstance(man, dict) or not man:
        return []
    from drocli.results import rederive

    lines, note = rederive.mismatches(spec, df, man)
    derived = [Flag("cells_rederived", line, True) for line in lines]
    return [*_spec_digest(results_dir, man), *_claims(spec, man),
            *_cell_rows(results_dir, man, df), *derived, *_committed(results_dir, man),
            *([Flag("cells_not_rederived", note, False)] if note else [])]
