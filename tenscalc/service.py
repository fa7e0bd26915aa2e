"""The problem service: what the command line and the web page both do with a problem.

``tenscalc`` (the command) and ``tenscalc serve`` (the page) read a problem in their
own way (``build_problem`` both), then do the same things with it: its derivatives
of each order and a check of them against finite differences at random data.  Those
live here, once, so that the two front doors cannot drift apart (the convexity
verdict is ``check_convexity`` for both).

>>> import tenscalc as tc
>>> from tenscalc.service import derivatives, numeric_check
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> [d.order for d in derivatives(f, "x", 2)]
[1, 2]
>>> numeric_check(f, "x", 2).ok
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .calculus.api import derivative
from .core import nodes as N
from .core.nodes import Expr
from .testing import DerivativeCheck, RandomDataError, check_derivative, defined_values


def derivatives(expr: Expr, wrt: str | Expr, count: int, *, symmetric: Iterable[str] = ()) -> list[Expr]:
    """The derivatives 1..``count`` of ``expr`` by ``wrt``, each the derivative of the one
    before (so the k-th has ``wrt``'s axes appended k times), each simplified once.

    ``symmetric`` names matrices known to be symmetric (``declare A 2 symmetric``): the
    simplifier then writes ``Aᵀ`` as ``A`` (``x'*A*x`` gives ``2Ax``).
    """
    variable = wrt if isinstance(wrt, Expr) else N.var(wrt, expr.variables[wrt])
    names = tuple(symmetric)
    found: list[Expr] = []
    current = expr
    for _ in range(count):
        current = derivative(current, variable, symmetric=names)  # simplified by derivative itself
        found.append(current)
    return found


@dataclass
class NumericCheck:
    """The derivatives 1..k compared with finite differences at one point of random data.

    ``values`` is the data (every independent axis its own length, where the function
    and each derivative are defined); ``reason`` says why no such data was found (then
    ``reports`` is empty and nothing was compared).
    """

    values: dict[str, Any] = field(default_factory=dict)
    reports: list[DerivativeCheck] = field(default_factory=list)
    reason: str | None = None

    @property
    def evaluated(self) -> bool:
        """Whether data was found where everything is defined."""
        return self.reason is None

    @property
    def ok(self) -> bool:
        """Whether every derivative agreed with finite differences."""
        return self.evaluated and all(bool(report.ok) for report in self.reports)


def numeric_check(
    expr: Expr,
    wrt: str | Expr,
    count: int,
    *,
    seed: int = 0,
    values: Mapping[str, Any] | None = None,
) -> NumericCheck:
    """Check the derivatives 1..``count`` of ``expr`` by ``wrt`` against central finite
    differences, at ``values`` or at random data where all of them are defined."""
    variable = wrt if isinstance(wrt, Expr) else N.var(wrt, expr.variables[wrt])
    if values is None:
        chain = [expr]
        for _ in range(count):
            chain.append(derivative(chain[-1], variable))
        try:
            values = defined_values(chain, seed=seed)
        except RandomDataError as exc:
            return NumericCheck(reason=str(exc))
    data = dict(values)
    reports = [check_derivative(expr, variable, order=k, values=data, seed=seed) for k in range(1, count + 1)]
    return NumericCheck(data, reports)
