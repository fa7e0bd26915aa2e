"""Affine precomposition: ``f(x) = g(A x + b)`` is convex when ``g`` is.

The Hessian of ``‖A x − b‖₂`` or ``log Σ exp(A x + b)`` is ``Aᵀ H_g A`` with the
inner Hessian evaluated at ``A x + b``: the rules that recognise ``H_g`` (the
norm and log-sum-exp templates) do not see it through the congruence.  Instead
of a rule per template, this module cuts ``f`` at its *maximal affine
subexpressions*: every node that is affine in the variables (``A x − b``,
``X w + c 1 − y``) and is not itself inside a larger affine node is replaced by
a fresh variable ``aff__k``; bare variables stay.  ``f = g ∘ (affine map)``, so
``g`` jointly convex in the fresh variables (and the bare ones) proves ``f``
convex, and the same for concavity.  The domain of ``f`` is the preimage of the
domain of ``g`` under the affine map, intersected with the (convex) assumptions
of the variables that disappeared: convex when ``g``'s is.

>>> import tenscalc as tc
>>> f = tc.parse("log(exp(A *(ij,j->i) x + b) *(i,->) 1)", {"A": 2, "x": 1, "b": 1})
>>> g, fresh, parts = cut_affine(f, {"x"})
>>> fresh, str(g)
(['aff__0'], 'log(exp(aff__0) *(i,->) 1)')
"""

from __future__ import annotations

from .. import nodes as N
from ..nodes import Expr
from .kinks import _affine_in, _depends_on_values, substitute


def maximal_affine(f: Expr, wrt: set[str]) -> list[Expr]:
    """The maximal subexpressions of ``f`` affine in ``wrt`` that depend on them, in
    the order first met from the root (bare variables included)."""
    found: list[Expr] = []
    seen: set[int] = set()
    stack = [f]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        # x^0 only carries lengths (a ones tensor): not a use of x
        if not _depends_on_values(node, wrt):
            continue
        if node.op == "var" or _affine_in(node, wrt):
            found.append(node)
            continue
        stack.extend(reversed(node.children))
    return found


def cut_affine(f: Expr, wrt: set[str]) -> tuple[Expr, list[str], list[tuple[str, Expr]]] | None:
    """``(g, fresh names, [(fresh name, affine node)])`` with ``f = g(affine nodes)``,
    or None when every maximal affine node is a bare variable (nothing to cut)."""
    parts = maximal_affine(f, wrt)
    inner = [p for p in parts if p.op != "var"]
    if not inner:
        return None
    mapping: dict[int, Expr] = {}
    named: list[tuple[str, Expr]] = []
    for k, node in enumerate(inner):
        name = f"aff__{k}"
        mapping[id(node)] = N.var(name, node.order)
        named.append((name, node))
    g = substitute(f, mapping)
    return g, [name for name, _ in named], named
