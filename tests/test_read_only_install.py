"""Cached numba kernels work from a read-only install run by a user without a writable HOME
(issue 43): numba finds no cache folder there and refuses; drocli caches in a private folder
under the temporary folder, never in one another user could have planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from drocli.ops import jit
from drocli.run import scratch

ROOT = Path(__file__).resolve().parents[1]


def test_private_cache_dir_is_only_this_users(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = Path(scratch.private_dir("numba"))
    assert path == tmp_path / f"drocli-numba-{os.getuid()}"
    assert path.stat().st_mode & 0o777 == 0o700
    assert scratch.private_dir("numba") == str(path)            # the same folder next time


@pytest.mark.parametrize("plant", ["open to others", "link"])
def test_a_planted_cache_dir_is_not_used(tmp_path, monkeypatch, plant):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    planted = tmp_path / f"drocli-numba-{os.getuid()}"
    if plant == "link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        planted.symlink_to(tmp_path / "elsewhere")
    else:
        planted.mkdir()
        planted.chmod(0o777)
    got = Path(scratch.private_dir("numba"))
    assert got != planted and got.parent == tmp_path and got.name.startswith("drocli-numba-")
    assert got.stat().st_mode & 0o777 == 0o700 and not got.is_symlink()


def test_no_writable_folder_at_all_compiles_without_a_cache(monkeypatch):
    """numba refuses every folder and the temporary one is unusable: the kernel still runs."""
    from numba.core import config

    monkeypatch.setattr(jit, "private_dir", lambda kind: None)
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "NoSuchLocatorAnywhere", raising=False)

    def twice(x):
        return 2.0 * x

    with pytest.raises(RuntimeError, match="Unknown cache locator"):   # the probe is real
        jit._dispatcher(twice, {"cache": True})
    monkeypatch.setattr(config, "CACHE_LOCATOR_CLASSES", "")
    from numba.core import caching
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])       # no locator at all
    disp = jit._dispatcher(twice, {"cache": True})
    assert disp(1.5) == 3.0


def _other_user() -> list[str] | None:
    """A command prefix running as a user that cannot write the copy (None: cannot here)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    real = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*real, sys.executable, "-c", "import numpy, numba"],
                           capture_output=True, cwd="/")
    if probe.returncode == 0:
        return real
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]   # root without capabilities


NEEDS_ROOT = pytest.mark.skipif(_other_user() is None,
                                reason="needs root and setpriv to drop privileges")


@NEEDS_ROOT
def test_a_read_only_install_without_home_runs_cached_kernels():
    _read_only_install(commands=False)


@pytest.mark.slow
@NEEDS_ROOT
def test_every_command_works_from_a_read_only_install_without_home():
    _read_only_install(commands=True)


def _read_only_install(commands: bool) -> None:
    who = _other_user()
    tmp = Path(tempfile.mkdtemp(prefix="drocli-ro-"))
    try:
        tmp.chmod(0o755)
        shutil.copytree(ROOT / "drocli", tmp / "drocli",
                        ignore=shutil.ignore_patterns("__pycache__"))
        owner = 0 if who[1].startswith("--reuid") else 65534       # read-only to the process
        for dirpath, dirnames, filenames in os.walk(tmp):
            for name in [*dirnames, *filenames, "."]:
                p = Path(dirpath) / name
                os.chown(p, owner, owner)
                p.chmod(p.stat().st_mode & ~0o222 if p.is_file() else 0o555)
        home = tmp / "home"         # a HOME the process cannot write
        home.mkdir(mode=0o555)
        os.chown(home, owner, owner)
        temp = tmp / "tmp"          # the process's own temporary folder
        temp.mkdir()
        os.chown(temp, 65534 if owner == 0 else 0, 65534 if owner == 0 else 0)
        temp.chmod(0o700)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
        env.pop("XDG_CACHE_HOME", None)
        env.update(HOME=str(home), PYTHONPATH=str(tmp), TMPDIR=str(temp))
        code = ("import numpy as np; from drocli.ops import rows; import drocli; "
                "print(drocli.__file__); print(rows.sqnorm(np.arange(4.0)))")
        res = subprocess.run([*who, sys.executable, "-c", code], cwd="/", env=env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        where, value = res.stdout.split()
        assert where.startswith(str(tmp)) and float(value) == float(np.arange(4.0) @ np.arange(4.0))
        cached = list(temp.glob("drocli-numba-*/**/*.nbi"))
        assert cached, "the kernel cached in the private temporary folder"
        assert not list((tmp / "drocli").rglob("*.nbi")), "nothing written into the install"
        assert not list(home.iterdir()), "nothing written into HOME"
        if not commands:
            return
        from tests.conftest import TINY_SPEC  # every command, in a folder the process owns
        work = temp / "work"
        work.mkdir()
        (work / "tiny.yaml").write_text(TINY_SPEC)
        for p in (work, work / "tiny.yaml"):
            os.chown(p, *(temp.stat().st_uid, temp.stat().st_gid))
        env.pop("DROCLI_DATA", None)
        for args in (["run", "tiny.yaml", "--out", "out", "-q"], ["check", "out"],
                     ["plot", "out"], ["report", "out", "--out", "rep"], ["list"]):
            res = subprocess.run([*who, sys.executable, "-m", "drocli", *args], cwd=work,
                                 env=env, capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, (args, res.stdout[-2000:], res.stderr[-2000:])
            for bad in ("Traceback", "cannot cache", "temporary cache directory", "mkdir"):
                assert bad not in res.stderr, (args, res.stderr)
        assert list((work / "out" / "figures").iterdir()) and (work / "rep").is_dir()
        assert not list(home.iterdir()), "nothing written into HOME"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
