"""The Dockerfile runs the README's main job as a non-root user.

There is no Docker daemon where these tests run: what is tested is the Dockerfile's command
(the README's main job, parsed from both), its user, environment and writable folder, the
build context that .dockerignore leaves, the commit recorded without .git, and (slow) the
command itself run from such a context that the process can only read, with the image's
environment. Building the image is not tested (the Dockerfile's comments say so).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_main_job() -> list[str]:
    """The README's main job command, split into its `&&` steps."""
    text = (ROOT / "README.md").read_text()
    after = text.split("Main job", 1)[1]
    line = next(x.strip() for x in after.splitlines() if x.startswith("    python -m pip"))
    return [step.strip() for step in line.split("&&")]


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments out."""
    out, buf = [], ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        buf += (" " if buf else "") + line.rstrip("\\").strip()
        if not line.endswith("\\"):
            key, _, args = buf.partition(" ")
            out.append((key.upper(), args.strip()))
            buf = ""
    return out


def _words(cmd: str) -> list[str]:
    return [w for w in shlex.split(cmd) if w not in ("--no-cache-dir", "-q")]


def image_cmd() -> list[str]:
    (cmd,) = [args for key, args in dockerfile() if key == "CMD"]
    argv = json.loads(cmd)
    assert argv[:2] == ["sh", "-c"] and len(argv) == 3, argv
    return [step.strip() for step in argv[2].split("&&")]


def image_env() -> dict[str, str]:
    env = {}
    for key, args in dockerfile():
        if key == "ENV":
            for word in shlex.split(args):
                name, _, value = word.partition("=")
                env[name] = value
    return env


def test_dockerfile_cmd_is_the_readme_main_job():
    """The image runs what the README's main job runs: the install at build time, then the
    same run (fresh --out), plot and check --reference, word for word."""
    install, *job = readme_main_job()
    assert job == image_cmd()
    assert "--out" in _words(job[0]) and "--reference" in _words(job[-1])
    runs = [_words(args) for key, args in dockerfile() if key == "RUN"]
    want = _words(install)
    assert any(r[:len(want)] == want for r in runs), (want, runs)


def test_image_runs_as_a_user_who_may_write_only_runs():
    inst = dockerfile()
    (user,) = [args for key, args in inst if key == "USER"]
    assert user not in ("root", "0")
    (workdir,) = [args for key, args in inst if key == "WORKDIR"]
    run = " ".join(args for key, args in inst if key == "RUN")
    assert f"useradd --create-home --uid 1000 {user}" in run
    out = _words(image_cmd()[0])
    out = Path(out[out.index("--out") + 1])
    assert f"chown {user}:{user} {out.parts[0]}" in run and not out.is_absolute()
    env = image_env()
    assert env["NUMBA_CACHE_DIR"].startswith(f"/home/{user}/"), "numba needs a writable cache"
    assert [key for key, _ in inst].index("USER") > [key for key, _ in inst].index("RUN")
    assert workdir.startswith("/")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule, as far as these patterns need it: a pattern excludes the paths it
    matches and everything under them; a leading `**/` matches at any depth."""
    parts = path.split("/")
    for pat in patterns:
        anywhere = pat.startswith("**/")
        core = pat[3:] if anywhere else pat
        n = core.count("/") + 1
        for end in range(n, len(parts) + 1):
            for start in (range(end - n + 1) if anywhere else [0]):
                if end - start == n and fnmatch.fnmatchcase("/".join(parts[start:end]), core):
                    return True
    return False


def dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.startswith("#")]


def test_dockerignore_keeps_local_state_out_and_the_job_in():
    pats = dockerignore()
    for gone in (".git", ".git/objects/ab", "runs", "runs/mero_synthetic/records.csv.gz",
                 ".venv", "venv/bin/python", "drocli/__pycache__/cli.cpython-311.pyc",
                 "tests/__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis",
                 "drocli.egg-info", "results/mero_synthetic/cells/x.json", "scratch/x"):
        assert _ignored(gone, pats), gone
    for kept in ("Dockerfile", "setup.cfg", "pyproject.toml", "README.md", "drocli/__main__.py",
                 "experiments/mero_synthetic.yaml", "results/mero_synthetic/records.csv.gz",
                 "results/mero_synthetic/manifest.json", "results/mero_synthetic/spec.yaml"):
        assert (ROOT / kept).exists() and not _ignored(kept, pats), kept


def test_commit_recorded_from_the_build_without_git(monkeypatch):
    """No .git in the image: the commit given at build time is recorded, saying so; the
    dirty flag is unknown unless given; anything but 40 hex digits is not recorded."""
    from drocli.results import provenance, tree

    monkeypatch.setattr(tree, "_git", lambda *a, **k: None)
    monkeypatch.delenv("DROCLI_GIT_COMMIT", raising=False)
    p = provenance.provenance()
    assert p["git_commit"] is None and p["git_dirty"] is None and "git_from" not in p
    monkeypatch.setenv("DROCLI_GIT_COMMIT", "A" * 40)
    p = provenance.provenance()
    assert p["git_commit"] == "a" * 40 and p["git_dirty"] is None
    assert "DROCLI_GIT_COMMIT" in p["git_from"]
    monkeypatch.setenv("DROCLI_GIT_DIRTY", "1")
    assert provenance.provenance()["git_dirty"] is True
    monkeypatch.setenv("DROCLI_GIT_COMMIT", "HEAD; rm -rf /")
    assert provenance.provenance()["git_commit"] is None


# --- the command itself, from a read-only copy of the build context ------------------------

def build_context(dest: Path) -> Path:
    """The files `COPY . .` would take: the checkout as .dockerignore filters it."""
    pats = dockerignore()

    def ignore(folder, names):
        rel = Path(folder).relative_to(ROOT)
        return {n for n in names if _ignored((rel / n).as_posix(), pats)}

    shutil.copytree(ROOT, dest, ignore=ignore, symlinks=True)
    return dest


def _can_run_as(uid: int) -> bool:
    probe = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                            "sh", "-c", f"{shlex.quote(sys.executable)} -c pass"],
                           capture_output=True, cwd="/")
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0
                    or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run the job as another user")
def test_main_job_runs_from_a_read_only_context_as_in_the_image():
    """The image's CMD, from the build context, with the image's ENV, by a process that can
    write only runs/ and its home: run, plot and check --reference succeed, numba's cache
    lands in NUMBA_CACHE_DIR, and nothing else in the context changes."""
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="drocli-image-"))   # pytest's tmp_path is 0700:
    tmp_path.chmod(0o755)                                      # another user cannot enter
    try:
        _run_image_job(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _run_image_job(tmp_path: Path) -> None:
    ctx = build_context(tmp_path / "drocli")
    assert not (ctx / ".git").exists() and not (ctx / "runs").exists()
    home, bin_dir = tmp_path / "home" / "drocli", tmp_path / "bin"
    home.mkdir(parents=True)
    bin_dir.mkdir()
    (bin_dir / "drocli").write_text(f'#!/bin/sh\nexec {sys.executable} -m drocli "$@"\n')
    (bin_dir / "drocli").chmod(0o755)
    (ctx / "runs").mkdir()
    other = 65534
    if _can_run_as(other):           # a real non-root user (e.g. CI's python:3.11 image)
        who = ["setpriv", f"--reuid={other}", f"--regid={other}", "--clear-groups"]
        for p in (home, ctx / "runs"):
            os.chown(p, other, other)
        owner = 0                    # the context stays root's: read-only to the user
    else:                            # the interpreter sits under /root (mode 700) here: the
        who = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]   # process stays uid
        owner = other                # 0 without capabilities, the context another user's
    for dirpath, dirnames, filenames in os.walk(ctx):
        for name in [*dirnames, *filenames, "."]:
            p = Path(dirpath) / name
            if p.is_symlink() or (ctx / "runs") in (p, *p.parents):
                continue
            os.chown(p, owner, owner)
            p.chmod(p.stat().st_mode & ~0o022)
    before = {p: p.stat().st_mtime_ns for p in ctx.rglob("*") if "runs" not in p.parts}
    env = {k: v.replace("/home/drocli", str(home)) for k, v in image_env().items()}
    env.update(HOME=str(home), PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(ctx),
               DROCLI_GIT_COMMIT="", DROCLI_GIT_DIRTY="", LANG="C.UTF-8")
    probe = subprocess.run([*who, sys.executable, "-c", "import drocli; print(drocli.__file__)"],
                           cwd=ctx, env=env, capture_output=True, text=True)
    assert probe.stdout.startswith(str(ctx)), probe
    denied = subprocess.run([*who, "sh", "-c", "touch experiments/x.yaml"], cwd=ctx, env=env,
                            capture_output=True)
    assert denied.returncode != 0, "the context must be read-only to the process"
    job = " && ".join(image_cmd())
    res = subprocess.run([*who, "sh", "-c", job], cwd=ctx, env=env, capture_output=True,
                         text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "MATCHES  reference results/mero_synthetic" in res.stdout
    assert re.search(r"^(HOLDS|NOT REPRODUCED|FAILS)\b", res.stdout, re.M), \
        "the main job decides at least one claim at its first look"
    assert (ctx / "runs" / "mero_synthetic" / "figures").is_dir()
    assert any(Path(env["NUMBA_CACHE_DIR"]).rglob("*.nbi")), "numba cached in NUMBA_CACHE_DIR"
    after = {p: p.stat().st_mtime_ns for p in ctx.rglob("*") if "runs" not in p.parts}
    assert after == before, sorted(set(after) ^ set(before))[:5]
    manifest = json.loads((ctx / "runs" / "mero_synthetic" / "manifest.json").read_text())
    assert manifest["git_commit"] is None          # no .git, no build argument
