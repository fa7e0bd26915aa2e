"""Compile time linear in the size of the DAG (issue #13, item 8).

Counted, not timed: the plan builder's letter work (every ``find`` and
``union`` on letter classes) must grow at most ~2.3x when the expression doubles.
Before, ``PlanBuilder._resolve`` walked every letter created so far for each
product, which made compiling a 10,000-deep nesting take minutes.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core.letters import LetterClasses
from tenscalc.frontend import builder as B

GROWTH = 2.3


def wide_sum(n: int):
    """sum_k (k+1) sin((k+1) x): n products, n functions, one sum."""
    x = B.var("x", 1)
    e = B.multiply(1.0, x)
    for k in range(1, n):
        e = B.add(e, B.multiply(float(k + 1), B.sin(B.multiply(float(k + 1), x))))
    return e


def deep_gradient(n: int):
    """The gradient of sum_i sin(sin(...sin(x_i))), n deep: a chain of n elementwise products."""
    x = B.var("x", 1)
    e = x
    for _ in range(n):
        e = B.sin(e)
    return tc.gradient(B.einsum("i,i->", e, B.constant(1.0, 1)), "x")


def letter_work(expr, monkeypatch) -> int:
    calls = [0]
    find, union = LetterClasses.find, LetterClasses.union

    def counting_find(self, a):
        calls[0] += 1
        return find(self, a)

    def counting_union(self, a, b):
        calls[0] += 1
        return union(self, a, b)

    with monkeypatch.context() as patch:
        patch.setattr(LetterClasses, "find", counting_find)
        patch.setattr(LetterClasses, "union", counting_union)
        tc.compile(expr)
    return calls[0]


@pytest.mark.parametrize("build, n", [(wide_sum, 400), (deep_gradient, 300)])
def test_plan_work_grows_linearly(build, n, monkeypatch):
    small = letter_work(build(n), monkeypatch)
    large = letter_work(build(2 * n), monkeypatch)
    assert small > n  # the count measures something
    assert large <= GROWTH * small, (small, large)


def test_wide_sum_compiles_and_agrees():
    e = wide_sum(300)
    x = np.array([0.3, -1.2, 2.0])
    expected = x + sum((k + 1) * np.sin((k + 1) * x) for k in range(1, 300))
    np.testing.assert_allclose(tc.compile(e)(x=x), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tc.evaluate(e, {"x": x}), expected, rtol=1e-10, atol=1e-10)


def test_deep_gradient_compiles_and_agrees():
    depth = 1000
    g = deep_gradient(depth)
    x = np.array([0.7, -0.2, 1.3])
    # chain rule by hand: d/dx sin^n(x) = prod_k cos(sin^k(x))
    value, expected = x.copy(), np.ones_like(x)
    for _ in range(depth):
        expected *= np.cos(value)
        value = np.sin(value)
    np.testing.assert_allclose(tc.compile(g)(x=x), expected, rtol=1e-10)
    np.testing.assert_allclose(tc.evaluate(g, {"x": x}), expected, rtol=1e-10)
