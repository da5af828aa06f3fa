"""Spec loading: profiles, overrides and one-line errors that name file, key and fix."""

import pytest

from drocli.errors import DrocliError
from drocli.spec import apply_override, load_spec, parse_set


def test_profile_and_overrides(tiny_spec):
    spec = load_spec(tiny_spec, profile="smoke",
                     overrides=parse_set(["seeds=3", "solvers.ALEG.params.gamma_w=0.5"]))
    assert spec.profile == "smoke"
    assert spec.budget.epochs == 2
    assert spec.seeds == [0, 1, 2]
    assert spec.solvers[1].params["gamma_w"] == 0.5


def test_default_profile_is_paper(tiny_spec):
    spec = load_spec(tiny_spec)
    assert spec.profile == "paper" and spec.budget.epochs == 4


def test_override_by_index_and_yaml_values():
    raw = {"a": [{"name": "x", "p": {}}]}
    apply_override(raw, "a.0.p.v", [1, 2], file="f")
    assert raw["a"][0]["p"]["v"] == [1, 2]
    assert parse_set(["k=1e-3", "s=abc", "b=true"]) == [("k", 1e-3), ("s", "abc"), ("b", True)]


def _err(path, **kw) -> str:
    with pytest.raises(DrocliError) as ei:
        load_spec(path, **kw)
    return str(ei.value)


def test_unknown_key_suggests(tiny_spec):
    tiny_spec.write_text(tiny_spec.read_text().replace("seeds:", "sedes:"))
    msg = _err(tiny_spec)
    assert "tiny.yaml" in msg and "sedes" in msg


def test_unknown_solver_suggests(tiny_spec):
    tiny_spec.write_text(tiny_spec.read_text().replace("name: aleg", "name: alge"))
    msg = _err(tiny_spec)
    assert "solvers[1].name" in msg and "'aleg'" in msg and "did you mean" in msg


def test_unknown_param_and_wrong_type(tiny_spec):
    msg = _err(tiny_spec, overrides=parse_set(["solvers.SMD.params.gama_w=1"]))
    assert "gama_w" in msg and "gamma_w" in msg
    msg = _err(tiny_spec, overrides=parse_set(["solvers.SMD.params.gamma_w=fast"]))
    assert "valid number" in msg and "solvers[0].params.gamma_w" in msg
    msg = _err(tiny_spec, overrides=parse_set(["budget.checkpoints=many"]))
    assert "budget.checkpoints" in msg


def test_malformed_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndata: [unclosed\n")
    msg = _err(bad)
    assert "malformed YAML" in msg and "line" in msg
    msg = _err(tmp_path / "nope.yaml")
    assert "not found" in msg


def test_unknown_profile(tiny_spec):
    assert "did you mean 'smoke'" in _err(tiny_spec, profile="smok")


def test_claim_label_checked(tiny_spec):
    tiny_spec.write_text(tiny_spec.read_text().replace("others: [SMD]", "others: [SDM]"))
    assert "SDM" in _err(tiny_spec)


def test_reference_rtol_labels_and_range_checked(tiny_spec):
    text = tiny_spec.read_text()
    tiny_spec.write_text(text + "reference_rtol: {SDM: 0.01}\n")
    msg = _err(tiny_spec)
    assert "reference_rtol.SDM" in msg and "'SMD'" in msg
    tiny_spec.write_text(text + "reference_rtol: {SMD: 2}\n")
    assert "(0, 1)" in _err(tiny_spec)
    tiny_spec.write_text(text + "reference_rtol: {SMD: 0.01}\n")
    assert load_spec(tiny_spec).reference_rtol == {"SMD": 0.01}


def test_label_template_fields_checked_and_filled(tiny_spec):
    """A label template names swept or given parameters only (an unknown one was a KeyError,
    exit 3, when the cells were expanded); given ones are filled like swept ones."""
    from drocli.run.cells import expand

    text = tiny_spec.read_text().replace(
        "- {name: smd, label: SMD}",
        "- {name: smd, label: 'SMD {gamma_w} {nope}', grid: {gamma_q: [0.1, 0.2]}}")
    tiny_spec.write_text(text)
    msg = _err(tiny_spec)
    assert "solvers[0]" in msg and "{nope}" in msg and "gamma_q" in msg
    tiny_spec.write_text(text.replace(
        "{nope}', grid", "{gamma_q}', params: {gamma_w: 0.5}, grid"))
    labels = {c.label for c in expand(load_spec(tiny_spec)) if c.solver == "smd"}
    assert labels == {"SMD 0.5 0.1", "SMD 0.5 0.2"}


CASES = """
cases:
  a: {problem.params.radius: 5.0, budget.epochs: 3}
  b: {base: a, problem.params.radius: 7.0}
  c: {base: b, solvers.ALEG.params.gamma_w: 0.5}
"""


def _with_cases(tiny_spec, text=CASES):
    tiny_spec.write_text(tiny_spec.read_text() + text)
    return tiny_spec


def test_a_case_starts_from_its_base(tiny_spec):
    """`base:` applies the base case's overrides (and its base's) first; the case's own win.
    The cells are those of the same spec with every override spelled out."""
    from drocli.run.cells import expand

    spec = load_spec(_with_cases(tiny_spec))
    got = {name: (s.problem.params["radius"], s.budget.epochs, s.solvers[1].params.get("gamma_w"))
           for name, s in spec.case_specs()}
    assert got["a"] == (5.0, 3, got["a"][2]) and got["b"][:2] == (7.0, 3)
    assert got["c"] == (7.0, 3, 0.5) and got["a"][2] != 0.5
    assert all("base" not in body for body in spec.cases.values())
    spelled = tiny_spec.parent / "spelled.yaml"
    spelled.write_text(tiny_spec.read_text().replace(CASES, """
cases:
  a: {problem.params.radius: 5.0, budget.epochs: 3}
  b: {problem.params.radius: 7.0, budget.epochs: 3}
  c: {problem.params.radius: 7.0, budget.epochs: 3, solvers.ALEG.params.gamma_w: 0.5}
"""))
    assert [c.id for c in expand(spec)] == [c.id for c in expand(load_spec(spelled))]
    picked = load_spec(tiny_spec, data=["c"])            # -d c: c keeps what it inherits
    assert list(picked.cases) == ["c"]
    (_, only), = picked.case_specs()
    assert only.problem.params["radius"] == 7.0 and only.budget.epochs == 3


@pytest.mark.parametrize("text, needle", [
    ("cases:\n  a: {budget.epochs: 3}\n  b: {base: aa}\n", "did you mean 'a'"),
    ("cases:\n  a: {base: b}\n  b: {base: a}\n", "cycle: a -> b -> a"),
    ("cases:\n  a: {base: a}\n", "not another case"),
    ("cases:\n  a: {budget.epochs: 3}\n  b: {base: [a]}\n", "not another case"),
])
def test_a_bad_base_is_one_line_naming_the_key(tiny_spec, text, needle):
    msg = _err(_with_cases(tiny_spec, text))
    assert "tiny.yaml" in msg and needle in msg and ".base" in msg


def test_a_long_chain_of_bases_is_no_bug(tiny_spec):
    """Thousands of chained cases resolve (no recursion), and a long cycle is exit 2."""
    chain = "cases:\n  c0: {budget.epochs: 3}\n" + "".join(
        f"  c{i}: {{base: c{i - 1}}}\n" for i in range(1, 3000))
    spec = load_spec(_with_cases(tiny_spec, chain), data=["c2999"])
    (_, last), = spec.case_specs()
    assert last.budget.epochs == 3
    cycle = "cases:\n" + "".join(f"  c{i}: {{base: c{(i + 1) % 3000}}}\n" for i in range(3000))
    tiny_spec.write_text(tiny_spec.read_text().split("cases:")[0] + cycle)
    assert "cycle: c0 -> c1" in _err(tiny_spec)
