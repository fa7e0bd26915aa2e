"""NumPy-style Python on expressions (issue 11): ``@``, ``.T``, ``.sum``, ``tc.sum`` ...
each checked against NumPy at distinct axis lengths; NumPy's functions refused with
the tenscalc spelling; one name with two orders refused."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import assert_derivative

rng = np.random.default_rng(11)
A_, B_ = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
S_ = rng.standard_normal((4, 4)) + 4 * np.eye(4)
x_, y_, u_ = rng.standard_normal(4), rng.standard_normal(3), rng.standard_normal(4)
T_ = rng.standard_normal((2, 3, 4))
ENV = {"A": A_, "B": B_, "S": S_, "x": x_, "y": y_, "u": u_, "T": T_}
A, B, S, T = tc.var("A", 2), tc.var("B", 2), tc.var("S", 2), tc.var("T", 3)
x, y, u = tc.var("x", 1), tc.var("y", 1), tc.var("u", 1)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


CASES = [
    ("A @ x", lambda: A @ x, A_ @ x_),
    ("y @ A", lambda: y @ A, y_ @ A_),
    ("x @ u", lambda: x @ u, x_ @ u_),
    ("A @ B", lambda: A @ B, A_ @ B_),
    ("y @ A @ x", lambda: y @ A @ x, y_ @ A_ @ x_),
    ("A.T", lambda: A.T, A_.T),
    ("x.T", lambda: x.T, x_),
    ("T.T", lambda: T.T, T_.T),
    ("A.sum()", lambda: A.sum(), A_.sum()),
    ("A.sum(axis=0)", lambda: A.sum(axis=0), A_.sum(axis=0)),
    ("T.sum(axis=(0, 2))", lambda: T.sum(axis=(0, 2)), T_.sum(axis=(0, 2))),
    ("tc.sum(T, -1)", lambda: tc.sum(T, -1), T_.sum(-1)),
    ("tc.trace(S)", lambda: tc.trace(S), np.trace(S_)),
    ("tc.diag(S)", lambda: tc.diag(S), np.diag(S_)),
    ("tc.diag(x)", lambda: tc.diag(x), np.diag(x_)),
    ("tc.dot(x, u)", lambda: tc.dot(x, u), np.dot(x_, u_)),
    ("tc.dot(A, B)", lambda: tc.dot(A, B), np.dot(A_, B_)),
    ("tc.dot(2, A)", lambda: tc.dot(2, A), np.dot(2, A_)),
    ("tc.outer(x, y)", lambda: tc.outer(x, y), np.outer(x_, y_)),
    ("tc.norm(x)", lambda: tc.norm(x), np.linalg.norm(x_)),
    ("tc.norm(A)", lambda: tc.norm(A), np.linalg.norm(A_)),
    ("tc.norm(x, 1)", lambda: tc.norm(x, 1), np.linalg.norm(x_, 1)),
    ("tc.sqrt(S * S)", lambda: tc.sqrt(S * S), np.abs(S_)),
    ("tc.sigmoid(x)", lambda: tc.sigmoid(x), _sigmoid(x_)),
    ("tc.softplus(A)", lambda: tc.softplus(A), np.log1p(np.exp(A_))),
    ("tc.logsumexp(x)", lambda: tc.logsumexp(x), np.log(np.exp(x_).sum())),
    ("tc.logsumexp(A, axis=1)", lambda: tc.logsumexp(A, axis=1), np.log(np.exp(A_).sum(axis=1))),
    ("tc.logdet(S)", lambda: tc.logdet(S), np.linalg.slogdet(S_)[1]),
    ("np.float64(2) * x", lambda: np.float64(2) * x, 2 * x_),
]


@pytest.mark.parametrize("label, build, expected", CASES, ids=[c[0] for c in CASES])
def test_builders_agree_with_numpy(label, build, expected):
    expr = build()
    values = {k: v for k, v in ENV.items() if k in expr.variables or k in expr.shape_variables}
    np.testing.assert_allclose(tc.evaluate(expr, values), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tc.compile(expr)(**values), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("label, build, expected", CASES, ids=[c[0] for c in CASES])
def test_builders_differentiate(label, build, expected):
    expr = build()
    for name in expr.variables:
        assert_derivative(expr, name)


def test_matmul_is_the_matrix_notation_dag():
    assert x @ S @ x is tc.parse("x'*S*x")
    assert A @ x is tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})


@pytest.mark.parametrize(
    "call, hint",
    [
        (lambda: np.dot(x, x), "use tc.dot or @"),
        (lambda: np.sum(x), "use tc.sum or .sum()"),
        (lambda: np.transpose(A), "use .T"),
        (lambda: np.trace(S), "use tc.trace"),
        (lambda: np.exp(x), "use tc.exp"),
        (lambda: np.sqrt(x), "use tc.sqrt"),
        (lambda: np.matmul(A, x), "use @"),
        (lambda: np.linalg.norm(x), "use tc.norm"),
        (lambda: np.outer(x, y), "use tc.outer"),
    ],
)
def test_numpy_functions_refuse_with_the_tenscalc_spelling(call, hint):
    with pytest.raises(TypeError) as info:
        call()
    assert hint in str(info.value)


def test_nothing_becomes_an_object_array():
    with pytest.raises(TypeError, match="tc.evaluate"):
        np.asarray(x)
    with pytest.raises(TypeError, match="NumPy array"):
        np.ones(4) * x
    with pytest.raises(tc.SemanticError, match="cannot use array"):  # Expr on the left: tenscalc's own error
        x + np.ones(4)


def test_matmul_refusals():
    with pytest.raises(tc.SemanticError, match="orders 1 and 2"):
        T @ x
    with pytest.raises(tc.SemanticError, match="orders 1 and 2"):
        tc.var("c", 0) @ x
    with pytest.raises(tc.SemanticError, match="out of range"):
        A.sum(axis=2)
    with pytest.raises(tc.SemanticError, match="two vectors"):
        tc.outer(A, x)


def test_one_name_with_two_orders_is_refused():
    x0 = tc.var("x", 0)
    for build in (lambda: x + x0 * x, lambda: x0 * x, lambda: x @ tc.var("x", 2), lambda: tc.einsum("i,->i", x, x0)):
        with pytest.raises(tc.SemanticError, match="'x' is used with two different orders, 0 and 1|0 and 2|1 and 2"):
            build()
