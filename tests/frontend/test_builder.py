"""The Python builder API builds the very same interned DAG as the language."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {"A": 2, "B": 2, "X": 2, "x": 1, "y": 1, "w": 1, "c": 0, "d": 0, "T": 3}


def P(text: str):
    return tc.parse(text, ORDERS)


A, B, X = tc.var("A", 2), tc.var("B", 2), tc.var("X", 2)
x, y, w = tc.var("x", 1), tc.var("y", 1), tc.var("w", 1)
c, d = tc.var("c", 0), tc.var("d", 0)
T = tc.var("T", 3)


def test_var():
    assert x is P("x")
    assert tc.var("x", 1) is x
    assert tc.var("x", 2) is not x
    assert (x.op, x.arg, x.children, x.order) == ("var", ("x", 1), (), 1)
    assert tc.var("w1", 3).order == 3


@pytest.mark.parametrize("name", ["1x", "x y", "", "exp", "Sin", "delta", "wrt", "DECLARE", "x-y", "é"])
def test_var_rejects_bad_names(name):
    with pytest.raises(tc.SemanticError):
        tc.var(name, 1)


@pytest.mark.parametrize("order", [-1, 1.5, True, "1", None])
def test_var_rejects_bad_orders(order):
    with pytest.raises(tc.SemanticError):
        tc.var("x", order)


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda: x + y, "x + y"),
        (lambda: x - y, "x - y"),
        (lambda: -x, "-x"),
        (lambda: -(-x), "--x"),  # noqa: B002 - a double negation, not a decrement
        (lambda: +x, "x"),
        (lambda: x - -y, "x - -y"),
        (lambda: x + y - w, "x + y - w"),
        (lambda: x * y, "x *(i,i->i) y"),
        (lambda: A * B, "A *(ij,ij->ij) B"),
        (lambda: x / y, "x / y"),
        (lambda: x**2, "x^2"),
        (lambda: x**c, "x^c"),
        (lambda: x**2.5, "x^2.5"),
        (lambda: x**-1, "x^(-1)"),
        (lambda: (x**2) ** 3, "x^2^3"),
        (lambda: -(x**2), "-x^2"),
        (lambda: (-x) ** 2, "(-x)^2"),
        (lambda: x ** (c + 1), "x^(c + 1)"),
    ],
)
def test_operators(build, text):
    assert build() is P(text)


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda: c * A, "c *(,ij->ij) A"),
        (lambda: A * c, "A *(ij,->ij) c"),
        (lambda: c * x, "c *(,i->i) x"),
        (lambda: c * d, "c *(,->) d"),
        (lambda: tc.det(A) * T, "det(A) *(,ijk->ijk) T"),
    ],
)
def test_multiplication_by_an_order_0_operand_is_scaling(build, text):
    assert build() is P(text)


@pytest.mark.parametrize(
    "build, text",
    [
        (lambda: 2 * x, "2 *(,i->i) x"),
        (lambda: x * 2, "x *(i,->i) 2"),
        (lambda: 2.5 * A, "2.5 *(,ij->ij) A"),
        (lambda: c * 2, "c *(,->) 2"),
        (lambda: x + 1, "x + 1"),
        (lambda: 1 + x, "1 + x"),
        (lambda: x - 1, "x - 1"),
        (lambda: 1 - x, "1 - x"),
        (lambda: x + 1.0, "x + 1.0"),
        (lambda: x + -2, "x + -2"),
        (lambda: x / 2, "x / 2"),
        (lambda: 2 / x, "2 / x"),
        (lambda: 2**c, "2^c"),
        (lambda: A + 1, "A + 1"),
        (lambda: (A + 1) * X, "(A + 1) *(ij,ij->ij) X"),
        (lambda: np.float64(2.0) * x, "2.0 *(,i->i) x"),
        (lambda: x + np.int64(2), "x + 2"),
    ],
)
def test_numbers_on_either_side(build, text):
    assert build() is P(text)


def test_chained_sums_are_the_parsers_flat_sum():
    orders = {f"v{k}": 1 for k in range(20)}
    terms = [tc.var(f"v{k}", 1) for k in range(20)]
    built = terms[0]
    text = "v0"
    for k in range(1, 20):
        if k % 3:
            built, text = built + terms[k], f"{text} + v{k}"
        else:
            built, text = built - terms[k], f"{text} - v{k}"
    assert built is tc.parse(text, orders)
    assert len(built.children) == 20
    # a sum on the right came from parentheses and stays a sum of its own
    assert x - (y + w) is P("x - (y + w)")
    assert x - (y + w) is not P("x - y + w")


def test_int_and_float_numbers_stay_distinct():
    assert x + 1 is not x + 1.0
    assert (x + 1).children[1] is tc.constant(1, 1, x.dims)


def test_einsum_with_two_operands():
    assert tc.einsum("ij,j->i", A, x) is P("A *(ij,j->i) x")
    assert tc.einsum("ab,b->a", A, x) is P("A *(ij,j->i) x")
    assert tc.einsum("i,i->", x, y) is P("x *(i,i->) y")
    assert tc.einsum("i,j->ij", x, y) is P("x *(i,j->ij) y")
    assert tc.einsum("ik,kj->ij", A, B) is P("A *(ik,kj->ij) B")
    assert tc.einsum("ii,->", A, 1) is P("A *(ii,->) 1")
    assert tc.einsum("ij,->ji", A, 1) is P("A *(ij,->ji) 1")
    assert tc.einsum("i,->ii", x, 1) is P("x *(i,->ii) 1")
    assert tc.einsum(",ij->ij", c, A) is P("c *(,ij->ij) A")
    assert tc.einsum("ij, j -> i", A, x) is P("A *(ij,j->i) x")
    # a number takes the order of its index string
    assert tc.einsum("ij,j->i", A + 1, 1) is P("(A + 1) *(ij,j->i) 1")
    assert tc.einsum("ij,j->i", A + 1, 1).children[1] is tc.constant(1, 1, A.dims[1:])


def test_einsum_with_three_operands_is_the_left_nested_chain():
    assert tc.einsum("i,ij,j->", x, A, x) is P("x *(i,ij->j) A *(j,j->) x")
    assert tc.einsum("ij,jk,kl->il", A, B, X) is P("A *(ij,jk->ik) B *(ik,kl->il) X")
    # letters needed later are kept by the intermediate product
    assert tc.einsum("ij,jk,ik->", A, B, X) is P("A *(ij,jk->ik) B *(ik,ik->) X")
    assert tc.einsum("i,j,k->ijk", x, y, w) is P("x *(i,j->ij) y *(ij,k->ijk) w")
    assert tc.einsum("ijk,k,j->i", T, x, y) is P("T *(ijk,k->ij) x *(ij,j->i) y")


def test_einsum_with_one_operand():
    e = tc.einsum("ij->ji", A)
    assert e.op == "mul" and e.children == (A,) and e.arg == (((0, 1),), (1, 0)) and e.order == 2
    assert str(e) == "A *(ij,->ji) 1"


@pytest.mark.parametrize(
    "spec, operands",
    [
        ("ij,...", (A, x)),  # an ellipsis (an implicit output, "ij,j", is NumPy's: see test_numpy_spellings)
        ("ij,j->i", (A,)),  # too few operands
        ("ij,j->i", (A, x, y)),  # too many operands
        ("iJ,J->i", (A, x)),  # uppercase
        ("i,j->i", (A, x)),  # A has order 2
        ("ij,j->k", (A, x)),  # k in no input
        ("ij,j->i", (A, "x")),  # not an operand
    ],
)
def test_einsum_errors(spec, operands):
    with pytest.raises(tc.SemanticError):
        tc.einsum(spec, *operands)


FUNCTIONS = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log", "abs", "sign", "relu"]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_elementwise_functions(name):
    f = getattr(tc, name)
    assert f(x) is P(f"{name}(x)")
    assert f(A + 1) is P(f"{name}(A + 1)")
    assert f(2) is P(f"{name}(2)")  # a number alone is a scalar
    assert f.__name__ == name


def test_matrix_functions():
    assert tc.inv(A) is P("inv(A)")
    assert tc.det(A) is P("det(A)")
    assert tc.adj(A) is P("adj(A)")
    assert tc.log(tc.det(X)) is P("log(det(X))")
    assert tc.inv(A * B) is P("inv(A *(ij,ij->ij) B)")
    for f in (tc.inv, tc.det, tc.adj):
        with pytest.raises(tc.SemanticError, match="square matrix"):
            f(x)


def test_delta_and_constants():
    assert tc.delta(0) is P("delta")
    assert tc.delta(1) is P("delta(1)")
    assert tc.delta(2) is P("delta(2)")
    assert tc.delta(1) + A is P("delta(1) + A")
    assert tc.constant(2, 1) + x is P("x + 2")
    assert tc.constant(2.0) is P("2.")
    assert tc.log(tc.constant(2, 2)) + X is P("X + log(2)")


def test_larger_expressions_match_the_language():
    logistic = tc.einsum("i,i->", tc.log(tc.exp(-(y * tc.einsum("ij,j->i", X, w))) + 1), 1)
    assert logistic is P("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1")
    r = A - tc.einsum("ik,jk->ij", B, X)
    assert tc.einsum("ij,ij->", r, r) is P("(A - B *(ik,jk->ij) X) *(ij,ij->) (A - B *(ik,jk->ij) X)")
    assert tc.einsum("i,ij,j->", x, A, x) / c - 2 * tc.sin(c) ** d is P(
        "x *(i,ij->j) A *(j,j->) x / c - 2 *(,->) sin(c)^d"
    )


@pytest.mark.parametrize(
    "build",
    [
        # (x + A, x * A ...: NumPy's broadcasting, see test_numpy_spellings)
        lambda: x**y,
        lambda: x + "1",
        lambda: x * [1, 2],
        lambda: tc.sin("x"),
    ],
)
def test_builder_errors(build):
    with pytest.raises(tc.SemanticError):
        build()


def test_negated_constant_is_the_negative_constant():
    assert -tc.constant(2) is P("-2")
