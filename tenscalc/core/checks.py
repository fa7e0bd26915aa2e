"""Argument checks shared by the public functions: a wrong type is a clear
:class:`~tenscalc.errors.TensCalcError`, not an ``AttributeError`` deep inside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SemanticError
from .nodes import Expr


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
