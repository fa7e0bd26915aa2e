"""The convexity check scales: O(n·k) memory in the numeric search, nesting no longer cubic.

Timings on a shared machine are noise, so the bounds here are on memory (deterministic)
and on work counted as function calls (tests/cost.py): the old code took 193 s and
4.1 GB at n = 10,000, and its nesting cost grew with the cube of the depth.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.convexity.falsify import Falsifier
from tests.cost import growth


@pytest.mark.slow  # a check at n = 10,000
def test_full_check_at_n_10000_stays_small():
    n = 10_000
    b = np.random.default_rng(0).standard_normal(n)
    f = tc.parse("log(exp(x + b) *(i,->) 1)", {"x": 1, "b": 1})
    tracemalloc.start()
    try:
        result = tc.check_convexity(f, "x", values={"b": b})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.verdict == "convex"
    assert "Lanczos" in result.search.method
    assert result.concave_counterexample is not None  # refuted at size n
    assert result.concave_counterexample.point["x"].shape == (n,)
    # a dense n x n basis alone would be 800 MB; the search keeps ~30 vectors of n
    assert peak < 100e6, f"peak {peak / 1e6:.0f} MB"


def test_lanczos_respects_symmetric_directions_without_a_basis():
    """The projection replaces the dense basis: directions stay symmetric, curvature matches."""
    f = tc.parse("X *(ij,ji->) X", {"X": 2})
    from tenscalc.convexity.assumptions import normalize_assumptions

    assumed = normalize_assumptions({"X": "symmetric"}, {"X": 2})
    falsifier = Falsifier(f, ["X"], assumed, [], values=None, dense_limit=0)
    values = falsifier.sample(1.0)
    lam, v = falsifier.extreme_curvature(values, 1)
    m = v.reshape(falsifier.shapes["X"])
    assert np.allclose(m, m.T)
    # on symmetric directions tr(V²) = ‖V‖²: the Hessian is 2 I there
    assert abs(lam - 2.0) < 1e-8


def test_nested_depth_is_no_longer_cubic():
    def check(depth: int):
        text = "x"
        for _ in range(depth):
            text = f"sin({text})"
        f = tc.parse(text, {"x": 0})

        def work():
            result = tc.check_convexity(f, "x")
            assert result.verdict == "neither"

        return work

    small, large, ratio = growth(check, 20)
    print(f"nested sines: {small} calls at depth 20, {large} at depth 40, ratio {ratio:.2f}")
    # the old code took 87 s at depth 80: cubic growth in the polynomial expansion, a ratio
    # of 8 per doubling (quadratic: 4); now about 1.8 (fixed costs) to 2.4 (depth 40 to 80)
    assert ratio < 3.5, f"the work grew {ratio:.2f}x when the nesting doubled"
