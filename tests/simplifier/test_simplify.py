"""Structural checks of simplification: what the simplifier must produce, not only
that values are preserved (the property tests check that)."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.core import nodes as N
from tenscalc.core.nodes import topological
from tenscalc.testing import random_values


def _bench():
    from benchmarks import problems

    return problems


x, y = tc.var("x", 1), tc.var("y", 1)
A, X = tc.var("A", 2), tc.var("X", 2)


def kinds(e: tc.Expr) -> list[str]:
    return [n.op for n in topological(e)]


def unscale(e: tc.Expr) -> tuple[float, tc.Expr]:
    """``(c, b)`` for ``c * b`` written as a one-term sum or a product with a constant; else ``(1, e)``."""
    if e.op == "add" and len(e.children) == 1:
        return e.arg[0], e.children[0]
    if e.op == "mul" and len(e.children) == 2:
        consts = [c for c in e.children if c.op == "const" and c.order == 0]
        others = [c for c in e.children if not (c.op == "const" and c.order == 0)]
        if len(consts) == 1 and len(others) == 1:
            (ins, out) = e.arg
            spec = ins[e.children.index(others[0])]
            if spec == out and len(set(out)) == len(out):
                return consts[0].arg[0], others[0]
    return 1, e


def is_structurally_zero(e: tc.Expr) -> bool:
    """The zero constant, or zero times something (a ones tensor that only carries the shape)."""
    if N.is_zero(e):
        return True
    coefficient, _ = unscale(e)
    if coefficient == 0:
        return True
    return e.op == "mul" and any(N.is_zero(c) for c in e.children)


# ---------------------------------------------------------------------------- small rewrites


def test_x_plus_x_is_two_x():
    s = tc.simplify(x + x)
    coefficient, base = unscale(s)
    assert (coefficient, base) == (2, x), str(s)
    assert str(s) == "2 *(,i->i) x"


def test_x_minus_x_is_zero():
    s = tc.simplify(x - x)
    assert is_structurally_zero(s), str(s)
    assert "var" not in kinds(s) or s.variables == {"x": 1}  # at most a shape binder remains
    np.testing.assert_array_equal(tc.evaluate(s, {"x": np.array([1.0, 2.0, 3.0])}), np.zeros(3))


def test_matrix_minus_itself_keeps_its_shape():
    """A zero the simplifier produces still has the original's shape when evaluated."""
    s = tc.simplify(A - A)
    assert is_structurally_zero(s), str(s)
    value = tc.evaluate(s, {"A": np.ones((2, 3))})
    assert value.shape == (2, 3)
    assert not np.any(value)


def test_double_negation_vanishes():
    minus_x = -x
    assert -minus_x is x
    assert tc.simplify(tc.parse("-(-(x))", {"x": 1})) is x
    inner = tc.einsum("ij,j->i", A, -x)
    s = tc.simplify(-inner)
    assert s is tc.simplify(tc.einsum("ij,j->i", A, x)), str(s)
    assert "add" not in kinds(s), str(s)
    assert tc.simplify(tc.einsum("i,->i", -x, tc.constant(-1))) is x


def test_multiplication_by_zero_folds():
    for e in (x * 0, tc.einsum("i,->i", x, 0), tc.einsum("ij,j->i", A, tc.constant(0, 1)), 0 * tc.sin(x)):
        s = tc.simplify(e)
        assert is_structurally_zero(s), str(s)
        assert "func" not in kinds(s)
        assert "mul" not in kinds(s) or s.op != "mul" or any(N.is_zero(c) for c in s.children)


def test_multiplication_by_one_folds():
    assert tc.simplify(x * 1) is x
    assert tc.simplify(1 * x) is x
    assert tc.simplify(tc.einsum("ij,->ij", A, 1)) is A
    assert tc.simplify(tc.einsum(",ij->ij", tc.constant(1), A)) is A
    assert tc.simplify(tc.einsum("ij,ij->ij", A, tc.constant(1, 2))) is A


@pytest.mark.parametrize(
    "text, value",
    [
        ("2 + 3", 5),
        ("2 *(,->) 3", 6),
        ("2^3", 8),
        ("exp(0)", 1),
        ("-(-2)", 2),
        ("delta(0) *(,->) 3", 3),
        ("delta(0) *(,->) delta(0)", 1),
    ],
)
def test_constants_fold(text, value):
    s = tc.simplify(tc.parse(text))
    assert s.op == "const" and s.arg[0] == value and s.order == 0, str(s)


def test_constants_fold_inside_sums():
    s = tc.simplify(tc.parse("x + 2 + 3", {"x": 1}))
    assert s is N.add((x, N.const(5, 1))), str(s)
    assert tc.simplify(x + 0) is x
    assert tc.simplify(tc.parse("x - 0", {"x": 1})) is x


def test_add_zero_and_identical_terms_merge():
    s = tc.simplify(tc.sin(x) + y + tc.sin(x) - y)
    assert unscale(s) == (2, tc.sin(x)), str(s)


def test_transpose_of_transpose_is_the_matrix():
    t = tc.einsum("ij,->ji", A, 1)
    assert tc.simplify(tc.einsum("ij,->ji", t, 1)) is A


def test_delta_is_absorbed():
    assert tc.simplify(tc.parse("A *(ij,jk->ik) delta(1)", {"A": 2})) is A
    assert tc.simplify(tc.parse("delta(1) *(ij,j->i) x", {"x": 1})) is x
    s = tc.simplify(tc.parse("delta(1) *(ij,ij->) A", {"A": 2}))
    assert "delta" not in kinds(s) and str(s) == str(tc.parse("A *(ii,->) 1", {"A": 2}))


def test_delta_with_a_repeated_letter_keeps_value():
    """delta(2)[i,j,i,k] x[j] = x[k] for every i: the pair (i, i) must not lose letter i."""
    f = tc.parse("delta(2) *(ijik,j->ki) x *(ki,i->ki) y", {"x": 1, "y": 1})
    values = {"x": np.array([1.0, 2.0, 3.0]), "y": np.array([1.0, -1.0, 0.5, 2.0])}
    expected = np.outer(values["x"], values["y"])
    np.testing.assert_allclose(tc.evaluate(f, values), expected)
    np.testing.assert_allclose(tc.evaluate(tc.simplify(f), values), expected)


# ---------------------------------------------------------------------------- derivatives


def test_quadratic_hessian_has_no_delta_and_no_order_4_node():
    f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    h = tc.hessian(f, "x")
    assert "delta" not in kinds(h), str(h)
    assert max(n.order for n in topological(h)) <= 2, str(h)
    m = np.arange(12.0).reshape(3, 4)[:, :3] + np.eye(3)
    np.testing.assert_allclose(tc.evaluate(h, {"A": m, "x": np.ones(3)}), m + m.T)


def test_gradient_of_frobenius_norm_is_two_x():
    g = tc.gradient(tc.parse("X *(ij,ij->) X", {"X": 2}), "X")
    assert str(g) == "2 *(,ij->ij) X" or unscale(g) == (2, X), str(g)
    assert unscale(g) == (2, X), str(g)


def test_matfac_hessian_is_two_delta_outer_vtv():
    bench = _bench()
    spec = bench.PROBLEMS["matfac"]
    f = tc.parse(spec["src"], spec["orders"])
    h = tc.hessian(f, "U")
    nodes = topological(h)
    deltas = [n for n in nodes if n.op == "delta"]
    assert len(deltas) == 1 and deltas[0].arg == 1, str(h)
    with_v_twice = [n for n in nodes if n.op == "mul" and sum(c is tc.var("V", 2) for c in n.children) == 2]
    assert len(with_v_twice) == 1, str(h)
    # the coefficient 2, on the root or on the delta-V-V product
    coefficients = [unscale(n)[0] for n in nodes if unscale(n)[0] != 1]
    assert coefficients == [2], str(h)
    assert "U" not in h.variables and "func" not in kinds(h), str(h)
    data = spec["data"](m=3, n=5, k=2)
    np.testing.assert_allclose(tc.evaluate(h, data), bench.closed_form_hessian("matfac", data), atol=1e-12)


def test_logreg_hessian_is_one_product_chain():
    """X^T diag(s) X: one product holding X twice; every other operand is at most a vector."""
    bench = _bench()
    spec = bench.PROBLEMS["logreg"]
    f = tc.parse(spec["src"], spec["orders"])
    h = tc.hessian(f, "w")
    _, top = unscale(h)
    assert top.op == "mul", str(h)
    big = tc.var("X", 2)
    assert sum(c is big for c in top.children) == 2, str(h)
    others = [c for c in top.children if c is not big]
    assert all(c.order <= 1 for c in others), str(h)


def test_simplifier_reaches_a_fixed_point():
    bench = _bench()
    expressions = [
        tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}),
        tc.parse("log(det(A)) + A *(ij,->) 1", {"A": 2}),
        tc.parse("x + 2 + 3 - x *(i,->) 1 *(,i->i) 1", {"x": 1}),
        tc.sin(x) * tc.sin(x) - tc.cos(x) * tc.cos(x),
        x - x + 1,  # a zero keeping x's shape, plus ones
        A - A,
    ]
    for spec in bench.PROBLEMS.values():
        f = tc.parse(spec["src"], spec["orders"])
        expressions.append(f)
        first = tc.derivative(f, spec["wrt"], simplify=False)
        expressions.append(first)
        expressions.append(tc.derivative(first, tc.var(spec["wrt"], spec["orders"][spec["wrt"]]), simplify=False))
    for e in expressions:
        once = tc.simplify(e)
        assert tc.simplify(once) is once, str(e)


# ones (a delta summed over one axis) times seven scalars: 8 operands, so fusing it into
# a product with two more operands would pass MAX_FUSED_OPERANDS and it stays nested
_ONES_TIMES_SCALARS = (
    "delta(1){y.0} *(kl,->k) sin(c) *(k,->k) cos(c) *(k,->k) tanh(c) *(k,->k) exp(c) "
    "*(k,->k) arctan(c) *(k,->k) sin(2 *(,->) c) *(k,->k) tanh(2 *(,->) c)"
)


@pytest.mark.parametrize(
    "text",
    [
        f"sin(d) *(,k->k) ((0.8 *(,k->k) ({_ONES_TIMES_SCALARS})) + y) *(k,->k) cos(d)",
        f"(sin(d) *(,k->k) (0.8 *(,k->k) ({_ONES_TIMES_SCALARS}) + 2 *(,k->k) y *(k,k->k) tanh(y))"
        " *(k,->k) cos(d)) *(k,->) 1",
    ],
)
def test_distributing_over_a_delta_sum_and_factoring_do_not_undo_each_other(text):
    # found by the fuzz campaign (a second derivative): mul_distribute_delta_sum pushed
    # sin(d), cos(d) into the sum although the delta term could not be fused (so its
    # delta stayed), and add_factor_common pulled them out again: a rule loop
    e = tc.parse(text, {"c": 0, "d": 0, "y": 1})
    once = tc.simplify(e)
    assert tc.simplify(once) is once
    assert sum(n.op == "delta" for n in topological(once)) == 1  # nothing was distributed
    values = {"c": 0.3, "d": 0.7, "y": np.array([0.5, -1.0, 2.0])}
    np.testing.assert_allclose(tc.evaluate(once, values), tc.evaluate(e, values), rtol=1e-12)


def test_second_derivative_found_by_the_fuzz_campaign_simplifies():
    text = (
        "((-(((len *(ki,->ki) 0.1)) *(j2j2,kp->kp) (len))) *(mm,mm->) (arctan(-(len)))) / (2 + cos(((-((B *(j,->) "
        "0.1))) / (2 + cos(((B *(p,->) 0.1)) + ((B *(n,->) 0.1))))) + ((tanh((tanh((B *(j2,->) 2)))^2))^2)))"
    )
    e = tc.parse(text, {"len": 2, "B": 1})
    B = tc.var("B", 1)
    hessian = tc.derivative(tc.derivative(e, B), B)  # raised the rule-loop TensCalcError
    values = random_values(e, seed=3)
    assert tc.evaluate(hessian, values).shape == (values["B"].size,) * 2


def test_simplify_preserves_values_of_raw_bench_hessians():
    bench = _bench()
    sizes = {
        "quadratic": dict(n=4),
        "logreg": dict(m=7, n=4),
        "matfac": dict(m=3, n=5, k=2),
        "mlp": dict(m=5, n=4, h=3),
    }
    for name, spec in bench.PROBLEMS.items():
        f = tc.parse(spec["src"], spec["orders"])
        wrt = tc.var(spec["wrt"], spec["orders"][spec["wrt"]])
        raw = tc.derivative(tc.derivative(f, wrt, simplify=False), wrt, simplify=False)
        data = spec["data"](**sizes[name])
        np.testing.assert_allclose(
            tc.evaluate(tc.simplify(raw), data), tc.evaluate(raw, data), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_bench_hessian_node_counts(capsys):
    """Print the Hessian size before and after simplification for every bench problem."""
    bench = _bench()
    rows = []
    for name, spec in bench.PROBLEMS.items():
        f = tc.parse(spec["src"], spec["orders"])
        wrt = tc.var(spec["wrt"], spec["orders"][spec["wrt"]])
        raw = tc.derivative(tc.derivative(f, wrt, simplify=False), wrt, simplify=False)
        simplified = tc.hessian(f, wrt)
        rows.append(
            (
                name,
                tc.count_nodes(f),
                tc.count_nodes(raw),
                tc.count_nodes(simplified),
                tc.count_edges(raw),
                tc.count_edges(simplified),
            )
        )
        assert tc.count_nodes(simplified) <= tc.count_nodes(raw), name
    with capsys.disabled():
        print("\nHessian node counts (expression / raw Hessian / simplified Hessian; edges raw / simplified):")
        for name, n_f, n_raw, n_s, e_raw, e_s in rows:
            print(f"  {name:10s} {n_f:3d} / {n_raw:3d} / {n_s:3d}   edges {e_raw:3d} / {e_s:3d}")


def test_simplified_derivatives_are_smaller_on_random_data():
    f = tc.parse("sin(A *(ij,j->i) x) *(i,i->) (A *(ij,j->i) x)", {"A": 2, "x": 1})
    raw = tc.derivative(tc.derivative(f, "x", simplify=False), "x", simplify=False)
    s = tc.hessian(f, "x")
    assert tc.count_nodes(s) < tc.count_nodes(raw)
    values = random_values(f)
    np.testing.assert_allclose(tc.evaluate(s, values), tc.evaluate(raw, values), rtol=1e-10, atol=1e-12)
