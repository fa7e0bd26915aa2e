"""Argument checks shared by the public functions: a wrong type is a clear
:class:`~tenscalc.errors.TensCalcError`, not an ``AttributeError`` deep inside.

Also here, above :mod:`tenscalc.core.nodes`: the public measures of a DAG
(``count_nodes``, ``count_edges``), which check their argument, and
``check_names``, the check every builder runs on its operands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SemanticError
from .nodes import Expr, topological


def require_expr(value: Any, who: str) -> Expr:
    """``value`` if it is an expression, else a :class:`SemanticError` naming ``who``.

    >>> require_expr("x", "simplify")
    Traceback (most recent call last):
    ...
    tenscalc.errors.SemanticError: simplify needs a tenscalc expression, got str (parse text with tc.parse first)
    """
    if not isinstance(value, Expr):
        hint = " (parse text with tc.parse first)" if isinstance(value, str) else ""
        raise SemanticError(f"{who} needs a tenscalc expression, got {type(value).__name__}{hint}")
    return value


def require_exprs(value: Any, who: str) -> list[Expr]:
    """One expression or a non-empty sequence of them, as a list."""
    if isinstance(value, Expr):
        return [value]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        require_expr(value, who)  # raises, naming the type
    roots = list(value)
    if not roots:
        raise SemanticError(f"{who} needs at least one expression")
    for root in roots:
        require_expr(root, who)
    return roots


def check_names(*exprs: object) -> None:
    """One name used with two different orders in one expression is an error
    (``var("x", 1) + var("x", 0)``: the two would be different variables named
    alike, and one would vanish from ``.variables`` and the gradient).  Arguments
    that are not expressions (numbers) are skipped.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.var("x", 1) @ tc.var("x", 2)
    Traceback (most recent call last):
    ...
    tenscalc.errors.SemanticError: the name 'x' is used with two different orders, 1 and 2, in one expression
    """
    seen: dict[str, int] = {}
    for e in exprs:
        if not isinstance(e, Expr):
            continue
        for name, order in e.varset:
            if seen.setdefault(name, order) != order:
                low, high = sorted((order, seen[name]))
                raise SemanticError(
                    f"the name '{name}' is used with two different orders, {low} and {high}, in one expression"
                )


def count_nodes(roots: Expr | Sequence[Expr]) -> int:
    """Number of distinct nodes in the DAG (shared subexpressions count once).

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.count_nodes(tc.parse("(x + 1) *(i,i->) (x + 1)", {"x": 1}))
    4
    """
    return len(topological(require_exprs(roots, "count_nodes")))


def count_edges(roots: Expr | Sequence[Expr]) -> int:
    """Number of parent-child edges in the DAG (a child used twice counts twice).

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.count_edges(tc.parse("(x + 1) *(i,i->) (x + 1)", {"x": 1}))
    4
    """
    return sum(len(n.children) for n in topological(require_exprs(roots, "count_edges")))


def require_distinct(xs: list[Expr]) -> list[Expr]:
    """``xs`` (variables to differentiate by), or a SemanticError naming one listed twice."""
    names = [x.arg[0] for x in xs]
    for name in names:
        if names.count(name) > 1:
            raise SemanticError(f"variable '{name}' is listed twice in wrt")
    return xs
