"""Assumptions on variables, and the domain an expression implies.

Assumptions are given per variable as a string or a tuple of strings and
intervals::

    {"x": "positive", "X": ("symmetric", "pd"), "t": (0, 1), "c": ((None, 2),)}

Words: ``positive``, ``nonnegative``, ``negative``, ``nonpositive`` (every
entry), ``symmetric``, ``psd``, ``pd``, ``diagonal`` (matrices).  ``psd`` and
``pd`` include ``symmetric``.  An interval ``(lo, hi)`` bounds every entry, with
``None`` for an open end (the ends given are included).  In a problem text the
same goes after the order in the ``declare`` block: ``declare X 2 pd x 1
positive t 0 (0, 1)``.

The expression itself restricts the domain: ``log(u)`` needs ``u > 0``, a
non-integer power ``u^p`` needs ``u >= 0`` (``u > 0`` for ``p < 0``), a negative
integer power ``u != 0``, ``arcsin``/``arccos`` need ``|u| <= 1``, ``inv`` and
``det`` in ``log(det X)`` need ``det X > 0`` ... These constraints are collected
by :func:`implied_constraints`, used as facts, and reported.

>>> from tenscalc.convexity.assumptions import normalize_assumptions
>>> a = normalize_assumptions({"x": "positive", "X": ("symmetric", "pd")}, {"x": 1, "X": 2})
>>> a["x"].interval, sorted(a["X"].tags)
(Interval(0, inf), ['pd', 'symmetric'])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.nodes import Expr, topological
from ..core.text import short as _short
from ..errors import SemanticError
from ..simplifier import simplify
from .constraint_kinds import CONSTRAINT_KINDS
from .facts import Interval

WORDS = ("positive", "nonnegative", "negative", "nonpositive", "symmetric", "psd", "pd", "diagonal")
MATRIX_WORDS = ("symmetric", "psd", "pd", "diagonal")
_SIGN_INTERVALS = {
    "positive": Interval.positive(),
    "nonnegative": Interval.nonnegative(),
    "negative": Interval.negative(),
    "nonpositive": Interval.nonpositive(),
}


@dataclass
class VariableAssumption:
    """What is assumed of one variable: an interval for its entries and matrix tags."""

    name: str
    order: int
    interval: Interval = field(default_factory=Interval.real)
    tags: set[str] = field(default_factory=set)
    given: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.name}: " + ", ".join(self.given)


def _interval_from_pair(lo: Any, hi: Any) -> Interval:
    lo_v = -math.inf if lo is None else float(lo)
    hi_v = math.inf if hi is None else float(hi)
    if lo_v > hi_v:
        raise SemanticError(f"empty interval ({lo}, {hi}) in the assumptions")
    return Interval.closed(lo_v, hi_v)


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value)
    )


def normalize_assumptions(
    assumptions: Mapping[str, Any] | None, orders: Mapping[str, int]
) -> dict[str, VariableAssumption]:
    """Check and normalise an assumptions mapping (see the module docstring)."""
    result: dict[str, VariableAssumption] = {}
    for name, value in (assumptions or {}).items():
        if name not in orders:
            known = ", ".join(sorted(orders)) or "none"
            raise SemanticError(f"assumption about '{name}', which is not a variable of the expression ({known})")
        order = orders[name]
        items = [value] if isinstance(value, str) or _is_pair(value) else list(value)
        entry = result.setdefault(name, VariableAssumption(name, order))
        for item in items:
            if _is_pair(item):
                entry.interval = entry.interval.intersect(_interval_from_pair(*item))
                lo, hi = item
                entry.given.append(f"({'-inf' if lo is None else lo}, {'inf' if hi is None else hi})")
                continue
            if not isinstance(item, str):
                raise SemanticError(f"cannot read the assumption {item!r} about '{name}'")
            word = item.strip().lower()
            if word not in WORDS:
                raise SemanticError(
                    f"unknown assumption '{item}' about '{name}'; use one of {', '.join(WORDS)} or an interval (lo, hi)"
                )
            if word in MATRIX_WORDS and order != 2:
                raise SemanticError(f"'{word}' is an assumption about matrices, but '{name}' has order {order}")
            entry.given.append(word)
            if word in _SIGN_INTERVALS:
                entry.interval = entry.interval.intersect(_SIGN_INTERVALS[word])
            else:
                entry.tags.add(word)
                if word in ("psd", "pd"):
                    entry.tags.add("symmetric")
        if entry.interval.empty:
            raise SemanticError(f"the assumptions about '{name}' contradict each other")
        if {"diagonal", "psd"} <= entry.tags or {"diagonal", "pd"} <= entry.tags:
            entry.interval = entry.interval.intersect(Interval.nonnegative())
    return result


# ------------------------------------------------------------------------------------------
# constraints implied by the expression
# ------------------------------------------------------------------------------------------


@dataclass
class Constraint:
    """``node`` must satisfy ``kind`` (a key of :data:`CONSTRAINT_KINDS`: ``positive``,
    ``nonnegative``, ``nonzero``, ``unit`` for |u| <= 1, ``invertible``, ``cos_nonzero``)
    because of ``origin``."""

    node: Expr
    kind: str
    origin: Expr

    def describe(self) -> str:
        return f"{_short(self.node)} {CONSTRAINT_KINDS[self.kind].text} (from {_short(self.origin)})"

    def interval(self) -> Interval | None:
        make = CONSTRAINT_KINDS[self.kind].interval
        return make() if make is not None else None


AddConstraint = Callable[[Expr, str, Expr], None]
"""``add(node, kind, origin)``: record that ``origin`` needs ``node`` to satisfy ``kind``."""

FUNCTION_DOMAINS: dict[str, str] = {"log": "positive", "arcsin": "unit", "arccos": "unit", "tan": "cos_nonzero"}
"""The constraint each elementwise function puts on its argument (the others: none)."""


def domain_func(node: Expr, add: AddConstraint) -> None:
    """``log(u)``: ``u > 0``; ``arcsin(u)``: ``|u| <= 1`` ... (:data:`FUNCTION_DOMAINS`)."""
    kind = FUNCTION_DOMAINS.get(node.arg)
    if kind is not None:
        add(node.children[0], kind, node)


def domain_pow(node: Expr, add: AddConstraint) -> None:
    """``u^p``: ``u >= 0`` for fractional ``p`` (``> 0`` when negative), ``u != 0`` for ``p < 0``."""
    base, exponent = node.children
    e = constant_value(exponent)
    if e is not None:
        if not float(e).is_integer():
            add(base, "positive" if e < 0 else "nonnegative", node)
        elif e < 0:
            add(base, "nonzero", node)
    else:
        add(base, "positive", node)


def domain_inv(node: Expr, add: AddConstraint) -> None:
    """``inv(X)``: ``X`` invertible."""
    add(node.children[0], "invertible", node)


def domain_everywhere(node: Expr, add: AddConstraint) -> None:
    """Not applicable: the kind is defined wherever its children are."""


DOMAIN_RULES: dict[str, Callable[[Expr, AddConstraint], None]] = {
    "var": domain_everywhere,
    "const": domain_everywhere,
    "delta": domain_everywhere,
    "add": domain_everywhere,
    "mul": domain_everywhere,
    "func": domain_func,
    "pow": domain_pow,
    "inv": domain_inv,
    "det": domain_everywhere,
    "adj": domain_everywhere,
    "slice": domain_everywhere,
    "embed": domain_everywhere,
}
"""The constraints a node of each kind puts on its children's values (log(u): u > 0)."""


def implied_constraints(expr: Expr) -> list[Constraint]:
    """Constraints every point of the expression's domain satisfies."""
    found: list[Constraint] = []
    seen: set[tuple[Expr, str]] = set()

    def add(node: Expr, kind: str, origin: Expr) -> None:
        if node.op == "const" or (node, kind) in seen:
            return
        seen.add((node, kind))
        found.append(Constraint(node, kind, origin))

    for node in topological(expr):
        DOMAIN_RULES[node.op](node, add)
    return found


def constant_value(node: Expr) -> float | None:
    """The value of a scalar expression without variables (``1 / 3``), else None."""
    if node.op == "const":
        return float(node.arg[0])
    if node.order != 0 or node.variables:
        return None
    from ..interpreter import evaluate

    try:
        value = float(evaluate(node, {}))
    except Exception:  # noqa: BLE001 - not a plain number
        return None
    return value if math.isfinite(value) else None


Refinements = dict[Expr, Interval]
"""node -> Interval known for its entries on the domain."""


def refinements(constraints: list[Constraint]) -> Refinements:
    """node -> interval that the constraints give for its entries."""
    out: Refinements = {}
    for c in constraints:
        iv = c.interval()
        if iv is None:
            continue
        out[c.node] = out[c.node].intersect(iv) if c.node in out else iv
    return out


def variable_intervals(assumed: Mapping[str, VariableAssumption], orders: Mapping[str, int]) -> dict[str, Interval]:
    return {name: (assumed[name].interval if name in assumed else Interval.real()) for name in orders}


def variable_tags(assumed: Mapping[str, VariableAssumption]) -> dict[str, set[str]]:
    return {name: set(a.tags) for name, a in assumed.items()}


def simplified_constraints(constraints: list[Constraint]) -> list[Constraint]:
    """The constraints on the simplified forms of their nodes, which is how the nodes
    appear in derivatives (``x *(i,i->) x`` becomes ``x^2 *(i,->) 1``)."""
    out = []
    for c in constraints:
        s = simplify(c.node)
        if s is not c.node:
            out.append(Constraint(s, c.kind, c.origin))
    return out
