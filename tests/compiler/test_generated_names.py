"""A generated function may be named like a Python builtin (``min``, ``type``, ``zip``).

Once the module defines ``def min(...)``, every read of ``min`` in its helpers and body
would call the generated function: ``tc.to_python(..., name="type")`` gave a module
that raised ``TypeError`` on its first call (``slice``, ``zip``, ``min``, ``max``,
``float`` too).  The module reads such a builtin through a private alias
(:func:`tenscalc.compiler.generated.shield_function_name`).
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tests.compiler.test_runners import _values

#: the builtins the generated modules call at run time, and two they do not
NAMES = ["type", "float", "min", "max", "slice", "zip", "len", "range", "ValueError", "isinstance", "print", "sum"]
CASES = ["chained Rosenbrock (slices, banded Hessian)", "logreg (Gram Hessian)", "inv and det", "scalars"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shaped", [True, False], ids=["shapes", "shape-free"])
def test_a_function_named_like_a_builtin_computes_its_values(case, name, shaped):
    exprs, values = _values(case)
    shapes = {k: np.shape(v) for k, v in values.items()}
    source = tc.to_python(exprs, shapes=shapes, name=name) if shaped else tc.to_python(exprs, name=name)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the module under test
    got = namespace[name](**values)
    for ours, expr in zip(got, exprs, strict=True):
        np.testing.assert_allclose(np.asarray(ours, dtype=float), tc.evaluate(expr, values), rtol=1e-10, atol=1e-12)


def test_only_reads_of_the_builtin_are_renamed():
    exprs, values = _values("chained Rosenbrock (slices, banded Hessian)")
    source = tc.to_python(exprs, shapes={"x": (7,)}, name="min")
    assert source.count("_b_min = min") == 1 and "\ndef min(" in source
    # the shape check's message still names the function as the user called it
    assert "min was generated for x of shape" in source
    plain = tc.to_python(exprs, shapes={"x": (7,)})
    assert "_b_" not in plain  # a function of another name: the module as before
