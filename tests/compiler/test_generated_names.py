"""A generated function, or a variable, may be named like a Python builtin (``min``, ``slice``).

Once the module defines ``def min(...)``, every read of ``min`` in its helpers and body
would call the generated function: ``tc.to_python(..., name="type")`` gave a module
that raised ``TypeError`` on its first call (``slice``, ``zip``, ``min``, ``max``,
``float`` too).  The module reads such a builtin through a private alias
(:func:`tenscalc.compiler.generated.shield_function_name`).
"""

from __future__ import annotations

import ast
import builtins

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.generated import CALLED_BUILTINS
from tests.compiler.test_runners import NAMES as CORPUS
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


ROSEN_OF = "sum(100*({v}[1:] - {v}[:-1].^2).^2 + (1 - {v}[:-1]).^2)"


@pytest.mark.parametrize("variable", ["slice", "min", "type", "zip", "len", "x"])
@pytest.mark.parametrize("shaped", [True, False], ids=["shapes", "shape-free"])
def test_a_variable_named_like_a_builtin_the_body_calls(variable, shaped):
    """A parameter named ``slice`` hid the builtin in the whole body: the module deleted it
    after its last read and then wrote a band's ``slice(1, 30, 7)`` (UnboundLocalError)."""
    f = tc.parse(ROSEN_OF.format(v=variable))
    exprs = [f, tc.gradient(f, variable), tc.hessian(f, variable)]
    source = tc.to_python(exprs, shapes={variable: (6,)}) if shaped else tc.to_python(exprs)
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102 - the module under test
    x = np.linspace(0.5, 1.5, 6)
    for ours, expr in zip(namespace["f"](**{variable: x}), exprs, strict=True):
        np.testing.assert_allclose(ours, tc.evaluate(expr, {variable: x}), rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match=variable):
        namespace["f"]()


@pytest.mark.parametrize("case", CORPUS)
def test_the_builtins_a_generated_body_calls_are_the_listed_ones(case):
    """The generated function's body reads only the builtins of ``CALLED_BUILTINS`` (and the
    module's private aliases): a variable of any other builtin's name is a plain parameter."""
    exprs, values = _values(case)
    shapes = {k: np.shape(v) for k, v in values.items()}
    for source in (tc.to_python(exprs, shapes=shapes), tc.to_python(exprs)):
        function = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "f")
        called = {
            node.id
            for node in ast.walk(function)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in vars(builtins)
        }
        assert called <= CALLED_BUILTINS, called - CALLED_BUILTINS
