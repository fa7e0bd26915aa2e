"""Exact agreement with the SymPy oracle at rational points (no tolerance).

Every entry of the expression is expanded into SymPy, differentiated there, and
compared with tenscalc's symbolic derivative expanded at the same rational point.
Axis lengths are 2 and 3 (distinct wherever the expression allows) to stay fast.
First derivatives: ``exact_mismatches(f, x, point, tc.derivative(f, x))``;
second: ``exact_mismatches(tc.derivative(f, x), x, point, tc.hessian(f, x))``.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import tenscalc as tc
from tenscalc.oracle import exact_mismatches, expand, symbol_arrays
from tenscalc.testing import axis_lengths

R = sympy.Rational

ORDERS = {"a": 0, "b": 0, "x": 1, "y": 1, "v": 1, "A": 2, "B": 2, "C": 2, "T": 3, "Q": 4}

# numerators/denominators chosen so every entry is a distinct, non-integer rational
_NUMERATORS = [3, -5, 7, 2, -1, 4, 9, -7, 5, -3, 1, 8]


def rational_point(shapes: dict, positive: bool = False, boost_square: bool = False) -> dict:
    point = {}
    counter = 0
    for name in sorted(shapes):
        shape = shapes[name]
        array = np.empty(shape, dtype=object)
        for index in np.ndindex(*shape):
            numerator = _NUMERATORS[counter % len(_NUMERATORS)]
            denominator = 2 + counter % 5
            counter += 1
            value = R(abs(numerator) if positive else numerator, denominator)
            if positive:
                value = value / 10  # keeps arcsin/arccos/log arguments inside (0, 1)
            array[index] = value
        if boost_square and len(shape) == 2 and shape[0] == shape[1]:
            for i in range(shape[0]):
                array[i, i] += 3  # well away from singular
        point[name] = array if shape else array[()]
    return point


def small_shapes(expr: tc.Expr) -> dict:
    """Independent axes alternate between lengths 2 and 3 (2, 3, 2, ... by class)."""
    return {name: tuple(2 + (n - 2) % 2 for n in shape) for name, shape in axis_lengths(expr).items()}


def check_exact(text: str, wrt: str, positive: bool = False, second: bool = True, simplify: bool = True) -> None:
    f = tc.parse(text, ORDERS)
    point = rational_point(small_shapes(f), positive=positive, boost_square=True)
    first = tc.derivative(f, wrt, simplify=simplify)
    mismatches = exact_mismatches(f, wrt, point, first)
    assert mismatches == [], f"first derivative of {text} by {wrt}: {mismatches[:3]}"
    if second:
        x = tc.var(wrt, ORDERS[wrt])
        hessian = tc.hessian(f, wrt) if simplify else tc.derivative(first, x, simplify=False)
        mismatches = exact_mismatches(first, wrt, point, hessian)
        assert mismatches == [], f"second derivative of {text} by {wrt}: {mismatches[:3]}"


# -------------------------------------------------------------------------- products

PRODUCTS = [
    ("x *(i,i->) v", "x"),  # inner
    ("x *(i,i->) x", "x"),
    ("x *(i,j->ij) y", "x"),  # outer
    ("x *(i,j->ij) x", "x"),
    ("A *(ij,j->i) x", "A"),  # matrix-vector
    ("A *(ij,j->i) x", "x"),
    ("y *(i,ij->j) A", "A"),
    ("A *(ik,kj->ij) B", "A"),  # matrix-matrix
    ("A *(ik,kj->ij) B", "B"),
    ("A *(ik,jk->ij) A", "A"),
    ("A *(ij,ij->ij) C", "A"),  # elementwise
    ("A *(ij,ij->ij) A", "A"),
    ("x *(i,i->i) v", "v"),
    ("A *(ij,->ji) 1", "A"),  # transpose
    ("A *(ij,j->) x", "A"),  # the missing-index case
    ("A *(ij,->) 1", "A"),
    ("A *(ij,->i) 1", "A"),
    ("A *(ij,k->ik) v", "v"),
    ("a *(,ij->ij) A", "a"),
    ("a *(,ij->ij) A", "A"),
    ("T *(ijk,j->ik) x", "T"),  # order 3
    ("T *(ijk,j->ik) x", "x"),
    ("T *(ijk,ijk->) T", "T"),
    ("T *(ijk,->kji) 1", "T"),
    ("Q *(ijkl,kl->ij) C", "C"),  # order 4
    ("Q *(ijkl,ijkl->) Q", "Q"),
    ("x *(i,ij->j) A *(j,j->) x", "x"),  # a chain
    ("x *(i,j->ij) y *(ij,ji->) B", "x"),
]

DIAGONALS = [
    ("A *(ii,->) 1", "A"),  # trace
    ("A *(ii,->i) 1", "A"),
    ("A *(ii,i->i) x", "A"),
    ("x *(i,->ii) 1", "x"),  # diagonal embedding
    ("x *(i,->ii) 1 *(ij,jk->ik) A", "x"),
    ("T *(iij,j->) x", "T"),
    ("Q *(ijji,->) 1", "Q"),
    ("x *(i,ij->j) A *(j,j->) x", "A"),
]


@pytest.mark.parametrize("text, wrt", PRODUCTS + DIAGONALS)
def test_products_exact(text, wrt):
    check_exact(text, wrt)


# -------------------------------------------------------------------------- sums, constants, deltas


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("x - v", "x"),
        ("x + x - v", "x"),
        ("-(x *(i,i->) v)", "v"),
        ("(x + 1) *(i,i->) (x + 2)", "x"),
        ("(A + 1) *(ij,j->i) 1", "A"),
        ("3 *(,ij->ij) A *(ij,j->i) x", "A"),
        ("0.5 *(,i->i) x *(i,i->) x", "x"),
        ("delta(1) *(ij,j->i) y *(i,i->) y", "y"),
        ("delta(2) *(ijkl,kl->ij) A *(ij,ij->) A", "A"),
        ("delta(0) *(,i->i) x *(i,i->) x", "x"),
    ],
)
def test_sums_constants_deltas_exact(text, wrt):
    check_exact(text, wrt)


def test_delta_between_square_axes_exact():
    check_exact("delta(1) *(ij,jk->ik) A *(ij,ij->) A", "A")


def test_shapes_alternate_two_and_three():
    f = tc.parse("A *(ik,kj->ij) B", ORDERS)
    assert small_shapes(f) == {"A": (2, 3), "B": (3, 2)}


# -------------------------------------------------------------------------- functions


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "arctan", "tanh", "exp"])
def test_smooth_functions_exact(name):
    check_exact(f"{name}(x) *(i,i->) v", "x")
    check_exact(f"{name}(A *(ij,j->i) x) *(i,i->) y", "x")


@pytest.mark.parametrize("name", ["arcsin", "arccos", "log"])
def test_functions_on_zero_to_one_exact(name):
    check_exact(f"{name}(x) *(i,i->) v", "x", positive=True)
    check_exact(f"{name}(A *(ij,->i) 1) *(i,i->) y", "A", positive=True)


@pytest.mark.parametrize("name", ["abs", "sign", "relu"])
def test_kinked_functions_exact_away_from_zero(name):
    # the rational point has entries of both signs, none zero
    check_exact(f"{name}(x) *(i,i->) v", "x")
    check_exact(f"{name}(A *(ij,j->i) x) *(i,i->) y", "x")


# -------------------------------------------------------------------------- powers


@pytest.mark.parametrize(
    "text, wrt, positive",
    [
        ("x^2 *(i,i->) v", "x", False),  # negative entries included
        ("x^3 *(i,i->) v", "x", False),
        ("x^(-1) *(i,i->) v", "x", False),
        ("x^(-2) *(i,i->) v", "x", False),
        ("x^0.5 *(i,i->) v", "x", True),
        ("x^a *(i,i->) v", "a", True),
        ("x^a *(i,i->) v", "x", True),
        ("a^b", "a", True),
        ("a^b", "b", True),
        ("a^a", "a", True),  # x^x
        ("x / v *(i,i->) 1", "v", False),
        ("1 / (x *(i,i->) x + 1)", "x", False),
    ],
)
def test_powers_exact(text, wrt, positive):
    check_exact(text, wrt, positive=positive)


def test_constant_base_power_exact():
    # the simplifier folds log(2) into a double, so compare the raw derivatives exactly
    check_exact("2^a", "a", simplify=False)
    check_exact("2^a *(,i->i) x", "x", simplify=False)


# -------------------------------------------------------------------------- matrix functions


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("inv(A)", "A"),
        ("inv(A) *(ij,j->i) x", "A"),
        ("inv(A) *(ij,ij->) B", "A"),
        ("det(A)", "A"),
        ("log(det(A))", "A"),
        ("det(A) *(,ij->ij) inv(A)", "A"),
        ("adj(A)", "A"),
        ("adj(A) *(ij,j->i) x", "A"),
        ("det(A *(ik,kj->ij) B)", "A"),
    ],
)
def test_matrix_functions_exact(text, wrt):
    check_exact(text, wrt)


# -------------------------------------------------------------------------- mixed and shared


def test_mixed_hessian_exact():
    f = tc.parse("sin(x) *(i,ij->j) C *(j,j->) y", {"x": 1, "y": 1, "C": 2})
    shapes = {"x": (2,), "C": (2, 3), "y": (3,)}
    point = rational_point(shapes)
    first = tc.derivative(f, "x")
    assert exact_mismatches(first, "C", point, tc.hessian(f, "x", "C")) == []


@pytest.mark.slow  # SymPy on large expressions
def test_shared_subexpressions_exact():
    x, A = tc.var("x", 1), tc.var("A", 2)
    s = tc.tanh(tc.einsum("ij,j->i", A, x))
    f = tc.einsum("i,i->", s * s, s) + tc.einsum("i,i->", s, tc.constant(1, 1))
    shapes = {"x": (3,), "A": (2, 3)}
    point = rational_point(shapes)
    assert exact_mismatches(f, "x", point, tc.derivative(f, "x")) == []
    assert exact_mismatches(tc.derivative(f, "x"), "x", point, tc.hessian(f, "x")) == []


def test_oracle_detects_a_wrong_derivative():
    """A sanity check of the oracle itself: a transposed derivative must mismatch."""
    f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    point = rational_point({"A": (2, 3), "x": (3,)})
    right = tc.derivative(f, "x")
    assert exact_mismatches(f, "x", point, right) == []
    wrong = tc.einsum("ij,->ij", tc.var("A", 2), tc.constant(2))  # 2 A instead of A
    assert len(exact_mismatches(f, "x", point, wrong)) == 6


def test_oracle_expansion_is_exact():
    f = tc.parse("x *(i,i->) x", {"x": 1})
    entries = expand(f, symbol_arrays({"x": (2,)}))
    x0, x1 = sympy.symbols("x_0 x_1", real=True)
    assert sympy.expand(entries[()] - (x0**2 + x1**2)) == 0
