"""Results never alias inputs (issue 14, item 6): writing into what tenscalc
returned must not change the caller's arrays, nor another returned array."""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

ORDERS = {"x": 1, "A": 2}
CASES = [
    "x",  # the input itself
    "A *(ij,->ji) 1",  # a transpose (a view)
    "A *(ii,->i) 1",  # a diagonal (a view)
    "x + 0",
    "1 *(,i->i) x",
    "A *(ij,->ij) 1",
]


def _generated(expr):
    namespace: dict = {}
    exec(tc.to_python(expr), namespace)  # noqa: S102 - the library's own generated code
    return namespace["f"]


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("how", ["evaluate", "compile", "to_python"])
def test_writing_into_a_result_leaves_the_inputs_alone(text, how, rng):
    expr = tc.parse(text, ORDERS)
    x, A = rng.standard_normal(3), rng.standard_normal((3, 3))
    x0, A0 = x.copy(), A.copy()
    if how == "evaluate":
        result = tc.evaluate(expr, x=x, A=A)
    elif how == "compile":
        result = tc.compile(expr)(x=x, A=A)
    else:
        result = _generated(expr)(**{name: {"x": x, "A": A}[name] for name in expr.variables})
    result[...] = 123.0
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(A, A0)


def test_a_list_of_results_aliases_no_input(rng):
    x, A = tc.var("x", 1), tc.var("A", 2)
    values = {"x": rng.standard_normal(4), "A": rng.standard_normal((4, 4))}
    results = tc.compile([x, A, tc.parse("A *(ij,->ji) 1", {"A": 2}), x + 0])(values)
    for result in results:
        assert not any(np.may_share_memory(result, array) for array in values.values())


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("given", ["tensor", "numpy"])
def test_torch_results_are_fresh_tensors(text, given, rng):
    # torch.as_tensor shares a NumPy input's memory, so both kinds of input can be aliased
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    expr = tc.parse(text, ORDERS)
    x, A = rng.standard_normal(3), rng.standard_normal((3, 3))
    x0, A0 = x.copy(), A.copy()
    values = {"x": x, "A": A}
    if given == "tensor":
        values = {name: torch.from_numpy(value) for name, value in values.items()}  # shares x's and A's memory
    run = tc.compile([expr, expr * 2.0], backend="torch")
    for _ in range(2):
        result, _double = run(**{name: values[name] for name in expr.variables})
        assert not any(result is value for value in values.values())
        result[...] = 123.0
        np.testing.assert_array_equal(x, x0)
        np.testing.assert_array_equal(A, A0)


def test_torch_keeps_one_root_listed_twice_one_tensor():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
    pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")
    x = tc.var("x", 1)
    t = torch.ones(3, dtype=torch.float64)
    first, second = tc.compile([x, x], backend="torch")(x=t)
    assert first is second and first is not t
    first[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]
