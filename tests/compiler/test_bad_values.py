"""A value that holds no numbers, or that is not an array, is one error from every runner.

``tc.evaluate``, ``tc.compile`` on NumPy, JAX, PyTorch and Dask, and both forms of
``tc.to_python`` refuse it in the same words, naming the variable: they all run one
text (``generated.NUMBERS_HELPER``), tenscalc's ``EvaluationError`` in tenscalc and a
ValueError (which it is too) in a generated module, which needs NumPy only (where it
computes an inv, det or adj it tries tenscalc's own class).  The generated modules took
a date as its day count, and said NumPy's ``could not convert string to float`` from
inside their own code; Dask said a date array had mixed dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

F = "x *(i,ij->j) A *(j,j->) x"
ORDERS = {"x": 1, "A": 2}
GOOD = {"x": np.ones(3), "A": np.eye(3)}

#: case -> (the value of x, the error every runner gives)
BAD = {
    "string": ("abc", "the value of 'x' has dtype <U3; numbers are needed"),
    "None": (None, "the value of 'x' has dtype object; numbers are needed"),
    "objects": (np.array([1, "a", None], dtype=object), "the value of 'x' has dtype object; numbers are needed"),
    "dates": (
        np.array(["2020-01-01"] * 3, dtype="datetime64[D]"),
        "the value of 'x' has dtype datetime64[D]; numbers are needed",
    ),
    "ragged": ([1.0, [2.0, 3.0]], "the value of 'x' is not an array: setting an array element with a sequence"),
}


def _module(exprs, shapes):
    namespace: dict = {}
    exec(compile(tc.to_python(exprs, shapes=shapes), "<generated>", "exec"), namespace)  # noqa: S102 - code under test
    return namespace["f"]


def _dask(exprs, values):
    import dask.array as da

    value = values["x"]
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":  # a dask array of dates: dask's own array
        values = {**values, "x": da.from_array(value)}
    return [getattr(r, "compute", lambda r=r: r)() for r in tc.compile(exprs, backend="dask")(values)]


RUNNERS = {
    "evaluate": (None, lambda exprs, values: [tc.evaluate(e, values) for e in exprs]),
    "numpy": (None, lambda exprs, values: tc.compile(exprs)(values)),
    "to_python shapes": (
        None,
        lambda exprs, values: _module(exprs, {k: np.shape(v) for k, v in GOOD.items()})(**values),
    ),
    "to_python": (None, lambda exprs, values: _module(exprs, None)(**values)),
    "jax": ("jax", lambda exprs, values: tc.compile(exprs, backend="jax")(values)),
    "torch": ("torch", lambda exprs, values: tc.compile(exprs, backend="torch")(values)),
    "dask": ("dask", _dask),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_value_without_numbers_is_one_error_from_every_runner(runner, case):
    library, run = RUNNERS[runner]
    if library is not None:
        pytest.importorskip(library, reason=f"{library} is not installed")
    f = tc.parse(F, ORDERS)
    exprs = [f, tc.gradient(f, "x")]
    value, message = BAD[case]
    with pytest.raises(ValueError) as caught:
        run(exprs, {**GOOD, "x": value})
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, tc.EvaluationError) or runner.startswith("to_python")
