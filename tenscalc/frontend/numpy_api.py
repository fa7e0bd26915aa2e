"""NumPy-style building: ``A @ x``, ``A.T``, ``x.sum()``, ``tc.trace`` ...

Each function builds the same ordinary DAG the text language would (products,
sums, elementwise functions and powers); nothing here is a new node kind.
NumPy's own functions and ufuncs applied to an expression refuse with a
``TypeError`` naming the tenscalc spelling, instead of silently building an
object array.

>>> import numpy as np, tenscalc as tc
>>> A, x = tc.var("A", 2), tc.var("x", 1)
>>> (x @ A @ x) is tc.parse("x'*A*x")
True
>>> float(tc.evaluate(tc.trace(A.T @ A), A=np.array([[1.0, 2.0], [3.0, 4.0]])))
30.0
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from ..core import nodes as N
from ..core.checks import check_names
from ..core.nodes import Expr
from ..core.vocabulary import ELEMENTWISE_FUNCTIONS
from ..errors import SemanticError
from . import builder
from . import matrix_notation as M


def _expr(x: object, what: str) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return N.const(x, 0)
    raise SemanticError(f"{what} needs a tenscalc expression, got {type(x).__name__}")


def matmul(a: object, b: object) -> Expr:
    """``a @ b`` with NumPy's rules for orders 1 and 2: vector @ vector is the inner
    product, matrix @ vector ``A x``, vector @ matrix ``xᵀ A``, matrix @ matrix.

    Examples
    --------
    >>> import tenscalc as tc
    >>> print(tc.var("A", 2) @ tc.var("x", 1))
    A *(ij,j->i) x
    """
    x, y = _expr(a, "@"), _expr(b, "@")
    check_names(x, y)
    if not (1 <= x.order <= 2 and 1 <= y.order <= 2):
        raise SemanticError(
            f"@ multiplies vectors and matrices (orders 1 and 2, as NumPy's matmul for them), but `{x}` has "
            f"order {x.order} and `{y}` order {y.order}: use * to scale by a scalar, tc.einsum otherwise"
        )
    # NumPy: a vector on the left is a row, on the right a column
    return M.matmul(x, x.order == 1, y, False)


def transpose(a: Expr) -> Expr:
    """``a.T``: a matrix's axes swapped, the axes reversed for higher orders (NumPy's
    rule); a scalar or vector is itself.

    Examples
    --------
    >>> import tenscalc as tc
    >>> print(tc.var("A", 2).T)
    A *(ij,->ji) 1
    """
    if a.order <= 1:
        return a
    return N.mul((a,), (tuple(range(a.order)),), tuple(reversed(range(a.order))))


def sum(x: object, axis: int | Sequence[int] | None = None) -> Expr:  # noqa: A001 - NumPy's name
    """The sum of all entries (``axis=None``) or over the given axes, as ``np.sum``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> X = tc.var("X", 2)
    >>> tc.evaluate(tc.sum(X, axis=0), X=np.arange(6.0).reshape(2, 3))
    array([3., 5., 7.])
    """
    e = _expr(x, "sum")
    if axis is None:
        return M.sum_all(e)
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    normal = []
    for k in axes:
        if not isinstance(k, numbers.Integral) or not -e.order <= k < e.order:
            raise SemanticError(f"axis {k!r} is out of range for `{e}`, which has order {e.order}")
        normal.append(int(k) % e.order)
    if len(set(normal)) != len(normal):
        raise SemanticError(f"repeated axis in {axis!r}")
    spec = tuple(range(e.order))
    return N.mul((e,), (spec,), tuple(k for k in spec if k not in normal))


def trace(x: object) -> Expr:
    """The trace of a matrix (``tr`` in matrix notation).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> float(tc.evaluate(tc.trace(tc.var("A", 2)), A=np.eye(3)))
    3.0
    """
    return M.call("tr", _expr(x, "trace"))


def diag(x: object) -> Expr:
    """A vector's diagonal matrix, or a matrix's diagonal (as ``np.diag``).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> tc.evaluate(tc.diag(tc.var("A", 2)), A=np.arange(4.0).reshape(2, 2))
    array([0., 3.])
    """
    return M.call("diag", _expr(x, "diag"))


def dot(a: object, b: object) -> Expr:
    """``np.dot`` for orders up to 2: a scalar scales, otherwise as ``@``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> float(tc.evaluate(tc.dot(x, x), x=np.array([3.0, 4.0])))
    25.0
    """
    x, y = _expr(a, "dot"), _expr(b, "dot")
    if x.order == 0 or y.order == 0:
        check_names(x, y)
        return M.scale(x, y)
    return matmul(x, y)


def outer(a: object, b: object) -> Expr:
    """The outer product of two vectors.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> x, y = tc.var("x", 1), tc.var("y", 1)
    >>> tc.evaluate(tc.outer(x, y), x=np.array([1.0, 2.0]), y=np.array([3.0, 4.0, 5.0]))
    array([[ 3.,  4.,  5.],
           [ 6.,  8., 10.]])
    """
    x, y = _expr(a, "outer"), _expr(b, "outer")
    if x.order != 1 or y.order != 1:
        raise SemanticError(f"outer needs two vectors, but the orders are {x.order} and {y.order}: use tc.einsum")
    check_names(x, y)
    return M.matmul(x, False, y, True)


def norm(x: object, ord: int | str | None = None) -> Expr:  # noqa: A002 - NumPy's name
    """The Euclidean norm of a vector or the Frobenius norm of a matrix
    (``ord=None``, ``2`` for a vector, ``"fro"``), or the sum of absolute values
    (``ord=1`` for a vector).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> float(tc.evaluate(tc.norm(tc.var("x", 1)), x=np.array([3.0, 4.0])))
    5.0
    """
    e = _expr(x, "norm")
    if ord is None or (ord == 2 and e.order == 1) or (ord == "fro" and e.order == 2):
        return M.call("norm2", e)
    if ord == 1 and e.order == 1:
        return M.call("norm1", e)
    raise SemanticError(
        f"norm with ord={ord!r} of an order-{e.order} expression is not supported: use ord=None "
        "(Euclidean / Frobenius) or ord=1 for a vector"
    )


def sqrt(x: object) -> Expr:
    """``x ^ 0.5`` entry by entry.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> tc.evaluate(tc.sqrt(tc.var("x", 1)), x=np.array([4.0, 9.0]))
    array([2., 3.])
    """
    return M.call("sqrt", _expr(x, "sqrt"))


def sigmoid(x: object) -> Expr:
    """The logistic function ``1 / (1 + exp(-x))`` entry by entry.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> tc.evaluate(tc.sigmoid(tc.var("x", 1)), x=np.array([0.0]))
    array([0.5])
    """
    e = _expr(x, "sigmoid")
    return N.reciprocal(N.add((N.const_like(1, e), N.func("exp", N.neg(e)))))


def softplus(x: object) -> Expr:
    """``log(1 + exp(x))`` entry by entry.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> round(float(tc.evaluate(tc.softplus(tc.var("c", 0)), c=0.0)), 12) == round(float(np.log(2)), 12)
    True
    """
    e = _expr(x, "softplus")
    return N.func("log", N.add((N.const_like(1, e), N.func("exp", e))))


def logsumexp(x: object, axis: int | Sequence[int] | None = None) -> Expr:
    """``log(sum(exp(x)))`` over all entries or the given axes (as
    ``scipy.special.logsumexp``, without its shift: large entries overflow).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> round(float(tc.evaluate(tc.logsumexp(tc.var("x", 1)), x=np.zeros(4))), 12) == round(float(np.log(4)), 12)
    True
    """
    return N.func("log", sum(N.func("exp", _expr(x, "logsumexp")), axis))


def logdet(x: object) -> Expr:
    """``log(det(X))``.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> round(float(tc.evaluate(tc.logdet(tc.var("X", 2)), X=np.diag([1.0, np.e]))), 12)
    1.0
    """
    return M.call("logdet", _expr(x, "logdet"))


def getitem(x: Expr, key: object) -> Expr:
    """``x[key]`` with NumPy's basic indexing: integers and slices with positive
    steps, one per axis (missing trailing axes are kept whole).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> X = tc.var("X", 2)
    >>> tc.evaluate(X[1:, 0], X=np.arange(6.0).reshape(3, 2))
    array([2., 4.])
    """
    import numbers as _numbers

    items = key if isinstance(key, tuple) else (key,)
    normal: list = []
    for item in items:
        if isinstance(item, _numbers.Integral) and not isinstance(item, bool):
            normal.append(int(item))
        elif isinstance(item, slice):
            normal.append(item)
        else:
            raise SemanticError(
                f"cannot index a tenscalc expression with {item!r}: use integers and slices (x[1:], X[:, 0])"
            )
    if len(normal) > x.order:
        raise SemanticError(f"{len(normal)} indices for `{x}`, which has order {x.order}")
    normal += [slice(None)] * (x.order - len(normal))
    return N.slice_(x, normal)


# ----------------------------------------------------------------- NumPy's functions

#: What to write instead of a NumPy function applied to an expression (besides the
#: language's elementwise functions, ``tc.<name>`` under their own names).
EQUIVALENTS = {
    "absolute": "tc.abs",
    "dot": "tc.dot or @",
    "matmul": "@",
    "vdot": "tc.dot or @",
    "inner": "tc.dot or @",
    "outer": "tc.outer",
    "sum": "tc.sum or .sum()",
    "trace": "tc.trace",
    "transpose": ".T",
    "diag": "tc.diag",
    "einsum": "tc.einsum",
    "sqrt": "tc.sqrt",
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "true_divide": "/",
    "divide": "/",
    "power": "**",
    "negative": "unary -",
    "square": "x ** 2",
    "norm": "tc.norm",
    "det": "tc.det",
    "inv": "tc.inv",
    "slogdet": "tc.logdet",
    "logaddexp": "tc.logsumexp",
}


def _function_equivalent(name: str) -> str | None:
    """``tc.<f>`` where NumPy's function has the name of the language's elementwise ``f``."""
    return f"tc.{name}" if name in ELEMENTWISE_FUNCTIONS else None


def numpy_refusal(name: str) -> TypeError:
    """The ``TypeError`` for NumPy's ``name`` applied to a tenscalc expression."""
    hint = EQUIVALENTS.get(name) or _function_equivalent(name)
    use = f"use {hint}" if hint else "build it with tenscalc's functions (tc.einsum, tc.sum, ...)"
    return TypeError(
        f"numpy.{name} cannot take a tenscalc expression (it would build an object array or the wrong "
        f"product): {use}; evaluate with tc.evaluate to get numbers"
    )


_SCALAR_UFUNCS = {"add": "add", "subtract": "sub", "multiply": "multiply", "true_divide": "divide", "power": "power"}


def array_ufunc(self: Expr, ufunc, method: str, *inputs, **kwargs) -> Expr:
    """``Expr.__array_ufunc__``: NumPy scalars combine with an expression as Python
    numbers do (``np.float64(2) * x``); everything else is refused."""
    name = ufunc.__name__
    if method == "__call__" and name in _SCALAR_UFUNCS and not kwargs and len(inputs) == 2:
        if all(
            isinstance(i, Expr)
            or (getattr(i, "ndim", None) == 0 and getattr(i, "dtype", None) is not None and i.dtype.kind in "iuf")
            for i in inputs
        ):
            args = [i if isinstance(i, Expr) else i.item() for i in inputs]
            return getattr(builder, _SCALAR_UFUNCS[name])(*args)
    if any(getattr(i, "ndim", 0) for i in inputs if not isinstance(i, Expr)):
        raise TypeError(
            f"numpy.{name} cannot combine a NumPy array with a tenscalc expression: declare a variable for "
            "the array and pass the array when evaluating"
        )
    raise numpy_refusal(name)
