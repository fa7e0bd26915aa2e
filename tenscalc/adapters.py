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
from .calculus.directional import direction_name
from .calculus.directional import hvp as directional_hvp
from .compiler import CompiledFunction, compile
from .core.nodes import Expr
from .errors import EvaluationError, SemanticError

__all__ = ["ScipyObjective", "grad", "hvp", "scipy_objective", "value_and_grad"]

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


def grad(
    expr: Expr | Callable[..., Any],
    wrt: str | Expr | WrtList | None = None,
    backend: str | None = None,
    *,
    argnums: int | tuple[int, ...] = 0,
) -> Any:
    """The gradient of a scalar expression as a compiled function of the values (like ``jax.grad``).

    The symbolic gradient is derived and compiled here, once; the function
    returned takes the values (a mapping, keyword arrays, or one positional
    array when the expression has a single variable) and returns the gradient
    array, or, for a list of variables, a dict name -> gradient (from one
    reverse sweep).

    Given a Python function instead of an expression, ``grad`` is JAX's: the
    result is a function of the same arguments that returns the gradient by
    argument ``argnums`` (default the first; a tuple gives a tuple), with nested
    dicts, lists and tuples of arrays allowed (see ``tenscalc.transforms``).

    Parameters
    ----------
    expr : Expr or callable
        A scalar (order 0) expression, or a Python function of arrays written
        with tenscalc's operations that returns one.
    wrt : str or Expr, or a list of them
        The variable(s) to differentiate by; may be left out when the expression
        has one variable (not used for a function: see ``argnums``).
    backend : str, optional
        The array backend of ``tenscalc.compile`` (default: NumPy, or the
        library of the arrays passed: torch in, torch out).
    argnums : int or tuple of int
        For a function: the positional argument(s) to differentiate by.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> df = tc.grad(f, "x")
    >>> df(x=np.array([1.0, 2.0]), A=np.eye(2))
    array([2., 4.])
    >>> sorted(tc.grad(f, ["x", "A"])(x=np.array([1.0, 2.0]), A=np.eye(2)))
    ['A', 'x']
    >>> tc.grad(tc.parse("x *(i,i->) x", {"x": 1}))(np.array([3.0, 4.0]))   # its only variable
    array([6., 8.])
    >>> tc.grad(lambda x, A: x @ A @ x)(np.array([1.0, 2.0]), np.eye(2))       # a function, as jax.grad
    array([2., 4.])
    """
    if not isinstance(expr, Expr):
        from .transforms import grad_function

        _no_wrt_for_functions("grad", wrt)
        return grad_function(expr, argnums, backend)
    return compile(gradient(expr, _only_variable(expr, wrt, "grad")), backend)


def value_and_grad(
    expr: Expr | Callable[..., Any],
    wrt: str | Expr | WrtList | None = None,
    backend: str | None = None,
    *,
    argnums: int | tuple[int, ...] = 0,
) -> Any:
    """The value and the gradient together, from one compiled function (``jax.value_and_grad``).

    Arguments as in ``tenscalc.grad``; the function returned gives ``(value, gradient)``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x'*x")
    >>> value, g = tc.value_and_grad(f)(np.array([3.0, 4.0]))
    >>> float(value), g.tolist()
    (25.0, [6.0, 8.0])
    >>> value, g = tc.value_and_grad(lambda p: (p["w"] ** 2).sum())({"w": np.array([1.0, 2.0])})
    >>> float(value), g["w"].tolist()
    (5.0, [2.0, 4.0])
    """
    if not isinstance(expr, Expr):
        from .transforms import value_and_grad_function

        _no_wrt_for_functions("value_and_grad", wrt)
        return value_and_grad_function(expr, argnums, backend)
    g = gradient(expr, _only_variable(expr, wrt, "value_and_grad"))
    run = compile([expr, *g.values()] if isinstance(g, dict) else [expr, g], backend)
    keys = list(g) if isinstance(g, dict) else None

    def value_and_gradient(values: Mapping[str, Any] | Any = None, /, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value, *grads = run(values, *args, **kwargs)
        return value, (dict(zip(keys, grads)) if keys is not None else grads[0])

    return value_and_gradient


def _only_variable(expr: Expr, wrt: str | Expr | WrtList | None, what: str) -> str | Expr | WrtList:
    """``wrt``, or the expression's single variable when it is left out."""
    if wrt is not None:
        return wrt
    if len(expr.variables) == 1:
        return next(iter(expr.variables))
    names = ", ".join(expr.variables) or "none"
    raise SemanticError(
        f"tc.{what}(f) without a variable needs an expression of one variable; this one has {names}: "
        f"name it, tc.{what}(f, 'x'), or a list, tc.{what}(f, ['x', 'A'])"
    )


def hvp(
    expr: Expr | Callable[..., Any],
    wrt: str | Expr | None = None,
    direction: str | None = None,
    *,
    argnums: int = 0,
    backend: str | None = None,
) -> Any:
    """The Hessian-vector product ``H v`` (the Hessian is never formed).

    Of an expression (the expression API, like ``tc.gradient`` and ``tc.hessian``) it
    is an expression, with the direction a new variable (``v_x``, or ``direction``);
    ``wrt`` may be left out for an expression of one variable.  Of a Python function
    (the function API, like ``tc.grad(fun)``) it is a compiled function called with
    the function's arguments and then the direction ``v``, shaped as argument
    ``argnums``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x'*A*x")
    >>> tc.hvp(f, "x").variables                 # an expression of the direction v_x
    {'A': 2, 'v_x': 1}
    >>> tc.hvp(lambda x, A: x @ A @ x)(np.ones(2), np.diag([1.0, 2.0]), np.array([1.0, 1.0]))
    array([2., 4.])
    """
    if not isinstance(expr, Expr):
        from .transforms import hvp_function

        _no_wrt_for_functions("hvp", wrt)
        return hvp_function(expr, argnums, backend)
    chosen = _only_variable(expr, wrt, "hvp")
    if isinstance(chosen, (list, tuple)):
        raise SemanticError("tc.hvp of an expression takes one variable")
    return directional_hvp(expr, chosen, direction)


def _no_wrt_for_functions(what: str, wrt: object) -> None:
    if wrt is not None:
        raise SemanticError(
            f"tc.{what} of a Python function takes argnums= (the positions of the arguments to differentiate "
            f"by, as in JAX), not a variable name: tc.{what}(fun, argnums=1)"
        )


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

    problem = _ScipyProblem(expr, name, order, fixed, shape)
    # bound methods of a module-level object: the objective pickles (multiprocessing, joblib)
    objective: ScipyObjective = {"fun": problem.fun, "jac": problem.jac, "hess": problem.hess, "hessp": problem.hessp}
    if method is not None:
        for key in ("hess", "hessp"):
            if key not in METHOD_KEYS[method.lower()]:
                del objective[key]  # type: ignore[misc]
    return objective


class _ScipyProblem:
    """What ``scipy_objective`` hands out: ``fun``, ``jac``, ``hess``, ``hessp`` as bound
    methods.  It pickles as its expression and data; the compiled functions are built
    again after unpickling (on first use, as at the start)."""

    def __init__(
        self, expr: Expr, name: str, order: int, fixed: Mapping[str, Any], shape: tuple[int, ...] | None
    ) -> None:
        self.expr, self.name, self.order, self.fixed, self.shape = expr, name, order, dict(fixed), shape
        self.x = resolve_wrt(expr, name)
        self.direction = direction_name(expr, self.x)  # the variable of hvp's direction (v_<name>)
        self.fg = compile([expr, gradient(expr, self.x)])
        self.last: dict[str, Any] = {}
        self.compiled: dict[str, CompiledFunction] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_ScipyProblem, (self.expr, self.name, self.order, self.fixed, self.shape))

    def point(self, flat: npt.ArrayLike) -> np.ndarray:
        vector = np.asarray(flat, dtype=np.float64)
        if vector.ndim != 1:
            raise EvaluationError(f"expected a flat vector for '{self.name}', got an array of shape {vector.shape}")
        target = self.shape if self.shape is not None else (() if self.order == 0 else (vector.size,))
        if vector.size != math.prod(target):
            raise EvaluationError(f"'{self.name}' has shape {target} ({math.prod(target)} entries), got {vector.size}")
        return vector.reshape(target)

    def value_and_gradient(self, flat: npt.ArrayLike) -> tuple[float, FloatVector]:
        at = self.point(flat)
        last = self.last
        if last.get("x") is None or last["x"].shape != at.shape or not np.array_equal(last["x"], at):
            f, g = self.fg({**self.fixed, self.name: at})
            last["x"] = at.copy()
            last["fg"] = (float(f), np.asarray(g, dtype=np.float64).ravel())
        result: tuple[float, FloatVector] = last["fg"]
        return result

    def lazily(self, key: str, build: Callable[[], Expr]) -> CompiledFunction:
        if key not in self.compiled:  # derived and compiled once, on first use
            self.compiled[key] = compile(build())
        return self.compiled[key]

    def fun(self, flat: npt.ArrayLike) -> float:
        return self.value_and_gradient(flat)[0]

    def jac(self, flat: npt.ArrayLike) -> FloatVector:
        return self.value_and_gradient(flat)[1].copy()

    def hess(self, flat: npt.ArrayLike) -> FloatVector:
        at = self.point(flat)
        H = self.lazily("hess", lambda: hessian(self.expr, self.x))({**self.fixed, self.name: at})
        H = np.asarray(H, dtype=np.float64).reshape(at.size, at.size)
        # exactly symmetric: the two halves are computed in different orders and differ
        # in the last bits, and trust-exact fails near the optimum on such asymmetry
        # (19 iterations and "a bad approximation" instead of 6 on a softmax loss)
        return (H + H.T) * 0.5

    def hessp(self, flat: npt.ArrayLike, p: npt.ArrayLike) -> FloatVector:
        at = self.point(flat)
        run = self.lazily("hvp", lambda: directional_hvp(self.expr, self.x, self.direction))
        v = np.asarray(p, dtype=np.float64)
        if v.size != at.size:
            raise EvaluationError(f"the direction has {v.size} entries, '{self.name}' has {at.size}")
        hv = run({**self.fixed, self.name: at, self.direction: v.reshape(at.shape)})
        return np.asarray(hv, dtype=np.float64).ravel()
