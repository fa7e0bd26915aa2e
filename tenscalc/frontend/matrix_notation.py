"""Matrix notation: what matrixcalculus.org's users type, as ordinary DAG nodes.

The text language accepts, mixed freely with the einsum language, the notation of
matrixcalculus.org::

    x'*A*x          norm2(A*x - b)^2          tr(A*X'*B*X*C)          x .* y

* ``'`` transposes; ``*`` is the matrix product, where an order-1 expression is a
  *column* and ``x'`` a row (``x'*y`` inner, ``x*y'`` outer, ``A*x``, ``X*Y``; a
  scalar on either side scales);
* ``.*``, ``./``, ``.^`` work entry by entry (a scalar operand broadcasts);
  ``/`` by a scalar scales; ``^`` keeps the language's meaning (entry by entry);
* functions: ``sum`` (of all entries), ``norm1`` (sum of absolute values),
  ``norm2`` (Euclidean / Frobenius), ``tr``, ``det``, ``logdet``, ``inv``,
  ``diag`` (vector -> diagonal matrix, matrix -> its diagonal), ``sqrt``, and
  the constants ``vector(c)`` and ``matrix(c)`` (filled with ``c``) and ``eye``
  (the identity matrix, unless ``eye`` is declared as a variable);
* when nothing is declared, names take matrixcalculus.org's types by their first
  letter: ``a``-``g`` scalars, ``h``-``z`` vectors, ``A``-``Z`` matrices.

Nothing here is a new node kind: every form is built from ``mul``, ``add``,
``func``, ``pow``, ``inv``, ``det`` nodes.  A row vector is the same order-1
node as the column; only the parser's typing pass tracks the orientation.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("x'*A*x")                      # x a vector, A a matrix by default
>>> f is tc.parse("x *(i,ij->j) A *(i,i->) x", {"x": 1, "A": 2})
True
>>> print(tc.to_matrix_notation(tc.derivative(f, "x")))  # the printer: tenscalc.printing.matrix_notation
A'*x + A*x
"""

from __future__ import annotations

import difflib

from ..core import nodes as N
from ..core.nodes import Expr
from ..core.text import quoted
from ..core.vocabulary import NOTATION_FUNCTIONS, language_functions
from ..errors import SemanticError


def known_functions() -> tuple[str, ...]:
    """Every function name the text language knows."""
    return language_functions() + ("embed",) + NOTATION_FUNCTIONS


def unknown_function_message(name: str) -> str:
    """``unknown function 'norm3'; did you mean norm2? (known: ...)``."""
    known = known_functions()
    match = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {match[0]}?" if match else ""
    return f"unknown function '{name}'{hint} (known functions: {', '.join(sorted(known))})"


# ----------------------------------------------------------------------- default types


def default_order(name: str) -> int | None:
    """matrixcalculus.org's type of an undeclared name by its first letter:
    ``a``-``g`` scalars (0), ``h``-``z`` vectors (1), ``A``-``Z`` matrices (2).

    Examples
    --------
    >>> default_order("b"), default_order("x"), default_order("X"), default_order("_t")
    (0, 1, 2, None)
    """
    first = name[:1]
    if "a" <= first <= "g":
        return 0
    if "h" <= first <= "z":
        return 1
    if "A" <= first <= "Z":
        return 2
    return None


# ------------------------------------------------------------------------------ shapes


def shape_name(order: int | None, row: bool = False) -> str:
    """How an operand is described in messages: scalar, column vector, row vector,
    matrix, order-k tensor."""
    if order is None or order == 0:
        return "a scalar"
    if order == 1:
        return "a row vector" if row else "a column vector"
    if order == 2:
        return "a matrix"
    return f"an order-{order} tensor"


def _axes(order: int, row: bool) -> tuple[bool, bool] | None:
    """(has a row index, has a column index) of a matrix-notation operand."""
    return {1: (not row, row), 2: (True, True)}.get(order)


def matmul_type(a: int, a_row: bool, b: int, b_row: bool) -> tuple[int, bool] | None:
    """Order and orientation (row?) of ``a * b`` in matrix notation, ``None`` if undefined.

    Examples
    --------
    >>> matmul_type(1, True, 1, False), matmul_type(1, False, 1, True), matmul_type(2, False, 1, False)
    ((0, False), (2, False), (1, False))
    """
    if a == 0:
        return b, b_row
    if b == 0:
        return a, a_row
    left, right = _axes(a, a_row), _axes(b, b_row)
    if left is None or right is None or left[1] != right[0]:
        return None
    rows, cols = left[0], right[1]
    return rows + cols, cols and not rows


def matmul(a: Expr, a_row: bool, b: Expr, b_row: bool) -> Expr:
    """The DAG of ``a * b`` (orientations as in :func:`matmul_type`, which must allow it)."""
    if a.order == 0 or b.order == 0:
        return scale(a, b)
    (a_rows, a_cols), (b_rows, b_cols) = _axes(a.order, a_row), _axes(b.order, b_row)
    # letters: 0 the rows of a, 1 the contracted (or absent) middle, 2 the columns of b
    sa = (0,) * a_rows + (1,) * a_cols
    sb = (1,) * b_rows + (2,) * b_cols
    return N.mul((a, b), (sa, sb), (0,) * a_rows + (2,) * b_cols)


def scale(a: Expr, b: Expr) -> Expr:
    """``a * b`` where at least one side has order 0."""
    sa, sb = tuple(range(a.order)), tuple(range(b.order))
    return N.mul((a, b), (sa, sb), sa if a.order else sb)


def transpose(a: Expr) -> Expr:
    """``a'``: the axes of a matrix swapped; scalars and vectors are their own node
    (the orientation of a vector is tracked by the typing pass)."""
    if a.order == 2:
        return N.mul((a,), ((0, 1),), (1, 0))
    if a.order > 2:
        raise SemanticError(f"transpose needs an order ≤ 2 operand, but {quoted(a)} has order {a.order}")
    return a


def elementwise(a: Expr, b: Expr, divide: bool = False) -> Expr:
    """``a .* b`` or ``a ./ b`` (equal orders, or a scalar side broadcast)."""
    if divide:
        b = N.reciprocal(b)
    if a.order == b.order:
        return N.elementwise_product(a, b)
    return scale(a, b)


def sum_all(a: Expr) -> Expr:
    """The sum of every entry (a scalar stays itself)."""
    if a.order == 0:
        return a
    return N.mul((a,), (tuple(range(a.order)),), ())


def call(name: str, a: Expr) -> Expr:
    """A function of matrix notation applied to a built argument."""
    if name == "sum":
        return sum_all(a)
    if name == "norm1":
        return sum_all(N.func("abs", a))
    if name == "norm2":
        spec = tuple(range(a.order))
        return N.power(N.mul((a, a), (spec, spec), ()), N.const(0.5, 0))
    if name == "sqrt":
        return N.power(a, N.const(0.5, 0))
    if name == "tr":
        _square(name, a)
        return N.mul((a,), ((0, 0),), ())
    if name == "logdet":
        _square(name, a)
        return N.func("log", N.det(a))
    if name == "diag":
        if a.order == 1:
            return N.mul((a,), ((0,),), (0, 0))
        if a.order == 2:
            return N.mul((a,), ((0, 0),), (0,))
        raise SemanticError(f"diag needs a vector or a matrix, but {quoted(a)} has order {a.order}")
    raise AssertionError(name)


def matrix_power(a: Expr, k: int) -> Expr:
    """``a^k`` of matrix notation: the matrix power (``k < 0``: of the inverse), by squaring,
    so the DAG shares the squares (``X^8`` is three products).

    >>> import tenscalc as tc
    >>> tc.parse("X^-1") is tc.inv(tc.var("X", 2))
    True
    """
    base = N.inv(a) if k < 0 else a
    k = abs(k)
    result: Expr | None = None
    while k:
        if k & 1:
            result = base if result is None else matmul(result, False, base, False)
        k >>= 1
        if k:
            base = matmul(base, False, base, False)
    assert result is not None
    return result


def _square(name: str, a: Expr) -> None:
    if a.order != 2:
        raise SemanticError(f"{name} needs a square matrix (order 2), but {quoted(a)} has order {a.order}")
