"""LaTeX output, compared with formulas written by hand.

Each expected string was written from the mathematics of the expression (which
indices are free, which are summed, which matrix product it is), not copied from
the printer's output.
"""

from __future__ import annotations

import pytest

import tenscalc as tc
from tenscalc.printing.latex import format_name, format_number


def parse(text: str, **orders: int) -> tc.Expr:
    return tc.parse(text, orders)


# --------------------------------------------------------------- index notation

INDEX_CASES = [
    # matrix-vector product: j is summed
    ("A *(ij,j->i) x", {"A": 2, "x": 1}, r"\sum_{j} A_{ij} x_{j}"),
    # x^T A x: nested products flatten into one double sum, indices in reading order
    ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}, r"\sum_{i,j} x_{i} A_{ij} x_{j}"),
    # trace: a repeated index inside one operand
    ("A *(ii,->) 1", {"A": 2}, r"\sum_{i} A_{ii}"),
    # diagonal embedding: a repeated output index is a Kronecker delta
    ("x *(i,->ii) 1", {"x": 1}, r"x_{i} \delta_{ij}"),
    # outer product: nothing summed
    ("x *(i,j->ij) y", {"x": 1, "y": 1}, r"x_{i} y_{j}"),
    # transpose: the free indices swap places
    ("A *(ij,->ji) 1", {"A": 2}, r"A_{ji}"),
    # a sum and a difference keep the same free indices
    ("A + A *(ij,->ji) 1", {"A": 2}, r"A_{ij} + A_{ji}"),
    ("x - y", {"x": 1, "y": 1}, r"x_{i} - y_{i}"),
    # scaling by a scalar variable
    ("c *(,ij->ij) A", {"c": 0, "A": 2}, r"c A_{ij}"),
    # a quotient is a fraction
    ("x / (y + 1)", {"x": 1, "y": 1}, r"\frac{x_{i}}{y_{i} + 1}"),
    # elementwise functions and powers
    ("x^2 + sin(x)", {"x": 1}, r"x_{i}^{2} + \sin\left(x_{i}\right)"),
    ("abs(x) *(i,i->) 1", {"x": 1}, r"\sum_{i} \left|x_{i}\right|"),
    # the delta tensor of order 4 pairs the first half of its indices with the second
    ("delta(2)", {}, r"\delta_{ik} \delta_{jl}"),
    # an order-3 tensor contracted with a vector
    ("T *(ijk,k->ij) x", {"T": 3, "x": 1}, r"\sum_{k} T_{ijk} x_{k}"),
    # matrix functions of a variable
    ("log(det(X))", {"X": 2}, r"\log\left(\det\left(X\right)\right)"),
    ("inv(A) *(ij,jk->ik) B", {"A": 2, "B": 2}, r"\sum_{k} \left(A^{-1}\right)_{ik} B_{kj}"),
    # an index found in one operand only is summed there
    ("A *(ij,j->) v", {"A": 2, "v": 1}, r"\sum_{i,j} A_{ij} v_{j}"),
]


@pytest.mark.parametrize("text,orders,expected", INDEX_CASES)
def test_index_notation(text, orders, expected):
    assert tc.latex(tc.parse(text, orders), notation="index") == expected


# -------------------------------------------------------------- matrix notation

MATRIX_CASES = [
    ("A *(ij,j->i) x", {"A": 2, "x": 1}, r"A x"),
    ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}, r"x^\top A x"),
    ("A + A *(ij,->ji) 1", {"A": 2}, r"A + A^\top"),
    ("A *(ij,kj->ik) B", {"A": 2, "B": 2}, r"A B^\top"),
    ("x *(i,j->ij) y", {"x": 1, "y": 1}, r"x y^\top"),
    ("x *(i,i->) y", {"x": 1, "y": 1}, r"x^\top y"),
    ("X *(ij,i->ij) s", {"X": 2, "s": 1}, r"\operatorname{diag}\left(s\right) X"),
    ("X *(ki,k->ik) s *(ik,kj->ij) X", {"X": 2, "s": 1}, r"X^\top \operatorname{diag}\left(s\right) X"),
    ("A *(ij,ij->ij) B", {"A": 2, "B": 2}, r"A \odot B"),
    ("x *(i,i->i) y", {"x": 1, "y": 1}, r"x \odot y"),
    ("A *(ii,->) 1", {"A": 2}, r"\operatorname{tr}\left(A\right)"),
    ("x *(i,->ii) 1", {"x": 1}, r"\operatorname{diag}\left(x\right)"),
    ("c *(,ij->ij) A", {"c": 0, "A": 2}, r"c A"),
    ("inv(A) *(ij,jk->ik) B - 2 *(,ij->ij) C", {"A": 2, "B": 2, "C": 2}, r"A^{-1} B - 2 C"),
    ("adj(X)", {"X": 2}, r"\operatorname{adj}\left(X\right)"),
    ("A *(ij,jk->ik) B *(ij,ji->) D", {"A": 2, "B": 2, "D": 2}, r"\operatorname{tr}\left(A B D\right)"),
    ("1 *(,ij->) X", {"X": 2}, r"\mathbf{1}^\top X \mathbf{1}"),
    ("(A - B) *(ij,->ji) 1", {"A": 2, "B": 2}, r"A^\top - B^\top"),
    ("x^2", {"x": 1}, r"x^{\circ 2}"),
    ("A *(ij,j->) v", {"A": 2, "v": 1}, r"\mathbf{1}^\top A v"),
]


@pytest.mark.parametrize("text,orders,expected", MATRIX_CASES)
def test_matrix_notation(text, orders, expected):
    assert tc.latex(tc.parse(text, orders), notation="matrix") == expected


def test_auto_prefers_matrix_notation_and_falls_back_to_indices():
    assert tc.latex(parse("A *(ij,j->i) x", A=2, x=1)) == "A x"
    # an order-3 tensor has no matrix reading
    assert tc.latex(parse("T *(ijk,k->ij) x", T=3, x=1)) == r"\sum_{k} T_{ijk} x_{k}"


def test_matrix_notation_refuses_tensors_of_order_three():
    with pytest.raises(tc.TensCalcError, match="no matrix notation"):
        tc.latex(parse("T *(ijk,k->ij) x", T=3, x=1), notation="matrix")


def test_unknown_notation_is_an_error():
    with pytest.raises(tc.TensCalcError, match="notation"):
        tc.latex(parse("x", x=1), notation="tensor")


def test_expr_methods():
    f = parse("A *(ij,j->i) x", A=2, x=1)
    assert f.to_latex() == "A x"
    assert f.to_latex("index") == r"\sum_{j} A_{ij} x_{j}"
    assert f._repr_latex_() == "$A x$"


# ------------------------------------------------------- derivatives read as math


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    f = parse("x *(i,ij->j) A *(j,j->) x", x=1, A=2)
    assert tc.latex(tc.hessian(f, "x")) == r"A + A^\top"
    assert tc.latex(tc.hessian(f, "x"), notation="index") == r"A_{ij} + A_{ji}"


def test_gradient_of_frobenius_norm_is_two_x():
    assert tc.latex(tc.gradient(parse("X *(ij,ij->) X", X=2), "X")) == "2 X"


def test_logistic_regression_hessian_reads_x_transpose_diag_x():
    f = parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1", X=2, y=1, w=1)
    text = tc.latex(tc.hessian(f, "w"), notation="matrix")
    # e ⊙ (e + 1)^-2 - (e + 1)^-1 is simplified to -(e + 1)^-2: σ(1 - σ) = e / (1 + e)^2
    assert text.startswith(r"X^\top \operatorname{diag}\left(")
    assert text.endswith(r"\right) X")
    short = tc.latex(tc.hessian(f, "w"), temporaries=True)
    assert short == (
        r"X^\top \operatorname{diag}\left(t_{0} \odot y^{\circ 2} \oslash "
        r"\left(t_{0} + \mathbf{1}\right)^{\circ 2}\right) X"
        r" \quad\text{where}\quad t_{0} = \exp\left(-y \odot \left(X w\right)\right)"
    )


def test_matrix_factorisation_gradient():
    f = parse("(T - U *(ik,jk->ij) V) *(ij,ij->) (T - U *(ik,jk->ij) V)", T=2, U=2, V=2)
    assert tc.latex(tc.gradient(f, "U")) == r"-2 \left(T - U V^\top\right) V"


# --------------------------------------------------------------------- pieces


def test_numbers_and_names():
    assert format_number(2) == "2"
    assert format_number(2.0) == "2"
    assert format_number(0.5) == "0.5"
    assert format_number(1e-5) == r"1 \cdot 10^{-5}"
    assert format_number(2.5e20) == r"2.5 \cdot 10^{20}"
    assert format_name("x") == "x"
    assert format_name("alpha") == r"\alpha"
    assert format_name("w1") == r"\mathit{w1}"
    assert format_name("my_var") == r"\mathit{my\_var}"


def test_deep_expression_does_not_hit_the_recursion_limit():
    x = tc.var("x", 1)
    e = x
    for _ in range(3000):
        e = tc.tanh(e)
    text = tc.latex(e, notation="index")
    assert text.count(r"\tanh") == 3000
    assert tc.latex(e).count(r"\tanh") == 3000


def test_a_letter_only_a_written_diagonal_mentions_is_named():
    # found by the fuzz harness: the inner diagonal write pairs a letter no factor carries
    e = tc.parse("x *(i,->ii) 1 *(ij,ik->ik) A", {"A": 2, "x": 1})
    assert tc.latex(e, notation="index") == "\\sum_{k} x_{i} A_{ij} \\delta_{ik}"
