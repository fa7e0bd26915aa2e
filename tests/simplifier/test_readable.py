"""Readable derivatives: named temporaries, plain matrix text, the CLI's printers
and the simplifications that make σ(1 − σ) appear.

Printed forms are checked by meaning wherever possible: the text with its
temporaries substituted back is parsed and evaluated against NumPy.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

import tenscalc as tc
from tenscalc import cli
from tenscalc.printing.latex import matrix_text
from tenscalc.printing.text import to_text
from tenscalc.simplifier import RULES
from tenscalc.simplifier.rules_functions import adj_rank_one, det_rank_one, inv_of_inv, pow_of_pow
from tenscalc.simplifier.rules_products import (
    mul_cancel_inverse,
    mul_distribute_cancelling_sum,
    mul_distribute_delta_sum,
    mul_distribute_power,
    mul_divide_sum,
    mul_inverse_of_rank_one,
    mul_sign_over_abs,
    mul_sign_times_self,
    mul_sort_operands,
)
from tenscalc.simplifier.rules_sums import add_cancel_over_square, add_cancel_power, add_complement_of_reciprocal
from tenscalc.testing import check_derivative, random_values

LOGISTIC = "log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1"
LOGISTIC_ORDERS = {"X": 2, "y": 1, "w": 1}
SHAPES = {"X": (5, 3), "y": (5,), "w": (3,)}  # distinct lengths
# binary cross-entropy through sigmoids, as a user writes it in the language
BCE = "-(y *(i,i->) log(1 / (1 + exp(-(X *(ij,j->i) w)))) + (1 - y) *(i,i->) log(1 - 1 / (1 + exp(-(X *(ij,j->i) w)))))"


def _logistic_values(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal(shape) for name, shape in SHAPES.items()}


def _substitute(text: str) -> str:
    """``t0 = a`` / ``t1 = ...t0...`` / ``main`` -> ``main`` with every name replaced."""
    *definitions, main = text.split("\n")
    for line in reversed(definitions):
        name, _, body = line.partition(" = ")
        main = re.sub(rf"\b{name}\b", f"({body})", main)
    for line in definitions:  # earlier names used inside later definitions
        name, _, body = line.partition(" = ")
        main = re.sub(rf"\b{name}\b", f"({body})", main)
    return main


# ------------------------------------------------------------------ temporaries


@pytest.mark.parametrize("which", ["gradient", "hessian"])
def test_text_temporaries_mean_the_same(which):
    f = tc.parse(LOGISTIC, LOGISTIC_ORDERS)
    d = getattr(tc, which)(f, "w")
    text = to_text(d, temporaries=True)
    assert text.count("\n") >= 1 and text.startswith("t0 = ")
    assert len(text) < len(str(d))
    again = tc.parse(_substitute(text), LOGISTIC_ORDERS)
    values = _logistic_values()
    np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(d, values), rtol=1e-12)


def test_temporaries_only_where_something_repeats():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    assert to_text(f, temporaries=True) == str(f)
    assert tc.latex(f, temporaries=True) == tc.latex(f)


def test_short_repeated_parts_are_not_named():
    # diag(x) twice reads better than t_0 twice plus its definition
    f = tc.parse("x *(i,->ii) 1 *(ij,j->i) e *(i,i->) (x *(i,->ii) 1 *(ij,i->j) e)", {"x": 1, "e": 1})
    assert tc.latex(f, temporaries=True) == tc.latex(f)
    assert matrix_text(f) == "eᵀ diag(x) diag(x) e"


def test_temporary_names_avoid_variable_names():
    f = tc.parse("exp(t0 *(ij,j->i) x) *(i,i->) exp(t0 *(ij,j->i) x) + 1", {"t0": 2, "x": 1})
    text = to_text(f + f, temporaries=True)
    assert text.startswith("tmp0 = ")


def test_latex_temporaries_shorten_the_logistic_hessian():
    H = tc.hessian(tc.parse(LOGISTIC, LOGISTIC_ORDERS), "w")
    plain, named = tc.latex(H), tc.latex(H, temporaries=True)
    formula, _, definitions = named.partition(r" \quad\text{where}\quad ")
    assert formula.count("t_{0}") == 2 and r"\exp" not in formula
    assert definitions == r"t_{0} = \exp\left(-y \odot \left(X w\right)\right)"
    assert plain.count(r"\exp") == 2  # the shared exponential, written out twice
    assert H._repr_latex_() == f"${named}$"  # notebooks show the named form


# ------------------------------------------------------------- plain matrix text


@pytest.mark.parametrize(
    "text, orders, expected",
    [
        ("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}, "xᵀ A x"),
        ("inv(X) *(ij,jk->ik) A", {"X": 2, "A": 2}, "X⁻¹ A"),
        ("x *(i,i->i) y", {"x": 1, "y": 1}, "x ⊙ y"),
    ],
)
def test_matrix_text(text, orders, expected):
    assert matrix_text(tc.parse(text, orders)) == expected


def test_matrix_text_of_order_three_is_none():
    assert matrix_text(tc.parse("T *(ijk,k->ij) x", {"T": 3, "x": 1})) is None


# ---------------------------------------------------------------------- the CLI

PROBLEM = f"declare X 2 y 1 w 1 expression {LOGISTIC} derivative wrt w"


def _run(capsys, *args):
    status = cli.main(list(args))
    captured = capsys.readouterr()
    assert captured.err == ""
    return status, captured.out


def test_cli_latex(capsys):
    status, out = _run(capsys, "--latex", "--hessian", PROBLEM)
    assert status == 0
    problem = tc.parse_problem(PROBLEM)
    H = tc.hessian(problem.expr, "w")
    assert tc.latex(H, temporaries=True) in out
    assert tc.latex(problem.expr, temporaries=True) in out


def test_cli_latex_einsum_is_index_notation(capsys):
    status, out = _run(capsys, "--latex", "--notation", "einsum", "--orders", "A=2,x=1", "A *(ij,j->i) x")
    assert status == 0 and r"\sum_{j} A_{ij} x_{j}" in out


def test_cli_matrix_notation_and_its_fallback(capsys):
    # --notation matrix writes text that parses back (the matrix-notation front end), so
    # a derivative with a matrix form reads as one ...
    quadratic = "declare x 1 A 2 expression x *(i,ij->j) A *(j,j->) x derivative wrt x"
    status, out = _run(capsys, "--notation", "matrix", "--hessian", quadratic)
    assert status == 0 and "A'*x + A*x" in out and "A' + A" in out
    # ... the LaTeX matrix form names shared parts ...
    status, out = _run(capsys, "--latex", "--notation", "matrix", "--hessian", PROBLEM)
    assert status == 0 and "X^\\top" in out and "t_{0}" in out
    # ... and order 4 has no matrix notation: the einsum language instead
    logdet = "declare X 2 expression log(det(X)) derivative wrt X"
    status, out = _run(capsys, "--notation", "matrix", "--hessian", logdet)
    assert status == 0 and "inv(X) *(" in out


def test_cli_python_prints_working_code(capsys):
    status, out = _run(capsys, "--python", "--hessian", PROBLEM)
    assert status == 0
    source = out[out.index("# Generated by tenscalc") :]
    assert "tenscalc" not in source.replace("# Generated by tenscalc", "")
    namespace: dict = {}
    exec(compile(source, "<cli --python>", "exec"), namespace)
    values = _logistic_values(3)
    value, gradient, hessian = namespace["f"](**values)
    X, y, w = values["X"], values["y"], values["w"]
    s = 1 / (1 + np.exp(y * (X @ w)))
    np.testing.assert_allclose(value, np.sum(np.log1p(np.exp(-y * (X @ w)))), rtol=1e-12)
    np.testing.assert_allclose(gradient, -X.T @ (y * s), rtol=1e-12)
    np.testing.assert_allclose(hessian, X.T @ np.diag(s * (1 - s) * y**2) @ X, rtol=1e-12)


# ------------------------------------------------------------- simplifications


def _without(rule) -> dict:
    # add_cancel_power is add_cancel_over_square for any exponent: the sigma rule's cases
    # need both removed to be seen undone
    removed = {rule, add_cancel_power} if rule is add_cancel_over_square else {rule}
    table = {op: [r for r in rules if r not in removed] for op, rules in RULES.items()}
    return table


def _raw_hessian(text, orders, wrt):
    return tc.derivative(tc.derivative(tc.parse(text, orders), wrt), wrt, simplify=False)


def test_sigma_one_minus_sigma_rule():
    # e ⊙ (e+1)^-2 - (e+1)^-1 -> -(e+1)^-2
    raw = _raw_hessian(LOGISTIC, LOGISTIC_ORDERS, "w")
    before = tc.simplify(raw, _without(add_cancel_over_square))
    after = tc.simplify(raw)
    assert (tc.count_nodes(before), tc.count_nodes(after)) == (18, 13)
    values = _logistic_values(1)
    np.testing.assert_allclose(tc.evaluate(after, values), tc.evaluate(before, values), rtol=1e-12)
    f = tc.parse(LOGISTIC, LOGISTIC_ORDERS)
    assert check_derivative(f, "w", order=2).ok


def test_sigma_rule_needs_matching_coefficients():
    # 2 e ⊙ (e+1)^-2 - (e+1)^-1 is not -(e+1)^-2: it must stay
    u = tc.exp(tc.var("x", 1))
    q = u + 1
    expr = 2 * (u * q**-2) - q**-1
    values = {"x": np.array([0.3, -1.2, 2.0])}
    e = np.exp(values["x"])
    np.testing.assert_allclose(tc.evaluate(tc.simplify(expr), values), 2 * e / (e + 1) ** 2 - 1 / (e + 1))
    matching = u * q**-2 - q**-1
    np.testing.assert_allclose(tc.evaluate(tc.simplify(matching), values), -1 / (e + 1) ** 2)
    assert tc.count_nodes(tc.simplify(matching)) < tc.count_nodes(matching)


def test_simplified_values_match_the_oracle_for_the_sigma_rule():
    import sympy

    from tenscalc.oracle import exact_mismatches

    f = tc.parse("log(exp(x) + 1) *(i,i->) 1", {"x": 1})
    g = tc.gradient(f, "x")
    point = {"x": np.array([sympy.Rational(1, 3), sympy.Rational(-2, 5)], dtype=object)}
    assert exact_mismatches(g, "x", point, tc.derivative(g, "x")) == []


# each rule: (the rule, an expression, its orders, wrt, nodes of the simplified
# second derivative without the rule, with it)
RULE_CASES = [
    (inv_of_inv, "inv(inv(X)) *(ij,ij->) X", {"X": 2}, "X"),
    (mul_cancel_inverse, "X *(ij,jk->ik) inv(X) *(ik,k->i) y *(i,i->) y", {"X": 2, "y": 1}, "y"),
    (mul_distribute_power, "p *(i,i->) log(p / q)", {"p": 1, "q": 1}, "q"),
    (pow_of_pow, "p *(i,i->) log(p / q)", {"p": 1, "q": 1}, "q"),
    (add_cancel_over_square, "log(exp(x) + 1) *(i,i->) 1", {"x": 1}, "x"),
    # (log|det X| was this rule's case; mul_sign_over_abs now writes sign(d)/|d| as 1/d there too)
    (mul_sign_times_self, "abs(x) *(i,i->) x", {"x": 1}, "x"),
    (mul_sign_over_abs, "log(abs(x)) *(i,->) 1", {"x": 1}, "x"),
    (mul_sort_operands, "X *(ij,jk->ik) X *(ik,ki->) X", {"X": 2}, "X"),
    (add_cancel_power, "(x *(i,i->i) x + 0.01)^0.5 *(i,->) 1", {"x": 1}, "x"),
    # det's derivative is adj (exact at singular matrices): det itself is met where it is a factor,
    # inv where the derivative divides by det (log det)
    (det_rank_one, "det(delta(1) + x *(i,j->ij) x) *(,i->) x", {"x": 1}, "x"),
    (adj_rank_one, "det(delta(1) + x *(i,j->ij) x)", {"x": 1}, "x"),
    (add_complement_of_reciprocal, BCE, LOGISTIC_ORDERS, "w"),
    (mul_distribute_cancelling_sum, BCE, LOGISTIC_ORDERS, "w"),
    (mul_divide_sum, BCE, LOGISTIC_ORDERS, "w"),
]


def test_sherman_morrison_gives_the_textbook_log_det_gradient():
    # d log det(I + x xᵀ) / dx = 2 (I + x xᵀ)⁻¹ x = 2 x / (1 + xᵀx): mul_inverse_of_rank_one writes
    # the second (since det's derivative is adj, it no longer shrinks a derivative of det(I + x xᵀ)
    # itself, which adj_rank_one simplifies to 2 x)
    from tenscalc.oracle import exact_mismatches

    f = tc.parse("log(det(delta(1) + x *(i,j->ij) x))", {"x": 1})
    grad = tc.gradient(f, "x")
    assert "inv" not in str(grad) and "inv" in str(
        tc.simplify(tc.derivative(f, "x", simplify=False), _without(mul_inverse_of_rank_one))
    )
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(tc.evaluate(grad, x=x), 2 * x / (1 + x @ x), rtol=1e-13)
    point = {"x": np.array([Fraction(2, 7), Fraction(-3, 7), Fraction(5, 7)], dtype=object)}
    assert exact_mismatches(f, "x", point, grad) == []


@pytest.mark.parametrize("rule, text, orders, wrt", RULE_CASES, ids=[c[0].__name__ for c in RULE_CASES])
def test_rule_shrinks_and_keeps_values(rule, text, orders, wrt):
    f = tc.parse(text, orders)
    shrunk = False
    for raw in (tc.derivative(f, wrt, simplify=False), _raw_hessian(text, orders, wrt)):
        before = tc.simplify(raw, _without(rule))
        after = tc.simplify(raw)
        values = random_values(f, seed=5, low=0.2, high=0.9)  # p, q > 0 for the logarithms
        np.testing.assert_allclose(tc.evaluate(after, values), tc.evaluate(before, values), rtol=1e-10)
        assert tc.count_nodes(after) <= tc.count_nodes(before)
        shrunk = shrunk or tc.count_nodes(after) < tc.count_nodes(before)
    assert shrunk, "the rule must make the gradient or the Hessian smaller"
    for order in (1, 2):
        assert check_derivative(f, wrt, order=order, values=random_values(f, seed=2, low=0.2, high=0.9)).ok


@pytest.mark.parametrize("rule, text, orders, wrt", RULE_CASES, ids=[c[0].__name__ for c in RULE_CASES])
def test_rule_agrees_with_the_exact_oracle(rule, text, orders, wrt):
    import sympy

    from tenscalc.oracle import exact_mismatches

    f = tc.parse(text, orders)
    shapes = {"X": (2, 2), "p": (3,), "q": (3,), "x": (3,), "y": (2,), "w": (2,)}
    rationals = [sympy.Rational(n, 7) for n in (2, 3, 5, 4, 6, 1)]
    point = {}
    for name in f.variables:
        entries = np.array(rationals[: int(np.prod(shapes[name]))], dtype=object).reshape(shapes[name])
        if name == "X":
            entries = entries + np.eye(2, dtype=int) * 2  # well away from singular
        point[name] = entries
    g = tc.gradient(f, wrt)
    assert exact_mismatches(f, wrt, point, g) == []
    assert exact_mismatches(g, wrt, point, tc.derivative(g, wrt)) == []


def test_printed_sizes_of_the_issue_cases():
    # the derivatives of issue 17 item 2, as printed now (before this work: in comments)
    logdet_inv = tc.gradient(tc.parse("log(det(inv(X)))", {"X": 2}), "X")
    assert tc.latex(logdet_inv) == r"-X^{-\top}"  # was -X^{-\top} (X^{-1})^{-\top} X^{-\top}
    kl = tc.gradient(tc.parse("p *(i,i->) log(p / q)", {"p": 1, "q": 1}), "q")
    assert tc.latex(kl) == r"-p \oslash q"  # was -(q^(-2) ⊙ p^2 ⊙ (p/q)^(-1))
    assert str(kl) == "-(p / q)"


def test_log_abs_det_hessian_has_no_cancelling_terms():
    f = tc.parse("log(abs(det(X)))", {"X": 2})
    assert tc.latex(tc.gradient(f, "X")) == r"X^{-\top}"  # was X^{-\top} |det X|^-1 sign(det X) det X
    H = tc.hessian(f, "X")
    assert "sign" not in str(H) and "abs" not in str(H)
    X = np.array([[2.0, 1.0], [0.5, -3.0]])  # det < 0
    inv = np.linalg.inv(X)
    # d(X^-T)[i,j] / dX[k,l] = -inv(X)[j,k] inv(X)[l,i]
    np.testing.assert_allclose(tc.evaluate(H, {"X": X}), -np.einsum("jk,li->ijkl", inv, inv), rtol=1e-12)


def test_third_derivative_of_log_det_has_no_delta():
    # (δ ⊗ A - δ' ⊗ B) *(..) C is distributed so that each delta is absorbed
    f = tc.parse("log(det(X))", {"X": 2})
    second = tc.hessian(f, "X")
    raw = tc.derivative(second, "X", simplify=False)
    before = tc.simplify(raw, _without(mul_distribute_delta_sum))
    after = tc.simplify(raw)
    assert "delta" in str(before) and "delta" not in str(after)
    assert (tc.count_nodes(before), tc.count_nodes(after)) == (8, 5)
    values = random_values(f, seed=4)
    np.testing.assert_allclose(tc.evaluate(after, values), tc.evaluate(before, values), rtol=1e-10)
    assert check_derivative(second, "X", values=values).ok  # the third derivative, by finite differences


# ------------------------------------------------- binary cross-entropy through sigmoids

BCE_RULES = (add_complement_of_reciprocal, mul_distribute_cancelling_sum, mul_divide_sum)


def _bce_values(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"X": rng.standard_normal((5, 3)), "y": rng.uniform(0, 1, 5), "w": rng.standard_normal(3)}


def _bce_by_hand():
    X, y, w = tc.var("X", 2), tc.var("y", 1), tc.var("w", 1)
    s = tc.sigmoid(X @ w)
    return -(tc.dot(y, tc.log(s)) + tc.dot(1 - y, tc.log(1 - s)))


def test_bce_hessian_is_x_diag_sigma_one_minus_sigma_x():
    f = tc.parse(BCE, LOGISTIC_ORDERS)
    without = {op: [r for r in rules if r not in BCE_RULES] for op, rules in RULES.items()}
    g_before = tc.simplify(tc.derivative(f, "w", simplify=False), without)
    H_before = tc.simplify(tc.derivative(g_before, "w", simplify=False), without)
    g, H = tc.gradient(f, "w"), tc.hessian(f, "w")
    # σ⁻¹ and (1 − σ)⁻¹ cancel: 20 -> 12 and 30 -> 10 nodes
    assert (tc.count_nodes(g_before), tc.count_nodes(g)) == (20, 12)
    assert (tc.count_nodes(H_before), tc.count_nodes(H)) == (30, 10)
    assert matrix_text(g) == "Xᵀ ((exp(-X w) + 𝟏)^∘-1 - y)"  # Xᵀ(σ − y)
    assert tc.latex(H) == (
        r"X^\top \operatorname{diag}\left(\exp\left(-X w\right) \oslash "
        r"\left(\exp\left(-X w\right) + \mathbf{1}\right)^{\circ 2}\right) X"
    )
    values = _bce_values(1)
    X, y, w = values["X"], values["y"], values["w"]
    sigma = 1 / (1 + np.exp(-X @ w))
    np.testing.assert_allclose(tc.evaluate(g, values), X.T @ (sigma - y), rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(H, values), X.T @ np.diag(sigma * (1 - sigma)) @ X, rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(g_before, values), X.T @ (sigma - y), rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(H_before, values), tc.evaluate(H, values), rtol=1e-12)
    for order in (1, 2):
        assert check_derivative(f, "w", order=order, values=values).ok


def test_bce_spellings_reach_one_form():
    # tc.sigmoid, 1/(1+exp(-z)) and (1+exp(-z))^(-1): the same gradient and Hessian nodes
    spellings = [
        _bce_by_hand(),
        tc.parse(BCE, LOGISTIC_ORDERS),
        tc.parse(BCE.replace("1 / (1 + exp(-(X *(ij,j->i) w)))", "(1 + exp(-(X *(ij,j->i) w)))^(-1)"), LOGISTIC_ORDERS),
    ]
    gradients = {tc.gradient(f, "w") for f in spellings}
    hessians = {tc.hessian(f, "w") for f in spellings}
    assert len(gradients) == 1 and len(hessians) == 1


def test_complement_of_a_quotient():
    # 1 - e/(1+e) -> 1/(1+e), and 1 - 1/(1+e) -> e/(1+e); a coefficient that does not match stays
    e = tc.exp(tc.var("x", 1))
    q = e + 1
    values = {"x": np.array([0.3, -1.2, 2.0])}
    ev = np.exp(values["x"])
    cases = [
        (1 - e / q, 1 / (ev + 1), True),
        (1 - q**-1, ev / (ev + 1), True),
        (3 - 3 * q**-1, 3 * ev / (ev + 1), True),
        (2 - q**-1, 2 - 1 / (ev + 1), False),
        (1 - 2 * e / q, 1 - 2 * ev / (ev + 1), False),
    ]
    for expr, expected, shrinks in cases:
        simplified = tc.simplify(expr)
        np.testing.assert_allclose(tc.evaluate(simplified, values), expected, rtol=1e-12)
        assert (simplified is not tc.simplify(expr, _without(add_complement_of_reciprocal))) == shrinks


def test_divide_sum_needs_the_whole_of_q():
    # (1 - y - y ⊙ e) / (1 + e) = 1/(1+e) - y, but (1 - 2y - y ⊙ e) / (1 + e) has no such quotient
    e = tc.exp(tc.var("x", 1))
    y = tc.var("y", 1)
    q = e + 1
    values = {"x": np.array([0.3, -1.2, 2.0]), "y": np.array([0.5, 0.25, -1.0])}
    ev, yv = np.exp(values["x"]), values["y"]
    divides = (1 - y - y * e) * q**-1
    simplified = tc.simplify(divides)
    np.testing.assert_allclose(tc.evaluate(simplified, values), 1 / (ev + 1) - yv, rtol=1e-12)
    assert str(simplified) == "(exp(x) + 1)^(-1) - y"
    stays = (1 - 2 * y - y * e) * q**-1
    np.testing.assert_allclose(tc.evaluate(tc.simplify(stays), values), (1 - 2 * yv - yv * ev) / (ev + 1), rtol=1e-12)
    assert tc.simplify(stays) is tc.simplify(stays, _without(mul_divide_sum))
    # a square in the denominator keeps one power: (y + y ⊙ e) / (1 + e)^2 = y / (1 + e)
    square = (y + y * e) * q**-2
    np.testing.assert_allclose(tc.evaluate(tc.simplify(square), values), yv / (ev + 1), rtol=1e-12)
    assert tc.count_nodes(tc.simplify(square)) < tc.count_nodes(tc.simplify(square, _without(mul_divide_sum)))


def test_distributing_only_where_powers_cancel():
    # (a ⊙ q + b ⊙ q^2) ⊙ q^-2 is distributed: a ⊙ q^-1 + b.  It stays where a term
    # cancels nothing ((a ⊙ q - b) ⊙ q^-2), where a power only grows (e ⊙ e), and where
    # cancelling would add nodes ((a ⊙ q - b ⊙ e) ⊙ q^-2 ⊙ e^-1 needs q^-1 and q^-2 both)
    a, b, c, x = tc.var("a", 1), tc.var("b", 1), tc.var("c", 1), tc.var("x", 1)
    e = tc.exp(x)
    q = e + 1
    values = {
        "a": np.array([0.5, 2.0]),
        "b": np.array([-1.0, 3.0]),
        "c": np.array([1.5, -0.5]),
        "x": np.array([0.1, -0.7]),
    }
    av, bv, cv, ev = values["a"], values["b"], values["c"], np.exp(values["x"])
    cancels = tc.dot(c, (a * q + b * q**2) * q**-2)
    after = tc.simplify(cancels)
    before = tc.simplify(cancels, _without(mul_distribute_cancelling_sum))
    assert tc.count_nodes(after) < tc.count_nodes(before)
    assert str(after) == "(b + a / (exp(x) + 1)) *(i,i->) c"
    expected = cv @ (av / (ev + 1) + bv)
    np.testing.assert_allclose(tc.evaluate(after, values), expected, rtol=1e-12)
    np.testing.assert_allclose(tc.evaluate(before, values), expected, rtol=1e-12)
    stay = [(a * q - b) * q**-2, (a * e - b) * e, tc.dot(c, (a * q - b * e) * q**-2 * e**-1)]
    stay.append(tc.dot(c, (a * q + b * q**2) * q**-3))  # a ⊙ q^-2 + b ⊙ q^-1: as many nodes
    for stays in stay:
        assert tc.simplify(stays) is tc.simplify(stays, _without(mul_distribute_cancelling_sum))
