"""Group-sequential verdicts: a claim judged at the looks of a plan, seeds added between
looks, with each side's error spent over the looks so that looking after every batch
keeps it.

A spec's `sequential: {looks: [10, 20, 40], pool: "1000-1999"}` fixes, before any run, the
seed counts at which claims are judged: the spec's `seeds` first, then the pool's seeds in
order. At look j (n_j seeds, information fraction t_j = n_j / n_K) each side of each
comparison (HOLDS at the claim's one-sided level alpha, a refutation at its Bonferroni
level alpha / k) may decide only if

- the t-interval clears its threshold at the look's *nominal* level: the level at which a
  boundary on the standardized mean, crossed for the first time at look j, has probability
  alpha(t_j) - alpha(t_{j-1}) under the null, with the Hwang-Shih-DeCani spending function
  alpha(t) = alpha (1 - exp(-gamma t)) / (1 - exp(-gamma)), gamma = GAMMA (between Pocock's
  even spending and O'Brien-Fleming's late spending: little is spent at the first look,
  which then decides only clear effects). The boundaries come from the joint normal law of
  the standardized means at the looks (Armitage, McPherson and Rowe's recursion on a grid);
  and
- the exact sign-flip test of the same mean rejects at the look's *increment*
  alpha(t_j) - alpha(t_{j-1}). Summed over the looks the increments are alpha, so under any
  null law symmetric about the threshold, however lumpy (two basins, 0/1 outcomes, a level
  reached or never), the probability of a false verdict at some look is at most alpha, by
  the union bound, whatever the t-interval does; under continuous nulls the t-boundaries
  alone keep it.

The claim's verdict is the first look's that decides; a claim undecided at the last look
is INCONCLUSIVE with its interval there. Without a plan, one look at the claim's level.
`tests/test_sequential.py` checks the rates by simulation, looking at every look.
"""

from __future__ import annotations

import contextvars
import functools
import math
from contextlib import contextmanager
from dataclasses import dataclass

GAMMA = -2.0
GRID = 1201                   # points of the continuation region in the recursion
_LOOK: contextvars.ContextVar = contextvars.ContextVar("drocli_look", default=None)


@dataclass(frozen=True)
class Side:
    """One side's levels at the current look: the t-interval's one-sided `nominal` level,
    the sign-flip test's `guard` level and the look (1-based; None without a plan)."""

    nominal: float
    guard: float
    look: int | None = None


def spent(t: float, alpha: float, gamma: float = GAMMA) -> float:
    """The error spent by information fraction t (Hwang-Shih-DeCani)."""
    if t >= 1.0:
        return alpha
    return alpha * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))


def _ncdf(z):
    from scipy.special import ndtr

    return ndtr(z)


@functools.lru_cache(maxsize=512)
def nominal_levels(fractions: tuple[float, ...], alpha: float,
                   gamma: float = GAMMA) -> tuple[float, ...]:
    """The one-sided nominal level of each look's boundary, such that the first crossing
    at look j has null probability spent(t_j) - spent(t_{j-1}) (one-sided design): read
    from `plan_table` for the paper specs' plans, else computed."""
    if gamma == GAMMA:
        from drocli.claims.plan_table import nominal

        found = nominal(fractions, alpha)
        if found is not None:
            return found
    return computed_nominal_levels(fractions, alpha, gamma)


def computed_nominal_levels(fractions: tuple[float, ...], alpha: float,
                            gamma: float = GAMMA) -> tuple[float, ...]:
    """`nominal_levels` computed afresh (no table): Armitage, McPherson and Rowe's
    recursion on a grid, each boundary found by a root search."""
    import numpy as np
    from scipy.optimize import brentq
    from scipy.special import ndtri

    out = []
    density = xs = w = None
    prev_t, prev_spent = 0.0, 0.0
    for j, t in enumerate(fractions):
        inc = spent(t, alpha, gamma) - prev_spent
        if j == 0:
            z = float(ndtri(1.0 - inc)) if inc > 0 else math.inf
            c = z * math.sqrt(t)                # the boundary on the Brownian scale
            out.append(inc)
        else:
            dt = t - prev_t
            sd = math.sqrt(dt)

            def cross(c, xs=xs, w=w, density=density, sd=sd):
                return float(np.sum(w * density * (1.0 - _ncdf((c - xs) / sd))))

            if inc <= 0:
                c = math.inf
            else:
                lo, hi = -12.0, 12.0 * math.sqrt(t) + 12.0
                c = brentq(lambda c, inc=inc: cross(c) - inc, lo, hi, xtol=1e-10)
            out.append(float(1.0 - _ncdf(c / math.sqrt(t))) if math.isfinite(c) else 0.0)
        # the sub-density of B(t) on the continuation region B(t) < c
        top = c if math.isfinite(c) else 10.0 * math.sqrt(t) + 10.0
        new_xs = np.linspace(-10.0 * math.sqrt(t) - 2.0, top, GRID)
        new_w = np.full(GRID, new_xs[1] - new_xs[0])
        new_w[[0, -1]] *= 0.5
        if j == 0:
            new_density = np.exp(-0.5 * new_xs ** 2 / t) / math.sqrt(2 * math.pi * t)
        else:
            sd = math.sqrt(t - prev_t)
            kern = np.exp(-0.5 * ((new_xs[:, None] - xs[None, :]) / sd) ** 2) / (
                sd * math.sqrt(2 * math.pi))
            new_density = kern @ (w * density)
        xs, w, density = new_xs, new_w, new_density
        prev_t, prev_spent = t, spent(t, alpha, gamma)
    return tuple(out)


def levels(alpha: float) -> Side:
    """The levels of a side whose overall one-sided error is `alpha`, at the current look
    (set by `at_look`); without a plan, one look at `alpha`."""
    ctx = _LOOK.get()
    if ctx is None:
        return Side(alpha, alpha)
    fractions, j = ctx
    nominal = nominal_levels(fractions, alpha)[j]
    before = spent(fractions[j - 1], alpha) if j else 0.0
    return Side(nominal, spent(fractions[j], alpha) - before, j + 1)


def last_look(alphas: tuple[float, ...]) -> tuple[float, ...] | None:
    """The nominal one-sided levels of the current plan's last look for these overall
    errors (what its final verdict is judged at); None outside a plan."""
    ctx = _LOOK.get()
    if ctx is None:
        return None
    fractions, _ = ctx
    return tuple(nominal_levels(fractions, a)[-1] for a in alphas)


@contextmanager
def at_look(looks: list[int] | tuple[int, ...], j: int):
    """Judge at look j (0-based) of a plan with these seed counts."""
    fractions = tuple(n / looks[-1] for n in looks)
    token = _LOOK.set((fractions, j))
    try:
        yield
    finally:
        _LOOK.reset(token)
