"""Simplification as data: rewrite rules per node kind, run to a fixed point.

Each rule is a function ``rule(node, ctx) -> Expr | None`` with a one-line
comment showing the rewrite (``rules_products``, ``rules_sums``,
``rules_functions``, ``rules_slices``; the table by node kind is ``rules.RULES``).
Rule sets are lists (combine them with ``+``); this driver rewrites bottom-up,
memoised per node, and repeats whole passes until the root no longer changes,
raising if that does not happen within a bound (a rewrite loop is a bug, never
silently accepted).  The few ``rules.LATE_RULES`` join only once the others
have reached that fixed point.

What keeps derivatives small: deltas are absorbed into neighbouring products by
renaming letters, nested products are fused (when that cannot duplicate work),
factors 0 and 1 and terms 0 disappear, constants fold, identical summands merge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ..core import nodes as N
from ..core.checks import count_nodes
from ..core.nodes import Expr, topological
from ..errors import TensCalcError
from ..progress import stage
from .context import Context, Rule, rewrite_locally
from .rules import LATE_RULES, RULES

MAX_PASSES = 60


def simplify(root: Expr, rules: dict[str, list[Rule]] | None = None, *, symmetric: Iterable[str] = ()) -> Expr:
    """Rewrite ``root`` with the rule sets until nothing changes.

    ``symmetric`` names matrix variables known to be symmetric (declared ``symmetric``,
    ``psd`` or ``pd``): ``Aᵀ`` is then written ``A``, so the result equals ``root`` wherever
    those matrices are symmetric.  Differentiating that result again by one of them gives
    the derivative along symmetric directions (the only ones such a matrix has).

    Examples
    --------
    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> str(tc.simplify(x + x - 0))
    '2 *(,i->i) x'
    >>> str(tc.simplify(tc.parse("A *(ij,->ji) 1 + A", {"A": 2}), symmetric=["A"]))
    '2 *(,ij->ij) A'
    """
    from ..core.checks import require_expr

    require_expr(root, "simplify")
    return simplify_many([root], rules, symmetric=symmetric)[0]


def simplify_many(
    roots: Sequence[Expr], rules: dict[str, list[Rule]] | None = None, *, symmetric: Iterable[str] = ()
) -> list[Expr]:
    """:func:`simplify` several roots together (the derivatives of one sweep).

    Use counts span all the roots, so a node they share counts as shared and
    stays one node instead of being inlined into each root.

    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> [str(r) for r in simplify_many([x + x, x + x + x])]
    ['2 *(,i->i) x', '3 *(,i->i) x']
    """
    table = RULES if rules is None else rules
    roots = list(roots)
    declared = _symmetric_names(symmetric)
    early = {op: [r for r in rs if r not in LATE_RULES] for op, rs in table.items()}
    given = roots
    with stage("simplify", lambda: f"{count_nodes(given)} nodes") as logged:
        passes = [0]

        def one_more_pass() -> None:
            passes[0] += 1
            logged.step(f"pass {passes[0]}")

        if early != table:  # the late rules run once the others have settled (see rules.LATE_RULES)
            roots = _fixed_point(roots, early, declared, one_more_pass)
        roots = _fixed_point(roots, table, declared, one_more_pass)
        logged.done(lambda: f"{count_nodes(roots)} nodes ({passes[0]} passes)")
    return roots


def _symmetric_names(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TensCalcError(f"symmetric must be a list of variable names, not {names!r}")
    return frozenset(names)


def _fixed_point(
    roots: list[Expr],
    table: dict[str, list[Rule]],
    symmetric: frozenset[str],
    on_pass: Callable[[], None] | None = None,
) -> list[Expr]:
    """Whole passes of ``table`` until no root changes (``on_pass()`` after each: progress)."""
    for _ in range(MAX_PASSES):
        new_roots = _one_pass_many(roots, table, symmetric)
        if on_pass is not None:
            on_pass()
        if all(new is old for new, old in zip(new_roots, roots)):
            return roots
        roots = new_roots
    raise TensCalcError(f"simplification did not reach a fixed point within {MAX_PASSES} passes (a rule loop)")


def _one_pass(root: Expr, table: dict[str, list[Rule]]) -> Expr:
    return _one_pass_many([root], table, frozenset())[0]


def _one_pass_many(roots: list[Expr], table: dict[str, list[Rule]], symmetric: frozenset[str]) -> list[Expr]:
    """One bottom-up pass: every node rewritten once its children are, with use counts over all roots."""
    nodes = topological(roots)
    ctx = Context(symmetric=symmetric)
    for node in nodes:
        for child in node.children:
            ctx.uses[child] = ctx.uses.get(child, 0) + 1
    mapped: dict[Expr, Expr] = {}  # each node of the pass -> its rewrite
    for node in nodes:
        children = tuple(mapped[c] for c in node.children)
        current = node
        if any(a is not b for a, b in zip(children, node.children)):
            current = N.rebuild(node, children)
            for old, new in zip(node.children, children):
                if old is not new:
                    ctx.uses[new] = ctx.uses.get(new, 0) + ctx.uses.get(old, 0)
        current = rewrite_locally(current, table, ctx)
        mapped[node] = current
    return [mapped[root] for root in roots]
