"""One matrix reading, two spellings (issue 28, item 2).

``tc.latex`` and ``tc.to_matrix_notation`` both render the reading of
:mod:`tenscalc.printing.matrix_reading`, so they show the same structure: a
``diag`` in one is a ``diag`` in the other, a transposed variable in one is
transposed in the other, traces, entrywise products and quotients, and norms
alike.  Over the printing corpora (the LaTeX cases, matrixcalculus.org's
examples, the textbook echoes, generated problems) and their first and second
derivatives, this checks that agreement on the printed strings, and that the
matrix-notation text parses back to an expression of the same value at random
data with distinct axis lengths.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.printing.matrix_reading import Chain, Diag, Leaf, read_norm, read_product, structure
from tenscalc.testing import random_values
from tests.frontend.test_matrix_notation import MATRIXCALCULUS_EXAMPLES, MORE
from tests.fuzz.generate import generate
from tests.printing.test_latex import MATRIX_CASES
from tests.simplifier.test_textbook_forms import READER_FORMS

# Matrix Cookbook identities (Petersen & Pedersen, section 2): expression, variable, the
# derivative as the Cookbook writes it (in matrix notation, written by hand)
COOKBOOK = [
    ("tr(A*X*B)", "X", "A'*B'"),  # (101)
    ("tr(X'*A*X)", "X", "A*X + A'*X"),  # (109)
    ("u'*X*v", "X", "u*v'"),  # (70)
    ("u'*X'*X*v", "X", "X*(u*v' + v*u')"),  # (77)
    ("logdet(X)", "X", "inv(X)'"),  # (57)
    ("tr(inv(X)*A)", "X", "-(inv(X)'*A'*inv(X)')"),  # (113)
    ("u'*inv(X)*v", "X", "-(inv(X)'*u*v'*inv(X)')"),  # (61)
    ("tr(X*A*X*B)", "X", "A'*X'*B' + B'*X'*A'"),  # (110)
    ("det(X)", "X", "det(X)*inv(X)'"),  # (49)
    ("norm2(A*x - y)^2", "x", "2*A'*(A*x - y)"),  # (84)
    ("(A*x - y)'*W*(A*x - y)", "x", "A'*(W + W')*(A*x - y)"),  # (86)
    ("x'*B*x/(x'*x)", "x", "(B + B')*x/(x'*x) - 2*(x'*B*x)/(x'*x)^2*x"),
]

LOGISTIC = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
LOGISTIC_ORDERS = {"y": 1, "X": 2, "w": 1}


def _corpus() -> list[tuple[str, tc.Expr, tc.Expr]]:
    """(name, expression, the source it derives from) for every expression of the corpora
    and its derivatives."""
    sources: list[tuple[str, tc.Expr]] = [(t, tc.parse(t)) for t in MATRIXCALCULUS_EXAMPLES + MORE]
    sources += [(t, tc.parse(t, o)) for t, o, _ in MATRIX_CASES]
    sources += [(form[0], tc.parse(form[0])) for form in READER_FORMS]
    sources += [(text, tc.parse(text)) for text, _, _ in COOKBOOK]
    sources.append((LOGISTIC, tc.parse(LOGISTIC, LOGISTIC_ORDERS)))
    for seed in range(40):
        problem = generate(seed)
        sources.append((problem.text, tc.parse(problem.text, problem.orders)))
    corpus = []
    for text, f in sources:
        corpus.append((text, f, f))
        for name in sorted(f.variables):
            corpus.append((f"d({text})/d{name}", tc.derivative(f, name), f))
            if f.order == 0:
                corpus.append((f"d2({text})/d{name}2", tc.nth_derivative(f, name, 2), f))
    return corpus


CORPUS = _corpus()


def _latex_matrix(expr: tc.Expr) -> str | None:
    """The LaTeX in matrix notation, or None where the expression has none."""
    try:
        return tc.latex(expr, notation="matrix")
    except tc.TensCalcError:
        return None


# what each printer writes for a piece of structure: (LaTeX pattern, text pattern)
SHOWN_ALIKE = {
    "diag": (r"\\operatorname\{diag\}", r"\bdiag\("),
    "trace": (r"\\operatorname\{tr\}", r"\btr\("),
    "entrywise product": (r"\\odot", r"\.\*"),
    "entrywise quotient": (r"\\oslash", r"\./"),
    "norm": (r"\\\|", r"\bnorm2\("),
}


def _single_letter_variables(expr: tc.Expr) -> list[str]:
    return [name for name, order in expr.variables.items() if len(name) == 1 and order in (1, 2)]


@pytest.mark.parametrize("name, expr, source", CORPUS, ids=[f"{k}" for k in range(len(CORPUS))])
def test_latex_and_matrix_notation_show_the_same_structure(name, expr, source):
    latex = _latex_matrix(expr)
    text = tc.to_matrix_notation(expr)
    if latex is None or " *(" in text:
        return  # a part with no matrix reading: index notation and the einsum language write it
    for what, (in_latex, in_text) in SHOWN_ALIKE.items():
        assert bool(re.search(in_latex, latex)) == bool(re.search(in_text, text)), (what, latex, text)
    for v in _single_letter_variables(expr):
        # a transposed variable: X^\top in LaTeX, X' in the text
        transposed_in_latex = bool(re.search(rf"(?<![\\\w]){v}\^\\top", latex))
        transposed_in_text = bool(re.search(rf"(?<![\w.]){v}'", text))
        assert transposed_in_latex == transposed_in_text, (v, latex, text)


def test_the_corpus_reads_mostly_as_matrices():
    """The agreement test above must not pass by skipping: most of the corpus has both spellings."""
    both = [e for _, e, _ in CORPUS if _latex_matrix(e) is not None and " *(" not in tc.to_matrix_notation(e)]
    assert len(both) >= 0.6 * len(CORPUS), (len(both), len(CORPUS))
    kinds = {read_product(e).kind for e in both if read_product(e) is not None}
    assert kinds == {"scalar", "column", "matrix"}


@pytest.mark.parametrize("name, expr, source", CORPUS, ids=[f"{k}" for k in range(len(CORPUS))])
def test_matrix_notation_parses_back_to_the_same_values(name, expr, source):
    printed = tc.to_matrix_notation(expr)
    again = tc.parse(printed, source.variables)  # a derivative may have lost a variable: the source's orders
    assert again.order == expr.order, printed
    values = random_values(source, seed=3)
    np.testing.assert_allclose(
        tc.evaluate(again, values), tc.evaluate(expr, values), rtol=1e-9, atol=1e-11, err_msg=printed
    )


def test_the_logistic_hessian_is_x_transposed_diag_x_in_both():
    """The reported disagreement: the LaTeX read Xᵀ diag(…) X, the text an einsum chain."""
    f = tc.parse(LOGISTIC, LOGISTIC_ORDERS)
    h = tc.nth_derivative(f, "w", 2)
    reading = read_product(h)
    assert reading is not None and reading.kind == "matrix"
    assert isinstance(reading.term, Chain) and len(reading.term.factors) == 3
    first, middle, last = reading.term.factors
    assert first == Leaf(tc.var("X", 2), transposed=True) and isinstance(middle, Diag) and last == Leaf(tc.var("X", 2))
    assert "diag" in structure(reading.term) and "transpose" in structure(reading.term)
    latex, text = tc.latex(h), tc.to_matrix_notation(h)
    assert latex.startswith(r"X^\top \operatorname{diag}\left(") and latex.endswith(r"\right) X")
    assert text.startswith("X'*diag(") and text.endswith(")*X") and " *(" not in text
    # the text means the Hessian: Xᵀ diag(σ'(…)) X at data whose axes have distinct lengths
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((5, 3)), np.sign(rng.standard_normal(5)), rng.standard_normal(3)
    s = 1 / (1 + np.exp(y * (X @ w)))  # σ(-y xᵀw)
    expected = X.T @ np.diag(s * (1 - s) * y**2) @ X
    got = tc.evaluate(tc.parse(text, LOGISTIC_ORDERS), X=X, y=y, w=w)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(h, X=X, y=y, w=w), expected, rtol=1e-12)


@pytest.mark.parametrize("text, wrt, cookbook", COOKBOOK)
def test_cookbook_derivatives_print_as_matrices_of_the_cookbooks_value(text, wrt, cookbook):
    """Each Cookbook derivative prints in matrix notation in both printers (no index notation,
    no einsum language), and the printed text has the value of the Cookbook's formula."""
    f = tc.parse(text)
    d = tc.derivative(f, wrt)
    printed = tc.to_matrix_notation(d)
    assert " *(" not in printed and _latex_matrix(d) is not None
    values = random_values(f, seed=5)
    reference = tc.evaluate(tc.parse(cookbook, f.variables), values)
    np.testing.assert_allclose(tc.evaluate(tc.parse(printed, f.variables), values), reference, rtol=1e-10)


@pytest.mark.parametrize(
    "text, orders, latex, matrix",
    [
        (
            "X *(ki,k->ik) s *(ik,kj->ij) X",
            {"X": 2, "s": 1},
            r"X^\top \operatorname{diag}\left(s\right) X",
            "X'*diag(s)*X",
        ),
        ("X *(ij,i->ij) s", {"X": 2, "s": 1}, r"\operatorname{diag}\left(s\right) X", "diag(s)*X"),
        ("A *(ii,->) 1", {"A": 2}, r"\operatorname{tr}\left(A\right)", "tr(A)"),
        ("x *(i,->ii) 1", {"x": 1}, r"\operatorname{diag}\left(x\right)", "diag(x)"),
        (
            "A *(ij,jk->ik) B *(ij,ji->) D",
            {"A": 2, "B": 2, "D": 2},
            r"\operatorname{tr}\left(A B D\right)",
            "tr(A*B*D)",
        ),
        ("1 *(,ij->) X", {"X": 2}, r"\mathbf{1}^\top X \mathbf{1}", "sum(X)"),
        ("A *(ij,->ji) 1", {"A": 2}, r"A^\top", "A'"),
        ("x / (y + 1)", {"x": 1, "y": 1}, r"x \oslash \left(y + \mathbf{1}\right)", "x ./ (y + ones(y.0))"),
        ("X *(ij,ij->) X", {"X": 2}, r"\left\|X\right\|_F^{2}", "norm2(X)^2"),
    ],
)
def test_both_spellings_of_one_reading(text, orders, latex, matrix):
    """Each expected string written from the mathematics: the same reading, two spellings."""
    f = tc.parse(text, orders)
    assert tc.latex(f) == latex
    assert tc.to_matrix_notation(f) == matrix


@pytest.mark.parametrize("exponent", ["1e308", "-1e308", "1.7976931348623157e308", "-1.7976931348623157e308"])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_a_power_whose_double_overflows_prints(exponent, order):
    # the norm reading doubles the exponent (an odd multiple of 1/2 is a norm's power):
    # 2 * 1e308 is inf, and int(inf) raised OverflowError from str, repr and latex
    # (found by the seeded fuzz campaign, seed 2611)
    expr = tc.parse(f"x .^ {exponent}", {"x": order})
    assert "x" in str(expr) and "x" in tc.latex(expr) and "x" in tc.to_matrix_notation(expr)
    assert read_norm(expr) is None
