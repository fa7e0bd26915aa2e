"""One spec per elementwise function: everything every stage needs to know about it.

An elementwise function (``sin``, ``exp``, ``relu`` ...) is read by the lexer,
differentiated by the calculus, folded by the simplifier, evaluated by the
interpreter and the compiler (NumPy, the float runner, generated source, the other
array libraries), expanded by the SymPy oracle, printed in LaTeX and bounded by the
convexity checker.  Each of those tables is derived from the :class:`FunctionSpec`
registered here, so adding a function is adding one spec (autograd's ``defvjp`` and
SymPy's printer tables are the idea)::

    register(FunctionSpec("expm1", np.expm1, math.expm1, lambda x, fx: N.func("exp", x), ...))

>>> from tenscalc.core.functions import FUNCTIONS
>>> spec = FUNCTIONS["tanh"]
>>> spec.latex, spec.numpy_source.format("x"), spec.monotone
('\\\\tanh', '_np.tanh(x)', 'increasing')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import nodes as N
from .nodes import Expr
from .vocabulary import ELEMENTWISE_FUNCTIONS

INF = math.inf


@dataclass(frozen=True)
class FunctionSpec:
    """What each stage needs to know about one elementwise function.

    Attributes
    ----------
    name
        The language's name (lower case; the lexer reads it as a function).
    numpy
        The function on NumPy arrays (the interpreter and the compiled program).
    scalar
        The function on one Python float (the simplifier folds constants with it).
    derivative
        ``f'(x)`` as an expression, given ``x`` and the node ``f(x)`` (reused where
        cheaper); ``None`` means zero almost everywhere.
    sympy
        ``sympy(sp, v)``: the function of the SymPy module ``sp`` applied to ``v``
        (the exact oracle of the tests).
    latex
        The LaTeX operator (``\\tanh``); ``None`` where the printer has its own form
        (``abs`` is ``|x|``).
    numpy_source, float_source
        How generated code calls it, a format string of the argument: on arrays
        (the module imports NumPy as ``_np``) and on floats (``math`` as ``_m``; the
        float runner writes a call of the binder's chain with it where ``numpy`` is a ufunc).
    float_guard
        The float function can turn an inf into a finite number, so the float runner
        checks its argument first.
    array_name
        Its name in array libraries (NumPy, torch, JAX, CuPy, dask through autoray);
        ``None`` for ``relu``, which they spell ``maximum(x, 0)``.
    monotone, domain, image
        For the convexity checker's interval bounds: ``"increasing"``,
        ``"decreasing"`` or ``None`` (then :data:`tenscalc.convexity.intervals`
        has its own rule), the arguments where it is defined and its values there.
    exact
        Its value at an integer is an integer (the simplifier folds it exactly).
    """

    name: str
    numpy: Callable[[Any], Any]
    scalar: Callable[[float], float]
    derivative: Callable[[Expr, Expr], Expr | None]
    sympy: Callable[[Any, Any], Any]
    latex: str | None
    numpy_source: str
    float_source: str
    float_guard: bool = False
    array_name: str | None = None
    monotone: str | None = None
    domain: tuple[float, float] = (-INF, INF)
    image: tuple[float, float] = (-INF, INF)
    exact: bool = False


FUNCTIONS: dict[str, FunctionSpec] = {}
"""Every elementwise function of the language, by name (filled by :func:`register`)."""


class SpecTable(Mapping[str, Any]):
    """A live table of one field of every spec (name -> ``spec.<field>``) for the modules
    that index a table by function name; it sees functions registered later.  Specs
    whose field is ``None`` are not in it.

    >>> SpecTable("float_source")["exp"], "abs" in SpecTable("latex")
    ('_m.exp({})', False)
    """

    def __init__(self, field: str) -> None:
        self.field = field

    def __getitem__(self, name: str) -> Any:
        value = getattr(FUNCTIONS[name], self.field)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name, spec in FUNCTIONS.items() if getattr(spec, self.field) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def register(spec: FunctionSpec) -> FunctionSpec:
    """Make ``spec`` a function of the language, read by every stage from now on.

    Registering a name twice replaces its spec (the lexer and node factory already
    know the name).
    """
    FUNCTIONS[spec.name] = spec
    if spec.name not in ELEMENTWISE_FUNCTIONS:
        ELEMENTWISE_FUNCTIONS.append(spec.name)
    return spec


def _one(x: Expr) -> Expr:
    return N.const_like(1, x)


def _square(e: Expr) -> Expr:
    return N.power(e, N.const(2, 0))


def _float_sign(v: float) -> float:
    return float(np.sign(v))


def _relu(x: Any) -> Any:
    return np.maximum(x, 0.0)


for _spec in (
    FunctionSpec(
        "sin", np.sin, math.sin, lambda x, fx: N.func("cos", x), lambda sp, v: sp.sin(v),
        r"\sin", "_np.sin({})", "_m.sin({})", array_name="sin",
    ),
    FunctionSpec(
        "cos", np.cos, math.cos, lambda x, fx: N.neg(N.func("sin", x)), lambda sp, v: sp.cos(v),
        r"\cos", "_np.cos({})", "_m.cos({})", array_name="cos",
    ),
    FunctionSpec(
        "tan", np.tan, math.tan, lambda x, fx: N.add((_one(x), _square(fx))), lambda sp, v: sp.tan(v),
        r"\tan", "_np.tan({})", "_m.tan({})", array_name="tan",
    ),
    FunctionSpec(
        "arcsin", np.arcsin, math.asin,
        lambda x, fx: N.power(N.add((_one(x), _square(x)), (1, -1)), N.const(-0.5, 0)),
        lambda sp, v: sp.asin(v), r"\arcsin", "_np.arcsin({})", "_m.asin({})", array_name="arcsin",
        monotone="increasing", domain=(-1.0, 1.0), image=(-math.pi / 2, math.pi / 2),
    ),
    FunctionSpec(
        "arccos", np.arccos, math.acos,
        lambda x, fx: N.neg(N.power(N.add((_one(x), _square(x)), (1, -1)), N.const(-0.5, 0))),
        lambda sp, v: sp.acos(v), r"\arccos", "_np.arccos({})", "_m.acos({})", array_name="arccos",
        monotone="decreasing", domain=(-1.0, 1.0), image=(0.0, math.pi),
    ),
    FunctionSpec(
        "arctan", np.arctan, math.atan, lambda x, fx: N.reciprocal(N.add((_one(x), _square(x)))),
        lambda sp, v: sp.atan(v), r"\arctan", "_np.arctan({})", "_m.atan({})", float_guard=True,
        array_name="arctan", monotone="increasing", image=(-math.pi / 2, math.pi / 2),
    ),
    FunctionSpec(
        "tanh", np.tanh, math.tanh, lambda x, fx: N.add((_one(x), _square(fx)), (1, -1)),
        lambda sp, v: sp.tanh(v), r"\tanh", "_np.tanh({})", "_m.tanh({})", float_guard=True,
        array_name="tanh", monotone="increasing", image=(-1.0, 1.0),
    ),
    FunctionSpec(
        "exp", np.exp, math.exp, lambda x, fx: fx, lambda sp, v: sp.exp(v),
        r"\exp", "_np.exp({})", "_m.exp({})", float_guard=True, array_name="exp",
        monotone="increasing", image=(0.0, INF),
    ),
    FunctionSpec(
        "log", np.log, math.log, lambda x, fx: N.reciprocal(x), lambda sp, v: sp.log(v),
        r"\log", "_np.log({})", "_m.log({})", array_name="log",
    ),
    FunctionSpec(
        "abs", np.abs, abs, lambda x, fx: N.func("sign", x), lambda sp, v: sp.Abs(v),
        None, "_np.abs({})", "abs({})", array_name="abs", exact=True,
    ),
    FunctionSpec(
        # zero almost everywhere; sign'(0) is taken as 0
        "sign", np.sign, _float_sign, lambda x, fx: None, lambda sp, v: sp.sign(v),
        r"\operatorname{sign}", "_np.sign({})", "_sign({})", float_guard=True, array_name="sign", exact=True,
    ),
    FunctionSpec(
        # 1 where x > 0, else 0 (relu'(0) = 0)
        "relu", _relu, lambda v: max(v, 0.0), lambda x, fx: N.func("sign", fx), lambda sp, v: sp.Max(v, 0),
        r"\operatorname{relu}", "_np.maximum({}, 0.0)", "_maximum({}, 0.0)", float_guard=True, exact=True,
    ),
):  # fmt: skip
    register(_spec)
