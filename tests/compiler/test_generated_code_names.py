"""Generated code (issue 14, item 7): variables named like builtins or NumPy work,
and complex input is handled as evaluate and compile handle it."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc


def _function(exprs):
    namespace: dict = {}
    exec(tc.to_python(exprs), namespace)  # noqa: S102 - the library's own generated code
    return namespace["f"]


@pytest.mark.parametrize("names", [("float", "ValueError", "np"), ("int", "len", "print"), ("TypeError", "e", "x")])
def test_variables_named_like_builtins(names, rng):
    a, b, c = names
    e = tc.parse(f"{a} *(i,i->) {b} + {c} *(,->) sin({c})", {a: 1, b: 1, c: 0})
    values = {a: rng.standard_normal(3), b: rng.standard_normal(3), c: 0.7}
    value, grad = _function([e, tc.gradient(e, a)])(**values)
    assert float(value) == pytest.approx(values[a] @ values[b] + 0.7 * np.sin(0.7))
    np.testing.assert_allclose(grad, values[b])
    with pytest.raises(ValueError, match="must have 1 axis"):  # the check still raises the builtin
        _function(e)(**{**values, a: np.ones((2, 2))})


def test_complex_input_like_evaluate_and_compile():
    e = tc.parse("x *(i,ij->j) A", {"x": 1, "A": 2})
    x, A = np.array([1 + 2j, 3.0]), np.array([[1.0, 1j], [2.0, 0.5]])
    expected = x @ A
    np.testing.assert_allclose(tc.evaluate(e, x=x, A=A), expected)
    np.testing.assert_allclose(tc.compile(e)(x=x, A=A), expected)
    np.testing.assert_allclose(_function(e)(x=x, A=A), expected)
    # integers and bools still become floats
    assert _function(e)(x=[1, 2], A=np.eye(2, dtype=int)).dtype == np.float64


@pytest.mark.parametrize(
    "text",
    [
        "A *(ij,ij->) (sin(1) + exp(2)) + c",  # was exp(2) + sin(1) * sum(A): a wrong number
        "A - (sin(1) - 3) *(,ij->ij) A",
        "-(sin(1) - 3) *(,ij->ij) A",
        "A - 2 *(,ij->ij) (sin(1) - 3) - (1 - cos(2))",
        "A / 0 + (c / (0 - 0)) *(,ij->ij) A",  # NumPy's inf, not Python's ZeroDivisionError
        "A *(ij,->) 1 *(,->) 2^(-1) + c^(-2)",  # NumPy's 0.5, not an integer-power ValueError
        "A *(ij,ij->) (1 + " + "sin(" * 400 + "1" + ")" * 400 + ")",  # deeper than Python's parser nests
    ],
)
def test_constant_subexpressions_mean_the_same_in_generated_code(text):
    e = tc.parse(text, {"A": 2, "c": 0})
    values = {"A": np.arange(6.0).reshape(2, 3) - 2.5, "c": 0.75}
    values = {name: values[name] for name in e.variables}
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = tc.evaluate(e, values)
        got = _function(e)(**values)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["len", "range", "ValueError"])
@pytest.mark.parametrize("with_shapes", [False, True], ids=["generic", "shape-specialised"])
def test_sliced_variables_named_like_builtins(name, with_shapes, rng):
    # the slice-length checks called len(range(...)) and the shape check raised
    # ValueError: a variable of that name shadowed them (found by the fuzz harness)
    e = tc.parse(f"{name}[1:, :] *(ij,ij->) tanh({name}[:-1, :])", {name: 2})
    x = rng.standard_normal((4, 3))
    namespace: dict = {}
    exec(tc.to_python([e, tc.gradient(e, name)], shapes={name: (4, 3)} if with_shapes else None), namespace)  # noqa: S102
    value, grad = namespace["f"](**{name: x})
    assert float(value) == pytest.approx(float(tc.evaluate(e, {name: x})))
    np.testing.assert_allclose(grad, tc.evaluate(tc.gradient(e, name), {name: x}))
    with pytest.raises(ValueError):  # the checks still raise the builtin
        namespace["f"](**{name: np.ones((4, 3, 2))})
