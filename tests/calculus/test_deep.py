"""Deep and wide expressions: no RecursionError anywhere, and work linear in the size.

The work is counted as function calls (tests/cost.py), not seconds: the full-size
tests check values and the absence of recursion errors; ``test_work_grows_linearly``
doubles each kind of input and checks that the count of calls at most about doubles,
which catches quadratic or exponential behaviour on any machine under any load.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core import nodes as N
from tests.cost import growth

DEPTH = 2_000
WIDTH = 10_000


def cycle(text: str, orders: dict, values: dict):
    """parse + infer orders + evaluate + print + re-parse."""
    e = tc.parse(text, orders)
    result = tc.evaluate(e, values)
    printed = str(e)
    again = tc.parse(printed, orders)
    repr(e)
    return e, result, printed, again


def full_cycle(text: str, orders: dict, values: dict):
    """:func:`cycle`, checking that it leaves the recursion limit alone and re-parses to the same node."""
    limit = sys.getrecursionlimit()
    e, result, printed, again = cycle(text, orders, values)
    assert sys.getrecursionlimit() == limit  # the parser restores the limit
    assert again is e
    return e, result, printed


@pytest.mark.slow  # 10,000 terms; test_work_grows_linearly checks the growth by default
def test_wide_sum_of_distinct_terms():
    text = " + ".join(f"{k} *(,i->i) x" for k in range(WIDTH))
    x = np.array([1.0, -2.0, 0.5])
    e, result, printed = full_cycle(text, {"x": 1}, {"x": x})
    assert e.op == "add" and len(e.children) == WIDTH and e.order == 1
    np.testing.assert_allclose(result, sum(range(WIDTH)) * x)
    assert printed.count("+") == WIDTH - 1


@pytest.mark.slow  # 10,000 terms; test_work_grows_linearly checks the growth by default
def test_wide_sum_with_constants_and_subtractions():
    # every constant takes the order of x from its sum
    text = "x" + "".join(f" - {k} + sin(x) *(i,->i) {k % 7}" for k in range(WIDTH // 2))
    x = np.array([0.3, -1.1, 2.0, 0.7])
    e, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    assert len(e.children) == WIDTH + 1
    assert all(child.order == 1 for child in e.children)
    expected = x - sum(range(WIDTH // 2)) + np.sin(x) * sum(k % 7 for k in range(WIDTH // 2))
    np.testing.assert_allclose(result, expected)


def test_deeply_nested_functions():
    text = "sin(" * DEPTH + "x" + ")" * DEPTH
    x = np.array([0.5, -1.0, 2.0])
    e, result, printed = full_cycle(text, {"x": 1}, {"x": x})
    assert printed == text
    assert tc.count_nodes(e) == DEPTH + 1
    expected = x.copy()
    for _ in range(DEPTH):
        expected = np.sin(expected)
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_deeply_nested_mixed_functions_with_constants():
    # log(exp(...)) keeps the value; the inner 1 is a vector because of `+ x`
    text = "log(exp(" * (DEPTH // 2) + "x + 1" + "))" * (DEPTH // 2)
    x = np.array([0.25, 1.5])
    e, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, x + 1, rtol=1e-9)


def test_deeply_nested_parentheses_and_negations():
    for text, expected_sign in (
        ("(" * DEPTH + "x" + ")" * DEPTH, 1),
        ("-(" * DEPTH + "x" + ")" * DEPTH, 1),  # an even number of negations
        ("-(" * (DEPTH + 1) + "x" + ")" * (DEPTH + 1), -1),
        ("-" * DEPTH + "x", 1),
    ):
        e, result, _ = full_cycle(text, {"x": 1}, {"x": np.array([1.0, 2.0])})
        np.testing.assert_allclose(result, expected_sign * np.array([1.0, 2.0]))
        assert e is (N.var("x", 1) if expected_sign == 1 else N.neg(N.var("x", 1)))


def test_deeply_right_nested_sums():
    text = "x + (" * DEPTH + "x" + ")" * DEPTH
    x = np.array([1.0, 3.0])
    e, result, printed = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, (DEPTH + 1) * x)
    assert tc.count_nodes(e) == DEPTH + 1


def test_deeply_right_nested_products():
    text = "x *(i,i->i) (" * DEPTH + "x" + ")" * DEPTH
    x = np.array([1.0, -1.0, 1.0001])
    e, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, x ** (DEPTH + 1), rtol=1e-9)


@pytest.mark.slow  # 10,000 terms; test_work_grows_linearly checks the growth by default
def test_long_left_associative_chains():
    x = np.array([1.0, -1.0, 0.9999])
    text = "x" + " *(i,i->i) x" * WIDTH
    e, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, x ** (WIDTH + 1), rtol=1e-9)
    text = "x" + " / x" * WIDTH
    _, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, x ** (1 - WIDTH), rtol=1e-9)
    text = "x" + "^1" * DEPTH
    _, result, _ = full_cycle(text, {"x": 1}, {"x": x})
    np.testing.assert_allclose(result, x)


def test_deep_matrix_chain():
    # A^(2000) for a rotation matrix stays bounded
    theta = 0.001
    R = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    text = "R" + " *(ij,jk->ik) R" * (DEPTH - 1)
    _, result, _ = full_cycle(text, {"R": 2}, {"R": R})
    t = theta * DEPTH
    np.testing.assert_allclose(result, [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], atol=1e-9)


def builder_cycle(depth: int, width: int):
    """Build a ``depth``-deep nesting and a ``width``-wide sum with the builder; evaluate and print them."""
    x = tc.var("x", 1)
    e = x
    for _ in range(depth):
        e = tc.sin(e)
    assert e is tc.parse(str(e), {"x": 1})
    value = tc.evaluate(e, {"x": np.array([0.5])})
    s = x
    for k in range(1, width):
        s = s + k * x
    total = tc.evaluate(s, {"x": np.array([1.0, 2.0])})
    str(s)
    return value, total


@pytest.mark.slow  # 10,000 terms; test_work_grows_linearly checks the growth by default
def test_deep_builder_expressions():
    value, total = builder_cycle(DEPTH, WIDTH)
    expected = 0.5
    for _ in range(DEPTH):
        expected = np.sin(expected)
    np.testing.assert_allclose(value, [expected])
    np.testing.assert_allclose(total, (1 + sum(range(1, WIDTH))) * np.array([1.0, 2.0]))


def test_errors_deep_inside_report_the_position():
    text = "sin(" * DEPTH + "z" + ")" * DEPTH
    with pytest.raises(tc.SemanticError) as info:
        tc.parse(text, {"x": 1}, letter_rule=False)
    assert info.value.reason.startswith("variable 'z' is not declared")
    assert info.value.position == 4 * DEPTH
    text = "sin(" * DEPTH + "x" + ")" * (DEPTH - 1)
    with pytest.raises(tc.ParseError) as info:
        tc.parse(text, {"x": 1})
    assert info.value.position == len(text)
    text = "(" * DEPTH + "x + A" + ")" * DEPTH
    with pytest.raises(tc.SemanticError) as info:
        tc.parse(text, {"x": 1, "A": 2})
    assert info.value.position == DEPTH + 4


def doubling_dag(n: int) -> tc.Expr:
    """2^n paths, 2n + 1 nodes."""
    x = tc.var("x", 1)
    e = x
    for _ in range(n):
        e = tc.tanh(e) + e
    return e


def walk_shared_dag(e: tc.Expr):
    """Count, evaluate, list the variables and repr: everything must visit each node once."""
    tc.count_nodes(e)
    value = tc.evaluate(e, {"x": np.array([0.1, -0.2])})
    assert e.variables == {"x": 1}
    repr(e)  # must not try to print 2^200 copies
    return value


def test_shared_dag_with_exponentially_many_paths():
    # 2^200 paths, 401 nodes: everything that walks the DAG must visit each node once
    e = doubling_dag(200)
    assert tc.count_nodes(e) == 1 + 2 * 200
    value = walk_shared_dag(e)
    expected = np.array([0.1, -0.2])
    for _ in range(200):
        expected = np.tanh(expected) + expected
    np.testing.assert_allclose(value, expected)
    with pytest.raises(tc.TensCalcError, match="too large to print"):
        str(e)


# ------------------------------------------------------------------ work, not seconds
# Each kind of input above at two sizes, n and 2n (smaller than above: the count of
# calls is exact, and profiling slows the work down): the calls must grow about 2x.
X2 = {"x": np.array([0.3, -0.4])}
R2 = {"R": np.array([[0.6, -0.8], [0.8, 0.6]])}


def _cycled(text: str, orders: dict, values: dict):
    return lambda: cycle(text, orders, values)


GROWING = {
    "wide sum": lambda n: _cycled(" + ".join(f"{k} *(,i->i) x" for k in range(4 * n)), {"x": 1}, X2),
    "wide sum with constants": lambda n: _cycled(
        "x" + "".join(f" - {k} + sin(x) *(i,->i) {k % 7}" for k in range(2 * n)), {"x": 1}, X2
    ),
    "nested functions": lambda n: _cycled("sin(" * n + "x" + ")" * n, {"x": 1}, X2),
    "nested log(exp())": lambda n: _cycled("log(exp(" * n + "x + 1" + "))" * n, {"x": 1}, X2),
    "nested negations": lambda n: _cycled("-(" * n + "x" + ")" * n, {"x": 1}, X2),
    "right nested sums": lambda n: _cycled("x + (" * n + "x" + ")" * n, {"x": 1}, X2),
    "right nested products": lambda n: _cycled("x *(i,i->i) (" * n + "x" + ")" * n, {"x": 1}, X2),
    "left products": lambda n: _cycled("x" + " *(i,i->i) x" * (4 * n), {"x": 1}, X2),
    "left quotients": lambda n: _cycled("x" + " / x" * (4 * n), {"x": 1}, X2),
    "powers": lambda n: _cycled("x" + "^1" * n, {"x": 1}, X2),
    "matrix chain": lambda n: _cycled("R" + " *(ij,jk->ik) R" * n, {"R": 2}, R2),
    "builder": lambda n: lambda: builder_cycle(n, 4 * n),
    "shared DAG": lambda n: (lambda e: lambda: walk_shared_dag(e))(doubling_dag(n)),
}


@pytest.mark.parametrize("kind", list(GROWING))
def test_work_grows_linearly(kind):
    small, large, ratio = growth(GROWING[kind], 100)
    print(f"{kind}: {small} calls at n = 100, {large} at n = 200, ratio {ratio:.2f}")
    # linear work doubles (2), quadratic work quadruples (4); fixed costs pull the ratio below 2
    assert ratio < 2.5, f"{kind}: the work grew {ratio:.2f}x when the input doubled"
