"""``tc.to_python(..., shapes=...)``: the compiler's program written as NumPy source.

It must agree with ``tc.evaluate`` on the compiler's whole corpus (distinct axis
lengths), share what the plan shares, search no contraction path at run time,
import neither tenscalc nor opt_einsum, and refuse arrays of other shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_compile import EXPRESSIONS, SCALARS, parse  # the compiler's corpus

import tenscalc as tc
from tenscalc.testing import random_values


def _function(exprs, values, name="generated"):
    shapes = {k: np.shape(v) for k, v in values.items()}
    source = tc.to_python(exprs, name=name, shapes=shapes)
    namespace: dict = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name], source


def _assert_matches(exprs, values=None):
    exprs = list(exprs)
    values = values if values is not None else random_values(exprs)
    function, source = _function(exprs, values)
    results = function(**values)
    assert isinstance(results, tuple) and len(results) == len(exprs)
    for expr, result in zip(exprs, results):
        expected = tc.evaluate(expr, values)
        assert np.shape(result) == np.shape(expected), str(expr)
        np.testing.assert_allclose(result, expected, rtol=1e-10, atol=1e-12, err_msg=f"{expr}\n{source}")
    return source


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_generated_program_equals_interpreted(text):
    _assert_matches([parse(text)])


@pytest.mark.parametrize("text, wrt", SCALARS)
def test_value_gradient_hessian_generated_together(text, wrt):
    f = parse(text)
    _assert_matches([f, tc.gradient(f, wrt), tc.hessian(f, wrt)])


@pytest.mark.parametrize("text, wrt", SCALARS)
def test_unsimplified_derivatives_generate(text, wrt):
    f = parse(text)
    g = tc.derivative(f, wrt, simplify=False)
    _assert_matches([g, tc.derivative(g, wrt, simplify=False)])


def test_needs_numpy_only_and_searches_no_path():
    f = parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) x))) + 1) *(i,i->) 1")
    source = _assert_matches([f, tc.gradient(f, "x"), tc.hessian(f, "x")])
    code = "\n".join(line for line in source.splitlines() if not line.startswith("#"))
    assert "import numpy as _np" in code
    assert "tenscalc" not in code and "opt_einsum" not in code and "contract" not in code


def test_shared_work_is_written_once():
    # least squares: A x - b is shared by the value and the gradient
    f = tc.parse("(A *(ij,j->i) x - b) *(i,i->) (A *(ij,j->i) x - b)", {"A": 2, "x": 1, "b": 1})
    values = random_values(f)
    _, source = _function([f, tc.gradient(f, "x")], values)
    body = [line for line in source.splitlines() if not line.startswith("#")]
    assert sum("@" in line and "A" in line for line in body) == 2  # A x once, then rᵀ A for the gradient


def test_other_shapes_are_refused_with_a_clear_message():
    f = parse("A *(ij,j->i) x")
    function, _ = _function(f, {"A": np.ones((3, 4)), "x": np.ones(4)})
    assert function(A=np.ones((3, 4)), x=np.arange(4.0)).tolist() == [6.0, 6.0, 6.0]
    with pytest.raises(ValueError, match=r"generated for A of shape \(3, 4\)"):
        function(A=np.ones((4, 4)), x=np.ones(4))


def test_inconsistent_or_missing_shapes_are_refused():
    f = parse("A *(ij,j->i) x")
    with pytest.raises(tc.TensCalcError, match="do not fit"):
        tc.to_python(f, shapes={"A": (3, 4), "x": (5,)})
    with pytest.raises(tc.TensCalcError, match="no shape given for x"):
        tc.to_python(f, shapes={"A": (3, 4)})
    with pytest.raises(tc.TensCalcError, match="order 1"):
        tc.to_python(f, shapes={"A": (3, 4), "x": (4, 1)})


@pytest.mark.parametrize("x_shape", [(-4,), (4.0,), 4, "4", None])
def test_a_shape_that_is_not_lengths_is_refused(x_shape):
    f = parse("A *(ij,j->i) x")  # (-4,) once wrote a module for x of shape (-4,), (4.0,) one for (4,)
    with pytest.raises(tc.TensCalcError, match=r"the shape of 'x' must be a tuple of lengths \(integers >= 0\)"):
        tc.to_python(f, shapes={"A": (3, 4), "x": x_shape})
    assert "(4,)" in tc.to_python(f, shapes={"A": (3, 4), "x": (np.int64(4),)})  # NumPy's integers are lengths


def test_an_array_given_for_a_shape_stands_for_its_shape():
    """As ``CompiledFunction.cost`` takes them: the data itself may be passed."""
    f = parse("A *(ij,j->i) x")
    data = {"A": np.ones((3, 4)), "x": np.ones(4)}
    assert tc.to_python(f, shapes=data) == tc.to_python(f, shapes={"A": (3, 4), "x": (4,)})
    assert tc.compile(f).cost(data) == tc.compile(f).cost({"A": (3, 4), "x": (4,)})


def test_outputs_are_fresh_arrays():
    f = tc.parse("x *(i,i->) 1", {"x": 1})
    h = tc.hessian(f * f, "x")  # 2 (ones ⊗ ones): constants only in the plan
    function, _ = _function([h], {"x": np.ones(3)})
    (first,) = function(x=np.ones(3))
    first[...] = 7.0
    (second,) = function(x=np.ones(3))
    np.testing.assert_allclose(second, 2 * np.ones((3, 3)))


def test_a_declared_matrix_of_a_shape_that_is_not_square_is_refused():
    f = tc.parse("log(exp(-(y *(i,i->i) (X *(ij,j->i) w))) + 1) *(i,i->) 1", {"X": 2, "y": 1, "w": 1})
    shapes = {"X": (5, 3), "y": (5,), "w": (3,)}  # once "axis 0 of 'w' ... must equal axis 0 of 'y'"
    with pytest.raises(
        tc.TensCalcError, match=r"'X' is declared positive definite \(pd\) but its shape \(5, 3\) is not"
    ):
        tc.to_python(tc.gradient(f, "w"), shapes=shapes, assumptions={"X": "pd"})
