"""Issue 57: a spec's texts say what the run used. `${dotted.path}` in titles, captions and
the description is filled from the resolved spec (profile, --set applied)."""

from __future__ import annotations

from pathlib import Path

from drocli.spec import load_spec
from tests.conftest import call

ROOT = Path(__file__).resolve().parents[1]


def test_a_smoke_title_names_the_smoke_setting():
    path = ROOT / "experiments" / "mero_synthetic.yaml"
    titles = {p: next(f.title for f in load_spec(path, profile=p).figures)
              for p in ("paper", "smoke")}
    assert "m=25, d=1024," in titles["paper"] and "m=25, d=256," in titles["smoke"]
    e1 = ROOT / "experiments" / "zo_smd_e1.yaml"
    assert "Budget: 20000 ZO-SMD rounds" in load_spec(e1).description
    assert "Budget: 2000 ZO-SMD rounds" in load_spec(e1, profile="smoke").description
    assert "Budget: 500 ZO-SMD" in load_spec(e1, overrides=[("budget.epochs", 500)]).description


def test_a_placeholder_that_names_nothing_is_refused(tiny_spec, tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text(tiny_spec.read_text().replace("title: Tiny GDRO",
                                                  "title: Tiny d=${data.params.dimm}"))
    assert call("run", spec, "--out", tmp_path / "res", "--dry-run") == 2
    err = capsys.readouterr().err
    assert ": title: ${data.params.dimm} names no value of the spec" in err, err
    assert not (tmp_path / "res").exists()
