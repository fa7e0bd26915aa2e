"""Rules for elementwise functions, powers and inverses: constants fold where exact,
``x^1 -> x``, ``(b^a)^c -> b^(a c)``, ``inv(inv(X)) -> X``."""

from __future__ import annotations

import math

from ..core import nodes as N
from ..core.exact import exact_product
from ..core.functions import FUNCTIONS, SpecTable
from ..core.nodes import Expr
from .context import Context, Rule
from .rules_sums import const_power

_NUMERIC = SpecTable("scalar")  # each function on a float, from its spec


def func_constant(node: Expr, ctx: Context) -> Expr | None:
    # exp(0) -> 1 ; abs(-2) -> 2 : functions of constants fold when the result is exact
    # (log(2) stays log(2): a rounded float would make derivatives inexact)
    child = node.children[0]
    if child.op != "const":
        return None
    try:
        value = _NUMERIC[node.arg](child.arg[0])
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    if not FUNCTIONS[node.arg].exact and not float(value).is_integer():
        return None
    if float(value).is_integer() and isinstance(child.arg[0], int):
        value = int(value)
    return N.const_like(value, node)


def pow_simplify(node: Expr, ctx: Context) -> Expr | None:
    # x^1 -> x ; x^0 -> 1 ; 2^3 -> 8
    base, exponent = node.children
    if exponent.op != "const":
        return None
    e = exponent.arg[0]
    if e == 1:
        return base
    if e == 0:  # the node keeps base's dimensions, so nothing about its shape is lost
        return N.const_like(1, node)
    if base.op == "const":
        if not _power_fits(base.arg[0], e):
            return None  # 2^2824331246 would take seconds to compute and fit no float
        try:
            value = base.arg[0] ** e
        except (ZeroDivisionError, OverflowError):
            return None
        if isinstance(value, complex) or not math.isfinite(value):
            return None
        return N.const_like(value, node)
    return None


def _power_fits(base: float, exponent: float) -> bool:
    """Whether ``base ** exponent`` is within float64's range (checked before computing it)."""
    if base in (0, 1, -1) or exponent <= 0:
        return base != 0 or exponent >= 0
    try:
        return exponent * math.log2(abs(base)) < 1020
    except (OverflowError, ValueError):
        return False


FUNC_RULES: list[Rule] = [func_constant]


def pow_of_pow(node: Expr, ctx: Context) -> Expr | None:
    # (b^a)^c -> b^(a c) for an integer c ((b^2)^0.5 is |b|, so never for a fractional c)
    outer = const_power(node)
    inner = None if outer is None else const_power(outer[0])
    if inner is None or outer[1] != int(outer[1]):
        return None
    return N.power(inner[0], N.const(N.normalize_number(exact_product([inner[1], outer[1]])), 0))


POW_RULES: list[Rule] = [pow_simplify, pow_of_pow]


def inv_of_inv(node: Expr, ctx: Context) -> Expr | None:
    # inv(inv(X)) -> X
    (child,) = node.children
    return child.children[0] if child.op == "inv" else None


INV_RULES: list[Rule] = [inv_of_inv]


def rank_one_update(matrix: Expr) -> tuple[Expr, Expr, int | float] | None:
    """``I + c u vᵀ`` (a sum of the identity and a scaled outer product of two vectors)
    as ``(u, v, c)``; None for any other matrix."""
    if matrix.op != "add" or len(matrix.children) != 2:
        return None
    terms = list(zip(matrix.children, matrix.arg))
    identity = [(t, a) for t, a in terms if t.op == "delta" and t.arg == 1]
    if len(identity) != 1 or identity[0][1] != 1:
        return None
    ((outer, c),) = [(t, a) for t, a in terms if t is not identity[0][0]]
    if outer.op == "add" and len(outer.children) == 1:  # a scaled outer product
        outer, c = outer.children[0], c * outer.arg[0]
    if outer.op != "mul" or len(outer.children) != 2 or any(k.order != 1 for k in outer.children):
        return None
    (a, b), out = outer.arg
    if a == b or set(a + b) != set(out):
        return None
    u, v = outer.children if out == a + b else outer.children[::-1]
    return u, v, c


def det_rank_one(node: Expr, ctx: Context) -> Expr | None:
    # det(I + c u vᵀ) -> 1 + c vᵀu   (the matrix determinant lemma)
    found = rank_one_update(node.children[0])
    if found is None:
        return None
    u, v, c = found
    return N.add([N.const(1, 0), N.mul((u, v), ((0,), (0,)), ())], [1, c])


DET_RULES: list[Rule] = [det_rank_one]


def adj_rank_one(node: Expr, ctx: Context) -> Expr | None:
    # adj(I + c u vᵀ) -> (1 + c vᵀu) I - c u vᵀ: det(A) inv(A) by the determinant lemma and
    # Sherman-Morrison, a polynomial identity (so true at a singular A too)
    found = rank_one_update(node.children[0]) if node.arg == 1 else None
    if found is None:
        return None
    u, v, c = found
    identity = next(t for t in node.children[0].children if t.op == "delta")
    lemma = N.add([N.const(1, 0), N.mul((u, v), ((0,), (0,)), ())], [1, c])
    scaled = N.mul((lemma, identity), ((), (0, 1)), (0, 1))
    return N.add([scaled, N.mul((u, v), ((0,), (1,)), (0, 1))], [1, -c])


ADJ_RULES: list[Rule] = [adj_rank_one]
