"""Derivatives checked numerically: every rule, every function, every product shape.

Every numeric check uses :func:`tenscalc.testing.check_derivative`, which draws
random data with a distinct length for every independent axis (2, 3, 4, ...), so
a transposed or swapped axis cannot pass, and compares the full symbolic
Jacobian with central finite differences.  Second derivatives are compared with
finite differences of the (already checked) first derivative; third and fourth
derivatives with the SymPy oracle, exactly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

import tenscalc as tc
from tenscalc.core import nodes as N
from tenscalc.oracle import exact_mismatches, expand, symbol_arrays
from tenscalc.testing import axis_lengths, check_derivative, random_values

ORDERS = dict(a=0, b=0, c=0, x=1, y=1, v=1, w=1, A=2, B=2, X=2, U=2, V=2, W=2, T=3, Q=4)


def parse(text: str, **orders: int) -> tc.Expr:
    return tc.parse(text, {**ORDERS, **orders})


def assert_checks(expr: tc.Expr, wrt: str, order: int = 1, **kwargs) -> None:
    report = check_derivative(expr, wrt, order=order, **kwargs)
    assert report.ok, f"{report.message}\nexpression: {expr}"


def assert_distinct_lengths(values: dict, *pairs: tuple[str, int, str, int]) -> None:
    """Axes that nothing ties together got different lengths: (name, axis, name, axis)."""
    for a, i, b, j in pairs:
        assert np.shape(values[a])[i] != np.shape(values[b])[j], {k: np.shape(v) for k, v in values.items()}


def away_from_zero(values: dict, margin: float = 0.25) -> dict:
    """Move every entry at least ``margin`` away from 0 (for abs, sign, relu)."""
    out = {}
    for name, value in values.items():
        array = np.asarray(value, dtype=float)
        moved = np.where(array >= 0, array + margin, array - margin)
        out[name] = moved if array.ndim else float(moved)
    return out


# ------------------------------------------------------------------ the data itself


def test_random_values_give_distinct_lengths_to_independent_axes():
    f = parse("A *(ik,kj->ij) B *(ij,ij->) X")
    shapes = {k: np.shape(v) for k, v in random_values(f).items()}
    # i, k, j are independent: three different lengths
    assert shapes["A"][0] != shapes["A"][1] != shapes["B"][1] != shapes["A"][0]
    assert shapes["A"][1] == shapes["B"][0]
    assert shapes["X"] == (shapes["A"][0], shapes["B"][1])


def test_check_derivative_reports_the_worst_entry():
    report = check_derivative(parse("A *(ij,j->i) x"), "A")
    assert report.ok and report.max_error < 1e-6
    assert "ok" in report.message and report.worst_index is not None


# ------------------------------------------------------------------ sums, constants, deltas


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("x + y", "x"),
        ("x - y", "y"),
        ("-x", "x"),
        ("-(-x)", "x"),
        ("x + x + x - y", "x"),
        ("2 *(,i->i) x - 3 *(,i->i) y", "y"),
        ("x + 2", "x"),
        ("A - 1", "A"),
        ("(A + 1) *(ij,j->i) 1", "A"),
        ("3 *(,ij->ij) A *(ij,j->i) x", "A"),
        ("x *(i,i->) x + 5", "x"),
        ("log(2) *(,i->i) x", "x"),
        ("delta(1) *(ij,j->i) x", "x"),
        ("A *(ij,jk->ik) delta(1)", "A"),
        ("delta(1) *(ij,ij->) A", "A"),
        ("delta(2) *(ijkl,kl->ij) A", "A"),
        ("delta(0) *(,i->i) x", "x"),
        ("delta(1) *(ij,jk->ik) A *(ij,ij->) A", "A"),
        ("x *(i,ij->j) delta(1) *(j,j->) x", "x"),
    ],
)
def test_sums_constants_and_deltas(text, wrt):
    f = parse(text)
    assert_checks(f, wrt, 1)
    assert_checks(f, wrt, 2)


def test_derivative_of_a_constant_expression_by_a_variable_is_zero():
    d = tc.derivative(tc.constant(3.0) + tc.constant(1), tc.var("x", 1))
    assert d.order == 1
    np.testing.assert_array_equal(tc.evaluate(d, {"x": np.ones(3)}), np.zeros(3))
    assert tc.derivative(tc.constant(3.0, 1) + tc.constant(1, 1), tc.var("x", 1)).order == 2


# ------------------------------------------------------------------ elementwise functions

SMOOTH_FUNCTIONS = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log"]
KINKED_FUNCTIONS = ["abs", "sign", "relu"]


def _function_values(name: str, expr: tc.Expr, seed: int = 0) -> dict:
    # small enough that A x (three terms) stays inside the domain
    if name in ("arcsin", "arccos", "log"):
        return random_values(expr, seed, low=0.05, high=0.3)
    if name == "tan":
        return random_values(expr, seed, low=-0.5, high=0.5)
    if name in KINKED_FUNCTIONS:
        return away_from_zero(random_values(expr, seed, low=-1.0, high=1.0))
    return random_values(expr, seed)


@pytest.mark.parametrize("name", SMOOTH_FUNCTIONS + KINKED_FUNCTIONS)
@pytest.mark.parametrize(
    "template, wrt",
    [
        ("{f}(x)", "x"),  # Jacobian, a diagonal matrix
        ("{f}(x) *(i,i->) y", "x"),
        ("{f}(A) *(ij,ij->) B", "A"),
        ("{f}(A)", "A"),  # order-4 Jacobian
        ("{f}(A *(ij,j->i) x) *(i,i->) y", "x"),
        ("{f}(a) *(,i->i) x", "a"),
    ],
)
def test_elementwise_functions(name, template, wrt):
    f = parse(template.format(f=name))
    values = _function_values(name, f)
    if "A" in values:
        assert_distinct_lengths(values, ("A", 0, "A", 1))
    assert_checks(f, wrt, 1, values=values)
    assert_checks(f, wrt, 2, values=values)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("abs", [0.0, 1.0, -1.0]),  # abs'(x) = sign(x), sign(0) = 0
        ("sign", [0.0, 0.0, 0.0]),  # sign'(0) = 0 by convention
        ("relu", [0.0, 1.0, 0.0]),  # relu'(0) = 0 by convention
    ],
)
def test_kinked_functions_take_the_conventional_value_at_zero(name, expected):
    f = getattr(tc, name)(tc.var("x", 1))
    d = tc.derivative(f, "x")
    value = tc.evaluate(d, {"x": np.array([0.0, 2.0, -3.0])})
    np.testing.assert_array_equal(value, np.diag(expected))
    # the scalar form too, and the second derivative is zero everywhere, 0 included
    g = tc.einsum("i,i->", getattr(tc, name)(tc.var("x", 1)), tc.constant(1, 1))
    np.testing.assert_array_equal(tc.evaluate(tc.gradient(g, "x"), {"x": np.array([0.0, 2.0, -3.0])}), expected)
    h = tc.hessian(g, "x")
    np.testing.assert_array_equal(tc.evaluate(h, {"x": np.array([0.0, 2.0, -3.0])}), np.zeros((3, 3)))


def test_abs_derivative_is_sign_symbolically():
    x = tc.var("x", 1)
    d = tc.derivative(tc.einsum("i,->", tc.abs(x), 1), "x")
    assert any(n.op == "func" and n.arg == "sign" for n in N.topological(d))


# ------------------------------------------------------------------ powers


@pytest.mark.parametrize(
    "text, wrt, values",
    [
        ("x^3", "x", None),
        ("x^2", "x", {"x": np.array([-1.5, -0.3, -2.0])}),  # defined and differentiable for x < 0
        ("x^2 *(i,i->) y", "x", {"x": np.array([-1.5, -0.3]), "y": np.array([0.7, -1.1])}),
        ("x^(-1)", "x", None),
        ("x^(-2) *(i,i->) y", "x", None),
        ("x^0.5", "x", None),
        ("x^0.5 *(i,i->) x", "x", None),
        ("x^1.5 *(i,i->) y", "x", None),
        ("x^0 *(i,i->) y", "x", None),
        ("x^1", "x", None),
        ("A^2", "A", None),
        ("x^a", "x", None),
        ("x^a", "a", None),  # variable exponent: d/da x^a = x^a log x
        ("x^a *(i,i->) y", "a", None),
        ("a^b", "b", None),
        ("a^b", "a", None),
        ("2^a", "a", None),
        ("a^a", "a", None),  # x^x for a declared scalar
        ("(a^a) *(,i->i) x", "a", None),
        ("x / y", "x", None),
        ("x / y", "y", None),
        ("1 / (x *(i,i->) x + 1)", "x", None),
        ("(x + 1) / (x *(i,i->i) x + 2)", "x", None),
    ],
)
def test_powers(text, wrt, values):
    f = parse(text)
    if values is None:
        values = random_values(f, low=0.2, high=1.8)
    assert_checks(f, wrt, 1, values=values)
    assert_checks(f, wrt, 2, values=values)


def test_square_at_negative_points_has_the_right_sign():
    d = tc.derivative(tc.var("x", 1) ** 2, "x")
    value = tc.evaluate(d, {"x": np.array([-1.0, -2.0, 3.0])})
    np.testing.assert_allclose(value, np.diag([-2.0, -4.0, 6.0]))
    assert np.all(np.isfinite(value))


# ------------------------------------------------------------------ matrix functions


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("inv(A)", "A"),
        ("inv(A) *(ij,ij->) B", "A"),
        ("inv(A) *(ij,j->i) x", "A"),
        ("inv(A) *(ij,j->i) x", "x"),
        ("x *(i,ij->j) inv(A) *(j,j->) x", "x"),
        ("inv(A) *(ik,kj->ij) B", "A"),
        ("inv(inv(A))", "A"),
        ("det(A)", "A"),
        ("log(det(A))", "A"),
        ("det(inv(A))", "A"),
        ("det(A) *(,i->i) x", "A"),
        ("det(A *(ik,kj->ij) B)", "A"),
        ("adj(A)", "A"),
        ("adj(A) *(ij,j->i) x", "A"),
        ("adj(A) *(ij,ij->) B", "A"),
    ],
)
def test_matrix_functions(text, wrt):
    f = parse(text)
    assert_checks(f, wrt, 1)
    assert_checks(f, wrt, 2)


def test_adjugate_is_det_times_inverse():
    A = tc.var("A", 2)
    values = random_values(tc.adj(A))
    m = values["A"]
    np.testing.assert_allclose(tc.evaluate(tc.adj(A), values), np.linalg.det(m) * np.linalg.inv(m))
    # d det / dA = adj(A)^T
    np.testing.assert_allclose(
        tc.evaluate(tc.derivative(tc.det(A), "A"), values), (np.linalg.det(m) * np.linalg.inv(m)).T
    )


# ------------------------------------------------------------------ every product shape

PRODUCTS = [
    ("x *(i,i->) y", "x"),  # inner
    ("x *(i,i->) x", "x"),
    ("x *(i,j->ij) y", "x"),  # outer
    ("x *(i,j->ij) y", "y"),
    ("x *(i,j->ij) x", "x"),
    ("A *(ij,j->i) x", "A"),  # matrix-vector
    ("A *(ij,j->i) x", "x"),
    ("x *(i,ij->j) A", "A"),  # vector-matrix
    ("A *(ik,kj->ij) B", "A"),  # matrix-matrix
    ("A *(ik,kj->ij) B", "B"),
    ("A *(ik,jk->ij) A", "A"),  # A A^T: the variable twice
    ("x *(i,i->i) y", "x"),  # elementwise
    ("A *(ij,ij->ij) B", "A"),
    ("A *(ij,ij->ij) A", "A"),
    ("A *(ij,ij->) B", "B"),
    ("A *(ii,->) 1", "A"),  # trace
    ("A *(ii,->i) 1", "A"),  # diagonal
    ("A *(ii,i->i) x", "A"),
    ("x *(i,->ii) 1", "x"),  # diagonal embedding
    ("x *(i,->ii) 1 *(ij,jk->ik) A", "x"),
    ("A *(ij,->ji) 1", "A"),  # transpose
    ("A *(ij,->ji) 1 *(ij,jk->ik) B", "A"),
    ("A *(ij,j->) v", "A"),  # j summed, i found nowhere else: the missing-index case
    ("A *(ij,j->) v", "v"),
    ("A *(ij,->) 1", "A"),
    ("A *(ij,->i) 1", "A"),
    ("A *(ij,k->ik) x", "A"),
    ("A *(ij,k->ik) x", "x"),
    ("A *(ij,k->) x", "A"),
    ("x *(i,j->) y", "x"),
    ("a *(,ij->ij) A", "a"),  # scalar times tensor
    ("a *(,ij->ij) A", "A"),
    ("T *(ijk,k->ij) x", "T"),  # order 3
    ("T *(ijk,k->ij) x", "x"),
    ("T *(ijk,jk->i) A", "A"),
    ("T *(ijk,->kij) 1", "T"),
    ("T *(ijk,ijk->) T", "T"),
    ("T *(iij,->j) 1", "T"),
    ("T *(ijk,l->il) x", "T"),
    ("Q *(ijkl,kl->ij) A", "Q"),  # order 4
    ("Q *(ijkl,kl->ij) A", "A"),
    ("Q *(ijkl,ijkl->) Q", "Q"),
    ("Q *(ijkl,->ljki) 1", "Q"),
    ("Q *(ijji,->) 1", "Q"),
    ("x *(i,j->ij) y *(ij,k->ijk) w *(ijk,ijk->) T", "T"),
    ("x *(i,j->ij) y *(ij,k->ijk) w *(ijk,ijk->) T", "y"),
]


@pytest.mark.parametrize("text, wrt", PRODUCTS)
def test_product_first_derivative(text, wrt):
    f = parse(text)
    values = random_values(f)
    for value in values.values():  # no accidental square matrices
        shape = np.shape(value)
        if len(shape) == 2 and shape[0] == shape[1]:
            assert "ii" in text, text  # only a diagonal read forces a square matrix
    assert_checks(f, wrt, 1, values=values)


@pytest.mark.parametrize("text, wrt", PRODUCTS)
def test_product_second_derivative(text, wrt):
    assert_checks(parse(text), wrt, 2)


def test_missing_index_case_matches_closed_form():
    """d (sum_ij A_ij v_j) / dA = 1 v^T: the letter i occurs in A only."""
    f = parse("A *(ij,j->) v")
    values = random_values(f)
    expected = np.outer(np.ones(values["A"].shape[0]), values["v"])
    np.testing.assert_allclose(tc.evaluate(tc.gradient(f, "A"), values), expected)


def test_trace_derivative_is_identity_and_transpose_derivative_is_a_permutation():
    A = np.arange(6.0).reshape(2, 3) + 1
    d = tc.derivative(parse("A *(ij,->ji) 1"), "A")
    value = tc.evaluate(d, {"A": A})
    assert value.shape == (3, 2, 2, 3)
    for j, i, k, m in itertools.product(range(3), range(2), range(2), range(3)):
        assert value[j, i, k, m] == float(i == k and j == m)
    square = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(tc.evaluate(tc.gradient(parse("A *(ii,->) 1"), "A"), {"A": square}), np.eye(3))


def test_shared_ones_tensors_of_different_lengths():
    """The ones tensor the product rule adds for a missing letter is the interned
    node ``1`` of that order; it must not tie its axis to other uses of that node."""
    f = tc.einsum("i,iij->", 1, tc.var("T", 3))  # sum_ij T[i,i,j]
    values = {"T": np.arange(12.0).reshape(2, 2, 3)}
    d = tc.derivative(f, "T")
    expected = np.zeros((2, 2, 3))
    for i in range(2):
        expected[i, i, :] = 1
    np.testing.assert_array_equal(tc.evaluate(d, values), expected)
    assert_checks(f, "T", 1, values=values)


def test_raw_derivative_with_a_constant_of_the_same_order_evaluates():
    """`+ 1` (a length-i ones vector) and the ones over the missing letter j."""
    f = parse("(A *(ij,->i) 1 + 1) *(i,i->) y")
    values = {"A": np.arange(6.0).reshape(2, 3), "y": np.array([1.0, -2.0])}
    expected = np.outer(values["y"], np.ones(3))
    np.testing.assert_allclose(tc.evaluate(tc.derivative(f, "A", simplify=False), values), expected)
    np.testing.assert_allclose(tc.evaluate(tc.derivative(f, "A"), values), expected)


def test_constants_used_at_different_lengths():
    f = parse("(x + 1) *(i,i->) (x + 1) + (y + 1) *(i,i->) y")
    values = {"x": np.array([0.5, -1.0]), "y": np.array([0.3, 0.2, -0.7])}
    assert_checks(f, "x", 1, values=values)
    assert_checks(f, "y", 2, values=values)


# ------------------------------------------------------------------ several paths to a node


def test_variable_used_many_times():
    f = parse("x *(i,i->) sin(x) + x *(i,ij->j) A *(j,j->) x + exp(x *(i,i->) x) *(,i->i) x *(i,i->) x")
    assert_checks(f, "x", 1)
    assert_checks(f, "x", 2)
    assert_checks(f, "A", 1)


def test_shared_subexpressions_built_in_python():
    x, A = tc.var("x", 1), tc.var("A", 2)
    s = tc.sin(tc.einsum("ij,j->i", A, x))  # shared below
    t = s * s + tc.cos(s)
    u = tc.einsum("i,i->", t, s) + tc.einsum("i,j,ij->", s, t, A)
    assert_checks(u, "x", 1)
    assert_checks(u, "x", 2)
    assert_checks(u, "A", 1)
    assert_checks(u, "A", 2)


def test_diamond_chain_of_shared_nodes():
    x = tc.var("x", 1)
    y = x
    for _ in range(6):  # every level uses the previous one twice
        y = tc.sin(y) * tc.cos(y) + y * 0.5
    f = tc.einsum("i,i->", y, y)
    assert_checks(f, "x", 1)
    assert_checks(f, "x", 2)


def test_same_subexpression_parsed_twice_is_one_node():
    f = parse("sin(A *(ij,j->i) x) *(i,i->) sin(A *(ij,j->i) x)")
    sines = [n for n in N.topological(f) if n.op == "func"]
    assert len(sines) == 1
    assert_checks(f, "x", 2)


# ------------------------------------------------------------------ higher derivatives


def _exact_point(shapes: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    point = {}
    for name, shape in shapes.items():
        array = np.empty(shape, dtype=object)
        for index in np.ndindex(*shape):
            array[index] = sympy.Rational(int(rng.integers(1, 9)), int(rng.integers(2, 7)))
        point[name] = array if shape else array[()]
    return point


@pytest.mark.parametrize(
    "text, wrt, n",
    [
        ("sin(x) *(i,i->) x", "x", 3),
        ("x *(i,i->) x *(,->) (x *(i,i->) y)", "x", 3),
        ("exp(A *(ij,j->i) x) *(i,i->) 1", "x", 3),
        ("a^4 *(,->) sin(a)", "a", 4),
        ("x^3 *(i,i->) y", "x", 4),
        ("tanh(x) *(i,->) 1", "x", 4),
        ("log(a) *(,->) a^a", "a", 3),
    ],
)
def test_higher_derivatives_exactly(text, wrt, n):
    f = parse(text)
    shapes = {name: tuple(min(2 + k, 3) for k in range(len(s))) for name, s in axis_lengths(f).items()}
    if "A" in shapes:
        shapes["x"] = (3,)
        shapes["A"] = (2, 3)
    point = _exact_point(shapes)
    lower = tc.nth_derivative(f, wrt, n - 1)
    higher = tc.nth_derivative(f, wrt, n)
    assert higher.order == f.order + n * ORDERS[wrt]
    # SymPy differentiates the (n-1)-th derivative once more, exactly
    assert exact_mismatches(lower, wrt, point, higher) == []
    # and the n-th derivative of the original expression, independently of tenscalc's lower ones
    symbols = symbol_arrays(shapes)
    entries = expand(f, symbols)
    x_symbols = symbols[wrt]
    substitution = {
        symbols[name][index]: sympy.nsimplify(np.asarray(point[name], dtype=object)[index])
        for name in symbols
        for index in np.ndindex(*np.shape(symbols[name]))
    }
    ours = expand(higher, {k: np.asarray(v, dtype=object) for k, v in point.items()})
    x_indices = list(np.ndindex(*np.shape(x_symbols)))
    for out_index in np.ndindex(*entries.shape):
        for combo in itertools.product(x_indices, repeat=n):
            reference = entries[out_index]
            for ix in combo:
                reference = sympy.diff(reference, np.asarray(x_symbols, dtype=object)[ix])
            got = ours[out_index + tuple(i for ix in combo for i in ix)]
            assert sympy.simplify(reference.subs(substitution) - got) == 0, (out_index, combo)


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("sin(x) *(i,i->) x", "x"),
        ("x *(i,ij->j) A *(j,j->) x *(,->) (x *(i,i->) x)", "x"),
        ("tanh(A *(ij,j->i) x) *(i,i->) y", "x"),
        ("inv(A) *(ij,ij->) B", "A"),
    ],
)
def test_third_derivative_against_finite_differences(text, wrt):
    assert_checks(parse(text), wrt, 3, tolerance=1e-4)


def test_fourth_derivative_of_a_scalar_function_by_repeated_differences():
    a = tc.var("a", 0)
    f = tc.sin(a) * a**3 + tc.exp(a * 0.5)
    d4 = tc.nth_derivative(f, "a", 4)
    point, h = 0.7, 1e-2

    def value(t):
        return float(tc.evaluate(f, {"a": t}))

    # fourth central difference, O(h^2) accurate
    stencil = [1, -4, 6, -4, 1]
    numeric = sum(c * value(point + (k - 2) * h) for k, c in enumerate(stencil)) / h**4
    exact = float(tc.evaluate(d4, {"a": point}))
    assert abs(numeric - exact) <= 1e-3 * max(1.0, abs(exact))
    assert d4.order == 0


def test_nth_derivative_zero_and_one():
    f = parse("sin(x) *(i,i->) x")
    assert tc.nth_derivative(f, "x", 0) is f
    assert tc.nth_derivative(f, "x", 1) is tc.derivative(f, "x")
    with pytest.raises(tc.TensCalcError):
        tc.nth_derivative(f, "x", -1)


# ------------------------------------------------------------------ mixed Hessians


@pytest.mark.parametrize(
    "text, first, second",
    [
        ("sin(x) *(i,ij->j) A *(j,j->) x", "x", "A"),
        ("sin(x) *(i,ij->j) A *(j,j->) x", "A", "x"),
        ("x *(i,ij->j) A *(j,j->) y", "x", "y"),
        ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W", "v"),
        ("(T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)", "U", "V"),
    ],
)
def test_mixed_hessians(text, first, second):
    orders = {**ORDERS, "T": 2}
    f = tc.parse(text, orders)
    h = tc.hessian(f, first, second)
    values = random_values([f, h])
    assert h.order == orders[first] + orders[second]
    shape = np.shape(values[first]) + np.shape(values[second])
    assert tc.evaluate(h, values).shape == shape
    report = check_derivative(tc.derivative(f, first), second, values=values)
    assert report.ok, report.message
    np.testing.assert_allclose(
        tc.evaluate(h, values), tc.evaluate(tc.derivative(tc.derivative(f, first), second), values)
    )
    # symmetry of mixed partials: H(x, A) is H(A, x) with its axes moved
    other = tc.evaluate(tc.hessian(f, second, first), values)
    p, r = orders[first], orders[second]
    moved = np.moveaxis(other, list(range(r)), list(range(p, p + r)))
    np.testing.assert_allclose(tc.evaluate(h, values), moved, atol=1e-12)


# ------------------------------------------------------------------ zero derivatives, errors


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_derivative_by_an_absent_variable_is_a_zero_tensor(order):
    f = parse("A *(ij,j->i) x")
    z = tc.var("z", order)
    d = tc.derivative(f, z)
    assert d.order == 1 + order
    z_shape = tuple(range(4, 4 + order))
    values = {"A": np.ones((2, 3)), "x": np.ones(3), "z": np.ones(z_shape) if order else 1.0}
    value = tc.evaluate(d, values)
    assert value.shape == (2,) + z_shape
    assert not np.any(value)
    h = tc.hessian(f, "x", z)
    assert h.order == 2 + order
    assert tc.evaluate(h, values).shape == (2, 3) + z_shape
    assert not np.any(tc.evaluate(h, values))


def test_unknown_variable_name_raises():
    f = parse("A *(ij,j->i) x")
    with pytest.raises(tc.TensCalcError, match="unknown variable 'z'"):
        tc.derivative(f, "z")
    with pytest.raises(tc.TensCalcError):
        tc.hessian(f, "x", "z")
    with pytest.raises(tc.TensCalcError):
        tc.gradient(parse("x *(i,i->) x"), "q")


def test_derivative_by_a_non_variable_raises():
    f = parse("A *(ij,j->i) x")
    with pytest.raises(tc.TensCalcError):
        tc.derivative(f, tc.sin(tc.var("x", 1)))
    with pytest.raises(tc.TensCalcError):
        tc.derivative("A *(ij,j->i) x", "x")


def test_gradient_of_a_non_scalar_raises():
    with pytest.raises(tc.TensCalcError, match="order 1"):
        tc.gradient(parse("A *(ij,j->i) x"), "x")
    with pytest.raises(tc.TensCalcError):
        tc.gradient(parse("A"), "A")


def test_problem_derivative():
    p = tc.parse_problem("declare x 1 A 2 expression x *(i,ij->j) A *(j,j->) x derivative wrt x")
    assert p.derivative() is tc.derivative(p.expr, "x")
    assert p.derivative("A") is tc.derivative(p.expr, "A")
    values = {"x": np.array([1.0, -2.0, 0.5]), "A": np.arange(9.0).reshape(3, 3)}
    np.testing.assert_allclose(tc.evaluate(p.derivative(), values), (values["A"] + values["A"].T) @ values["x"])
    np.testing.assert_allclose(tc.evaluate(p.derivative("A"), values), np.outer(values["x"], values["x"]))
    without = tc.parse_problem("declare x 1 expression x *(i,i->) x")
    with pytest.raises(tc.TensCalcError):
        without.derivative()
    assert tc.evaluate(without.derivative("x"), {"x": np.array([1.0, 2.0])}).tolist() == [2.0, 4.0]


# ------------------------------------------------------------------ layout and shapes


def test_hessian_of_a_scalar_by_a_matrix_has_shape_mkmk():
    f = tc.parse("(T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)", {"T": 2, "U": 2, "V": 2})
    m, n, k = 3, 5, 4
    rng = np.random.default_rng(1)
    values = {"T": rng.standard_normal((m, n)), "U": rng.standard_normal((m, k)), "V": rng.standard_normal((n, k))}
    h = tc.hessian(f, "U")
    assert h.order == 4
    value = tc.evaluate(h, values)
    assert value.shape == (m, k, m, k)
    expected = np.einsum("ac,bd->abcd", np.eye(m), 2 * values["V"].T @ values["V"])
    np.testing.assert_allclose(value, expected, atol=1e-12)
    assert tc.evaluate(tc.gradient(f, "U"), values).shape == (m, k)


def test_jacobian_of_matrix_vector_product_is_the_matrix():
    f = parse("A *(ij,j->i) x")
    A = np.arange(12.0).reshape(3, 4)
    value = tc.evaluate(tc.jacobian(f, "x"), {"A": A, "x": np.ones(4)})
    assert value.shape == (3, 4)
    np.testing.assert_array_equal(value, A)
    by_A = tc.evaluate(tc.jacobian(f, "A"), {"A": A, "x": np.arange(4.0)})
    assert by_A.shape == (3, 3, 4)  # expression axis first, then A's


def test_jacobian_layout_expression_axes_first():
    f = parse("x *(i,j->ij) y")  # order 2, by x (order 1): D[i, j, k] = d f[i,j] / d x[k]
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    value = tc.evaluate(tc.derivative(f, "x"), {"x": x, "y": y})
    assert value.shape == (2, 3, 2)
    expected = np.einsum("ik,j->ijk", np.eye(2), y)
    np.testing.assert_array_equal(value, expected)


def test_derivative_orders():
    f = parse("tanh(X *(mj,hj->mh) W) *(mh,h->) v")
    assert tc.derivative(f, "W").order == 2
    assert tc.hessian(f, "W").order == 4
    assert tc.hessian(f, "W", "v").order == 3
    assert tc.jacobian(parse("A *(ij,j->i) x"), "A").order == 3


# ------------------------------------------------------------------ derivatives are expressions


@pytest.mark.parametrize(
    "text, wrt",
    [
        ("x *(i,i->) x", "x"),
        ("A *(ii,->) 1", "A"),
        ("A *(ij,j->) v", "A"),
        ("x *(i,->ii) 1", "x"),
        ("Q *(ijkl,kl->ij) A", "A"),
        ("inv(A) *(ij,ij->) B", "A"),
        ("log(det(A))", "A"),
        ("a^a", "a"),
        ("relu(x) *(i,i->) y", "x"),
        ("tanh(X *(mj,hj->mh) W) *(mh,h->) v", "W"),
    ],
)
def test_derivatives_print_and_parse_back(text, wrt):
    """docs/language.md, "Derivatives": a derivative prints as text that parses back to the same values."""
    f = parse(text)
    for d in (tc.derivative(f, wrt), tc.hessian(f, wrt)):
        values = random_values([f, d], low=0.2, high=1.5)
        again = tc.parse(str(d), ORDERS)
        np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(d, values), rtol=1e-12, atol=1e-12)
