"""Issue 57: every command `drocli --help`-style text prints (the bare usage's loop, run's,
plot's and check's examples) runs as printed, from a copy of a checkout's layout, and
writes nothing under results/."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drocli import cli as cli_module

ROOT = Path(__file__).resolve().parents[1]


def _examples() -> list[str]:
    texts = [cli_module.cli.help or "", cli_module.EPILOG_RUN, cli_module.EPILOG_PLOT,
             cli_module.EPILOG_CHECK]
    found = []
    for text in texts:
        for line in text.splitlines():
            m = re.match(r"\s+(drocli \S.*?)(\s{2,}#.*)?$", line)
            if m:
                found.append(m.group(1).strip())
    return list(dict.fromkeys(found))


def test_the_examples_are_found():
    assert len(_examples()) >= 8


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """experiments/ linked, the two recorded gdro folders copied (a fresh clone's state)."""
    root = tmp_path_factory.mktemp("clone")
    (root / "experiments").symlink_to(ROOT / "experiments")
    for name in ("gdro_synthetic", "gdro_synthetic-smoke"):
        shutil.copytree(ROOT / "results" / name, root / "results" / name)
    return root


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns
            for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", _examples())
def test_an_example_runs_as_printed(command, checkout):
    before = _tree(checkout / "results")
    args = shlex.split(command)[1:]
    if args[0] in ("plot", "check") and not (checkout / args[1]).exists():
        loop = next(c for c in _examples() if c.startswith("drocli run") and args[1] in c)
        subprocess.run([sys.executable, "-m", "drocli", *shlex.split(loop)[1:], "-q"],
                       cwd=checkout, check=True, capture_output=True)
    res = subprocess.run([sys.executable, "-m", "drocli", *args], cwd=checkout,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "DROCLI_CACHE": "off"})
    assert res.returncode in (0, 1), (command, res.stderr[-1500:])   # 1: a claim fails
    assert "Traceback" not in res.stderr
    after = _tree(checkout / "results")
    changed = {k for k in after if before.get(k) != after[k]} | (set(before) - set(after))
    assert not {k for k in changed if "/figures/" not in k}, (command, sorted(changed)[:5])


def _doc_examples() -> list[str]:
    """The complete commands docs/cli.md writes inline (`drocli list solvers aleg`): not a
    command's bare name (`drocli data fetch`) nor a synopsis with a placeholder in capitals
    (SPEC, NAME)."""
    text = (ROOT / "docs" / "cli.md").read_text().replace("\n  ", " ")
    groups = {n for n, c in cli_module.cli.commands.items() if hasattr(c, "commands")}
    names = {f"drocli {n}" for n in cli_module.cli.commands} | {
        f"drocli {g} {n}" for g in groups for n in cli_module.cli.commands[g].commands}
    found = [c for c in re.findall(r"`(drocli [^`]+)`", text)
             if c not in names and not re.search(r"\b[A-Z]{3,}\b", c)]
    return list(dict.fromkeys(found))


def test_the_doc_examples_are_found():
    assert {"drocli list solvers aleg", "drocli list problems gdro"} <= set(_doc_examples())


@pytest.mark.parametrize("command", _doc_examples())
def test_a_doc_example_runs_as_printed(command, checkout):
    before = _tree(checkout / "results")
    res = subprocess.run([sys.executable, "-m", "drocli", *shlex.split(command)[1:]],
                         cwd=checkout, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "Traceback" not in res.stderr, (command, res.stderr[-800:])
    assert res.stdout.strip(), command
    assert _tree(checkout / "results") == before
