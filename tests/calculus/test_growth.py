"""The derivative DAG is linear in the size |V| + |E| of the input DAG.

Reverse mode visits every node once and every rule adds a bounded number of
nodes, so ``size(derivative) <= C * size(expression)`` with one ``C`` for all
lengths of a chain, and the ratio does not grow with the length.  Shared
subexpressions must stay shared: an expression whose tree would be exponential
in its DAG size must have a derivative linear in the DAG size.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import check_derivative
from tests.cost import growth

SIZES = (100, 200, 400)
C = 10  # generous: the measured ratios are about 2.5-3.5
C_SECOND = 25  # second derivatives: measured about 9


def size(e: tc.Expr) -> int:
    return tc.count_nodes(e) + tc.count_edges(e)


def sin_chain(n: int) -> tc.Expr:
    e = tc.var("x", 1)
    for _ in range(n):
        e = tc.sin(e)
    return tc.einsum("i,i->", e, tc.var("y", 1))


def product_chain(n: int) -> tc.Expr:
    """y_{k+1} = y_k *(i,i->i) y_{k-1} + x: every y_k is used by two later nodes."""
    x = tc.var("x", 1)
    previous, current = x, tc.sin(x)
    for _ in range(n):
        previous, current = current, tc.einsum("i,i->i", current, previous) + x
    return tc.einsum("i,i->", current, current)


def matrix_chain(n: int) -> tc.Expr:
    """X_{k+1} = tanh(A X_k) + X_{k-1}: matrix products along a shared chain."""
    A, X = tc.var("A", 2), tc.var("X", 2)
    previous, current = X, tc.tanh(X)
    for _ in range(n):
        previous, current = current, tc.tanh(tc.einsum("ij,jk->ik", A, current)) + previous
    return tc.einsum("ij,ij->", current, current)


def _ratios(build, wrt: str, simplify: bool, second: bool = False) -> list[float]:
    ratios = []
    for n in SIZES:
        f = build(n)
        d = tc.derivative(f, wrt, simplify=simplify)
        if second:
            d = tc.derivative(d, tc.var(wrt, f.variables[wrt]), simplify=simplify)
        ratios.append(size(d) / size(f))
    return ratios


def _assert_linear(ratios: list[float], label: str, bound: float = C) -> None:
    print(f"{label}: size(derivative) / size(expression) at n = {SIZES}: {[round(r, 3) for r in ratios]}")
    assert max(ratios) <= bound, ratios
    # the ratio may wobble by a node or two but must not grow with n
    assert ratios[-1] <= ratios[0] * 1.05 + 0.05, ratios


def test_long_sin_chain_is_linear():
    for simplify in (False, True):
        _assert_linear(_ratios(sin_chain, "x", simplify), f"sin chain, simplify={simplify}")


def test_shared_product_chain_is_linear():
    for simplify in (False, True):
        _assert_linear(_ratios(product_chain, "x", simplify), f"product chain, simplify={simplify}")


def test_shared_matrix_chain_is_linear():
    for wrt in ("X", "A"):
        _assert_linear(_ratios(matrix_chain, wrt, True), f"matrix chain by {wrt}")


@pytest.mark.slow  # second derivatives of chains of 400
def test_second_derivative_of_a_scalar_chain_is_linear():
    def chain(n: int) -> tc.Expr:
        a = tc.var("a", 0)
        e = a
        for _ in range(n):
            e = tc.sin(e) * a
        return e

    _assert_linear(_ratios(chain, "a", True, second=True), "second derivative of a scalar chain", C_SECOND)


def test_thousand_nested_sines_differentiate_without_recursion_errors():
    limit = sys.getrecursionlimit()
    f = sin_chain(1000)
    d = tc.derivative(f, "x")
    assert size(d) <= C * size(f)
    assert sys.getrecursionlimit() == limit  # nobody raised it to get here
    values = {"x": np.array([0.3, -0.2]), "y": np.array([1.0, 2.0])}
    # d/dx sin^(1000)(x): the product of the cosines along the chain, entry by entry
    value = values["x"].copy()
    slope = np.ones(2)
    for _ in range(1000):
        slope *= np.cos(value)
        value = np.sin(value)
    np.testing.assert_allclose(tc.evaluate(d, values), slope * values["y"], rtol=1e-10)


# function calls per element of |V| + |E| that differentiating and simplifying the product
# chain takes: measured about 660 at 250 links; about twice that is a regression worth a look
CALLS_PER_ELEMENT = 1_200


def test_shared_product_chain_of_500_differentiates_in_linear_work():
    """Differentiate + simplify a 500-link shared chain in work linear in its size.

    Work is counted as function calls (tests/cost.py), not seconds: the count is the
    same on any machine and under any load, and a quadratic pass shows as a ratio of 4
    when the chain doubles, where linear work gives 2.
    """

    def work(n: int):
        f = product_chain(n)
        return lambda: tc.derivative(f, "x")

    # counted at 125 and 250 links (profiling makes the work several times slower)
    calls_125, calls_250, ratio = growth(work, 125)
    f = product_chain(500)
    d = tc.derivative(f, "x")
    raw = tc.derivative(f, "x", simplify=False)
    print(
        f"500-product chain: |V|+|E| = {size(f)}; derivative {size(d)} (raw {size(raw)}); "
        f"differentiate + simplify: {calls_125} calls at 125 links, {calls_250} at 250 (ratio {ratio:.2f})"
    )
    assert ratio < 2.5, f"the work grew {ratio:.2f}x for a 2x longer chain (linear: 2, quadratic: 4)"
    half = product_chain(250)
    assert calls_250 < CALLS_PER_ELEMENT * size(half), calls_250 / size(half)
    assert size(d) <= C * size(f)


def _nodes_created_by_derivative(f) -> int:
    """Work of differentiating ``f``, measured without a clock: how many new nodes the
    interning factory creates (every rule application that builds something counts)."""
    before = tc.var("probe_before", 0).serial
    tc.derivative(f, "x")
    return tc.var("probe_after", 0).serial - before


def test_differentiation_work_grows_linearly():
    """Eight times the chain must cost about eight times the work, not sixty-four.

    Work is counted as nodes created (a cost model, deterministic on any machine),
    not as seconds: a timing ratio on a shared machine is noise.
    """
    small, large = product_chain(125), product_chain(1000)
    w_small, w_large = _nodes_created_by_derivative(small), _nodes_created_by_derivative(large)
    ratio = w_large / w_small
    print(f"product chain: 125 links {w_small} nodes created, 1000 links {w_large}, ratio {ratio:.1f} (linear: 8)")
    assert ratio < 12, f"differentiation work grew {ratio:.1f}x for an 8x larger DAG (quadratic would be 64x)"


def test_chain_derivative_is_correct():
    """The linear-size derivative of a shared chain is also the right one."""
    f = product_chain(6)
    report = check_derivative(f, "x", values={"x": np.array([0.3, -0.4, 0.2])})
    assert report.ok, report.message
    report = check_derivative(f, "x", order=2, values={"x": np.array([0.3, -0.4, 0.2])})
    assert report.ok, report.message
