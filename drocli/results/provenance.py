"""Where a run's numbers come from: package versions, BLAS kernel, host, CPU model, load,
and the git commit and tree state of the checkout (the manifest's provenance block)."""

from __future__ import annotations

import os
import platform
import re
import socket
import sys
from importlib import metadata
from pathlib import Path


def cpu_model() -> str | None:
    """The CPU's model name (/proc/cpuinfo's first "model name", else
    platform.processor()), or None: wall-time claims depend on the CPU, not just the host."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "model name" and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or None


def load_avg() -> list[float] | None:
    """The system load averages over 1, 5 and 15 minutes (os.getloadavg), rounded; None
    where the system has none. A busy machine slows every wall time recorded on it."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def provenance(out: Path | None = None) -> dict:
    """Versions, BLAS (threadpoolctl's entries: `architecture` is the OpenBLAS kernel family
    in use), host, CPU model, the load averages now (taken when a run starts:
    `load_avg`), and the git commit and tree state of the checkout the folder `out` lies in
    (else of drocli's own): untracked files count as dirty, the run's own folder does
    not."""
    from drocli import __version__
    from drocli.results import tree

    pkgs = {}
    for name in ("numpy", "scipy", "pandas", "numba", "joblib", "matplotlib", "pydantic"):
        try:
            pkgs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pkgs[name] = None
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: i.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
                for i in threadpool_info()]
    except Exception:  # provenance is best effort
        blas = []
    top = (tree.toplevel(out) if out is not None else None) or \
        tree.toplevel(Path(__file__).resolve().parents[1])
    st = tree.state(top, exclude=out) if top is not None else None
    git = {"git_commit": st["commit"] if st else None,
           "git_dirty": st["dirty"] if st else None}
    if st and st["dirty"]:
        git["git_changed"] = st["changed"]
    if git["git_commit"] is None:
        git.update(_git_from_environment())
    return {"drocli": __version__, **git,
            "python": sys.version.split()[0], "platform": platform.platform(),
            "host": socket.gethostname(), "cpus": os.cpu_count(), "cpu_model": cpu_model(),
            "load_avg": load_avg(), "packages": pkgs, "blas": blas}


def _git_from_environment() -> dict:
    """Where there is no git checkout (the Docker image, built without .git), the commit the
    build was made from: DROCLI_GIT_COMMIT (40 hex digits) and DROCLI_GIT_DIRTY (1 or 0; the
    dirty flag stays unknown otherwise), recorded with `git_from` saying so."""
    commit = os.environ.get("DROCLI_GIT_COMMIT", "").strip().lower()
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        return {}
    dirty = {"1": True, "0": False}.get(os.environ.get("DROCLI_GIT_DIRTY", "").strip())
    return {"git_commit": commit, "git_dirty": dirty,
            "git_from": "DROCLI_GIT_COMMIT (set when the image was built, not read from git)"}
