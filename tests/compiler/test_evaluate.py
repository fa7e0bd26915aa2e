"""Evaluation of every construct against plain NumPy.

Every axis has its own length (2, 3, 4, 5 ...), so an expression that transposes
or mixes up axes fails instead of passing by accident.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {
    "x": 1, "y": 1, "u": 1, "v": 1,
    "A": 2, "A2": 2, "B": 2, "S": 2, "M": 2, "R": 2,
    "T": 3, "Q": 4, "c": 0, "d": 0,
}  # fmt: skip


@pytest.fixture
def values(rng):
    """Arrays with distinct axis lengths: x, y (3), u (4), v (5), A, A2 (3x4), B (4x5),
    S (3x3), M (4x4, well conditioned), R (3x5), T (3x4x5), Q (2x3x4x5), c, d scalars."""
    return {
        "x": rng.normal(size=3),
        "y": rng.normal(size=3),
        "u": rng.normal(size=4),
        "v": rng.normal(size=5),
        "A": rng.normal(size=(3, 4)),
        "A2": rng.normal(size=(3, 4)),
        "B": rng.normal(size=(4, 5)),
        "S": rng.normal(size=(3, 3)),
        "M": 4 * np.eye(4) + 0.5 * rng.normal(size=(4, 4)),
        "R": rng.normal(size=(3, 5)),
        "T": rng.normal(size=(3, 4, 5)),
        "Q": rng.normal(size=(2, 3, 4, 5)),
        "c": float(rng.normal()),
        "d": float(rng.uniform(0.5, 1.5)),
    }


def ev(text: str, values: dict, orders: dict = ORDERS) -> np.ndarray:
    e = tc.parse(text, orders)
    result = tc.evaluate(e, values)
    assert isinstance(result, np.ndarray)
    assert result.ndim == e.order
    assert result.flags.writeable  # never a read-only broadcast view
    return result


def check(text: str, values: dict, expected) -> None:
    expected = np.asarray(expected, dtype=float)
    result = ev(text, values)
    assert result.shape == expected.shape, (text, result.shape, expected.shape)
    np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-12, err_msg=text)


# ----------------------------------------------------------------- products


def test_inner_product(values):
    x, y = values["x"], values["y"]
    check("x *(i,i->) y", values, np.einsum("i,i->", x, y))


def test_outer_product(values):
    x, u = values["x"], values["u"]
    check("x *(i,j->ij) u", values, np.einsum("i,j->ij", x, u))
    check("u *(i,j->ij) x", values, np.outer(u, x))
    check("x *(i,j->ji) u", values, np.outer(u, x))


def test_elementwise_products(values):
    check("x *(i,i->i) y", values, values["x"] * values["y"])
    check("A *(ij,ij->ij) A2", values, values["A"] * values["A2"])


def test_matrix_vector(values):
    A, u, x = values["A"], values["u"], values["x"]
    check("A *(ij,j->i) u", values, A @ u)
    check("x *(i,ij->j) A", values, x @ A)
    check("A *(ij,i->j) x", values, A.T @ x)


def test_matrix_matrix(values):
    A, B, A2 = values["A"], values["B"], values["A2"]
    check("A *(ik,kj->ij) B", values, A @ B)
    check("A *(ij,kj->ik) A2", values, A @ A2.T)
    check("A *(ji,jk->ik) A2", values, A.T @ A2)
    check("B *(kj,ik->ji) A", values, (A @ B).T)


def test_transpose(values):
    check("A *(ij,->ji) 1", values, values["A"].T)
    check("T *(ijk,->kij) 1", values, np.transpose(values["T"], (2, 0, 1)))


def test_trace(values):
    check("S *(ii,->) 1", values, np.trace(values["S"]))
    check("S *(ii,->i) 1", values, np.diag(values["S"]))


def test_diagonal_embedding(values):
    check("x *(i,->ii) 1", values, np.diag(values["x"]))
    check("x *(i,->ii) 2.5", values, np.diag(2.5 * values["x"]))
    check("x *(i,i->ii) y", values, np.diag(values["x"] * values["y"]))


def test_scalar_times_tensor(values):
    c, A = values["c"], values["A"]
    check("c *(,ij->ij) A", values, c * A)
    check("A *(ij,->ij) c", values, c * A)
    check("2 *(,ij->ij) A", values, 2 * A)
    check("c *(,->) d", values, c * values["d"])
    check("-c *(,ij->ji) A", values, -c * A.T)


def test_order_3_products(values):
    T, v, u, A = values["T"], values["v"], values["u"], values["A"]
    check("T *(ijk,k->ij) v", values, np.einsum("ijk,k->ij", T, v))
    check("T *(ijk,j->ik) u", values, np.einsum("ijk,j->ik", T, u))
    check("T *(ijk,ij->k) A", values, np.einsum("ijk,ij->k", T, A))
    check("T *(ijk,ijk->) T", values, np.sum(T * T))
    check("x *(i,jk->ijk) B", values, np.einsum("i,jk->ijk", values["x"], values["B"]))


def test_order_4_products(values):
    Q, R, A, B = values["Q"], values["R"], values["A"], values["B"]
    check("Q *(ijkl,jl->ik) R", values, np.einsum("ijkl,jl->ik", Q, R))
    check("Q *(ijkl,->lkji) 1", values, np.transpose(Q, (3, 2, 1, 0)))
    check("Q *(ijkl,jk->il) A", values, np.einsum("ijkl,jk->il", Q, A))
    check("A *(ij,kl->ijkl) B", values, np.einsum("ij,kl->ijkl", A, B))
    check("Q *(ijkl,ijkl->) Q", values, np.sum(Q * Q))


def test_chained_products(values):
    x, A, u, B, v = values["x"], values["A"], values["u"], values["B"], values["v"]
    check("x *(i,ij->j) A *(j,jk->k) B *(k,k->) v", values, x @ A @ B @ v)
    check("x *(i,j->ij) u *(ij,jk->ik) B", values, np.outer(x, u) @ B)


# ----------------------------------------------------------------- deltas


def test_delta_1(values):
    A, S, x = values["A"], values["S"], values["x"]
    check("delta(1) *(ij,jk->ik) A", values, A)
    check("A *(ij,jk->ik) delta(1)", values, A)
    check("delta(1) *(ij,j->i) x", values, x)
    check("delta(1) + S", values, S + np.eye(3))
    check("S - 2 *(,ij->ij) delta(1)", values, S - 2 * np.eye(3))
    check("delta(1) *(ij,ij->) S", values, np.trace(S))


def test_delta_2(values):
    A, R = values["A"], values["R"]
    check("delta(2) *(ijkl,kl->ij) A", values, A)
    check("delta(2) *(ijkl,ij->kl) R", values, R)
    eye2 = np.einsum("ik,jl->ijkl", np.eye(3), np.eye(4))  # delta(2)[i,j,k,l] for a 3x4 pair
    check("delta(2) + A *(ij,kl->ijkl) A2", values, eye2 + np.einsum("ij,kl->ijkl", A, values["A2"]))
    # the transposed pairing is a different tensor: a mixed-up axis would show here
    check("delta(2) *(ijkl,lk->ij) B", values, values["B"].T)


def test_delta_0(values):
    check("delta + c", values, 1 + values["c"])
    check("delta(0) *(,i->i) x", values, values["x"])


# ----------------------------------------------------------------- matrix functions


def test_inv_det_adj(values):
    M = values["M"]
    inv, det = np.linalg.inv(M), np.linalg.det(M)
    check("inv(M)", values, inv)
    check("det(M)", values, det)
    check("adj(M)", values, det * inv)
    check("log(abs(det(M)))", values, np.log(abs(det)))
    check("inv(M) *(ij,jk->ik) M", values, np.eye(4))
    check("inv(M *(ij,kj->ik) M)", values, np.linalg.inv(M @ M.T))
    check("det(M *(ij,->ji) 1)", values, det)
    check("adj(M) *(ij,jk->ik) M", values, det * np.eye(4))


def test_adjugate_of_a_2x2_by_hand():
    values = {"M": np.array([[1.0, 2.0], [3.0, 4.0]])}
    check("adj(M)", values, [[4.0, -2.0], [-3.0, 1.0]])
    check("det(M)", values, -2.0)


def test_inv_of_a_singular_matrix():
    e = tc.parse("inv(M)", {"M": 2})
    with pytest.raises(tc.EvaluationError, match="singular"):
        tc.evaluate(e, {"M": np.ones((3, 3))})


# ----------------------------------------------------------------- constants


def test_broadcast_constants_in_sums(values):
    A = values["A"]
    check("A + 1", values, A + 1)
    check("1 - A", values, 1 - A)
    check("A + 2.5 - 1", values, A + 1.5)
    check("A + log(2)", values, A + np.log(2))
    check("A + exp(sin(1))", values, A + np.exp(np.sin(1)))
    check("A + 2^c", values, A + 2 ** values["c"])


def test_broadcast_constants_in_products(values):
    A = values["A"]
    check("(A + 1) *(ij,j->i) 1", values, (A + 1).sum(axis=1))  # row sums of A + 1
    check("1 *(i,ij->j) A", values, A.sum(axis=0))
    check("1 *(,ij->) A", values, A.sum())
    check("A *(ij,->) 1", values, A.sum())
    check("A *(ij,ij->) 2", values, 2 * A.sum())
    check("A *(ij,j->i) 0", values, np.zeros(3))


def test_constant_that_adds_an_axis(values):
    A, x, u = values["A"], values["x"], values["u"]
    # the ones-vector alone gives the product its second axis; its length comes from A
    check("x *(i,j->ij) 1 + A", values, x[:, None] + A)
    check("1 *(i,j->ij) u + A", values, u[None, :] + A)
    check("2 *(i,j->ij) 3 + A", values, 6 + A)
    check("x *(i,jk->ijk) 2 *(ijk,jk->i) A", values, 2 * x * A.sum())


def test_row_sums_of_a_broadcast_sum(values):
    A, x = values["A"], values["x"]
    # sum over j of (x[i] + A[i, j]) = 4 x[i] + row sums, with len(j) = 4 from A
    check("(x *(i,j->ij) 1 + A) *(ij,->i) 1", values, 4 * x + A.sum(axis=1))


def test_fused_products_with_constants(values):
    # products with more than two operands (made by the simplifier) may hold several constants
    from tenscalc.core import nodes as N

    x, A = N.var("x", 1), N.var("A", 2)
    e = N.mul((x, N.const(2, 1), N.const(3, 1), A), ((0,), (1,), (1,), (1, 2)), (0,))
    np.testing.assert_allclose(tc.evaluate(e, values), 6 * values["x"] * values["A"].sum())
    e = N.mul((x, N.const(2, 1), N.const(3, 1), A), ((0,), (1,), (1,), (0, 1)), (0, 1))
    np.testing.assert_allclose(tc.evaluate(e, values), 6 * values["x"][:, None] * values["A"])
    e = N.mul((N.const(2, 1), x, N.const(3, 1)), ((0,), (0,), (1,)), (0, 1))
    e = N.add((e, A))
    np.testing.assert_allclose(tc.evaluate(e, values), 6 * values["x"][:, None] + values["A"])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(1 + 1) *(i,i->) x", lambda v: 2 * v["x"].sum()),
        ("-(1 + 1) + A", lambda v: v["A"] - 2),
        ("(-1)^2 + A", lambda v: v["A"] + 1),
        ("1 / (1 + 1) + A", lambda v: v["A"] + 0.5),
        ("delta(1) + 1 + S", lambda v: v["S"] + 1 + np.eye(3)),
        ("exp(1) *(,ij->ij) A", lambda v: np.e * v["A"]),
        ("A *(ij,->ij) (1 + 1)", lambda v: 2 * v["A"]),
        ("sign(0) *(,i->i) x + relu(-1) + abs(-2)", lambda v: np.full(3, 2.0)),
        ("2^2^3 + c", lambda v: 64 + v["c"]),
        ("inv(M) *(ij,jk->ik) M + 1", lambda v: np.eye(4) + 1),
        ("det(2 *(,ij->ij) M)", lambda v: 16 * np.linalg.det(v["M"])),
        ("log(A *(ij,ij->ij) A + 1) / log(10)", lambda v: np.log10(v["A"] ** 2 + 1)),
        ("T *(abs,s->ab) v", lambda v: v["T"] @ v["v"]),  # index letters spelling a function name
    ],
)
def test_constants_taking_their_order_from_context(values, text, expected):
    check(text, values, expected(values))


def test_scalar_constants(values):
    check("2 + 3", values, 5.0)
    check("-(1 + 2)", values, -3.0)
    check("2 ^ 3", values, 8.0)
    check("log(1)", values, 0.0)


def test_constant_with_no_length(values):
    e = tc.parse("x *(i,j->ij) 1", ORDERS)
    with pytest.raises(tc.EvaluationError, match="cannot tell the length of axis"):
        tc.evaluate(e, values)


# ----------------------------------------------------------------- elementwise


FUNCTIONS = [
    ("sin", np.sin, (-3.0, 3.0)),
    ("cos", np.cos, (-3.0, 3.0)),
    ("tan", np.tan, (-1.2, 1.2)),
    ("arcsin", np.arcsin, (-0.95, 0.95)),
    ("arccos", np.arccos, (-0.95, 0.95)),
    ("arctan", np.arctan, (-5.0, 5.0)),
    ("tanh", np.tanh, (-3.0, 3.0)),
    ("exp", np.exp, (-3.0, 3.0)),
    ("log", np.log, (0.1, 5.0)),
    ("abs", np.abs, (-3.0, 3.0)),
    ("sign", np.sign, (-3.0, 3.0)),
    ("relu", lambda a: np.maximum(a, 0.0), (-3.0, 3.0)),
]


@pytest.mark.parametrize("name, reference, domain", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_elementwise_functions(name, reference, domain, rng):
    lo, hi = domain
    values = {"A": rng.uniform(lo, hi, size=(3, 4)), "c": float(rng.uniform(lo, hi)), "x": rng.uniform(lo, hi, 5)}
    check(f"{name}(A)", values, reference(values["A"]))
    check(f"{name}(c)", values, reference(values["c"]))
    check(f"{name}(x) *(i,i->) x", values, reference(values["x"]) @ values["x"])


def test_sign_abs_relu_at_zero():
    values = {"x": np.array([-2.0, 0.0, 3.0])}
    check("sign(x)", values, [-1.0, 0.0, 1.0])
    check("abs(x)", values, [2.0, 0.0, 3.0])
    check("relu(x)", values, [0.0, 0.0, 3.0])


# ----------------------------------------------------------------- powers and quotients


def test_powers_of_negative_bases():
    values = {"x": np.array([-3.0, -2.0, 0.5]), "c": 2.0, "d": 3.0}
    check("x^2", values, [9.0, 4.0, 0.25])
    check("x^3", values, [-27.0, -8.0, 0.125])
    check("x^c", values, [9.0, 4.0, 0.25])
    check("x^d", values, [-27.0, -8.0, 0.125])
    check("x^2.0", values, [9.0, 4.0, 0.25])
    check("(-x)^2", values, [9.0, 4.0, 0.25])
    check("-x^2", values, [-9.0, -4.0, -0.25])
    check("x^(-1)", values, [-1 / 3, -0.5, 2.0])
    check("x^(-2)", values, [1 / 9, 0.25, 4.0])
    check("x^0", values, [1.0, 1.0, 1.0])
    check("x^1", values, [-3.0, -2.0, 0.5])
    check("x^2^3", values, np.array([-3.0, -2.0, 0.5]) ** 6)
    check("x^(c + 1)", values, [-27.0, -8.0, 0.125])


def test_fractional_powers(values):
    A = np.abs(values["A"]) + 0.1
    vals = dict(values, A=A)
    check("A^0.5", vals, np.sqrt(A))
    check("A^d", vals, A ** values["d"])
    check("A^(c *(,->) d)", vals, A ** (values["c"] * values["d"]))
    check("2^c", vals, 2 ** values["c"])


def test_division(values):
    A, A2, x, y = values["A"], values["A2"], values["x"], values["y"]
    check("x / y", values, x / y)
    check("A / A2", values, A / A2)
    check("A / 2", values, A / 2)
    check("2 / A", values, 2 / A)
    check("x / y / x", values, x / y / x)
    check("x / (y / x)", values, x / (y / x))
    check("c / d", values, values["c"] / values["d"])


# ----------------------------------------------------------------- sums, negation, sharing


def test_sums_and_negation(values):
    x, y = values["x"], values["y"]
    check("x + y", values, x + y)
    check("x - y", values, x - y)
    check("-x", values, -x)
    check("x - -y - (x - y)", values, 2 * y)
    check("-(A + A2) + A", values, -values["A2"])


def test_shared_nodes(values):
    A = values["A"]
    check("(A+1) + A *(ij,ij->ij) (A+1)", values, (A + 1) + A * (A + 1))
    check(
        "(A - R *(ik,jk->ij) B) *(ij,ij->) (A - R *(ik,jk->ij) B)",
        values,
        np.sum((values["A"] - values["R"] @ values["B"].T) ** 2),
    )


def test_thesis_examples(values):
    x, A, S = values["x"], values["A"], values["S"]
    check("x *(i,ij->j) S *(j,j->) x", values, x @ S @ x)
    X, w, y = values["A"], values["u"], np.sign(values["x"])
    vals = dict(values, X=X, w=w, y=y)
    orders = dict(ORDERS, X=2, w=1)
    e = tc.parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1", orders)
    np.testing.assert_allclose(tc.evaluate(e, vals), np.sum(np.log(np.exp(-(y * (X @ w))) + 1)), rtol=1e-12)
    e = tc.parse("tanh(A *(mj,hj->mh) A2) *(mh,h->) x", ORDERS)
    np.testing.assert_allclose(tc.evaluate(e, values), np.sum(np.tanh(A @ values["A2"].T) @ x), rtol=1e-12)


def test_builder_expressions_evaluate(values):
    A, u, x = tc.var("A", 2), tc.var("u", 1), tc.var("x", 1)
    np.testing.assert_allclose(tc.evaluate(tc.einsum("ij,j->i", A, u), values), values["A"] @ values["u"])
    np.testing.assert_allclose(
        tc.evaluate(tc.einsum("i,ij,j->", x, A, u), values), values["x"] @ values["A"] @ values["u"]
    )
    np.testing.assert_allclose(tc.evaluate(tc.einsum("ij->ji", A), values), values["A"].T)
    np.testing.assert_allclose(tc.evaluate(2 * x + 1, values), 2 * values["x"] + 1)


# ----------------------------------------------------------------- inputs and errors


def test_values_as_lists_ints_and_python_floats():
    e = tc.parse("c *(,i->i) x + A *(ij,j->i) y", {"c": 0, "x": 1, "A": 2, "y": 1})
    result = tc.evaluate(e, {"c": 2, "x": [1, 2], "A": [[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]], "y": [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(result, [2 + 7.0, 4 + 2.0])
    assert result.dtype == np.float64
    assert float(tc.evaluate(tc.parse("c^2", {"c": 0}), {"c": 1.5})) == 2.25
    assert float(tc.evaluate(tc.parse("c^2", {"c": 0}), {"c": np.float32(3.0)})) == 9.0


def test_values_as_keyword_arguments():
    e = tc.parse("x *(i,i->) y", {"x": 1, "y": 1})
    assert float(tc.evaluate(e, x=[1.0, 2.0], y=[3.0, 4.0])) == 11.0
    assert float(tc.evaluate(e, {"x": [1.0, 2.0]}, y=[3.0, 4.0])) == 11.0


def test_scalar_result_is_a_0d_array():
    result = tc.evaluate(tc.parse("x *(i,i->) x", {"x": 1}), {"x": [3.0, 4.0]})
    assert isinstance(result, np.ndarray) and result.shape == () and float(result) == 25.0


@pytest.mark.parametrize("text", ["S", "S *(ij,->ji) 1", "S *(ii,->i) 1", "S *(ij,->ij) 1", "S *(ij,->ij) 1 + 0"])
def test_result_never_aliases_an_input(text):
    S = np.arange(9.0).reshape(3, 3)
    original = S.copy()
    result = ev(text, {"S": S})
    assert not np.shares_memory(result, S)
    result[...] = -1.0  # writing into the result leaves the caller's array alone
    np.testing.assert_array_equal(S, original)


def test_unused_values_are_ignored():
    assert float(tc.evaluate(tc.parse("c + 1", {"c": 0}), {"c": 1.0, "unused": np.ones(7)})) == 2.0


def test_missing_variable():
    e = tc.parse("A *(ij,j->i) x + y", {"A": 2, "x": 1, "y": 1})
    with pytest.raises(tc.EvaluationError) as info:
        tc.evaluate(e, {"A": np.ones((2, 3)), "x": np.ones(3)})
    assert str(info.value) == "no value given for variable 'y' (order 1)"
    e = tc.parse("c *(,i->i) x", {"c": 0, "x": 1})
    with pytest.raises(tc.EvaluationError, match="no value given for variable 'c' \\(order 0\\)"):
        tc.evaluate(e, {"x": np.ones(3)})


def test_wrong_order():
    e = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    with pytest.raises(tc.EvaluationError) as info:
        tc.evaluate(e, {"A": np.ones((2, 3)), "x": np.ones((3, 1))})
    assert str(info.value) == "variable 'x' is declared with order 1 but the array given has 2 axes (shape (3, 1))"
    e = tc.parse("c *(,i->i) x", {"c": 0, "x": 1})
    with pytest.raises(
        tc.EvaluationError, match="variable 'c' is declared with order 0 but the array given has 1 axes"
    ):
        tc.evaluate(e, {"c": [2.0], "x": np.ones(3)})


def test_conflicting_axis_lengths():
    e = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    with pytest.raises(tc.EvaluationError) as info:
        tc.evaluate(e, {"A": np.ones((2, 3)), "x": np.ones(4)})
    assert str(info.value) == (
        "axis 0 of variable 'x' has length 4, but it must equal axis 1 of variable 'A', which has length 3"
    )


@pytest.mark.parametrize(
    "text, orders, values, names",
    [
        ("x + y", {"x": 1, "y": 1}, {"x": np.ones(2), "y": np.ones(5)}, ("'x'", "'y'", "2", "5")),
        ("A *(ii,->) 1", {"A": 2}, {"A": np.ones((2, 3))}, ("'A'", "axis 0", "axis 1", "2", "3")),
        ("inv(A)", {"A": 2}, {"A": np.ones((4, 3))}, ("'A'", "axis 0", "axis 1", "4", "3")),
        ("det(A)", {"A": 2}, {"A": np.ones((4, 3))}, ("'A'", "4", "3")),
        ("delta(1) + A", {"A": 2}, {"A": np.ones((2, 3))}, ("'A'", "2", "3")),
        ("A *(ij,jk->ik) B", {"A": 2, "B": 2}, {"A": np.ones((2, 3)), "B": np.ones((4, 5))}, ("'A'", "'B'", "3", "4")),
        ("x *(i,->ii) 1 + A", {"x": 1, "A": 2}, {"x": np.ones(3), "A": np.ones((3, 4))}, ("'A'", "3", "4")),
    ],
)
def test_conflicts_name_the_variables_axes_and_lengths(text, orders, values, names):
    with pytest.raises(tc.EvaluationError) as info:
        tc.evaluate(tc.parse(text, orders), values)
    message = str(info.value)
    assert "axis" in message and "length" in message
    for part in names:
        assert part in message, (part, message)


def test_non_numeric_values():
    e = tc.parse("x + 1", {"x": 1})
    with pytest.raises(tc.EvaluationError, match="numbers are needed"):
        tc.evaluate(e, {"x": ["a", "b"]})
    with pytest.raises(tc.EvaluationError):
        tc.evaluate("x + 1", {"x": [1.0]})  # type: ignore[arg-type]


def test_evaluation_errors_are_value_errors():
    with pytest.raises(ValueError):
        tc.evaluate(tc.parse("x", {"x": 1}), {})


@pytest.mark.parametrize("name", ["values", "expr", "kwargs", "self"])
def test_every_keyword_names_a_variable(name):
    # evaluate's own parameters are positional only: `values=` and `expr=` are variables
    e = tc.var(name, 1) * 2.0
    assert tc.evaluate(e, **{name: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    assert tc.evaluate(e, {name: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    assert tc.compile(e)(**{name: [1.0, 2.0]}).tolist() == [2.0, 4.0]
    both = tc.var(name, 1) + tc.var("y", 1)
    assert tc.evaluate(both, {"y": [1.0, 1.0]}, **{name: [1.0, 2.0]}).tolist() == [2.0, 3.0]
