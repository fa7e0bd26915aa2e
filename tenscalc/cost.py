"""Cost estimates of compiled evaluation: flops, operations, largest intermediate.

A compiled function's ``tenscalc.compiler.CompiledFunction.cost`` binds the
plan to shapes (as a call would, without arrays) and adds up what every step
costs: for fused products opt_einsum's ``opt_cost`` and the sizes of the
pairwise intermediates along the chosen path; for elementwise work, sums,
diagonal writes and constants the number of entries written; ``n^3`` for
``inv`` and ``det``.  This is what the cheap-gradient tests check: the gradient
of an O(N) function must be O(N), with no N×N array anywhere.

>>> import tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> c = tc.compile(f).cost({"x": (100,), "A": (100, 100)})
>>> c.largest_intermediate
100
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class OpCost:
    """The cost of one step (or of several, combined)."""

    flops: float
    operations: int
    largest_intermediate: int

    def __add__(self, other: OpCost) -> OpCost:
        return OpCost(
            self.flops + other.flops,
            self.operations + other.operations,
            max(self.largest_intermediate, other.largest_intermediate),
        )

    @staticmethod
    def combine(costs: Iterable[OpCost]) -> OpCost:
        total = OpCost(0.0, 0, 0)
        for cost in costs:
            total = total + cost
        return total


@dataclass(frozen=True)
class Cost:
    """Estimated cost of one call of a compiled function at given shapes.

    Attributes
    ----------
    flops : float
        Floating-point operations (opt_einsum's count for contractions; one per
        entry written for elementwise work, sums and array construction).
    operations : int
        Number of array operations (kernel calls) one evaluation performs.
    largest_intermediate : int
        Entries of the largest array allocated during evaluation, outputs
        included, inputs excluded.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> cost = tc.compile(f).cost({"A": (3, 4), "x": (4,)})
    >>> cost.operations, cost.largest_intermediate
    (1, 3)
    """

    flops: float
    operations: int
    largest_intermediate: int

    @staticmethod
    def total(costs: Iterable[OpCost]) -> Cost:
        combined = OpCost.combine(costs)
        return Cost(float(combined.flops), int(combined.operations), int(combined.largest_intermediate))

    def __str__(self) -> str:
        return (
            f"{self.flops:.3g} flops in {self.operations} operations; "
            f"largest intermediate {self.largest_intermediate} entries"
        )
