"""Slices (issue 11): ``x[1:]``, ``x[:-1]``, ``x[2]``, ``X[:, 0]``, ``X[1:, :]`` in both
text notations and from Python, through every evaluator, with derivatives (the
pullback of a slice embeds into zeros), and the Rosenbrock family against SciPy."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.testing import assert_derivative

rng = np.random.default_rng(7)
X_ = rng.standard_normal((4, 5))
x_ = rng.standard_normal(6)
ENV = {"X": X_, "x": x_}

# (text in matrix notation, text in the einsum language, Python, NumPy's value)
FORMS = [
    ("x[1:]", "x[1:]", lambda x, X: x[1:], x_[1:]),
    ("x[:-1]", "x[:-1]", lambda x, X: x[:-1], x_[:-1]),
    ("x[2]", "x[2]", lambda x, X: x[2], x_[2]),
    ("x[-1]", "x[-1]", lambda x, X: x[-1], x_[-1]),
    ("x[::2]", "x[::2]", lambda x, X: x[::2], x_[::2]),
    ("x[1:5:2]", "x[1:5:2]", lambda x, X: x[1:5:2], x_[1:5:2]),
    ("X[:, 0]", "X[:, 0]", lambda x, X: X[:, 0], X_[:, 0]),
    ("X[1:, :]", "X[1:, :]", lambda x, X: X[1:, :], X_[1:, :]),
    ("X[0]", "X[0]", lambda x, X: X[0], X_[0]),
    ("X[1:3, ::2]", "X[1:3, ::2]", lambda x, X: X[1:3, ::2], X_[1:3, ::2]),
    ("X[2, 3]", "X[2, 3]", lambda x, X: X[2, 3], X_[2, 3]),
    ("x[1:] - x[:-1]", "x[1:] - x[:-1]", lambda x, X: x[1:] - x[:-1], np.diff(x_)),
    ("X[1:, :]'*x[:4]", "X[1:, :] *(ij,i->j) x[:3]", None, X_[1:, :].T @ x_[:3]),
]


def _orders():
    return {"x": 1, "X": 2}


@pytest.mark.parametrize("matrix, einsum, build, expected", FORMS, ids=[f[0] for f in FORMS])
def test_slice_forms_against_numpy(matrix, einsum, build, expected):
    exprs = [tc.parse(einsum, _orders())]
    if "*(" not in einsum:
        exprs.append(tc.parse(matrix, _orders()))
    if build is not None:
        exprs.append(build(tc.var("x", 1), tc.var("X", 2)))
    if "'*" in matrix:
        with pytest.raises(tc.EvaluationError, match="length"):  # x[:4] has 4 entries, X[1:, :] 3 rows
            tc.evaluate(tc.parse(matrix, _orders()), ENV)
    for expr in exprs:
        values = {k: v for k, v in ENV.items() if k in expr.variables}
        np.testing.assert_allclose(tc.evaluate(expr, values), expected, rtol=1e-14)
        np.testing.assert_allclose(tc.compile(expr)(**values), expected, rtol=1e-14)
        namespace: dict = {}
        exec(tc.to_python(expr), namespace)
        np.testing.assert_allclose(namespace["f"](**values), expected, rtol=1e-14)
    assert exprs[0] is exprs[-1] or build is None or exprs[-1] is tc.parse(einsum, _orders())


@pytest.mark.parametrize(
    "text",
    [
        "sum((x[1:] - x[:-1]).^2)",
        "x[1:]'*A*x[:-1]",
        "sum(exp(X[:, 0]) .* X[:, 1])",
        "sum(sin(X[1:, :] - X[:-1, :]))",
        "x[0]*x[-1] + x[2]^2",
        "norm2(x[::2])^2 + sum(x[1::2])",
        "log(det(X[1:, 1:]))",
    ],
)
def test_derivatives_of_slices(text):
    f = tc.parse(text, {"x": 1, "X": 2, "A": 2})
    for name in f.variables:
        assert_derivative(f, name)  # distinct axis lengths, central differences
        assert_derivative(f, name, order=2)
        d = tc.derivative(f, name)
        for printed in (str(d), tc.to_matrix_notation(d)):  # both notations parse back
            values = _values(f)
            again = tc.parse(printed, f.variables)
            np.testing.assert_allclose(tc.evaluate(again, values), tc.evaluate(d, values), rtol=1e-12)


def _values(f):
    from tenscalc.testing import random_values

    return random_values(f, seed=3)


# ------------------------------------------------------------------------- Rosenbrock

CHAINED = "sum(100*(x[1:] - x[:-1].^2).^2 + (1 - x[:-1]).^2)"
EXTENDED = "sum(100*(x[1::2] - x[::2].^2).^2 + (1 - x[::2]).^2)"


@pytest.mark.parametrize("n", [2, 3, 7, 20])
def test_chained_rosenbrock_is_scipys(n):
    optimize = pytest.importorskip("scipy.optimize")
    f = tc.parse(CHAINED)
    g = tc.gradient(f, "x")
    H = tc.hessian(f, "x")
    point = np.random.default_rng(n).uniform(-2, 2, n)
    compiled = tc.compile([f, g, H])
    for values in (
        (tc.evaluate(f, x=point), tc.evaluate(g, x=point), tc.evaluate(H, x=point)),
        compiled(x=point),
    ):
        np.testing.assert_allclose(values[0], optimize.rosen(point), rtol=1e-13)
        np.testing.assert_allclose(values[1], optimize.rosen_der(point), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(values[2], optimize.rosen_hess(point), rtol=1e-13, atol=1e-12)
    # from Python, the same graph
    x = tc.var("x", 1)
    assert tc.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) is f


@pytest.mark.parametrize("n", [2, 6, 10])
def test_extended_rosenbrock_is_scipys_on_pairs(n):
    optimize = pytest.importorskip("scipy.optimize")
    f = tc.parse(EXTENDED)
    point = np.random.default_rng(n).uniform(-2, 2, n)
    pairs = [point[k : k + 2] for k in range(0, n, 2)]
    value = sum(optimize.rosen(p) for p in pairs)
    gradient = np.concatenate([optimize.rosen_der(p) for p in pairs])
    hessian = np.zeros((n, n))
    for k, p in zip(range(0, n, 2), pairs):
        hessian[k : k + 2, k : k + 2] = optimize.rosen_hess(p)
    np.testing.assert_allclose(tc.evaluate(f, x=point), value, rtol=1e-13)
    np.testing.assert_allclose(tc.evaluate(tc.gradient(f, "x"), x=point), gradient, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(tc.compile(tc.hessian(f, "x"))(x=point), hessian, rtol=1e-13, atol=1e-12)


def test_compiled_slices_are_views_and_outputs_are_copies():
    x = tc.var("x", 1)
    point = np.arange(5.0)
    out = tc.compile(x[1:])(x=point)
    out[0] = 99.0
    assert point[1] == 1.0  # the caller's array is untouched
    plan = tc.compile(tc.gradient(tc.sum(x[1:] * x[:-1]), "x")).plan
    kinds = [step.kind for step in plan.steps]
    writes = [item for step in plan.steps if step.kind == "add" for item in step.data if item.kind == "embed"]
    # views and strided writes (here fused into the sum: no zeros of their own), no selection matrices
    assert "slice" in kinds and ("embed" in kinds or len(writes) == 2)
    assert all(step.node.op != "const" or step.node.order == 0 for step in plan.steps if step.kind == "constant")


# ----------------------------------------------------------------------------- errors


def test_slice_errors():
    with pytest.raises(tc.EvaluationError, match="out of range"):
        tc.evaluate(tc.parse("x[7]", {"x": 1}), x=np.zeros(3))
    with pytest.raises(tc.EvaluationError, match="length"):
        tc.evaluate(tc.parse("x[1:] + x", {"x": 1}), x=np.zeros(3))
    with pytest.raises(tc.SemanticError, match="slice item"):
        tc.parse("x[1, 2]", {"x": 1})
    with pytest.raises(tc.ParseError, match="cannot be zero"):  # (negative steps reverse: test_numpy_spellings)
        tc.parse("x[::0]", {"x": 1})
    with pytest.raises(tc.SemanticError, match="cannot be zero"):
        tc.var("x", 1)[::0]
    with pytest.raises(tc.SemanticError, match="integers and slices"):
        tc.var("x", 1)[None]
    with pytest.raises(TypeError, match="iterated"):
        list(tc.var("x", 1))


def test_exact_oracle_agrees_on_slices():
    sympy = pytest.importorskip("sympy")
    from tenscalc.oracle import exact_mismatches

    f = tc.parse(CHAINED)
    point = {"x": np.array([sympy.Rational(1, 2), sympy.Rational(-3, 4), sympy.Rational(2, 3), sympy.Integer(1)])}
    g = tc.gradient(f, "x")
    assert exact_mismatches(f, "x", point, g) == []
    assert exact_mismatches(g, "x", point, tc.derivative(g, "x")) == []
    h = tc.parse("sum(X[1:, :2] .* X[:-1, 1:]) + X[0, 2]^3", {"X": 2})
    values = {"X": np.array([[sympy.Rational(k, 7) for k in range(j, j + 3)] for j in range(3)])}
    assert exact_mismatches(h, "X", values, tc.derivative(h, "X")) == []


@pytest.mark.parametrize("backend", ["numpy", "jax", "dask", "torch"])
def test_slices_on_every_backend(backend):
    from tenscalc.compiler.backends import available_backends

    if backend not in available_backends():
        pytest.skip(f"{backend} is not installed")
    optimize = pytest.importorskip("scipy.optimize")
    if backend == "jax":  # JAX computes in float32 unless asked
        import jax

        jax.config.update("jax_enable_x64", True)
    f = tc.parse(CHAINED)
    point = np.random.default_rng(1).uniform(-2, 2, 6)
    value, gradient, hessian = tc.compile([f, tc.gradient(f, "x"), tc.hessian(f, "x")], backend=backend)(x=point)
    np.testing.assert_allclose(np.asarray(value), optimize.rosen(point), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gradient), optimize.rosen_der(point), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(np.asarray(hessian), optimize.rosen_hess(point), rtol=1e-12, atol=1e-10)
    X = tc.var("X", 2)
    g = tc.gradient(tc.sum(X[1:, 0] * X[:-1, 2]) + X[0, 1] ** 2, "X")
    data = np.arange(12.0).reshape(4, 3)
    expected = np.zeros((4, 3))
    expected[1:, 0] += data[:-1, 2]
    expected[:-1, 2] += data[1:, 0]
    expected[0, 1] += 2 * data[0, 1]
    np.testing.assert_allclose(np.asarray(tc.compile(g, backend=backend)(X=data)), expected)


@pytest.mark.parametrize("text", ["x[:::-1", "x[:::-1]", "x[1:::2]"])
def test_a_third_colon_is_a_parse_error(text):
    # the parser compared None with 1 (a TypeError): found by the fuzz harness
    with pytest.raises(tc.ParseError, match=r"expected a slice step \(a nonzero integer\) but found ':'") as info:
        tc.parse(text, {"x": 1})
    assert "column" in str(info.value)
