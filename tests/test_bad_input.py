"""Bad spec values are refused at load: exit 2, one line naming the file and the key path,
nothing written. The cases are the ones a new user tried (typed-contract issue) and their
neighbours."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, names_file

SPEC = Path(__file__).resolve().parents[1] / "experiments" / "gdro_synthetic.yaml"

# (override, key path expected in the message, a word of the message)
CASES = [
    ("metrics=[max_risk_trian]", "metrics[0]", "max_risk_train"),
    ("solvers.ALEG.params.gamma_w=-1", "solvers[0].params.gamma_w", "greater than 0"),
    ("solvers.SMD.params.gamma_q=-0.5", "solvers[1].params.gamma_q", "greater than or equal"),
    ("solvers.ALEG.params.schedule=fast", "solvers[0].params.schedule", "decay"),
    ("solvers.ALEG.params.K=2.5", "solvers[0].params.K", "integer"),
    ("solvers.ALEG.params.gama_w=1", "solvers[0].params.gama_w", "gamma_w"),
    ("problem.params.radius=-5", "problem.params.radius", "greater than 0"),
    ("problem.params.loss=hinge", "problem.params.loss", "logistic"),
    ("data.params.dim=0", "data.params.dim", "greater than or equal to 1"),
    ("data.params.dim=20.7", "data.params.dim", "fractional"),
    ("data.params.dim=.inf", "data.params.dim", "finite"),
    ("data.params.label_noise=.nan", "data.params.label_noise", "finite"),
    ("data.params.label_noise=1.5", "data.params.label_noise", "[0, 1]"),
    ("budget.epochs=.inf", "budget.epochs", "finite"),
    ("budget.epochs=-1", "budget.epochs", "greater than 0"),
    ("data.grid.dim=[8, -2]", "data.grid.dim[1]", "greater than or equal to 1"),
    ("solvers.ALEG.grid.gamma_w=[0.1, 0]", "solvers[0].grid.gamma_w[1]", "greater than 0"),
    ("data.params.dim=1e12", "data.params.dim", "available"),
    ("data.params.n_train=1e8", "data.params.n_train", "available"),
    ("budget.checkpoints=1e9", "budget.checkpoints", "available"),
    ("claims[0].kind=final_belo", "claims[0].kind", "final_below"),
    ("figures[0].panels[0].metric=max_risk_tst", "figures[0].panels[0].metric",
     "max_risk_test"),
    ("name=..", "name", "pattern"),                  # would write into results/'s parent
    ("claims[0].confidence=2", "claims[0].confidence", "less than 1"),
    ("claims[0].factor=-1", "claims[0].factor", "greater than or equal to 0.000001"),
    ("claims[0].factor=1e200", "claims[0].factor", "less than or equal to 1000000"),
    ("claims[0].source=x", "claims[0].source", "Source"),
    ("claims[0].source={where: S, quote: a paper sentence}", "claims[0].source.where",
     "at least 2"),
]


def _set(override: str) -> str:
    # --set addresses list entries by index after a dot: claims.0.kind
    key, value = override.split("=", 1)
    return key.replace("[", ".").replace("]", "") + "=" + value


@pytest.mark.parametrize("override,key,word", CASES, ids=[c[0] for c in CASES])
def test_refused_at_load(override, key, word, tmp_path, capsys):
    out = tmp_path / "out"
    code = call("run", SPEC, "--out", out, "--set", _set(override), "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert not out.exists(), "nothing written"
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert names_file(err, SPEC) and f": {key}: " in err and word in err, err
    assert "(fix: " in err


def test_memory_check_can_be_skipped(tmp_path, capsys):
    """--skip-memory-check lets a user who knows better past the estimate (a dry run here,
    so nothing is allocated)."""
    out = tmp_path / "out"
    code = call("run", SPEC, "--out", out, "--set", "data.params.dim=1e12",
                "--skip-memory-check", "--dry-run")
    assert code == 0 and "todo" in capsys.readouterr().out


def test_memory_estimate_scales_with_jobs():
    from drocli.run.resources import needs
    from drocli.spec import load_spec

    spec = load_spec(SPEC, profile="smoke")
    one = max(n.bytes for n in needs(spec, 1) if n.key.startswith("data"))
    two = max(n.bytes for n in needs(spec, 2) if n.key.startswith("data"))
    assert two == 2 * one
    groups, dim = spec.data.params["groups"], spec.data.params["dim"]
    rows = groups * (spec.data.params["n_train"] + spec.data.params["n_test"])
    assert one >= rows * dim * 4          # float32 features at least


def test_list_shows_typed_parameters(capsys):
    assert call("list", "solvers", "aleg") == 0
    out = capsys.readouterr().out
    assert "gamma_w" in out and "float > 0" in out and "one of decay, constant" in out
    assert "auto" in out and "n_bar" in out
    assert call("list", "solvers") == 0
    table = capsys.readouterr().out
    assert "aleg" in table and "gdro" in table and "svrb" in table
    assert call("list", "problems", "gdro") == 0
    assert "max_risk_train" in capsys.readouterr().out
    assert call("list", "solvers", "alge") == 2
    assert "did you mean" in (err := capsys.readouterr().err) and "'aleg'" in err


def test_show_prints_the_resolved_spec(tmp_path, capsys):
    import yaml

    from drocli.run.cells import expand
    from drocli.spec import load_spec

    assert call("show", SPEC, "--profile", "smoke", "--set", "seeds=2") == 0
    text = capsys.readouterr().out
    resolved = yaml.safe_load(text)
    assert resolved["seeds"] == [0, 1] and resolved["profile"] == "smoke"
    assert resolved["solvers"][0]["params"]["K"] is None          # auto, shown as null
    path = tmp_path / "shown.yaml"
    path.write_text(text)
    again = {c.id for c in expand(load_spec(path))}
    assert again == {c.id for c in expand(load_spec(SPEC, profile="smoke",
                                                    overrides=[("seeds", 2)]))}


def test_duplicate_key_refused(tmp_path, capsys):
    """A key written twice (PyYAML would keep the last silently) is exit 2, naming both."""
    spec = tmp_path / "dup.yaml"
    spec.write_text(SPEC.read_text() + "\nprofiles: {}\n")
    out = tmp_path / "out"
    code = call("run", spec, "--out", out, "-q")
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists(), err
    assert len(err.splitlines()) == 1 and "duplicate key 'profiles'" in err, err


def test_a_margin_beyond_a_million_ranges_of_its_metric_is_refused(tiny_spec, tmp_path,
                                                                    capsys):
    """Issue 56: a size no data could clear or miss is a typo, refused in one line with its
    key path, not judged INCONCLUSIVE [-inf, +inf]."""
    import yaml

    out = tmp_path / "res"
    assert call("run", tiny_spec, "--profile", "smoke", "--out", out, "-q") == 0
    saved = yaml.safe_load((out / "spec.yaml").read_text())
    saved["claims"][0]["margin"] = 1e9
    spec = tmp_path / "wide.yaml"
    spec.write_text(yaml.safe_dump(saved, sort_keys=False))
    assert call("run", spec, "--out", out, "-q") == 0           # the claim revised only
    capsys.readouterr()
    assert call("check", out) == 2
    err = capsys.readouterr().err
    assert "claims[0].margin" in err and "times the whole range of max_risk_train" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_case_the_profile_dropped_is_named_as_such(capsys):
    """Issue 57: `-d C=2 --profile smoke` said "no case 'C=2' in this spec"."""
    spec = Path(__file__).resolve().parents[1] / "experiments" / "omd_tch_fl_mnist.yaml"
    assert call("run", spec, "--profile", "smoke", "-d", "C=2", "--dry-run") == 2
    err = capsys.readouterr().err
    assert "profile 'smoke' drops case 'C=2' (its cases: rotation)" in err
    assert "give -d rotation" in err and len(err.strip().splitlines()) == 1
    assert call("run", spec, "--profile", "smoke", "-d", "C=7", "--dry-run") == 2
    assert "no case 'C=7' in this spec" in capsys.readouterr().err


def test_an_unknown_solver_may_be_a_plug_in_not_installed(tmp_path, capsys):
    """Issue 57: run's did-you-mean did not hint at a missing plug-in."""
    assert call("run", SPEC, "--set", "solvers.ALEG.name=alegx", "--dry-run",
                "--out", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "unknown solver 'alegx'" in err and "plug-in package needs that package" in err
