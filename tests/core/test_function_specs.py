"""Adding an elementwise function is adding one spec (tenscalc/core/functions.py).

A test-only function, ``expm1`` (e^x - 1), is registered here and nothing else is
touched: it must parse, differentiate, simplify, evaluate, compile (the NumPy
program, its fused call, the float runner), write itself as Python source, expand
exactly in SymPy, print in LaTeX and be bounded by the convexity checker.  Values
are compared with NumPy's ``expm1`` and with finite differences, at distinct lengths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core import nodes as N
from tenscalc.core.functions import FUNCTIONS, FunctionSpec, register
from tenscalc.core.vocabulary import ELEMENTWISE_FUNCTIONS

EXPM1 = FunctionSpec(
    "expm1",
    np.expm1,
    math.expm1,
    lambda x, fx: N.func("exp", x),
    lambda sp, v: sp.exp(v) - 1,
    r"\operatorname{expm1}",
    "_np.expm1({})",
    "_m.expm1({})",
    float_guard=True,
    array_name="expm1",
    monotone="increasing",
    image=(-1.0, math.inf),
)


@pytest.fixture(scope="module")
def expm1():
    """``expm1`` registered for this module's tests, and gone again after them (module
    scope: the suite's autouse check re-parses every derivative a test made, after it)."""
    register(EXPM1)
    try:
        yield EXPM1
    finally:
        del FUNCTIONS["expm1"]
        ELEMENTWISE_FUNCTIONS.remove("expm1")
    with pytest.raises(tc.TensCalcError, match="unknown function 'expm1'"):
        tc.parse("expm1(x)", {"x": 1})


def test_a_new_function_flows_through_every_stage(expm1):
    rng = np.random.default_rng(0)
    x = rng.normal(size=3)
    A = rng.normal(size=(2, 3))
    f = tc.parse("expm1(A *(ij,j->i) x) *(i,i->) expm1(A *(ij,j->i) x)", {"A": 2, "x": 1})
    u = A @ x
    assert float(tc.evaluate(f, A=A, x=x)) == pytest.approx(np.expm1(u) @ np.expm1(u), rel=1e-14)

    g = tc.gradient(f, "x")
    expected = 2 * A.T @ (np.expm1(u) * np.exp(u))
    np.testing.assert_allclose(tc.evaluate(g, A=A, x=x), expected, rtol=1e-13)
    step = 1e-6
    fd = [
        (float(tc.evaluate(f, A=A, x=x + step * e)) - float(tc.evaluate(f, A=A, x=x - step * e))) / (2 * step)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(tc.evaluate(g, A=A, x=x), fd, rtol=1e-6)

    run = tc.compile([f, g])
    for _ in range(2):  # the first call, then the fused one
        value, grad = run(A=A, x=x)
        assert float(value) == pytest.approx(np.expm1(u) @ np.expm1(u), rel=1e-14)
        np.testing.assert_allclose(grad, expected, rtol=1e-13)

    source = tc.to_python(g, shapes={"A": (2, 3), "x": (3,)})
    assert "_np.expm1" in source
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    np.testing.assert_allclose(namespace["f"](A=A, x=x), expected, rtol=1e-13)

    assert r"\operatorname{expm1}" in tc.latex(f)
    assert str(tc.parse(str(g), {"A": 2, "x": 1})) == str(g)  # prints and re-parses


def test_a_new_function_runs_on_floats_and_in_sympy(expm1):
    s = tc.parse("expm1(a) *(,->) b", {"a": 0, "b": 0})
    run = tc.compile([s, tc.derivative(s, "a")])
    for _ in range(2):
        value, da = run(a=0.5, b=3.0)
        assert float(value) == pytest.approx(3 * math.expm1(0.5), rel=1e-15)
        assert float(da) == pytest.approx(3 * math.exp(0.5), rel=1e-15)

    import sympy

    from tenscalc import oracle

    symbols = oracle.symbol_arrays({"a": (), "b": ()})
    exact_f = oracle.expand(s, symbols)[()]
    exact_d = oracle.expand(tc.derivative(s, "a"), symbols)[()]
    assert sympy.simplify(exact_f.diff(symbols["a"][()]) - exact_d) == 0


def test_the_convexity_checker_bounds_a_new_function(expm1):
    from tenscalc.convexity.facts import Interval
    from tenscalc.convexity.intervals import FUNCTION_RANGES

    bound = FUNCTION_RANGES["expm1"](Interval.closed(0, 1))
    assert bound.lo == 0 and bound.hi == pytest.approx(math.e - 1)
    assert FUNCTION_RANGES["expm1"](Interval.closed(0, 1e6)).hi == math.inf  # overflow: the limit
    # e^x - 1 is convex: its Hessian exp(x) is positive, a fact the checker reads off the spec's derivative
    result = tc.check_convexity(tc.parse("expm1(x) *(i,i->) 1", {"x": 1}), "x")
    assert result.verdict == "convex"
    concave = tc.check_convexity(tc.parse("-(expm1(x) *(i,i->) 1)", {"x": 1}), "x")
    assert concave.verdict == "concave"
