"""Intervals: a set containing every entry of a node, one rule per node kind.

``INTERVAL_RULES[kind](facts, node) -> Interval`` bounds the entries of a node
from its children's intervals, read from the :class:`~.derivation.FactSource`
passed in (the :class:`~.analysis.Analyzer` labelling the DAG);
``FUNCTION_RANGES[name]`` is the range of each elementwise function on an
interval of arguments.  Every kind of :data:`tenscalc.core.nodes.NODE_KINDS`
has a rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

from ..core.functions import FUNCTIONS, FunctionSpec
from ..core.nodes import Expr
from .derivation import FactSource
from .facts import INF, Interval, abs_interval, monotone, power, sum_over_axis

# -----------------------------------------------------------------------------------------
# intervals of the elementwise functions
# -----------------------------------------------------------------------------------------


def _sin_cos(x: Interval) -> Interval:
    return Interval.closed(-1, 1) if not x.empty else x


def _tan(x: Interval) -> Interval:
    if not x.empty and x.lo > -math.pi / 2 and x.hi < math.pi / 2:
        return monotone(x, math.tan, -INF, INF)
    return Interval.real() if not x.empty else x


def _log(x: Interval) -> Interval:
    return monotone(x.intersect(Interval.positive()), lambda v: math.log(v) if v > 0 else -INF, -INF, INF)


def _sign(x: Interval) -> Interval:
    if x.empty:
        return x
    if x.pos:
        return Interval.point(1)
    if x.neg:
        return Interval.point(-1)
    if x.is_zero:
        return Interval.point(0)
    lo = 0 if x.nonneg else -1
    hi = 0 if x.nonpos else 1
    return Interval.closed(lo, hi)


def _relu(x: Interval) -> Interval:
    if x.empty:
        return x
    if x.nonneg:
        return x
    if x.hi < 0 or (x.hi == 0):
        return Interval.point(0)
    return Interval(0.0, x.hi, True, x.hi_closed)


_OWN_RANGES: dict[str, Callable[[Interval], Interval]] = {
    "sin": _sin_cos,
    "cos": _sin_cos,
    "tan": _tan,
    "log": _log,
    "abs": abs_interval,
    "sign": _sign,
    "relu": _relu,
}
"""Ranges of the functions whose spec states no monotonicity (or needs a closer rule)."""


def _monotone_range(spec: FunctionSpec) -> Callable[[Interval], Interval]:
    """The range rule of a monotone function, from its spec's domain and image."""
    lo, hi = spec.image
    increasing = spec.monotone == "increasing"
    domain = Interval.closed(*spec.domain) if spec.domain != (-INF, INF) else None

    def value(v: float) -> float:
        try:
            return spec.scalar(v)
        except OverflowError:  # exp(1000): the function's limit in the direction it grows
            return hi if increasing else lo

    def bound(x: Interval) -> Interval:
        return monotone(
            x.intersect(domain) if domain is not None else x,
            value,
            *((lo, hi) if increasing else (hi, lo)),
            increasing=increasing,
        )

    return bound


class _Ranges(Mapping[str, Callable[[Interval], Interval]]):
    """Range of each elementwise function on an interval of arguments: the rule of
    ``_OWN_RANGES``, else the monotone rule its spec implies (functions registered later
    included)."""

    def __getitem__(self, name: str) -> Callable[[Interval], Interval]:
        if name in _OWN_RANGES:
            return _OWN_RANGES[name]
        spec = FUNCTIONS[name]
        if spec.monotone is None:
            raise KeyError(name)
        return _monotone_range(spec)

    def __iter__(self) -> Iterator[str]:
        return (name for name, spec in FUNCTIONS.items() if name in _OWN_RANGES or spec.monotone is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


FUNCTION_RANGES: Mapping[str, Callable[[Interval], Interval]] = _Ranges()


# -----------------------------------------------------------------------------------------
# interval rules per node kind
# -----------------------------------------------------------------------------------------


def interval_var(an: FactSource, node: Expr) -> Interval:
    return an.variable_interval(node.arg[0])


def interval_const(an: FactSource, node: Expr) -> Interval:
    return Interval.point(node.arg[0])


def interval_delta(an: FactSource, node: Expr) -> Interval:
    return Interval.point(1) if node.arg == 0 else Interval.closed(0, 1)


def interval_add(an: FactSource, node: Expr) -> Interval:
    total = Interval.point(0)
    for child, coef in zip(node.children, node.arg):
        total = total + an.interval(child).scale(coef)
    return total


def interval_func(an: FactSource, node: Expr) -> Interval:
    u = an.interval(node.children[0])
    if an.kink_mode and node.arg == "sign" and u.is_zero and not zero_nearby(an, node.children[0]):
        # at a kink, sign(u) of an argument that is 0 only at the point (|x| at x = 0)
        # takes its values beside the point: sign(|x|) is 1 there, not 0
        beside = an.beside.interval(node.children[0]) if an.beside is not None else Interval.real()
        return _sign(beside).hull(Interval.point(0)) if not beside.empty else Interval.closed(-1, 1)
    return FUNCTION_RANGES[node.arg](u)


def zero_nearby(an: FactSource, node: Expr) -> bool:
    """``node`` is 0 on a neighbourhood of the point examined, not only at it: a zero
    constant, or ``relu(v)`` with ``v < 0`` (``relu(|x| - 1)`` at ``x = 0``)."""
    if node.op == "const":
        return node.arg[0] == 0
    if node.op == "func" and node.arg == "relu":
        return an.interval(node.children[0]).hi < 0
    return False


def interval_pow(an: FactSource, node: Expr) -> Interval:
    base, exponent = node.children
    b = an.interval(base)
    if exponent.op == "const":
        return power(b, exponent.arg[0], kink=an.kink_mode)
    e = an.interval(exponent)
    if e.lo == e.hi and not e.empty and not e.is_indeterminate:
        return power(b, e.lo, kink=an.kink_mode)
    if e.is_zero:
        return Interval.point(1)
    if b.pos:  # b^e = exp(e log b) > 0
        return Interval.positive()
    return Interval.real()


def interval_mul(an: FactSource, node: Expr) -> Interval:
    ins, out = node.arg
    groups: dict[tuple[Expr, tuple[int, ...]], list] = {}
    for child, spec in zip(node.children, ins):
        key = (child, spec)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [child, 1]
    value = Interval.point(1)
    for child, count in groups.values():
        value = value * power(an.interval(child), count, kink=an.kink_mode)
    summed = set().union(*ins) - set(out)
    if summed:
        value = sum_over_axis(value)
    if len(set(out)) != len(out):
        value = value.hull(Interval.point(0))
    return value


def interval_inv(an: FactSource, node: Expr) -> Interval:
    return Interval.real()


def interval_det(an: FactSource, node: Expr) -> Interval:
    curv = an.curvature(node.children[0])
    if curv is not None and curv.pd and curv.symmetric:
        return Interval.positive()
    return Interval.real()


def interval_slice(an: FactSource, node: Expr) -> Interval:
    return an.interval(node.children[0])  # some of the child's entries


def interval_embed(an: FactSource, node: Expr) -> Interval:
    return an.interval(node.children[0]).hull(Interval.point(0))  # the child's entries and zeros


INTERVAL_RULES: dict[str, Callable[[FactSource, Expr], Interval]] = {
    "var": interval_var,
    "const": interval_const,
    "delta": interval_delta,
    "add": interval_add,
    "mul": interval_mul,
    "func": interval_func,
    "pow": interval_pow,
    "inv": interval_inv,
    "det": interval_det,
    "adj": interval_inv,  # any real entries (a polynomial of X's entries)
    "slice": interval_slice,
    "embed": interval_embed,
}
