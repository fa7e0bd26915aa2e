"""The Python builder API: the same DAG as the language, built from Python.

>>> import tenscalc as tc
>>> A, x = tc.var("A", 2), tc.var("x", 1)
>>> tc.einsum("ij,j->i", A, x) is tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
True
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from ..core import nodes as N
from ..core.checks import check_names
from ..core.nodes import Expr
from ..core.vocabulary import is_reserved
from ..errors import SemanticError

Operand = Expr | int | float


def var(name: str, order: int) -> Expr:
    """A tensor variable.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.var("x", 1).order
    1
    """
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise SemanticError(f"invalid variable name {name!r}: use a letter followed by letters and digits")
    if is_reserved(name):
        raise SemanticError(f"'{name}' is reserved and cannot name a variable")
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise SemanticError(f"the order of {name!r} must be a natural number, got {order!r}")
    return N.var(name, order)


def delta(n: int, dims: Sequence[N.Dim | None] | None = None) -> Expr:
    """The order-``2n`` identity tensor (``delta(1)`` is the identity matrix).

    Its axis lengths come from what it is combined with, or from ``dims`` (one
    dimension per pair of axes, e.g. ``X.dims[:1]`` for the identity on X's rows).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> A = tc.var("A", 2)
    >>> tc.evaluate(tc.einsum("ij,jk->ik", tc.delta(1), A), A=np.arange(4.0).reshape(2, 2))
    array([[0., 1.],
           [2., 3.]])
    """
    return N.delta(n, dims)


def constant(value: float, order: int = 0, dims: Sequence[N.Dim | None] | None = None) -> Expr:
    """A tensor of the given order filled with ``value``.  Its axis lengths are
    ``dims`` (one dimension per axis, e.g. ``X.dims`` for a tensor of X's shape),
    or, by default, those of the context it is combined with.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> tc.evaluate(x + tc.constant(2, 1), x=np.array([1.0, 2.0]))
    array([3., 4.])
    >>> X = tc.var("X", 2)
    >>> print(tc.constant(0, 2, dims=X.dims))          # a zero of X's shape
    0{X.0, X.1}
    """
    return N.const(value, order, dims)


def _as_expr(value: Operand, order: int, what: str) -> Expr:
    """A Python number becomes a constant of the order its context needs."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, numbers.Real):
        return N.const(value, order)
    raise SemanticError(f"cannot use {value!r} ({type(value).__name__}) as an operand of {what}")


def _pair(a: Operand, b: Operand, what: str) -> tuple[Expr, Expr]:
    """Both operands as expressions of one order: a number, or an expression of lower order,
    is broadcast as NumPy broadcasts (its axes meet the trailing axes of the other)."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        raise SemanticError(f"{what} needs at least one tenscalc expression")
    check_names(a, b)
    order = a.order if isinstance(a, Expr) else b.order  # type: ignore[union-attr]
    x, y = _as_expr(a, order, what), _as_expr(b, order, what)
    return broadcast(x, y.order), broadcast(y, x.order)


def broadcast(x: Expr, order: int) -> Expr:
    """``x`` broadcast to ``order`` axes as NumPy does: new leading axes (of the lengths the
    context gives them), ``x``'s axes the trailing ones.  ``x`` itself when it has the order.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> X, x = tc.var("X", 2), tc.var("x", 1)
    >>> tc.evaluate(X + x, X=np.zeros((2, 3)), x=np.arange(3.0))     # as NumPy's X + x
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    if x.order >= order:
        return x
    lead = order - x.order
    return N.mul((N.const(1, lead), x), (tuple(range(lead)), tuple(range(lead, order))), tuple(range(order)))


def _trailing(a: Expr, b: Expr) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Einsum letters of ``a`` and ``b`` multiplied entry by entry with NumPy's broadcasting
    (the lower order's axes meet the trailing axes of the higher), and of the result."""
    order = max(a.order, b.order)
    out = tuple(range(order))
    return out[order - a.order :], out[order - b.order :], out


# Longest sum the builder extends in place; see _chain.
FLAT_SUM_LIMIT = 64


def _chain(x: Expr, y: Expr, sign: int) -> Expr:
    # Python evaluates `a + b - c` left to right, as the grammar's `expr = term
    # {(+|-) term}` does, and the parser builds one flat sum for it; a sum on the
    # left is therefore extended rather than nested, so both give the same node.
    # (A sum on the right came from explicit parentheses, `a - (b + c)`, and stays.)
    # Every extension builds a new node with all the terms, so `sum(terms)` would be
    # quadratic: past FLAT_SUM_LIMIT terms a new sum is started instead.
    if x.op == "add" and 1 < len(x.children) < FLAT_SUM_LIMIT:
        return N.add(x.children + (y,), x.arg + (sign,))
    return N.add((x, y), (1, sign))


def add(a: Operand, b: Operand) -> Expr:
    """``a + b`` (numbers broadcast to the other operand's order).

    Examples
    --------
    >>> import tenscalc as tc
    >>> x, y, w = tc.var("x", 1), tc.var("y", 1), tc.var("w", 1)
    >>> x + y - w is tc.parse("x + y - w", {"x": 1, "y": 1, "w": 1})
    True
    """
    x, y = _pair(a, b, "add")
    return _chain(x, y, 1)


def sub(a: Operand, b: Operand) -> Expr:
    """``a - b``."""
    x, y = _pair(a, b, "subtract")
    return _chain(x, y, -1)


def negate(a: Expr) -> Expr:
    """``-a`` (a sum with the coefficient -1; ``--a`` is ``a`` again)."""
    return N.neg(a)


def multiply(a: Operand, b: Operand) -> Expr:
    """``a * b`` entry by entry, with NumPy's broadcasting: an order-0 side scales, and
    a lower-order side meets the trailing axes of the other (``X * x`` scales X's columns).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> X, x = tc.var("X", 2), tc.var("x", 1)
    >>> tc.evaluate(X * x, X=np.ones((2, 3)), x=np.arange(3.0))
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    check_names(a, b)
    if isinstance(a, Expr) and isinstance(b, Expr) and a.order != b.order:
        left, right, out = _trailing(a, b)
        return N.mul((a, b), (left, right), out)
    if not isinstance(a, Expr) or not isinstance(b, Expr):
        # a number times a tensor: the language writes this as `2 *(,ij->ij) X`
        tensor, number = (b, a) if isinstance(b, Expr) else (a, b)
        if not isinstance(tensor, Expr):
            raise SemanticError("`*` needs at least one tenscalc expression")
        scalar = _as_expr(number, 0, "multiply")
        spec = tuple(range(tensor.order))
        if isinstance(a, Expr):
            return N.mul((tensor, scalar), (spec, ()), spec)
        return N.mul((scalar, tensor), ((), spec), spec)
    return N.elementwise_product(a, b)


def divide(a: Operand, b: Operand) -> Expr:
    """``a / b`` entry by entry, with NumPy's broadcasting (``x / tc.norm(x)``, ``X / x``).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> tc.evaluate(x / tc.norm(x), x=np.array([3.0, 4.0]))
    array([0.6, 0.8])
    """
    if isinstance(a, Expr) and isinstance(b, Expr) and a.order != b.order:
        check_names(a, b)
        left, right, out = _trailing(a, b)
        return N.mul((a, N.reciprocal(b)), (left, right), out)
    x, y = _pair(a, b, "divide")
    return N.divide(x, y)


def power(base: Operand, exponent: Operand) -> Expr:
    """``base ** exponent`` entry by entry; the exponent must be of order 0."""
    check_names(base, exponent)
    if not isinstance(base, Expr):
        order = 0
        base = _as_expr(base, order, "power")
    exp = _as_expr(exponent, 0, "power")
    return N.power(base, exp)


def einsum(spec: str, *operands: Operand) -> Expr:
    """A product in einsum notation with two or more operands.

    ``einsum("ij,j->i", A, x)`` is ``A *(ij,j->i) x``; without ``->`` the output is
    NumPy's implicit one (``"ij,jk"`` means ``"ij,jk->ik"``).  With more operands the
    product is built as the left-nested chain of binary products the language would
    write, keeping at each step the indices that are still needed.

    Examples
    --------
    >>> import tenscalc as tc
    >>> A, x = tc.var("A", 2), tc.var("x", 1)
    >>> str(tc.einsum("i,ij,j->", x, A, x))
    'x *(i,ij->j) A *(i,i->) x'
    """
    if not isinstance(spec, str):
        raise SemanticError(f"einsum needs a spec such as 'ij,j->i', got {spec!r}")
    if "->" not in spec:
        spec = implicit_output(spec)
    lhs, out = spec.replace(" ", "").split("->", 1)
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise SemanticError(f"einsum spec {spec!r} names {len(ins)} operands but {len(operands)} were given")
    if len(operands) < 1:
        raise SemanticError("einsum needs at least one operand")
    for s in ins + [out]:
        if not all(c.isascii() and c.isalpha() and c.islower() for c in s):
            raise SemanticError(f"einsum spec {spec!r}: index strings are lowercase letters")
    exprs = [_as_expr(op, len(s), "einsum") for op, s in zip(operands, ins)]
    check_names(*exprs)
    for e, s in zip(exprs, ins):
        if e.order != len(s):
            raise SemanticError(f"einsum spec {spec!r}: '{s}' has {len(s)} letters but `{e}` has order {e.order}")
    for letter in out:
        if letter not in lhs:
            raise SemanticError(f"einsum spec {spec!r}: output index '{letter}' occurs in no input")
    if len(exprs) == 1:
        return N.mul(exprs, ins, out)
    left, left_spec = exprs[0], ins[0]
    for k, result in enumerate(N.chain_specs(ins, out), start=1):
        left = N.mul((left, exprs[k]), (left_spec, ins[k]), result)
        left_spec = result
    return left


def implicit_output(spec: str) -> str:
    """NumPy's implicit einsum output: the letters that occur once, in alphabetical order.

    >>> implicit_output("ij,jk")
    'ij,jk->ik'
    >>> implicit_output("ii")
    'ii->'
    """
    lhs = spec.replace(" ", "")
    if "." in lhs:
        raise SemanticError(f"einsum spec {spec!r}: an ellipsis '...' is not supported; name every axis")
    once = sorted(c for c in set(lhs) if c != "," and lhs.count(c) == 1)
    return f"{lhs}->{''.join(once)}"


def _elementwise(name: str):
    def build(x: Operand) -> Expr:
        return N.func(name, _as_expr(x, 0, name))

    build.__name__ = name
    build.__qualname__ = name
    build.__doc__ = (
        f"``{name}(x)`` entry by entry (the language's ``{name}``).\n\n"
        f"    Examples\n"
        f"    --------\n"
        f"    >>> import tenscalc as tc\n"
        f"    >>> str(tc.{name}(tc.var('x', 1)))\n"
        f"    '{name}(x)'\n"
    )
    return build


sin = _elementwise("sin")
cos = _elementwise("cos")
tan = _elementwise("tan")
arcsin = _elementwise("arcsin")
arccos = _elementwise("arccos")
arctan = _elementwise("arctan")
tanh = _elementwise("tanh")
exp = _elementwise("exp")
log = _elementwise("log")
abs = _elementwise("abs")  # noqa: A001 - the language's name
sign = _elementwise("sign")
relu = _elementwise("relu")


def _matrix(x: Operand, name: str) -> Expr:
    e = _as_expr(x, 2, name)
    if e.order != 2:
        raise SemanticError(f"{name} needs a square matrix (order 2), but `{e}` has order {e.order}")
    return e


def inv(x: Operand) -> Expr:
    """Matrix inverse.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> tc.evaluate(tc.inv(tc.var("X", 2)), X=np.diag([2.0, 4.0]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
    """
    return N.inv(_matrix(x, "inv"))


def det(x: Operand) -> Expr:
    """Determinant (order 0).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> round(float(tc.evaluate(tc.det(tc.var("X", 2)), X=np.diag([2.0, 4.0]))), 12)
    8.0
    """
    return N.det(_matrix(x, "det"))


def adj(x: Operand, k: int = 1) -> Expr:
    """Adjugate of a square matrix (``k = 1``), or the k-th derivative of ``det``:
    ``adj(X, k)[j1, i1, ..., jk, ik] = d^k det(X) / dX[i1, j1] ... dX[ik, jk]`` (order 2k).
    A polynomial: evaluated exactly (through an SVD, never an inverse) at any rank.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> str(tc.adj(tc.var("X", 2)))
    'adj(X)'
    >>> tc.evaluate(tc.adj(tc.var("X", 2)), X=np.array([[1.0, 2.0], [2.0, 4.0]])).round(12).tolist()  # singular
    [[4.0, -2.0], [-2.0, 1.0]]
    """
    return N.adj(_matrix(x, "adj"), k)
