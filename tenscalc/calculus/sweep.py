"""The reverse sweep: pullbacks from the root down to the variables.

For a root ``y`` of order ``q`` the *pullback* of a node ``v`` is the tensor
``P_v = d y / d v`` of order ``q + order(v)``, axes laid out as ``y``'s then
``v``'s.  The seed is ``P_y = delta(q)``; every node passes to each child, through
the rule for its kind (:mod:`tenscalc.calculus.pullbacks`), a contribution to the
child's pullback, and the contributions a child receives from several parents are
summed (Laue, Mitterreiter and Giesen's tensor calculus).  ``P_x`` for the
variable ``x`` is the derivative, laid out as in docs/language.md, "Derivatives" (jax.jacobian's
layout).  The sweep is iterative (no recursion), so deep DAGs are fine.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import nodes as N
from ..core.nodes import Expr, topological
from .pullbacks import PULLBACK_RULES


def reverse_sweep(expr: Expr, x: Expr, q: int, observe: Callable[[Expr, Expr], None] | None = None) -> Expr:
    """The raw (unsimplified) reverse-mode derivative of ``expr`` by ``x``.

    ``observe(new, node)`` is called for the seed (with the root), for each
    node's summed pullback and for each contribution a node's rule makes, so that
    tools (the pullback colouring of ``tenscalc.to_dot``) can tell which node
    of ``expr`` produced which part of the derivative.
    """
    return reverse_sweep_many(expr, [x], q, observe)[0]


def reverse_sweep_many(
    expr: Expr, xs: list[Expr], q: int, observe: Callable[[Expr, Expr], None] | None = None
) -> list[Expr]:
    """:func:`reverse_sweep` for several variables at once: one sweep, whose
    pullbacks of every node are shared, read at each variable of ``xs``."""
    nodes = topological(expr)
    targets = set(xs)
    depends: set[Expr] = set()  # the nodes whose value depends on a target
    for node in nodes:
        if node in targets or any(c in depends for c in node.children):
            depends.add(node)
    found: dict[Expr, Expr] = {}
    if expr in depends:
        seed = N.delta(q, expr.dims) if q else N.const(1, 0)
        if observe:
            observe(seed, expr)
        contributions: dict[Expr, list[Expr]] = {expr: [seed]}
        for node in reversed(nodes):
            if node not in depends:
                continue
            parts = contributions.pop(node, None)
            if not parts:
                continue
            pullback = parts[0] if len(parts) == 1 else N.add(parts)
            if observe:
                observe(pullback, node)
            if node in targets:
                found[node] = pullback
                if len(found) == len(targets):
                    break
                continue
            rule = PULLBACK_RULES[node.op]
            for k, child in enumerate(node.children):
                if child in depends:
                    contribution = rule(node, k, pullback, q)
                    if contribution is not None:
                        if observe:
                            observe(contribution, node)
                        contributions.setdefault(child, []).append(contribution)
    # d expr / d x has expr's axes, then x's: a zero keeps their dimensions
    return [found.get(x, N.const(0, q + x.order, expr.dims + x.dims)) for x in xs]
