"""Constants beyond float64's range (``2^2222``, ``exp(1000)``, ``10^400 * 0``): they
are never folded to inf, and evaluate, compile and the generated code give the same
IEEE result.  An order-0 constant multiplies the contraction of a product's other
operands after it; a term with a constant that may not be finite, or so large that
moving it across a sum could overflow a partial result (above ``REGROUP_LIMIT``), is
computed as written (no sum pushed inside, no delta turned into a renaming)."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

POINTS = [
    np.array([0.5, 2.0, -1.0]),
    np.array([-1.0, -2.0, 0.0]),  # relu(x) - relu(x - 1) sums to 0: 0 * inf is nan
    np.array([0.0, 0.0, 0.0]),
    np.array([1.0, 0.0, 3.0]),
]


def _three(exprs: list[tc.Expr], values: dict) -> list[list[np.ndarray]]:
    """The values of ``exprs`` by evaluate, compile and the generated code."""
    namespace: dict = {}
    exec(tc.to_python(exprs), namespace)  # noqa: S102 - the library's own generated code
    names = {n for e in exprs for n in (*e.variables, *e.shape_variables)}
    with np.errstate(all="ignore"):
        return [
            [tc.evaluate(e, values) for e in exprs],
            list(tc.compile(exprs)(values)),
            list(namespace["f"](**{n: values[n] for n in names})),
        ]


@pytest.mark.parametrize(
    "text",
    [
        "(relu(x) - relu(x - 1)) *(i,->) 2^2222",  # compile gave nan where evaluate gave inf
        "sin(x) *(i,->) 2^2222 - cos(x) *(i,->) 2^2222",
        "x *(i,->i) (10^400 *(,->) 0)",
        "(x *(i,->) 1) *(,->) exp(1000)",
        "(x *(i,->i) 2^2222) *(i,->) 1",
        "(A *(ij,j->i) x) *(i,->i) 2^2222",
        "A *(ij,j->) x *(,->) 2^2222",
        "(A - A) *(ij,ij->) 2^2222",
        "(A *(ij,kj->ik) A) *(ik,->) (-exp(1000))",
        "x *(i,i->) x *(,->) exp(1000) *(,->) 0.5^3000",
        "(x - relu(x)) *(i,i->) (x + 1) *(,->) exp(800)",
        "x *(i,->i) (2^2222 - 2^2222)",
        "(delta(1){x.0} *(ij,->ij) exp(1000)) *(ij,j->i) x",
        "x *(i,->) det(1e200 *(,ij->ij) delta(1){x.0})",
        # finite factors whose product overflows: regrouped over the sum, a partial
        # result overflowed (nan or inf where evaluate gives inf or 0)
        "(x - x) *(i,->) 1e308 *(,->) 1e10",
        "(A + 1 *(i,j->ij) x) *(ij,->) 1e308",  # found by the fuzz harness (mutated:5002322)
    ],
)
def test_evaluators_agree_on_overflowing_constants(text):
    orders = {"x": 1, "A": 2}
    e = tc.parse(text, orders)
    names = [n for n in orders if n in e.variables]
    exprs = [e, tc.simplify(e)] + [tc.derivative(e, tc.var(n, orders[n])) for n in names]
    for x in POINTS:
        values = {"x": x, "A": np.outer(x, [1.0, 0.0, -1.0])}
        evaluated, compiled, generated = _three(exprs, values)
        for k, expected in enumerate(evaluated):
            np.testing.assert_array_equal(compiled[k], expected, err_msg=f"compile, {k}: {exprs[k]}")
            np.testing.assert_array_equal(generated[k], expected, err_msg=f"to_python, {k}: {exprs[k]}")


def test_the_reported_case_is_nan_only_where_the_sum_is_zero():
    e = tc.parse("(relu(x) - relu(x - 1)) *(i,->) 2^2222", {"x": 1})
    assert "inf" not in str(tc.simplify(e))  # never folded
    for x, expected in ((POINTS[0], np.inf), (POINTS[1], np.nan)):
        for value in _three([e], {"x": x}):
            np.testing.assert_array_equal(value[0], expected)


def test_a_delta_times_an_overflowing_constant_is_nan_off_the_diagonal():
    e = tc.parse("delta(1){x.0} *(ij,->ij) exp(1000)", {"x": 1})
    expected = np.where(np.eye(3) == 1, np.inf, np.nan)
    for value in _three([e], {"x": POINTS[0]}):
        np.testing.assert_array_equal(value[0], expected)


def test_finite_constants_still_fuse_distribute_and_absorb_deltas():
    # the guard looks at values: log(2) and sin(1) are finite, so the plan stays lean
    f = tc.parse("(x *(i,j->ij) x) *(ij,->) log(2) + x *(i,->) sin(1)", {"x": 1})
    hessian = tc.hessian(f, "x")
    (step,) = tc.compile(hessian).plan.steps
    assert all(node.op != "delta" for term in step.data for node, _ in term.constants)
    s = tc.parse("(relu(x) - relu(x - 1)) *(i,->) 2^10 *(,->) sin(1)", {"x": 1})
    product = tc.compile(s).plan.steps[-1]
    assert len(product.data) == 2  # the sum is pushed into the product: two terms


def test_an_integer_coefficient_beyond_float_range_compiles():
    # 10**200 * 10**200 simplifies to an exact integer coefficient; compile raised
    # OverflowError (int too large to convert to float) where evaluate gave inf
    e = tc.simplify(tc.constant(10**200) * tc.constant(10**200) * tc.var("x", 0))
    for value in _three([e], {"x": 1.0}):
        assert float(value[0]) == np.inf
