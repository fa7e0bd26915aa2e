"""NumPy and MATLAB spellings (issue 31 item 6): accepted with NumPy's meaning, or refused
with a message naming the spelling to use.

Values are checked against NumPy on distinct axis lengths, derivatives against central
finite differences of the NumPy function (an independent reference).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

x, a, X, A, B = tc.var("x", 1), tc.var("a", 0), tc.var("X", 2), tc.var("A", 2), tc.var("B", 2)

#: label -> (expression, the same with NumPy, the variable to differentiate by)
CASES = {
    "x / a": (lambda: x / a, lambda v: v["x"] / v["a"], "a"),
    "a / x": (lambda: a / x, lambda v: v["a"] / v["x"], "x"),
    "x / norm(x)": (lambda: x / tc.norm(x), lambda v: v["x"] / np.linalg.norm(v["x"]), "x"),
    "x - sum(x) / 4": (lambda: x - tc.sum(x) / 4, lambda v: v["x"] - v["x"].sum() / 4, "x"),
    "sum(x) / 4 - x": (lambda: tc.sum(x) / 4 - x, lambda v: v["x"].sum() / 4 - v["x"], "x"),
    "a + X": (lambda: a + X, lambda v: v["a"] + v["X"], "a"),
    "X * x": (lambda: X * x, lambda v: v["X"] * v["x"], "x"),
    "x * X": (lambda: x * X, lambda v: v["x"] * v["X"], "X"),
    "X + x": (lambda: X + x, lambda v: v["X"] + v["x"], "x"),
    "x - X": (lambda: x - X, lambda v: v["x"] - v["X"], "X"),
    "X / x": (lambda: X / x, lambda v: v["X"] / v["x"], "x"),
    "x / X": (lambda: x / X, lambda v: v["x"] / v["X"], "X"),
    "abs(x)": (lambda: abs(x), lambda v: np.abs(v["x"]), "x"),
    "abs(X - x)": (lambda: abs(X - x), lambda v: np.abs(v["X"] - v["x"]), "X"),
    "einsum('ij,jk', A, B)": (lambda: tc.einsum("ij,jk", A, B), lambda v: np.einsum("ij,jk", v["A"], v["B"]), "A"),
    "einsum('ji', X)": (lambda: tc.einsum("ji", X), lambda v: np.einsum("ji", v["X"]), "X"),
    "einsum('ij,ij', X, X)": (lambda: tc.einsum("ij,ij", X, X), lambda v: np.einsum("ij,ij", v["X"], v["X"]), "X"),
    "einsum('ba,b', A, x)": (lambda: tc.einsum("ba,b", A, x), lambda v: np.einsum("ba,b", v["A"], v["x"]), "x"),
    "x[::-1]": (lambda: tc.einsum("i,i->i", tc.sin(x[::-1]), x), lambda v: np.sin(v["x"][::-1]) * v["x"], "x"),
    "X[::-1, 3:0:-2]": (lambda: tc.exp(X[::-1, 3:0:-2]), lambda v: np.exp(v["X"][::-1, 3:0:-2]), "X"),
    "X[:, -2::-1] (text)": (
        lambda: tc.parse("X[:, -2::-1] .* X[:, :-1]", {"X": 2}),
        lambda v: v["X"][:, -2::-1] * v["X"][:, :-1],
        "X",
    ),
    "x.^-1 (text)": (lambda: tc.parse("x.^-1", {"x": 1}), lambda v: v["x"] ** -1.0, "x"),
    "a^-2 (text)": (lambda: tc.parse("a^-2", {"a": 0}), lambda v: v["a"] ** -2.0, "a"),
    "2^-a (text)": (lambda: tc.parse("2^-a", {"a": 0}), lambda v: 2.0 ** -v["a"], "a"),
    "a^--2 (text)": (lambda: tc.parse("a^--2", {"a": 0}), lambda v: v["a"] ** 2.0, "a"),
}


def _values(rng) -> dict[str, np.ndarray]:
    # distinct lengths; X is 3x5 so that x (5) meets its trailing axis; no entry near 0 (divisions, abs)
    def away(shape):
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)

    return {"x": away(5), "a": np.float64(1.3), "X": away((3, 5)), "A": away((2, 4)), "B": away((4, 5))}


@pytest.mark.parametrize("label", list(CASES))
def test_value_is_numpys(label, rng):
    build, reference, _ = CASES[label]
    values = _values(rng)
    expr = build()
    if label == "einsum('ba,b', A, x)":  # A is 2x4: x of length 2 meets its first axis
        values["x"] = values["x"][:2]
    expected = reference(values)
    got = tc.evaluate(expr, {k: values[k] for k in expr.variables})
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
    compiled = tc.compile(expr)(**{k: values[k] for k in expr.variables})
    np.testing.assert_allclose(compiled, expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("label", list(CASES))
def test_derivative_matches_finite_differences(label, rng):
    build, reference, wrt = CASES[label]
    values = _values(rng)
    if label == "einsum('ba,b', A, x)":
        values["x"] = values["x"][:2]
    expr = build()
    jacobian = tc.evaluate(tc.derivative(expr, wrt), {k: values[k] for k in expr.variables})
    base = np.asarray(values[wrt], dtype=float)
    h = 1e-6
    columns = []
    for k in range(base.size):
        step = np.zeros(base.size)
        step[k] = h
        plus = reference({**values, wrt: base + step.reshape(base.shape)})
        minus = reference({**values, wrt: base - step.reshape(base.shape)})
        columns.append((np.asarray(plus) - np.asarray(minus)) / (2 * h))
    numeric = np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(reference(values)) + base.shape)
    np.testing.assert_allclose(jacobian, numeric, rtol=1e-6, atol=1e-7)


def test_x_dot_x_divided_like_matrix_notation():
    # the NumPy spelling gives the node the matrix notation gives for x / norm2(x)
    values = {"x": np.array([3.0, 4.0, 12.0])}
    np.testing.assert_allclose(
        tc.evaluate(x / tc.norm(x), values), tc.evaluate(tc.parse("x / norm2(x)", {"x": 1}), values)
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: x[::0], r"a slice step cannot be zero"),
        (lambda: tc.einsum("i...,i", X, x), r"ellipsis '\.\.\.' is not supported"),
    ],
)
def test_refused_spellings_name_the_alternative(build, message):
    with pytest.raises(tc.TensCalcError, match=message):
        build()


def test_unary_minus_exponent_reads_as_python_and_matlab():
    # 2**-1 is 0.5 in Python and 2^-1 in MATLAB; -x^-2 is -(x^-2) as -x**-2 is in Python
    assert float(tc.evaluate(tc.parse("2^-1"))) == 0.5
    assert float(tc.evaluate(tc.parse("-a^-2", {"a": 0}), a=2.0)) == -0.25
    assert tc.parse("x.^-1", {"x": 1}) is tc.parse("x.^(-1)", {"x": 1})


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "dask"])
def test_negative_steps_on_every_backend_and_in_generated_code(backend, rng):
    from tenscalc.compiler.backends import available_backends

    if backend not in available_backends():
        pytest.skip(f"{backend} is not installed")
    if backend == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
    f = tc.einsum("ij,ij->", tc.tanh(X[::-1, 1::2]), X[:, 3::-2]) + tc.einsum("i,i->", x[::-2], tc.sin(x[::2]))
    values = {"X": rng.standard_normal((3, 4)), "x": rng.standard_normal(5)}
    exprs = [f, tc.gradient(f, "X"), tc.hessian(f, "x")]
    expected = [tc.evaluate(e, values) for e in exprs]
    run = tc.compile(exprs, backend=backend)
    if backend == "torch":
        import torch

        got = [r.numpy() for r in run(**{k: torch.tensor(v) for k, v in values.items()})]
    else:
        got = [np.asarray(r.compute() if backend == "dask" else r) for r in run(**values)]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    if backend == "numpy":
        for shapes in (None, {"X": (3, 4), "x": (5,)}):
            namespace: dict = {}
            exec(tc.to_python(exprs, shapes=shapes), namespace)  # noqa: S102 - the library's own code
            for g, e in zip(namespace["f"](**values), expected):
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    # an independent reference for the gradient by X: the transposes of the two slices
    gX = np.zeros((3, 4))
    A, B = values["X"][::-1, 1::2], values["X"][:, 3::-2]
    gX[::-1, 1::2] += (1 - np.tanh(A) ** 2) * B
    gX[:, 3::-2] += np.tanh(A)
    np.testing.assert_allclose(expected[1], gX, rtol=1e-12, atol=1e-12)


def test_reversal_prints_and_reparses():
    for e in (x[::-1], X[::-1, 3:0:-2], tc.gradient(tc.sum(tc.sin(x[::-1]) * x), "x")):
        assert tc.parse(str(e), e.variables) is e
