"""The lattice of facts the certifier attaches to nodes.

Two kinds of fact:

* :class:`Interval` -- a set containing every entry of a tensor, with open or
  closed ends.  An infinite end that is *closed* means "the value can actually be
  infinite (undefined)": this only arises when a kink of a non-smooth function is
  examined, where a factor such as ``u^(-1/2)`` is evaluated at ``u = 0``.  A
  product ``0 * inf`` of attained values is then indeterminate (the whole line).
* :class:`Curvature` -- for a node of order ``2k`` read as a matrix over its first
  ``k`` and last ``k`` axes: positive / negative semidefinite or definite, zero,
  symmetric, and bounds on the extreme eigenvalues (for strong convexity).

Semidefinite means a sign of the quadratic form ``vᵀ M v`` for every ``v``; a
matrix need not be symmetric for that (the symmetric flag is tracked separately
because Hadamard and Kronecker products of semidefinite matrices need it).

>>> from tenscalc.convexity.facts import Interval
>>> Interval.positive() * Interval.closed(-2, -1)
Interval(-inf, 0)
>>> (Interval.closed(-1, 2) ** 2).describe()
'in [0, 4]'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

INF = math.inf


def number_text(v: float) -> str:
    """A number as facts and certificates print it (``2``, not ``2.0``; ``inf``)."""
    if v == INF:
        return "inf"
    if v == -INF:
        return "-inf"
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


@dataclass(frozen=True)
class Interval:
    """A set ``{lo .. hi}`` of reals; ``lo_closed``/``hi_closed`` say whether the ends
    belong to it.  ``empty`` marks the empty set (a contradiction: nothing to check).
    """

    lo: float
    hi: float
    lo_closed: bool = True
    hi_closed: bool = True
    empty: bool = False

    # -- constructors ---------------------------------------------------------------
    @staticmethod
    def point(value: float) -> Interval:
        return Interval(float(value), float(value), True, True)

    @staticmethod
    def closed(lo: float, hi: float) -> Interval:
        return Interval(float(lo), float(hi), not math.isinf(lo), not math.isinf(hi)).normalized()

    @staticmethod
    def open(lo: float, hi: float) -> Interval:
        return Interval(float(lo), float(hi), False, False).normalized()

    @staticmethod
    def real() -> Interval:
        return Interval(-INF, INF, False, False)

    @staticmethod
    def indeterminate() -> Interval:
        """Anything, including infinite values (a 0 * inf at a kink)."""
        return Interval(-INF, INF, True, True)

    @staticmethod
    def positive() -> Interval:
        return Interval(0.0, INF, False, False)

    @staticmethod
    def nonnegative() -> Interval:
        return Interval(0.0, INF, True, False)

    @staticmethod
    def negative() -> Interval:
        return Interval(-INF, 0.0, False, False)

    @staticmethod
    def nonpositive() -> Interval:
        return Interval(-INF, 0.0, False, True)

    @staticmethod
    def nothing() -> Interval:
        return Interval(INF, -INF, False, False, True)

    def normalized(self) -> Interval:
        if self.empty:
            return self
        lo, hi = self.lo, self.hi
        if math.isnan(lo) or math.isnan(hi):
            return Interval.indeterminate()
        if lo > hi or (lo == hi and not (self.lo_closed and self.hi_closed)):
            return Interval.nothing()
        return self

    # -- predicates -----------------------------------------------------------------
    @property
    def is_indeterminate(self) -> bool:
        return not self.empty and ((math.isinf(self.lo) and self.lo_closed) or (math.isinf(self.hi) and self.hi_closed))

    def _finite_ok(self) -> bool:
        return self.empty or not self.is_indeterminate

    @property
    def nonneg(self) -> bool:
        """Every value is >= 0 (vacuously true for the empty set)."""
        return self.empty or (self._finite_ok() and self.lo >= 0)

    @property
    def pos(self) -> bool:
        return self.empty or (self._finite_ok() and (self.lo > 0 or (self.lo == 0 and not self.lo_closed)))

    @property
    def nonpos(self) -> bool:
        return self.empty or (self._finite_ok() and self.hi <= 0)

    @property
    def neg(self) -> bool:
        return self.empty or (self._finite_ok() and (self.hi < 0 or (self.hi == 0 and not self.hi_closed)))

    @property
    def is_zero(self) -> bool:
        return self.empty or (self.lo == 0 and self.hi == 0)

    @property
    def nonzero(self) -> bool:
        return self.pos or self.neg

    def contains_zero(self) -> bool:
        """Whether 0 is a member."""
        if self.empty:
            return False
        if self.lo < 0 < self.hi:
            return True
        return (self.lo == 0 and self.lo_closed) or (self.hi == 0 and self.hi_closed)

    def attains_infinity(self) -> bool:
        return self.is_indeterminate

    # -- set operations ----------------------------------------------------------------
    def intersect(self, other: Interval) -> Interval:
        if self.empty or other.empty:
            return Interval.nothing()
        if self.lo > other.lo:
            lo, lo_c = self.lo, self.lo_closed
        elif other.lo > self.lo:
            lo, lo_c = other.lo, other.lo_closed
        else:
            lo, lo_c = self.lo, self.lo_closed and other.lo_closed
        if self.hi < other.hi:
            hi, hi_c = self.hi, self.hi_closed
        elif other.hi < self.hi:
            hi, hi_c = other.hi, other.hi_closed
        else:
            hi, hi_c = self.hi, self.hi_closed and other.hi_closed
        return Interval(lo, hi, lo_c, hi_c).normalized()

    def hull(self, other: Interval) -> Interval:
        if self.empty:
            return other
        if other.empty:
            return self
        if self.lo < other.lo:
            lo, lo_c = self.lo, self.lo_closed
        elif other.lo < self.lo:
            lo, lo_c = other.lo, other.lo_closed
        else:
            lo, lo_c = self.lo, self.lo_closed or other.lo_closed
        if self.hi > other.hi:
            hi, hi_c = self.hi, self.hi_closed
        elif other.hi > self.hi:
            hi, hi_c = other.hi, other.hi_closed
        else:
            hi, hi_c = self.hi, self.hi_closed or other.hi_closed
        return Interval(lo, hi, lo_c, hi_c)

    def without_zero(self) -> Interval:
        """The set minus {0} where that is an interval (0 at an end)."""
        if self.empty:
            return self
        if self.lo == 0 and self.hi == 0:
            return Interval.nothing()
        lo_c = self.lo_closed and self.lo != 0
        hi_c = self.hi_closed and self.hi != 0
        return Interval(self.lo, self.hi, lo_c, hi_c)

    # -- arithmetic ----------------------------------------------------------------------
    def __add__(self, other: Interval) -> Interval:
        if self.empty or other.empty:
            return Interval.nothing()
        if self.is_indeterminate or other.is_indeterminate:
            return Interval.indeterminate()
        return Interval(
            self.lo + other.lo,
            self.hi + other.hi,
            self.lo_closed and other.lo_closed,
            self.hi_closed and other.hi_closed,
        ).normalized()

    def __neg__(self) -> Interval:
        if self.empty:
            return self
        return Interval(-self.hi, -self.lo, self.hi_closed, self.lo_closed)

    def __sub__(self, other: Interval) -> Interval:
        return self + (-other)

    def scale(self, c: float) -> Interval:
        if self.empty:
            return self
        if c == 0:
            return Interval.indeterminate() if self.is_indeterminate else Interval.point(0.0)
        if c > 0:
            return Interval(self.lo * c, self.hi * c, self.lo_closed, self.hi_closed)
        return Interval(self.hi * c, self.lo * c, self.hi_closed, self.lo_closed)

    def __mul__(self, other: Interval) -> Interval:
        if self.empty or other.empty:
            return Interval.nothing()
        if (self.contains_zero() and other.attains_infinity()) or (other.contains_zero() and self.attains_infinity()):
            return Interval.indeterminate()
        candidates = []
        for a, ca in ((self.lo, self.lo_closed), (self.hi, self.hi_closed)):
            for b, cb in ((other.lo, other.lo_closed), (other.hi, other.hi_closed)):
                candidates.append(_endpoint_product(a, ca, b, cb))
        lo = min(v for v, _ in candidates)
        hi = max(v for v, _ in candidates)
        lo_c = any(c for v, c in candidates if v == lo)
        hi_c = any(c for v, c in candidates if v == hi)
        return Interval(lo, hi, lo_c, hi_c).normalized()

    def reciprocal(self) -> Interval:
        """``1/x`` on the members other than 0 (where ``1/x`` is undefined)."""
        if self.empty:
            return self
        if self.is_indeterminate:
            return Interval.indeterminate()
        if self.lo < 0 < self.hi:
            return Interval.real()
        if self.lo >= 0:  # nonnegative: 1/hi .. 1/lo
            if self.hi == 0:
                return Interval.nothing()
            lo = 1 / self.hi if self.hi != INF else 0.0
            hi = 1 / self.lo if self.lo != 0 else INF
            hi_closed = self.lo_closed and self.lo != 0
            return Interval(lo, hi, self.hi_closed and self.hi != INF, hi_closed)
        return -((-self).reciprocal())

    def reciprocal_at_kink(self) -> Interval:
        """Like :meth:`reciprocal`, but an attained 0 gives an attained infinity."""
        base = self.reciprocal()
        if self.contains_zero():
            if self.lo == 0 and self.hi >= 0 and self.lo_closed and not self.lo < 0:
                return Interval(base.lo, INF, base.lo_closed, True) if not base.empty else Interval(0, INF, False, True)
            return Interval.indeterminate()
        return base

    def __pow__(self, exponent: float) -> Interval:
        return power(self, exponent, kink=False)

    # -- display ----------------------------------------------------------------------------
    def describe(self) -> str:
        """``'> 0'``, ``'in [0, 1)'``, ``'= 2'`` ... for explanations."""
        if self.empty:
            return "impossible (empty)"
        if self.is_indeterminate:
            return "indeterminate (may be undefined)"
        if self.lo == self.hi:
            return f"= {number_text(self.lo)}"
        if self.hi == INF and self.lo > -INF:
            return f"{'>=' if self.lo_closed else '>'} {number_text(self.lo)}"
        if self.lo == -INF and self.hi < INF:
            return f"{'<=' if self.hi_closed else '<'} {number_text(self.hi)}"
        if self.lo == -INF and self.hi == INF:
            return "any real"
        left, right = "[" if self.lo_closed else "(", "]" if self.hi_closed else ")"
        return f"in {left}{number_text(self.lo)}, {number_text(self.hi)}{right}"

    def __repr__(self) -> str:
        if self.empty:
            return "Interval(empty)"
        left = "[" if self.lo_closed else "("
        right = "]" if self.hi_closed else ")"
        return f"Interval{left}{number_text(self.lo)}, {number_text(self.hi)}{right}"


def _endpoint_product(a: float, ca: bool, b: float, cb: bool) -> tuple[float, bool]:
    """The product of two ends, with whether it is attained (0 * inf is 0 here: the
    infinite end is only approached, so the caller's other candidates cover the rest)."""
    if a == 0 or b == 0:
        zero_attained = (a == 0 and ca) or (b == 0 and cb)
        return 0.0, zero_attained or (ca and cb)
    return a * b, ca and cb


def monotone(x: Interval, f, lo_limit: float, hi_limit: float, increasing: bool = True) -> Interval:
    """Image of ``x`` under a continuous monotone ``f``; ``lo_limit``/``hi_limit`` are
    its limits at -inf/+inf."""
    if x.empty:
        return x
    if x.is_indeterminate:
        return Interval.indeterminate()

    def at(v: float) -> float:
        if v == -INF:
            return lo_limit
        if v == INF:
            return hi_limit
        return f(v)

    a, b = at(x.lo), at(x.hi)
    if increasing:
        return Interval(a, b, x.lo_closed, x.hi_closed).normalized()
    return Interval(b, a, x.hi_closed, x.lo_closed).normalized()


def _pw(v: float, e: float) -> float:
    if v == 0 and e < 0:
        return INF
    try:
        return v**e
    except OverflowError:
        return INF if v > 0 or float(e).is_integer() and int(e) % 2 == 0 else -INF


def _is_int(e: float) -> bool:
    return float(e).is_integer()


def power(x: Interval, e: float, kink: bool = False) -> Interval:
    """Entries of ``x ^ e`` for a constant exponent.

    Negative exponents exclude 0 (where the power is undefined) unless ``kink`` is
    set: then an attained 0 gives an attained infinity.  Non-integer exponents need
    a nonnegative base (the domain of the power).
    """
    if x.empty:
        return x
    if x.is_indeterminate:
        return Interval.indeterminate()
    if e == 0:
        return Interval.point(1.0)
    if _is_int(e):
        n = int(e)
        if n > 0:
            if n % 2 == 1:
                return monotone(x, lambda v: _pw(v, n), -INF, INF)
            a = abs_interval(x)
            return monotone(a, lambda v: _pw(v, n), 0.0, INF)
        positive_power = power(x, -n, kink)
        if kink and x.contains_zero():
            return positive_power.reciprocal_at_kink()
        return positive_power.without_zero().reciprocal() if not kink else positive_power.reciprocal()
    # non-integer exponent: base >= 0
    base = x.intersect(Interval.nonnegative())
    if base.empty:
        return base
    if e > 0:
        return monotone(base, lambda v: _pw(v, e), 0.0, INF)
    if kink and base.contains_zero():
        image = monotone(base.without_zero(), lambda v: _pw(v, e), INF, 0.0, increasing=False)
        return Interval(image.lo, INF, image.lo_closed, True) if not image.empty else Interval.indeterminate()
    base = base.without_zero()
    return monotone(base, lambda v: _pw(v, e), INF, 0.0, increasing=False) if not base.empty else base


def abs_interval(x: Interval) -> Interval:
    if x.empty:
        return x
    if x.is_indeterminate:
        return Interval(0.0, INF, True, True)
    if x.lo >= 0:
        return x
    if x.hi <= 0:
        return -x
    hi = max(-x.lo, x.hi)
    hi_closed = (x.hi_closed if x.hi == hi else False) or (x.lo_closed if -x.lo == hi else False)
    return Interval(0.0, hi, True, hi_closed)


def sum_over_axis(x: Interval) -> Interval:
    """Entries of a sum of one or more (unknown how many) entries of ``x``."""
    if x.empty or x.is_zero:
        return x
    if x.is_indeterminate:
        return Interval.indeterminate()
    lo, lo_c = (x.lo, x.lo_closed) if x.lo >= 0 else (-INF, False)
    hi, hi_c = (x.hi, x.hi_closed) if x.hi <= 0 else (INF, False)
    return Interval(lo, hi, lo_c, hi_c)


# ----------------------------------------------------------------------------------------
# curvature of an order-2k node read as a matrix
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Modulus:
    """A bound ``m`` on an extreme eigenvalue, constant over the domain.

    ``value`` is a number that bounds it; ``symbolic`` (when set) is a sharper
    bound written with parameters, such as ``2 lam`` for ridge regression, then
    ``positive`` says it is > 0 under the assumptions even where ``value`` is 0.
    """

    value: float
    positive: bool
    symbolic: str | None = None

    @property
    def text(self) -> str:
        return self.symbolic if self.symbolic is not None else number_text(self.value)

    @property
    def strong(self) -> bool:
        return self.value > 0 or self.positive

    def __add__(self, other: Modulus) -> Modulus:
        if self.symbolic is None and other.symbolic is None:
            symbolic = None
        else:
            symbolic = f"{self.text} + {other.text}"
        return Modulus(self.value + other.value, self.positive or other.positive, symbolic)

    def __mul__(self, other: Modulus) -> Modulus:
        if self.symbolic is None and other.symbolic is None:
            symbolic = None
        else:
            symbolic = f"({self.text}) ({other.text})"
        return Modulus(self.value * other.value, self.strong and other.strong, symbolic)

    def scaled(self, c: float) -> Modulus:
        symbolic = self.symbolic
        if symbolic is not None and c != 1:
            simple = all(ch.isalnum() or ch in "._^" for ch in symbolic)
            symbolic = f"{number_text(c)} {symbolic}" if simple else f"{number_text(c)} ({symbolic})"
        return Modulus(self.value * c, self.positive and c > 0, symbolic)


@dataclass(frozen=True)
class Curvature:
    """What is known about ``vᵀ M v``.

    ``lower``/``upper`` bound the smallest/largest eigenvalue when known
    (``lower`` positive: strongly convex; ``upper`` negative: strongly concave).
    """

    psd: bool = False
    nsd: bool = False
    pd: bool = False
    nd: bool = False
    symmetric: bool = False
    lower: Modulus | None = None
    upper: Modulus | None = None

    @property
    def zero(self) -> bool:
        return self.psd and self.nsd

    @staticmethod
    def unknown() -> Curvature:
        return Curvature()

    @staticmethod
    def zero_matrix() -> Curvature:
        return Curvature(psd=True, nsd=True, symmetric=True)

    def negated(self) -> Curvature:
        # lower bounds the smallest eigenvalue of M; upper bounds (as a positive
        # number) the largest eigenvalue of -M: negation swaps them
        return Curvature(self.nsd, self.psd, self.nd, self.pd, self.symmetric, self.upper, self.lower)

    def scaled(self, c: float) -> Curvature:
        if c == 0:
            return Curvature.zero_matrix()
        if c < 0:
            return self.negated().scaled(-c)
        if c == 1:
            return self

        def sc(m: Modulus | None) -> Modulus | None:
            return None if m is None else m.scaled(c)

        return replace(self, lower=sc(self.lower), upper=sc(self.upper))

    def describe(self) -> str:
        if self.zero:
            return "zero"
        words = []
        if self.pd:
            words.append("positive definite")
        elif self.psd:
            words.append("positive semidefinite")
        if self.nd:
            words.append("negative definite")
        elif self.nsd:
            words.append("negative semidefinite")
        if not words:
            return "indefinite or unknown"
        text = ", ".join(words)
        if self.psd and self.lower is not None and self.lower.strong:
            text += f" (smallest eigenvalue >= {self.lower.text})"
        if self.nsd and self.upper is not None and self.upper.strong:
            text += f" (largest eigenvalue <= -{self.upper.text})"
        return text


def add_curvatures(parts: list[Curvature]) -> Curvature:
    """The sum rule: a sum of PSD matrices is PSD, PD when one is PD."""
    psd = all(p.psd for p in parts)
    nsd = all(p.nsd for p in parts)
    pd = psd and any(p.pd for p in parts)
    nd = nsd and any(p.nd for p in parts)
    symmetric = all(p.symmetric for p in parts)
    lower = None
    if psd:
        bounds = [p.lower for p in parts if p.lower is not None]
        lower = _sum_moduli(bounds)
    upper = None
    if nsd:
        bounds = [p.upper for p in parts if p.upper is not None]
        upper = _sum_moduli(bounds)
    return Curvature(psd, nsd, pd, nd, symmetric, lower, upper)


def _sum_moduli(bounds: list[Modulus]) -> Modulus | None:
    if not bounds:
        return None
    total = bounds[0]
    for b in bounds[1:]:
        total = total + b
    return total


@dataclass
class Fact:
    """Everything known about one node, with the rule that established it."""

    interval: Interval
    curvature: Curvature | None = None  # None: odd order (not read as a matrix)
    rule: str = ""
    detail: str = ""
    premises: tuple[Any, ...] = field(default_factory=tuple)  # nodes the rule used

    def describe(self) -> str:
        parts = [f"entries {self.interval.describe()}"]
        if self.curvature is not None and (self.curvature.psd or self.curvature.nsd):
            parts.append(f"as a matrix {self.curvature.describe()}")
        return "; ".join(parts)
