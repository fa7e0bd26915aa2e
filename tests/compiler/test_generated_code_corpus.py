"""Generated code over a corpus of derivatives (issue 31 item 4, issue 30 items 4 and 8).

Every derivative the library produces (constants, order-0 results, order-3 and order-4
values) is written by both forms of ``tc.to_python``; the source must compile and agree
with ``tc.evaluate``, with variables named ``lambda`` (a keyword), ``float``, ``len`` and
``np``, and the function named like a builtin.  The expected values come from the
interpreter, an independent evaluator; the derivatives themselves are checked against
finite differences elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

# variable name -> shape (distinct axis lengths)
SHAPES = {"lambda": (), "float": (3,), "len": (2, 3, 4), "np": (4, 5), "c": (3,), "k": ()}


def _corpus() -> list[tuple[str, tc.Expr]]:
    lam, x, T, M, c, _k = (tc.var(name, len(shape)) for name, shape in SHAPES.items())
    cubic = tc.sum(T * T * T) + tc.sum(tc.exp(T) * T)
    quadratic = lam * tc.einsum("i,i->", x, x) + tc.einsum("ij,ij->", M, M)
    return [
        ("constant Hessian of c^2", tc.hessian(tc.parse("k^2", {"k": 0}), "k")),
        ("order-0 value", quadratic),
        ("gradient by a keyword-named scalar", tc.derivative(quadratic, "lambda")),
        ("Hessian writing a diagonal", tc.hessian(tc.sum(tc.sin(x) * x), "float")),
        ("mixed second derivative", tc.derivative(tc.gradient(quadratic, "float"), "lambda")),
        ("constant gradient reading no variable", tc.derivative(tc.sum(x + c), "c")),
        ("third derivative by an order-3 variable", tc.nth_derivative(cubic, "len", 3)),
        ("order-4 Hessian", tc.hessian(tc.einsum("ij,ij->", tc.exp(M), M), "np")),
        ("order-3 gradient of a slice", tc.gradient(tc.sum(tc.tanh(T[:, 1:, ::2]) * T[:, :2, 1::2]), "len")),
    ]


CORPUS = _corpus()


def _values(rng, complex_values: bool = False) -> dict[str, np.ndarray]:
    values = {name: rng.standard_normal(shape) for name, shape in SHAPES.items()}
    if complex_values:
        values = {name: v + 1j * rng.standard_normal(v.shape) for name, v in values.items()}
    return values


def _generated(expr, name: str, shapes):
    source = tc.to_python(expr, name=name, shapes=shapes)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the library's own code
    return namespace[name]


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
@pytest.mark.parametrize(("label", "expr"), CORPUS, ids=[label for label, _ in CORPUS])
def test_generated_code_agrees_with_evaluate(label, expr, with_shapes, rng):
    values = _values(rng)
    expected = tc.evaluate(expr, values)
    shapes = SHAPES if with_shapes else None  # extra shapes are ignored
    for function_name in ("f", "len", "float"):  # a function named like a builtin the code uses
        f = _generated(expr, function_name, shapes)
        got = f(**values)  # every variable of the corpus passed: unread ones are accepted and ignored
        assert got.shape == expected.shape, label
        assert got.dtype == np.float64, label
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=label)


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
@pytest.mark.parametrize(("label", "expr"), CORPUS, ids=[label for label, _ in CORPUS])
def test_generated_code_keeps_imaginary_parts(label, expr, with_shapes, rng):
    values = _values(rng, complex_values=True)
    expected = tc.evaluate(expr, values)
    shapes = SHAPES if with_shapes else None  # extra shapes are ignored
    got = _generated(expr, "f", shapes)(**values)
    if expr.variables:  # a result computed from complex inputs is complex
        assert got.dtype == np.complex128, label
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=label)


@pytest.mark.parametrize("with_shapes", [False, True], ids=["shape-free", "shape-specialised"])
def test_the_dot_product_of_a_complex_vector(with_shapes):
    # x·x at x = [1j, 2] is -1 + 4 = 3: the shape-specialised form once returned 4.0
    e = tc.parse("x *(i,i->) x", {"x": 1})
    f = _generated(e, "f", {"x": (2,)} if with_shapes else None)
    assert f(x=np.array([1j, 2])) == 3 + 0j
    h = _generated(tc.hessian(tc.sum(tc.var("x", 1) ** 3), "x"), "f", {"x": (2,)} if with_shapes else None)
    np.testing.assert_allclose(h(x=np.array([1j, 2])), np.diag([6j, 12]))  # a diagonal written into zeros


def test_keyword_variable_is_passed_by_mapping_and_missing_one_is_named():
    e = tc.parse("lambda * x *(i,i->) x", {"lambda": 0, "x": 1})
    f = _generated(e, "f", None)
    x = np.array([1.0, 2.0, 3.0])
    assert float(f(**{"lambda": 0.5, "x": x})) == pytest.approx(7.0)
    assert float(tc.compile(e)(**{"lambda": 0.5, "x": x})) == pytest.approx(7.0)  # the same call as compile's
    with pytest.raises(TypeError, match=r"missing the argument 'lambda'.*f\(\*\*\{'lambda'"):
        f(x=x)


def test_constant_results_are_floats_not_integers():
    f = _generated(tc.hessian(tc.parse("c^2", {"c": 0}), "c"), "f", {"c": ()})
    assert f(c=2.0).dtype == np.float64 and float(f(c=2.0)) == 2.0
    g = _generated(tc.derivative(tc.parse("sum(x + c)", {"x": 1, "c": 1}), "c"), "f", None)
    assert g(x=np.ones(3), c=np.ones(4)).tolist() == [1.0] * 4  # reads the shape of c only; x is ignored


def test_cli_python_accepts_a_keyword_named_variable(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "tenscalc", "lambda *(,->) (x *(i,i->) x)", "--orders", "lambda=0,x=1"]
        + ["--wrt", "x", "--python"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    source = out[out.index("# Generated by tenscalc") :]
    namespace: dict = {}
    exec(compile(source, "<cli>", "exec"), namespace)  # noqa: S102 - the library's own code
    value, grad = namespace["f"](**{"lambda": 2.0, "x": np.array([1.0, 2.0])})
    assert float(value) == 10.0 and grad.tolist() == [4.0, 8.0]
