"""What matrixcalculus.org users type first (issue 25, item 3): the letter rule beside
declarations, messages that say where an order came from, `X^-1` as the inverse, `eye`,
`ones(x.0)` in printed derivatives, and `**` as the power."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

RNG = np.random.default_rng(25)
# distinct lengths everywhere, so a transposed or misplaced axis cannot go unnoticed
A = RNG.normal(size=(3, 2))
X = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
x, b, y = RNG.normal(size=2), RNG.normal(size=3), RNG.normal(size=4)


def test_a_letter_typed_scalar_is_blamed_with_its_origin_and_the_fix():
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("norm2(A*x-b)^2")
    assert info.value.reason == (
        "cannot add expressions of different orders: `A*x` has order 1 but `b` has order 0; "
        "`b` is a scalar by matrixcalculus.org's letter rule (undeclared names starting with a-g are scalars, "
        "h-z vectors, A-Z matrices): declare `b 1` or pass orders={'b': 1} to make it a vector"
    )


def test_the_fix_the_message_names_works_both_ways():
    for f in (tc.parse("declare b 1 expression norm2(A*x-b)^2"), tc.parse("norm2(A*x-b)^2", {"b": 1})):
        assert f.variables == {"A": 2, "b": 1, "x": 1}
        g = tc.evaluate(tc.gradient(f, "x"), A=A, x=x, b=b)
        np.testing.assert_allclose(g, 2 * A.T @ (A @ x - b), rtol=1e-12)


def test_declared_and_given_orders_are_named_as_such():
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("declare b 0 expression A*x - b")
    assert info.value.reason.endswith("`b` is declared with order 0: change its declaration to change it")
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("A*x - b", {"b": 2})
    assert info.value.reason.endswith("`b` has order 2 from orders={'b': 2}: pass another order there")
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("inv(y)")
    assert "declare `y 2` or pass orders={'y': 2} to make it a matrix" in info.value.reason


def test_names_the_letter_rule_cannot_type_say_how_to_declare_them():
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("_t * x")
    assert "start with a letter" in info.value.reason and "orders={'_t': 1}" in info.value.reason


def test_x_to_the_minus_one_is_the_inverse_in_matrix_notation():
    inverse = tc.inv(tc.var("X", 2))
    assert tc.parse("X^-1") is inverse
    assert tc.parse("X^(-1)") is inverse
    f = tc.parse("y'*X^-1*y")
    np.testing.assert_allclose(tc.evaluate(f, X=X, y=y), y @ np.linalg.solve(X, y), rtol=1e-12)
    g = tc.evaluate(tc.gradient(f, "X"), X=X, y=y)
    Xi = np.linalg.inv(X)
    np.testing.assert_allclose(g, -np.outer(Xi.T @ y, Xi @ y), rtol=1e-10)


@pytest.mark.parametrize("k", [2, 3, -2, 5])
def test_integer_powers_of_a_matrix_are_matrix_powers(k):
    f = tc.parse(f"tr(X^{k})" if k > 0 else f"tr(X^({k}))")
    np.testing.assert_allclose(tc.evaluate(f, X=X), np.trace(np.linalg.matrix_power(X, k)), rtol=1e-10)
    # d tr(X^k)/dX = k (X^(k-1))'
    expected = k * np.linalg.matrix_power(X, k - 1).T
    np.testing.assert_allclose(tc.evaluate(tc.gradient(f, "X"), X=X), expected, rtol=1e-9)


def test_entrywise_powers_stay_entrywise():
    np.testing.assert_allclose(tc.evaluate(tc.parse("X.^-1"), X=X), 1 / X)
    np.testing.assert_allclose(tc.evaluate(tc.parse("X.^2"), X=X), X**2)
    np.testing.assert_allclose(tc.evaluate(tc.parse("y^-1"), y=y), 1 / y)  # vectors: ^ is entrywise
    np.testing.assert_allclose(tc.evaluate(tc.parse("y^2"), y=y), y**2)
    # the einsum language keeps ^ entry by entry (backward compatible)
    np.testing.assert_allclose(tc.evaluate(tc.parse("declare X 2 expression X^2"), X=X), X**2)
    np.testing.assert_allclose(tc.evaluate(tc.parse("X^(-1) *(ij,->ij) 1", {"X": 2}), X=X), 1 / X)


def test_a_matrix_to_a_fractional_power_names_the_entrywise_spelling():
    with pytest.raises(tc.SemanticError) as info:
        tc.parse("X^0.5")
    assert "matrix power" in info.value.reason and "`X.^0.5`" in info.value.reason


def test_eye_and_sized_constants():
    f = tc.parse("y'*(X + eye)*y")
    np.testing.assert_allclose(tc.evaluate(f, X=X, y=y), y @ (X + np.eye(4)) @ y, rtol=1e-12)
    g = tc.parse("eye(y.0)*y + ones(y.0)")
    np.testing.assert_allclose(tc.evaluate(g, y=y), y + 1)
    with pytest.raises(tc.ParseError) as info:
        tc.parse("eye(3)*x")
    assert "eye(x.0)" in info.value.reason and "write eye" in info.value.reason
    with pytest.raises(tc.ParseError) as info:
        tc.parse("ones(3)")
    assert "vector(1)" in info.value.reason


@pytest.mark.parametrize(
    "text, wrt",
    [("sum(y)", "y"), ("sum(X)", "X"), ("y'*X*y - sum(y)", "y"), ("sum(X.^3)", "X"), ("norm2(A*x-b)^2", "A")],
)
def test_printed_ones_read_as_ones_and_parse_back_to_the_same_values(text, wrt):
    f = tc.parse(text, {"b": 1} if "b" in text else None)
    d = tc.derivative(f, wrt)
    printed = tc.to_matrix_notation(d)
    assert "{" not in printed  # no unexplained 1{x.0}
    values = {"A": A, "x": x, "b": b, "X": X, "y": y}
    values = {k: v for k, v in values.items() if k in f.variables}
    again = tc.parse(printed, f.variables)
    np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(d, values), rtol=1e-12)


def test_ones_are_printed_as_ones():
    assert tc.to_matrix_notation(tc.derivative(tc.parse("sum(y)"), "y")) == "ones(y.0)"
    assert tc.to_matrix_notation(tc.derivative(tc.parse("sum(X)"), "X")) == "ones(X.0, X.1)"


def test_python_power_is_accepted_in_text():
    assert tc.parse("y**2") is tc.parse("y^2")
    assert tc.parse("X**-1") is tc.parse("inv(X)")


@pytest.mark.parametrize(
    "name, meaning",
    [
        ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("arcsin", np.arcsin), ("arccos", np.arccos),
        ("arctan", np.arctan), ("exp", np.exp), ("log", np.log), ("tanh", np.tanh), ("abs", np.abs),
        ("sign", np.sign), ("relu", lambda v: np.maximum(v, 0)), ("sqrt", np.sqrt),
    ],
)  # fmt: skip
def test_matrixcalculus_elementwise_functions(name, meaning):
    v = np.array([0.1, 0.3, 0.7]) * (-1 if name in ("sign", "abs", "relu") else 1)
    np.testing.assert_allclose(tc.evaluate(tc.parse(f"sum({name}(y))"), y=v), meaning(v).sum(), rtol=1e-12)


def test_matrixcalculus_matrix_functions():
    values = {"X": X}
    for text, expected in [
        ("sum(X)", X.sum()), ("norm1(X)", np.abs(X).sum()), ("norm2(X)", np.linalg.norm(X)),
        ("tr(X)", np.trace(X)), ("det(X)", np.linalg.det(X)), ("logdet(X)", np.log(np.linalg.det(X))),
        ("sum(inv(X))", np.linalg.inv(X).sum()), ("sum(adj(X))", (np.linalg.det(X) * np.linalg.inv(X)).sum()),
        ("sum(diag(X))", np.trace(X)), ("sum(matrix(2) .* X)", 2 * X.sum()),
        ("sum(vector(1) + diag(X))", 4 + np.trace(X)),
    ]:  # fmt: skip
        np.testing.assert_allclose(tc.evaluate(tc.parse(text), values), expected, rtol=1e-10, err_msg=text)
