"""Exact arithmetic on the constants of a DAG, so that rational exponents stay rational.

Constants are Python ints and floats.  A float that is a fraction with a small
denominator (``1/3`` is ``0.3333333333333333``) is read back as that fraction,
the arithmetic is done on fractions and rounded once: ``1/3 - 1`` is ``-2/3``
and ``-2/3 + 1`` is ``1/3`` again, where float arithmetic drifts
(``0.33333333333333326``).  Any other float is its exact binary value, so the
result is the correctly rounded one.

>>> exact_sum([1 / 3, -1, 1])
0.3333333333333333
>>> (1 / 3 - 1) + 1
0.33333333333333326
>>> exact_product([2 / 3, 3]), exact_sum([1, 2]), exact_product([1e308, -1e308])
(2.0, 3, -inf)
>>> small_fraction(2 / 3), small_fraction(0.1), small_fraction(0.123456789)
((2, 3), None, None)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

#: the largest denominator read back from a float (1/3, 5/12, 7/360 ...)
MAX_DENOMINATOR = 1000


def as_fraction(value: int | float) -> Fraction | None:
    """``value`` as a fraction: the small one it rounds from, else its exact binary value;
    None for inf and nan."""
    if isinstance(value, int):
        return Fraction(value)
    if not math.isfinite(value):
        return None
    near = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    return near if float(near) == value else Fraction(value)


def _number(fraction: Fraction, inputs: list[int | float]) -> int | float:
    """An int where every input was an int (as int arithmetic gives), else the rounded float."""
    if all(isinstance(v, int) for v in inputs):
        return int(fraction)
    try:
        return float(fraction)
    except OverflowError:  # beyond the largest float: inf, as float arithmetic gives (1e308 * 1e308)
        return math.inf if fraction > 0 else -math.inf


def exact_sum(values: Iterable[int | float]) -> int | float:
    """The sum of ``values`` computed on fractions (plain float sum where one is not finite)."""
    values = list(values)
    if all(type(v) is int for v in values):
        return sum(values)  # the common case (coefficients 1 + 1), exact already
    fractions = [as_fraction(v) for v in values]
    if any(f is None for f in fractions):
        return math.fsum(values)
    return _number(sum(fractions, Fraction(0)), values)  # type: ignore[arg-type]


def exact_product(values: Iterable[int | float]) -> int | float:
    """The product of ``values`` computed on fractions (plain float product where one is not finite)."""
    values = list(values)
    if all(type(v) is int for v in values):
        return math.prod(values)
    fractions = [as_fraction(v) for v in values]
    if any(f is None for f in fractions):
        return math.prod(values)
    result = Fraction(1)
    for f in fractions:
        result *= f  # type: ignore[operator]
    return _number(result, values)


def small_fraction(value: int | float) -> tuple[int, int] | None:
    """``(p, q)`` when the float ``value`` is ``p/q`` rounded, with a denominator ``q`` that
    has a prime factor other than 2 and 5 (its decimal expansion never ends: ``1/3``,
    printed better as a fraction); None otherwise."""
    if isinstance(value, int) or not math.isfinite(value):
        return None
    near = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    if near.denominator == 1 or float(near) != value:
        return None
    q = near.denominator
    for prime in (2, 5):
        while q % prime == 0:
            q //= prime
    return (near.numerator, near.denominator) if q != 1 else None
