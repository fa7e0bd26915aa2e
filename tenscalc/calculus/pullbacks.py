"""The pullback rules of reverse mode, one function per node kind.

A rule ``rule(node, k, P, q)`` returns the contribution of ``node``, whose
pullback is ``P`` (of order ``q + node.order``), to the pullback of its child
``k``, or ``None`` for a zero contribution: zero tensors are never built.
:data:`PULLBACK_RULES` maps each node kind to its rule, and
:data:`FUNCTION_DERIVATIVES` each elementwise function to its derivative.

The product rule for ``y[out] = sum prod_k A_k[s_k]`` gives operand ``k`` the
einsum of ``P`` with the other operands into ``R + s_k``.  Where a letter of
``s_k`` occurs in no other operand and not in the output (``A *(ij,j->) v`` by
``A``: the published proof breaks here) the einsum would have an output letter
without an input; the 2022 thesis added an explicit sum, here a ones tensor over
the missing letters.  Repeated letters in ``s_k`` (a diagonal read) become a
repeated output letter (the pullback lies on the diagonal); repeated letters in
``out`` read the diagonal of ``P``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..core import nodes as N
from ..core.exact import exact_sum
from ..core.functions import SpecTable
from ..core.nodes import Expr

#: ``rule(node, k, pullback, q)``: the contribution of ``node`` to the pullback of child ``k``
PullbackRule = Callable[[Expr, int, Expr, int], "Expr | None"]


def _shift(spec: tuple[int, ...], q: int) -> tuple[int, ...]:
    return tuple(letter + q for letter in spec)


def pull_add(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d(sum c_k a_k) / d a_k = c_k
    coefficient = node.arg[k]
    return pullback if coefficient == 1 else N.scale(pullback, coefficient)


def pull_mul(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    ins, out = node.arg
    root = tuple(range(q))
    operands = [pullback]
    specs = [root + _shift(out, q)]
    for j, (child, spec) in enumerate(zip(node.children, ins)):
        if j == k:
            continue
        if N.is_zero(child):
            return None
        operands.append(child)
        specs.append(_shift(spec, q))
    target = root + _shift(ins[k], q)
    present = set().union(*specs)
    # letters of operand k found nowhere else: sum explicitly (the thesis' fix)
    missing = tuple(dict.fromkeys(letter for letter in target if letter not in present))
    if missing:
        # the ones tensor has the lengths of operand k's axes it stands for
        axes_of: dict[int, list] = {}
        for letter, d in zip(_shift(ins[k], q), node.children[k].dims):
            axes_of.setdefault(letter, []).append(d)  # a diagonal read labels two axes alike
        operands.append(N.const(1, len(missing), tuple(N.merge_dims(axes_of[letter]) for letter in missing)))
        specs.append(missing)
    return N.mul(operands, specs, target)


def elementwise_pullback(pullback: Expr, q: int, factor: Expr) -> Expr:
    """``P[R, s] * factor[s]``: the pullback through an elementwise map."""
    s = tuple(range(q, q + factor.order))
    return N.mul((pullback, factor), (tuple(range(q)) + s, s), tuple(range(q)) + s)


def pull_func(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    factor = FUNCTION_DERIVATIVES[node.arg](node.children[0], node)
    return None if factor is None else elementwise_pullback(pullback, q, factor)


def _minus_one(e: Expr) -> Expr:
    if e.op == "const":
        return N.const(exact_sum([e.arg[0], -1]), 0)  # 1/3 - 1 is -2/3 exactly (rounded once)
    return N.add((e, N.const(1, 0)), (1, -1))


def pull_pow(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    base, exponent = node.children
    s = tuple(range(base.order))
    if k == 0:
        # d(b^e)/db = e * b^(e-1)
        lowered = N.power(base, _minus_one(exponent))
        factor = N.mul((exponent, lowered), ((), s), s)
        return elementwise_pullback(pullback, q, factor)
    # d(b^e)/de = sum over entries of b^e * log(b), e being a scalar
    shifted = _shift(s, q)
    return N.mul((pullback, node, N.func("log", base)), (tuple(range(q)) + shifted, shifted, shifted), tuple(range(q)))


def pull_inv(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d inv(X)[a,b] / dX[c,d] = -inv[a,c] inv[d,b]
    r = tuple(range(q))
    a, b, c, d = q, q + 1, q + 2, q + 3
    return N.neg(N.mul((pullback, node, node), (r + (a, b), (a, c), (d, b)), r + (c, d)))


def pull_det(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d det(X) / dX[c,d] = adj(X)[d,c]: the cofactor, a polynomial (det(X) inv(X)' is
    # undefined at a singular X, where the cofactor is not)
    r = tuple(range(q))
    c, d = q, q + 1
    if _divides_by(pullback, node):
        # the pullback is itself undefined at det(X) = 0 (log(det(X)), 1/det(X), log|det(X)|):
        # det(X) inv(X)' loses nothing there, and the simplifier cancels det(X) / det(X)
        # into the textbook inv(X)'
        return N.mul((pullback, node, N.inv(node.children[0])), (r, (), (d, c)), r + (c, d))
    return N.mul((pullback, N.adj(node.children[0])), (r, (d, c)), r + (c, d))


def _divides_by(pullback: Expr, node: Expr) -> bool:
    """Whether ``pullback`` is a product with a scalar factor ``node^e`` or ``abs(node)^e``, ``e < 0``
    (in a product of scalars too)."""
    if pullback.op != "mul":
        return False
    for child, spec in zip(pullback.children, pullback.arg[0]):
        if spec == () and child.op == "mul" and _divides_by(child, node):
            return True
        if spec != () or child.op != "pow" or child.children[1].op != "const" or child.children[1].arg[0] >= 0:
            continue
        base = child.children[0]
        if base is node or (base.op == "func" and base.arg == "abs" and base.children[0] is node):
            return True
    return False


def pull_adj(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # adj(X, m)[s] is the m-th derivative of det(X), its axes in (j, i) pairs: its
    # derivative by X[c,d] is adj(X, m + 1)[s, d, c] (zero, and evaluated as zero,
    # once m + 1 exceeds the size of X)
    r = tuple(range(q))
    s = tuple(range(q, q + node.order))
    c, d = q + node.order, q + node.order + 1
    higher = N.adj(node.children[0], node.arg + 1)
    return N.mul((pullback, higher), (r + s, s + (d, c)), r + (c, d))


def pull_slice(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # the pullback of a slice embeds into zeros of the sliced tensor's shape
    if N.is_zero(pullback):
        return None
    full = (N.FULL_AXIS,) * q
    return N.embed(pullback, full + node.arg, pullback.dims[:q] + node.children[0].dims)


def pull_embed(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # the pullback of an embedding reads the embedded part back out
    return N.slice_(pullback, (N.FULL_AXIS,) * q + node.arg[0])


def _leaf(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    raise AssertionError("leaves have no children")


PULLBACK_RULES: dict[str, PullbackRule] = {
    "var": _leaf,
    "const": _leaf,
    "delta": _leaf,
    "add": pull_add,
    "mul": pull_mul,
    "func": pull_func,
    "pow": pull_pow,
    "inv": pull_inv,
    "det": pull_det,
    "adj": pull_adj,
    "slice": pull_slice,
    "embed": pull_embed,
}


# --------------------------------------------- derivatives of elementwise functions


FunctionDerivative = Callable[[Expr, Expr], "Expr | None"]

# f'(x) as an expression, given x and the node f(x) (reused where it is cheaper):
# each function's spec (tenscalc/core/functions.py) says it
FUNCTION_DERIVATIVES: Mapping[str, FunctionDerivative] = SpecTable("derivative")
