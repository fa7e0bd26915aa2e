"""Dtypes (issue 31 item 3, issue 30 item 8): every evaluator and backend returns NumPy's
promotion of the inputs' dtypes (float32 in, float32 out; constants and identities never
promote; integers give float64), and ``backend="jax"`` says once when it downcasts float64.

The expected dtype is written out per case (not computed by tenscalc.dtypes), and values
are compared with the interpreter at float64 on the same (rounded) inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tenscalc as tc

x, X, A, k = tc.var("x", 1), tc.var("X", 2), tc.var("A", 2), tc.var("k", 0)
_f = tc.einsum("i,ij,j->", x, A, x) + tc.sum(tc.sin(X)) * k
CORPUS = {
    "gradient": tc.gradient(_f, "x"),
    "Hessian": tc.hessian(_f, "x"),
    "Hessian of X[:, 0]'*A*X[:, 1]": tc.hessian(tc.parse("X[:, 0]'*A*X[:, 1]"), "X"),  # torch refused float32
    "constant derivative": tc.hessian(tc.parse("k^2", {"k": 0}), "k"),
    "identity (delta)": tc.hessian(tc.einsum("i,i->", x, x), "x"),
    "order-3 derivative": tc.nth_derivative(tc.sum(tc.exp(x) * x), "x", 3),
}
SHAPES = {"x": (3,), "X": (3, 4), "A": (3, 3), "k": ()}
#: dtype case -> (the dtype of x and X, the dtype of A and k, the expected result dtype)
CASES = {
    "float32": (np.float32, np.float32, np.float32),
    "float64": (np.float64, np.float64, np.float64),
    "mixed": (np.float32, np.float64, np.float64),
    "integers": (np.int64, np.int64, np.float64),
}


def _values(case: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    low, high, _ = CASES[case]
    values = {}
    for name, shape in SHAPES.items():
        dtype = low if name in ("x", "X") else high
        data = rng.integers(-3, 4, shape) if dtype == np.int64 else rng.standard_normal(shape)
        values[name] = np.asarray(data, dtype=dtype)
    return values


def _expected(expr, values, case):
    """The float64 value on the same inputs, and the dtype the case expects."""
    reference = tc.evaluate(expr, {name: v.astype(np.float64) for name, v in values.items()})
    dtype = CASES[case][2]
    if case == "mixed" and expr in (CORPUS["identity (delta)"], CORPUS["order-3 derivative"]):
        dtype = np.float32  # they take x alone (the identity its length only): A's float64 is not theirs
    return reference, np.dtype(dtype)


def _generated(expr, values, shapes):
    namespace: dict = {}
    exec(tc.to_python(expr, shapes=shapes), namespace)  # noqa: S102 - the library's own code
    return namespace["f"](**values)


def _compiled_twice(expr, values):
    run = tc.compile(expr)
    first = run(**values)
    second = run(**values)  # the fused program (float64) or the closure loop
    assert first.dtype == second.dtype
    return second


EVALUATORS = {
    "evaluate": lambda e, v: tc.evaluate(e, v),
    "compile": lambda e, v: tc.compile(e)(**v),
    "compile, second call": _compiled_twice,
    "to_python": lambda e, v: _generated(e, v, None),
    "to_python(shapes=)": lambda e, v: _generated(e, v, {n: a.shape for n, a in v.items()}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("evaluator", list(EVALUATORS))
@pytest.mark.parametrize("label", list(CORPUS))
def test_numpy_evaluators_keep_the_inputs_dtype(label, evaluator, case):
    expr = CORPUS[label]
    values = _values(case)
    reference, dtype = _expected(expr, values, case)
    with np.errstate(all="ignore"):
        got = EVALUATORS[evaluator](expr, values)
    assert got.dtype == dtype, (label, evaluator, case)
    tolerance = 1e-4 if case != "float64" and case != "integers" else 1e-12
    np.testing.assert_allclose(got.astype(np.float64), reference, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("label", list(CORPUS))
def test_torch_keeps_the_inputs_dtype(label, case):
    torch = pytest.importorskip("torch")
    expr = CORPUS[label]
    values = _values(case)
    reference, dtype = _expected(expr, values, case)
    got = tc.compile(expr, backend="torch")(**{name: torch.as_tensor(v) for name, v in values.items()})
    assert str(got.dtype) == f"torch.{dtype.name}", (label, case)
    tolerance = 1e-4 if case != "float64" and case != "integers" else 1e-12
    np.testing.assert_allclose(got.double().numpy(), reference, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("label", list(CORPUS))
def test_dask_keeps_the_inputs_dtype(label, case):
    pytest.importorskip("dask.array")
    expr = CORPUS[label]
    values = _values(case)
    reference, dtype = _expected(expr, values, case)
    got = tc.compile(expr, backend="dask")(**values)
    assert got.dtype == dtype  # known before computing: the graph's own dtype
    computed = np.asarray(got.compute())
    assert computed.dtype == dtype
    tolerance = 1e-4 if case != "float64" and case != "integers" else 1e-12
    np.testing.assert_allclose(computed.astype(np.float64), reference, rtol=tolerance, atol=tolerance)


@pytest.fixture
def jax_32_bits():
    jax = pytest.importorskip("jax")
    from tenscalc.compiler.backends import JaxBackend

    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    JaxBackend.warned_x64 = False
    yield jax
    jax.config.update("jax_enable_x64", before)


def test_jax_says_once_that_it_downcasts_float64(jax_32_bits):
    run = tc.compile(CORPUS["Hessian"], backend="jax")
    values = _values("float64")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = run(**values)
        second = run(**values)
    said = [w for w in caught if issubclass(w.category, tc.TensCalcWarning)]
    assert len(said) == 1 and "jax_enable_x64" in str(said[0].message) and "downcast" in str(said[0].message)
    assert first.dtype == second.dtype == np.float32
    reference, _ = _expected(CORPUS["Hessian"], values, "float64")
    np.testing.assert_allclose(np.asarray(second), reference, rtol=1e-4, atol=1e-4)


def test_jax_float32_inputs_are_not_warned_about(jax_32_bits):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tc.TensCalcWarning)
        got = tc.compile(CORPUS["gradient"], backend="jax")(**_values("float32"))
    assert got.dtype == np.float32


@pytest.mark.parametrize("case", ["float32", "float64", "mixed"])
def test_jax_with_64_bits_keeps_the_inputs_dtype(case):
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for label, expr in CORPUS.items():
            values = _values(case)
            reference, dtype = _expected(expr, values, case)
            got = tc.compile(expr, backend="jax")(**values)
            assert got.dtype == dtype, (label, case)
            tolerance = 1e-4 if case != "float64" else 1e-12
            np.testing.assert_allclose(np.asarray(got, dtype=np.float64), reference, rtol=tolerance, atol=tolerance)
    finally:
        jax.config.update("jax_enable_x64", before)


def test_a_python_number_does_not_promote_float32():
    # as NumPy's float32_array * 0.5 stays float32
    e = _f  # reads k
    values = {**_values("float32"), "k": 0.5}
    assert tc.evaluate(e, values).dtype == np.float32
    assert tc.compile(e)(**values).dtype == np.float32
    assert _generated(e, values, None).dtype == np.float32
    assert _generated(e, values, {n: np.shape(v) for n, v in values.items()}).dtype == np.float32
    assert _generated(e, {**values, "k": np.float64(0.5)}, None).dtype == np.float64  # a NumPy scalar is not weak


def test_torch_bfloat16_is_left_as_computed():
    # NumPy has no bfloat16: no promotion rule applies, the results are not cast to float64
    torch = pytest.importorskip("torch")
    values = {name: torch.tensor(v, dtype=torch.bfloat16) for name, v in _values("float64").items()}
    got = tc.compile(CORPUS["Hessian"], backend="torch")(**values)
    assert got.dtype == torch.bfloat16
