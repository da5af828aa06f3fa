"""Paper 003 VLMOP2 baselines (LS, TCH, STCH), the new VLMOP2 metrics, and the
`objective_space` figure kind (Figs. 2 and 4)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from matplotlib.path import Path as MplPath

from drocli.errors import DrocliError
from drocli.plugins import registry
from drocli.problems.multiobjective import VLMOP2Problem, endpoint_distance, front_point
from drocli.solvers.moo.stch import stch_direction, stch_value, stch_weights
from tests.conftest import StepMonitor, call

E4 = 1.0 - math.exp(-4.0)




def solve(name, problem, iters, seed=0, **params):
    entry = registry.get("solver", name)
    return entry.func(problem, registry.resolve_params(entry, params),
                      np.random.default_rng(seed), StepMonitor(problem, problem.m * iters))


def test_registered_in_moo_family():
    for name in ("ls", "tch", "stch"):
        e = registry.get("solver", name)
        assert e.family == "moo" and "paper 003" in e.description
    assert registry.get("solver", "ls").defaults == {"eta": 0.01}
    assert registry.get("solver", "tch").defaults == {"eta": 0.01, "weighted": False}
    assert registry.get("solver", "stch").defaults == {"eta": 0.02, "mu": 0.01}


# --- one step by hand ------------------------------------------------------------------------

def _first_two(problem, seed=3):
    theta1 = problem.initial(np.random.default_rng(seed))
    F, J = problem.values(theta1), problem.oracle(theta1)[1]
    problem.reset_counter()
    return theta1, F, J


def test_ls_one_step():
    p = VLMOP2Problem(pref=0.3, box_eps=1e-5)
    theta1, F, J = _first_two(p)
    expect = np.clip(theta1 - 0.01 * (0.3 * J[0] + 0.7 * J[1]), -1 + 1e-5, 1 - 1e-5)
    out = solve("ls", p, 1, seed=3)
    np.testing.assert_allclose(out, expect, rtol=0, atol=1e-15)
    assert p.oracle_calls == 2


@pytest.mark.parametrize("weighted", [False, True])
def test_tch_one_step_unweighted_and_weighted(weighted):
    p = VLMOP2Problem(pref=0.2)
    theta1, F, J = _first_two(p)
    i = int(np.argmax(p.w * F))
    step = (p.w[i] if weighted else 1.0) * J[i]
    out = solve("tch", p, 1, seed=3, weighted=weighted)
    np.testing.assert_allclose(out, np.clip(theta1 - 0.01 * step, -1, 1), rtol=0, atol=1e-15)


def test_tch_picks_the_argmax_of_weighted_losses():
    """At θ = 0 (f1 = f2), i* is the larger weight's objective; the step is along -∇f_{i*}."""
    p = VLMOP2Problem(pref=0.7)
    F, J = p.oracle(np.zeros(10))
    from drocli.solvers.moo.tch import tch_direction

    np.testing.assert_array_equal(tch_direction(p.w)(F, J), J[0])
    np.testing.assert_array_equal(tch_direction([0.3, 0.7])(F, J), J[1])
    np.testing.assert_allclose(tch_direction([0.3, 0.7], weighted=True)(F, J), 0.7 * J[1])


def test_stch_one_step():
    p = VLMOP2Problem(pref=0.4)
    theta1, F, J = _first_two(p)
    z = p.w * F / 0.01
    a = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    expect = np.clip(theta1 - 0.02 * ((a * p.w) @ J), -1, 1)
    np.testing.assert_allclose(solve("stch", p, 1, seed=3), expect, rtol=0, atol=1e-15)


@pytest.mark.parametrize("mu", [0.01, 0.1, 1.0])
def test_stch_gradient_matches_finite_differences(mu):
    p = VLMOP2Problem(pref=0.35)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = rng.uniform(-0.4, 0.4, 10)
        F, J = p.oracle(x)
        g = stch_direction(p.w, mu)(F, J)
        h = 1e-6
        fd = np.array([(stch_value(p.values(x + h * e), p.w, mu)
                        - stch_value(p.values(x - h * e), p.w, mu)) / (2 * h) for e in np.eye(10)])
        np.testing.assert_allclose(g, fd, atol=1e-7)


def test_stch_is_stable_and_brackets_tch():
    w, F = np.array([0.5, 0.5]), np.array([3.0, 2.0])
    v = stch_value(F, w, 1e-4)                         # exp(15000) would overflow naively
    assert np.isfinite(v) and v == pytest.approx(1.5, abs=1e-9)
    # max_i w_i f_i <= STCH <= max_i w_i f_i + mu log m
    for mu in (0.01, 0.3):
        assert 1.5 <= stch_value(F, w, mu) <= 1.5 + mu * math.log(2) + 1e-12
    np.testing.assert_allclose(stch_weights(F, w, 1e-4), [1.0, 0.0])


# --- convergence at T = 1000 -------------------------------------------------------------------

@pytest.mark.parametrize("w", [(0.3, 0.7), (0.7, 0.3)])
def test_ls_converges_to_an_end_point(w):
    """docs/papers/003.md §3.1.6: on the concave front LS ends at (0, 1 - e^-4) or (1 - e^-4, 0)."""
    for seed in range(4):
        p = VLMOP2Problem(pref=list(w), box_eps=1e-5)
        F = p.values(solve("ls", p, 1000, seed=seed))
        assert endpoint_distance(F) < 0.005, (seed, F)
        assert min(F) < 0.005 and max(F) == pytest.approx(E4, abs=0.005)


@pytest.mark.parametrize("w1", [0.01, 0.2278, 0.5, 0.7722, 0.99])
def test_tch_reaches_the_analytic_intersection(w1):
    """T = 1000, η = 0.01: within 0.01 of f*_w (§3.1.7: TCH equalisation error < 0.01)."""
    for seed in (0, 1):
        p = VLMOP2Problem(pref=w1, box_eps=1e-5)
        x = solve("tch", p, 1000, seed=seed)
        e = p.evaluate(x)
        assert p.oracle_calls == 2000
        assert np.linalg.norm(p.values(x) - p.f_opt) < 0.01
        assert np.max(np.abs(x - p.theta_opt)) < 0.01
        assert e["eq_err"] < 0.01 and e["ray_dist"] < 0.01


def test_weighted_tch_is_slower():
    """pitfall 7: w_{i*}∇f_{i*} with the same η moves 1/w slower (here w ≈ 0.2)."""
    errs = {}
    for weighted in (False, True):
        p = VLMOP2Problem(pref=0.2)
        errs[weighted] = p.evaluate(solve("tch", p, 100, seed=0, weighted=weighted))["ray_dist"]
    assert errs[True] > 2 * errs[False]


def test_stch_near_tch_solution():
    for w1 in (0.2278, 0.5):
        p = VLMOP2Problem(pref=w1, box_eps=1e-5)
        assert p.evaluate(solve("stch", p, 1000))["ray_dist"] < 0.05


def test_bad_params():
    p = VLMOP2Problem()
    for name, params in (("ls", {"eta": 0.0}), ("tch", {"eta": -1.0}), ("stch", {"mu": 0.0})):
        with pytest.raises(DrocliError):
            solve(name, p, 1, **params)


# --- new VLMOP2 metrics and drawing helpers ------------------------------------------------------

def test_evaluate_theta_and_endpoint_dist():
    p = VLMOP2Problem(pref=0.3)
    x = np.linspace(-0.2, 0.3, 10)
    e = p.evaluate(x)
    assert not any(k.startswith("theta") for k in e)          # θ is an artifact, not a metric
    art = p.artifacts(x)
    np.testing.assert_array_equal(art["theta"], x)
    np.testing.assert_array_equal(art["front"], p.front_curve())
    assert p.evaluate(np.full(10, -p.c))["endpoint_dist"] == pytest.approx(0.0, abs=1e-12)
    assert p.evaluate(np.full(10, p.c))["endpoint_dist"] == pytest.approx(0.0, abs=1e-12)
    F = p.values(x)
    assert e["endpoint_dist"] == pytest.approx(min(np.hypot(F[0], F[1] - E4),
                                                   np.hypot(F[0] - E4, F[1])))
    assert p.oracle_calls == 0


def test_front_curve_and_feasible_boundary():
    p = VLMOP2Problem()
    P = p.front_curve(50)
    np.testing.assert_allclose(P, front_point(np.linspace(-1, 1, 50)))
    region = MplPath(p.feasible_boundary(2000))
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, (300, 10)) * rng.uniform(0, 1, (300, 1))
    pts = np.array([p.values(x) for x in xs])
    inside = region.contains_points(pts, radius=-1e-9) | region.contains_points(pts, radius=1e-9)
    assert inside.all()
    # points strictly below the front are outside
    below = front_point(np.linspace(-0.9, 0.9, 20)) * 0.9
    assert not region.contains_points(below).any()


# --- objective_space figure kind -----------------------------------------------------------------

TINY = textwrap.dedent("""\
    name: tiny_moo
    title: Tiny VLMOP2
    data: {name: moo_none}
    problem:
      name: vlmop2
      params: {dim: 10, box_eps: 1.0e-5}
      grid: {pref: [0.2, 0.5, 0.8]}
    solvers:
      - {name: ls, label: LS}
      - {name: tch, label: TCH}
    seeds: [0, 1, 2]
    budget: {epochs: 30, checkpoints: 3}
    metrics: [f1, f2, ray_dist]
    figures:
      - name: grid
        kind: objective_space
        title: "tiny: T = 30, eta = 0.01, seeds 0-2, rays along 1/w"
        caption: "LS and TCH per seed and averaged in decision space"
        rows: [LS, TCH]
        columns: [0, 2, average]
        colors: {TCH: "#333333"}
    """)




@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("moo")
    spec = root / "tiny.yaml"
    spec.write_text(TINY)
    out = root / "out"
    assert call("run", spec, "--out", out, "-j", "1", "-q") == 0
    return out


def test_objective_space_renders(tiny_run):
    assert call("plot", tiny_run) == 0
    png = tiny_run / "figures" / "grid.png"
    assert png.stat().st_size > 5000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_average_column_is_decision_space(tiny_run):
    """The average dot is f at the seed-mean final θ (closed form written here), and each
    cell's θ artifact is the point its recorded f1, f2 were measured at."""
    from drocli.figures.plots.objective_space import ObjectiveSpaceFigure, panel_points
    from drocli.results.records import read_artifacts, read_records
    from drocli.spec import load_spec

    spec = load_spec(tiny_run / "spec.yaml")
    df = read_records(tiny_run)
    fig = spec.figures[0]
    assert isinstance(fig, ObjectiveSpaceFigure)
    pts = panel_points(df, fig, {"spec": spec, "results_dir": tiny_run})
    arrays = read_artifacts(tiny_run)
    last = df[df["step"] == df.groupby("cell")["step"].transform("max")]
    c = 1 / np.sqrt(10)

    def f(theta):
        return (1 - np.exp(-np.sum((theta - c) ** 2)), 1 - np.exp(-np.sum((theta + c) ** 2)))

    for cell, g in last.groupby("cell"):
        vals = dict(zip(g["metric"], g["value"], strict=True))
        assert f(arrays[cell]["theta"]) == pytest.approx((vals["f1"], vals["f2"]), abs=1e-15)
    differs = 0.0
    for label in ("LS", "TCH"):
        avg = pts[(label, "average")]
        assert list(avg["pref"]) == [0.2, 0.5, 0.8] and set(avg["n_seeds"]) == {3}
        for _, row in avg.iterrows():
            sub = last[(last["label"] == label) & np.isclose(last["pref"], row["pref"])
                       & (last["metric"] == "f1")]
            theta = np.mean([arrays[cid]["theta"] for cid in sub["cell"]], axis=0)
            assert (row["x"], row["y"]) == pytest.approx(f(theta), abs=1e-12)
            differs = max(differs, abs(sub["value"].mean() - row["x"]))
        seed2 = pts[(label, 2)]
        s2 = last[(last["label"] == label) & (last["seed"] == 2) & (last["metric"] == "f1")]
        assert sorted(seed2["x"]) == pytest.approx(sorted(s2["value"]))
    assert differs > 1e-4, "averaging f instead of θ would give the same points"


def test_objective_space_errors(tiny_run, tmp_path):
    from drocli.figures.plots.objective_space import ObjectiveSpaceFigure, panel_points
    from drocli.results.records import read_records
    from drocli.spec import load_spec

    base = {"kind": "objective_space", "name": "f", "rows": ["LS"]}
    with pytest.raises(ValueError, match="extra"):
        ObjectiveSpaceFigure.model_validate({**base, "bogus": 1})
    with pytest.raises(ValueError, match="layout"):
        ObjectiveSpaceFigure.model_validate({**base, "columns": [0, 1], "layout": [1, 1]})
    df = read_records(tiny_run)
    fig = ObjectiveSpaceFigure.model_validate(base)
    spec = load_spec(tiny_run / "spec.yaml")
    with pytest.raises(DrocliError, match="artifacts.npz"):       # a folder without arrays
        panel_points(df, fig, {"spec": spec, "results_dir": tmp_path})


def test_objective_space_image_has_no_caption(tiny_run):
    """The caption (and the old 'Drawn from' note) is left to the report, not drawn."""
    from drocli.figures.plots.objective_space import make_objective_space
    from drocli.results.records import read_records
    from drocli.spec import load_spec

    spec = load_spec(tiny_run / "spec.yaml")
    fig = make_objective_space(read_records(tiny_run), spec.figures[0], None,
                               {"spec": spec, "results_dir": tiny_run})
    texts = [t.get_text() for t in fig.texts]
    assert any(t.startswith("tiny:") for t in texts)
    assert not any("decision space" in t or "Drawn from" in t for t in texts)
