"""Glue for the tools people use tenscalc with: SciPy's optimisers, ``jax.grad``-style calls.

``scipy_objective`` hands ``scipy.optimize.minimize`` everything a Newton
method needs, on flat float64 vectors, from one symbolic derivation compiled
once; ``grad`` returns the compiled gradient as a function of the values,
the way ``jax.grad`` returns a function.  SciPy itself is not imported here:
the functions returned are plain callables (``pip install scipy`` to use them
with ``scipy.optimize``).

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("(x - c) *(i,i->) (x - c)", {"x": 1, "c": 1})
>>> objective = tc.scipy_objective(f, "x", {"c": np.array([1.0, 2.0, 3.0])})
>>> sorted(objective)
['fun', 'hess', 'hessp', 'jac']
>>> objective["jac"](np.zeros(3)).tolist()
[-2.0, -4.0, -6.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from .calculus.api import WrtList, gradient, hessian, resolve_wrt
from .calculus.directional import direction_name, hvp
from .compiler import CompiledFunction, compile
from .core.nodes import Expr
from .errors import EvaluationError, SemanticError

__all__ = ["ScipyObjective", "grad", "scipy_objective"]

FloatVector = npt.NDArray[np.float64]


#: what each ``scipy.optimize.minimize`` method uses of fun/jac/hess/hessp
METHOD_KEYS = {
    "trust-exact": ("fun", "jac", "hess"),
    "trust-constr": ("fun", "jac", "hess"),
    "dogleg": ("fun", "jac", "hess"),
    "trust-krylov": ("fun", "jac", "hessp"),
    "trust-ncg": ("fun", "jac", "hessp"),
    "newton-cg": ("fun", "jac", "hessp"),
    "bfgs": ("fun", "jac"),
    "l-bfgs-b": ("fun", "jac"),
    "cg": ("fun", "jac"),
    "slsqp": ("fun", "jac"),
    "tnc": ("fun", "jac"),
}


class ScipyObjective(TypedDict, total=False):
    """The keyword arguments ``scipy_objective`` returns for ``scipy.optimize.minimize``."""

    fun: Callable[[npt.ArrayLike], float]
    jac: Callable[[npt.ArrayLike], FloatVector]
    hess: Callable[[npt.ArrayLike], FloatVector]
    hessp: Callable[[npt.ArrayLike, npt.ArrayLike], FloatVector]


def grad(expr: Expr, wrt: str | Expr | WrtList, backend: str = "numpy") -> CompiledFunction:
    """The gradient of a scalar expression as a compiled function of the values (like ``jax.grad``).

    The symbolic gradient is derived and compiled here, once; the function
    returned takes the values (a mapping, keyword arrays, or one positional
    array when the expression has a single variable) and returns the gradient
    array, or, for a list of variables, a dict name -> gradient (from one
    reverse sweep).

    Parameters
    ----------
    expr : Expr
        A scalar (order 0) expression.
    wrt : str or Expr, or a list of them
        The variable(s) to differentiate by.
    backend : str
        The array backend of ``tenscalc.compile``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> df = tc.grad(f, "x")
    >>> df(x=np.array([1.0, 2.0]), A=np.eye(2))
    array([2., 4.])
    >>> sorted(tc.grad(f, ["x", "A"])(x=np.array([1.0, 2.0]), A=np.eye(2)))
    ['A', 'x']
    >>> tc.grad(tc.parse("x *(i,i->) x", {"x": 1}), "x")(np.array([3.0, 4.0]))
    array([6., 8.])
    """
    return compile(gradient(expr, wrt), backend)


def scipy_objective(
    expr: Expr,
    wrt: str | Expr,
    values: Mapping[str, Any] | None = None,
    *,
    shape: tuple[int, ...] | None = None,
    method: str | None = None,
) -> ScipyObjective:
    """``fun``, ``jac``, ``hess`` and ``hessp`` of a scalar expression for ``scipy.optimize.minimize``.

    The variable ``wrt`` is the optimisation variable; every other variable is
    fixed to its value in ``values``.  SciPy works on flat vectors: the
    functions take ``x`` of length ``n`` (the variable ravelled in C order, a
    matrix or higher-order variable too) and return a float, a length-``n``
    gradient, the ``(n, n)`` Hessian and the Hessian-vector product, all
    float64.  The gradient, the Hessian and the Hessian-vector product
    (``tenscalc.hvp``: the Hessian is never formed) are derived and
    compiled once, the Hessian and the product on first use; ``fun`` and
    ``jac`` at the same point share one evaluation.

    Parameters
    ----------
    expr : Expr
        A scalar (order 0) expression.
    wrt : str or Expr
        The variable to optimise over.
    values : mapping, optional
        Values of the other variables.  A value given for ``wrt`` itself only
        fixes its shape (the point comes from SciPy's ``x``).
    shape : tuple of int, optional
        The shape of ``wrt``.  Needed for a matrix or higher-order variable
        unless ``values`` holds an array for it; a vector's shape is ``(n,)``.
    method : str, optional
        A ``scipy.optimize.minimize`` method: keep only what it uses (SciPy
        warns about the rest), e.g. ``hess`` for ``trust-exact`` and the
        cheaper ``hessp`` for ``trust-krylov``, ``trust-ncg`` and
        ``Newton-CG``.  Put ``method=...`` in the call to ``minimize`` too.

    Returns
    -------
    dict
        ``{"fun", "jac", "hess", "hessp"}`` (fewer with ``method``): pass it as
        ``scipy.optimize.minimize(x0=x0, method="trust-exact", **objective)``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("(W - C) *(ij,ij->) (W - C)", {"W": 2, "C": 2})
    >>> C = np.arange(6.0).reshape(2, 3)
    >>> objective = tc.scipy_objective(f, "W", {"C": C}, shape=(2, 3))
    >>> objective["hess"](np.zeros(6)).shape
    (6, 6)
    >>> from scipy.optimize import minimize               # doctest: +SKIP
    >>> minimize(x0=np.zeros(6), method="trust-exact", **objective).x.reshape(2, 3)  # doctest: +SKIP
    """
    if not isinstance(expr, Expr) or expr.order != 0:
        order = getattr(expr, "order", "?")
        raise SemanticError(f"scipy_objective needs a scalar (order 0) expression, this one has order {order}")
    if isinstance(wrt, (list, tuple)):
        raise SemanticError(
            "scipy_objective optimises over one variable; write several as one (or fix the others in values)"
        )
    if method is not None and method.lower() not in METHOD_KEYS:
        known = ", ".join(sorted(METHOD_KEYS))
        raise SemanticError(f"unknown scipy.optimize.minimize method {method!r}; known here: {known}")
    x = resolve_wrt(expr, wrt)
    name, order = x.arg
    fixed = {k: v for k, v in (values or {}).items() if k != name}
    template = (values or {}).get(name)
    if shape is None and template is not None:
        shape = tuple(np.shape(template))
    if shape is not None:
        shape = tuple(int(n) for n in shape)
        if len(shape) != order:
            raise EvaluationError(f"'{name}' has order {order} but the shape given is {shape}")
    elif order > 1:
        raise EvaluationError(
            f"'{name}' has order {order}: pass shape=(...) or an array for it in values, "
            f"so that the flat vector can be reshaped"
        )

    def point(flat: npt.ArrayLike) -> np.ndarray:
        vector = np.asarray(flat, dtype=np.float64)
        if vector.ndim != 1:
            raise EvaluationError(f"expected a flat vector for '{name}', got an array of shape {vector.shape}")
        target = shape if shape is not None else (() if order == 0 else (vector.size,))
        if vector.size != math.prod(target):
            raise EvaluationError(f"'{name}' has shape {target} ({math.prod(target)} entries), got {vector.size}")
        return vector.reshape(target)

    fg = compile([expr, gradient(expr, x)])
    last: dict[str, Any] = {}

    def value_and_gradient(flat: npt.ArrayLike) -> tuple[float, FloatVector]:
        at = point(flat)
        if last.get("x") is None or last["x"].shape != at.shape or not np.array_equal(last["x"], at):
            f, g = fg({**fixed, name: at})
            last["x"] = at.copy()
            last["fg"] = (float(f), np.asarray(g, dtype=np.float64).ravel())
        result: tuple[float, FloatVector] = last["fg"]
        return result

    compiled: dict[str, CompiledFunction] = {}

    def lazily(key: str, build: Callable[[], Expr]) -> CompiledFunction:
        if key not in compiled:  # derived and compiled once, on first use
            compiled[key] = compile(build())
        return compiled[key]

    def fun(flat: npt.ArrayLike) -> float:
        return value_and_gradient(flat)[0]

    def jac(flat: npt.ArrayLike) -> FloatVector:
        return value_and_gradient(flat)[1].copy()

    def hess(flat: npt.ArrayLike) -> FloatVector:
        at = point(flat)
        H = lazily("hess", lambda: hessian(expr, x))({**fixed, name: at})
        H = np.asarray(H, dtype=np.float64).reshape(at.size, at.size)
        # exactly symmetric: the two halves are computed in different orders and differ
        # in the last bits, and trust-exact fails near the optimum on such asymmetry
        # (19 iterations and "a bad approximation" instead of 6 on a softmax loss)
        return (H + H.T) * 0.5

    direction = direction_name(expr, x)  # the variable of hvp's direction (v_<name>)

    def hessp(flat: npt.ArrayLike, p: npt.ArrayLike) -> FloatVector:
        at = point(flat)
        run = lazily("hvp", lambda: hvp(expr, x, direction))
        v = np.asarray(p, dtype=np.float64)
        if v.size != at.size:
            raise EvaluationError(f"the direction has {v.size} entries, '{name}' has {at.size}")
        hv = run({**fixed, name: at, direction: v.reshape(at.shape)})
        return np.asarray(hv, dtype=np.float64).ravel()

    objective: ScipyObjective = {"fun": fun, "jac": jac, "hess": hess, "hessp": hessp}
    if method is not None:
        for key in ("hess", "hessp"):
            if key not in METHOD_KEYS[method.lower()]:
                del objective[key]  # type: ignore[misc]
    return objective
