"""Property tests: random well-formed expressions, derivatives checked numerically and exactly.

Expressions are built with the Python builder API (``tc.var``, ``+``, ``-``, ``*``,
``tc.einsum`` with random valid specs, elementwise functions that are safe on the
sampled domain, small integer powers).  For each one the first and second
derivatives by a variable it contains are compared with central finite
differences (distinct axis lengths, from :func:`tenscalc.testing.random_values`),
the simplifier is checked to preserve values and to reach a fixed point, and
small ones (polynomial ones, and a few with functions, inverses and
determinants) are compared exactly with the SymPy oracle at rational points.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import tenscalc as tc
from tenscalc.core.nodes import topological
from tenscalc.oracle import exact_mismatches
from tenscalc.testing import axis_lengths, check_derivative, random_values

# property tests: hundreds of generated examples each
pytestmark = pytest.mark.slow

VARIABLES = {0: ("a", "b"), 1: ("x", "y"), 2: ("A", "B"), 3: ("T",)}
OUT_LETTERS = "ijkl"
SUM_LETTERS = "pq"
# the largest number of entries a checked derivative may have (keeps the file fast)
MAX_ENTRIES = 20_000

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    derandomize=True,
)


# ----------------------------------------------------------------------------- strategies


@st.composite
def einsum_spec(draw, order: int) -> tuple[str, str, str]:
    """A valid two-operand spec with an ``order``-letter output.

    Output letters are distinct except, sometimes, one repeated letter (a diagonal
    embedding); inputs may repeat a letter (a diagonal read) and may hold letters
    that are summed away (including letters found in one operand only).
    """
    out = list(OUT_LETTERS[:order])
    if order >= 2 and draw(st.integers(0, 4)) == 0:
        out[-1] = out[0]  # `x *(i,->ii) 1`-like: a repeated output letter
    unique = list(dict.fromkeys(out))
    p1 = draw(st.integers(0, 3))
    p2 = draw(st.integers(max(0, len(unique) - p1), 3))
    positions = list(range(p1 + p2))
    order_of_positions = draw(st.permutations(positions))
    pool = unique + list(SUM_LETTERS)
    letters = [""] * (p1 + p2)
    for slot, letter in zip(order_of_positions, unique):
        letters[slot] = letter
    for slot in order_of_positions[len(unique) :]:
        letters[slot] = draw(st.sampled_from(pool))
    return "".join(letters[:p1]), "".join(letters[p1:]), "".join(out)


@st.composite
def expressions(draw, order: int, depth: int, polynomial: bool = False) -> tc.Expr:
    """A random expression of the given order built through the builder API."""
    leaf_kinds = ["var", "var", "var", "const"]
    kinds = (
        leaf_kinds
        if depth <= 0
        else leaf_kinds
        + [
            "einsum",
            "einsum",
            "einsum",
            "add",
            "sub",
            "neg",
            "scale",
            "square",
            "cube",
            "func",
            "div",
        ]
    )
    if not polynomial and depth > 0:
        kinds += ["log1p2", "sqrt1p2", "arcsin_tanh"]
        if order == 2:
            kinds += ["inv"]
        if order == 0:
            kinds += ["det"]
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1

    if kind == "var":
        return tc.var(draw(st.sampled_from(VARIABLES[order])), order)
    if kind == "const":
        return tc.constant(draw(st.sampled_from([1, 2, -1, 0.5])), order)
    if kind == "einsum":
        s1, s2, out = draw(einsum_spec(order))
        left = draw(_operand(len(s1), sub, polynomial))
        right = draw(_operand(len(s2), sub, polynomial))
        return tc.einsum(f"{s1},{s2}->{out}", left, right)
    if kind == "add":
        return draw(expressions(order, sub, polynomial)) + draw(expressions(order, sub, polynomial))
    if kind == "sub":
        return draw(expressions(order, sub, polynomial)) - draw(expressions(order, sub, polynomial))
    if kind == "neg":
        return -draw(expressions(order, sub, polynomial))
    if kind == "scale":  # an order-0 factor times a tensor
        return draw(expressions(0, sub, polynomial)) * draw(expressions(order, sub, polynomial))
    if kind == "square":
        return draw(expressions(order, sub, polynomial)) ** 2
    if kind == "cube":
        return draw(expressions(order, sub, polynomial)) ** 3
    if kind == "div":  # a denominator bounded away from zero
        numerator = draw(expressions(order, sub, polynomial))
        return numerator / (draw(expressions(order, sub, polynomial)) ** 2 + 1)
    if kind == "func":
        names = ["sin", "cos", "tanh", "arctan", "exp"] if not polynomial else []
        if not names:
            return draw(expressions(order, sub, polynomial)) * draw(expressions(order, sub, polynomial))
        name = draw(st.sampled_from(names))
        inner = draw(expressions(order, sub, polynomial))
        if name == "exp":
            inner = tc.tanh(inner)  # keeps exp of a long sum from overflowing
        return getattr(tc, name)(inner)
    if kind == "log1p2":  # log(1 + e^2) > 0 everywhere
        return tc.log(draw(expressions(order, sub, polynomial)) ** 2 + 1)
    if kind == "sqrt1p2":
        return (draw(expressions(order, sub, polynomial)) ** 2 + 1) ** 0.5
    if kind == "arcsin_tanh":  # |tanh(e) / 2| < 1/2: inside arcsin's domain
        return tc.arcsin(tc.tanh(draw(expressions(order, sub, polynomial))) * 0.5)
    if kind == "inv":  # random_values makes square matrices diagonally dominant
        return tc.inv(tc.var("A", 2))
    if kind == "det":
        return tc.det(tc.var("A", 2))
    raise AssertionError(kind)


def _operand(order: int, depth: int, polynomial: bool):
    # sometimes a ones tensor (the `A *(ij,j->) 1` and missing-index cases) or a delta
    choices = [expressions(order, depth, polynomial)] * 3 + [st.just(tc.constant(1, order))]
    if order % 2 == 0:
        choices.append(st.just(tc.delta(order // 2)))
    return st.one_of(*choices)


@st.composite
def problems(draw, max_depth: int = 3, polynomial: bool = False, max_order: int = 2):
    """An expression with at least one variable, and a variable of it to differentiate by."""
    order = draw(st.integers(0, max_order))
    expr = draw(expressions(order, draw(st.integers(1, max_depth)), polynomial))
    variables = expr.variables
    if not variables:  # make sure there is something to differentiate by
        expr = expr + tc.einsum("," + "ijkl"[:order] + "->" + "ijkl"[:order], tc.var("a", 0), tc.constant(1, order))
        variables = expr.variables
    # every axis length must be fixed by some variable (`x *(i,p->i) 1` leaves p's open)
    assume(_evaluable(expr))
    wrt = draw(st.sampled_from(sorted(variables)))
    return expr, wrt


def _evaluable(expr: tc.Expr) -> bool:
    try:
        value = tc.evaluate(expr, random_values(expr))
    except tc.EvaluationError:
        return False
    return bool(np.all(np.isfinite(value)))


# ----------------------------------------------------------------------------- helpers


def _derivative_size(expr: tc.Expr, wrt: str, order: int) -> int:
    shapes = axis_lengths(expr)
    values = random_values(expr)
    value = tc.evaluate(expr, values)
    return int(np.prod(value.shape, dtype=np.int64)) * int(np.prod(shapes[wrt], dtype=np.int64)) ** order


def _checked(expr: tc.Expr, wrt: str, order: int) -> None:
    if _derivative_size(expr, wrt, order) > MAX_ENTRIES:
        event("skipped: derivative too large to finite-difference quickly")
        return
    event(f"checked: expression order {expr.order}, variable order {expr.variables[wrt]}")
    # 1e-4: random compositions can have large curvature, where central differences lose digits
    report = check_derivative(expr, wrt, order=order, tolerance=1e-4)
    assert report.ok, f"{report.message}\nexpression: {expr}\nwrt: {wrt}"


# ----------------------------------------------------------------------------- properties


@SETTINGS
@given(problems())
def test_first_derivative_matches_finite_differences(problem):
    expr, wrt = problem
    _checked(expr, wrt, 1)


@SETTINGS
@given(problems(max_depth=2))
def test_second_derivative_matches_finite_differences(problem):
    expr, wrt = problem
    _checked(expr, wrt, 2)


@SETTINGS
@given(problems(max_depth=2))
def test_derivative_shape_is_expression_axes_then_variable_axes(problem):
    expr, wrt = problem
    values = random_values(expr)
    d = tc.derivative(expr, wrt)
    assert d.order == expr.order + expr.variables[wrt]
    value = tc.evaluate(expr, values)
    assert tc.evaluate(d, values).shape == value.shape + np.shape(values[wrt])


@SETTINGS
@given(problems())
def test_simplify_preserves_values(problem):
    expr, _ = problem
    values = random_values(expr)
    before = tc.evaluate(expr, values)
    after = tc.evaluate(tc.simplify(expr), values)
    np.testing.assert_allclose(after, before, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(problems())
def test_simplified_and_raw_derivatives_agree(problem):
    expr, wrt = problem
    values = random_values(expr)
    raw = tc.evaluate(tc.derivative(expr, wrt, simplify=False), values)
    simplified = tc.evaluate(tc.derivative(expr, wrt), values)
    np.testing.assert_allclose(simplified, raw, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(problems())
def test_simplifier_reaches_a_fixed_point(problem):
    expr, wrt = problem
    for e in (expr, tc.derivative(expr, wrt, simplify=False)):
        once = tc.simplify(e)
        assert tc.simplify(once) is once


# --------------------------------------------------------------- exact, for small ones


def _rational_point(expr: tc.Expr, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    point = {}
    for name, shape in axis_lengths(expr).items():
        array = np.empty(shape, dtype=object)
        for index in np.ndindex(*shape):
            numerator = int(rng.integers(-5, 6)) or 1
            array[index] = sympy.Rational(numerator, int(rng.integers(2, 5)))
        if len(shape) == 2 and shape[0] == shape[1]:
            for i in range(shape[0]):
                array[i, i] += shape[0] + 1
        point[name] = array if shape else array[()]
    return point


def _small(expr: tc.Expr, wrt: str, entries_max: int = 12, nodes_max: int = 14) -> bool:
    shapes = axis_lengths(expr)
    entries = sum(int(np.prod(s, dtype=np.int64)) for s in shapes.values())
    out = int(np.prod(tc.evaluate(expr, random_values(expr)).shape, dtype=np.int64))
    return (
        entries <= entries_max
        and out * int(np.prod(shapes[wrt], dtype=np.int64)) <= 3 * entries_max
        and len(topological(expr)) <= nodes_max
    )


def _check_exactly(expr: tc.Expr, wrt: str, seed: int) -> None:
    point = _rational_point(expr, seed)
    first = tc.derivative(expr, wrt)
    assert exact_mismatches(expr, wrt, point, first) == [], f"first derivative of {expr} by {wrt}"
    second = tc.derivative(first, tc.var(wrt, expr.variables[wrt]))
    assert exact_mismatches(first, wrt, point, second) == [], f"second derivative of {expr} by {wrt}"


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(max_depth=2, polynomial=True, max_order=1), st.integers(0, 3))
def test_small_polynomial_derivatives_are_exact(problem, seed):
    expr, wrt = problem
    if not _small(expr, wrt):
        event("skipped: too large for the exact oracle")
        return
    event("checked exactly")
    _check_exactly(expr, wrt, seed)


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(problems(max_depth=2, max_order=1), st.integers(0, 3))
def test_small_derivatives_with_functions_are_exact(problem, seed):
    """Functions, inverses and determinants too (SymPy is slower on these: fewer, smaller examples)."""
    expr, wrt = problem
    if not _small(expr, wrt, entries_max=6, nodes_max=10):
        event("skipped: too large for the exact oracle")
        return
    event("checked exactly")
    _check_exactly(expr, wrt, seed)


def test_generated_specs_cover_every_product_shape():
    """The spec strategy reaches diagonal reads, diagonal embeddings and one-sided sums."""
    seen = set()

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.integers(0, 3).flatmap(einsum_spec))
    def collect(spec):
        s1, s2, out = spec
        ins = s1 + s2
        if len(set(out)) < len(out):
            seen.add("diagonal embedding")
        if any(len(set(s)) < len(s) for s in (s1, s2)):
            seen.add("diagonal read")
        if any(c not in out and c not in other for s, other in ((s1, s2), (s2, s1)) for c in s):
            seen.add("summed in one operand only")
        if set(s1) & set(s2) - set(out):
            seen.add("contraction")
        if set(s1) & set(s2) & set(out):
            seen.add("elementwise")
        if set(s1) and set(s2) and not set(s1) & set(s2):
            seen.add("outer")
        if not ins:
            seen.add("scalar")
        for s in (s1, s2):
            assert set(s) <= set(OUT_LETTERS + SUM_LETTERS)
        assert set(out) <= set(ins)

    collect()
    assert seen >= {
        "diagonal embedding",
        "diagonal read",
        "summed in one operand only",
        "contraction",
        "elementwise",
        "outer",
    }, seen
