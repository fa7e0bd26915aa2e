"""Cost estimates of compiled evaluation: flops, operations, largest intermediate.

A compiled function's ``tenscalc.compiler.CompiledFunction.cost`` binds the
plan to shapes (as a call would, without arrays) and adds up what every step
costs: for fused products opt_einsum's ``opt_cost`` and the sizes of the
pairwise intermediates along the chosen path; for elementwise work, sums,
diagonal writes and constants the number of entries written; ``n^3`` for
``inv`` and ``det``.  Also the peak memory, which follows the plan's liveness: the
entries of every array still needed when a step runs, plus what that step
allocates along its contraction path.  A step whose intermediate is out of
proportion to its operands and its result is named in ``flagged``.  This is
what the cheap-gradient tests check: the gradient of an O(N) function must be
O(N), with no N×N array anywhere.

The conventions, checked against the arithmetic a call performs (the tests count the
NumPy calls of ``tc.compile``'s loop, its fused function and the ``tc.to_python(...,
shapes=)`` module, and find the three equal): a pairwise contraction that sums a
letter costs two flops per multiply-add (opt_einsum's), a broadcast product or an
elementwise step one per entry written, a sum of an array's entries two per entry
(a contraction to opt_einsum; NumPy reads each entry once), building a result one
per entry (a dense Hessian written from bands included, so the model exceeds the
arithmetic there: 40x for the chained Rosenbrock Hessian at n = 1,000), ``n^3`` per
inverse or determinant.  ``multiplications`` bounds the multiply-adds of the
contraction calls made; the counted arithmetic stays within 1.25x ``flops`` (1.2x
where a sum's buffer is first filled by a multiplication by 1.0).

>>> import tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> c = tc.compile(f).cost({"x": (100,), "A": (100, 100)})
>>> c.largest_intermediate, c.peak_memory
(100, 101)
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
    #: entries allocated at once while the step runs, its result included (0: the
    #: largest intermediate)
    peak: int = 0
    #: why the step is out of proportion (see :data:`tenscalc.compiler.program.PROPORTION`)
    flags: tuple[str, ...] = ()
    #: scalar multiplications (the count vertex elimination minimises; additions,
    #: divisions and elementwise functions are not counted)
    multiplications: float = 0.0

    @property
    def step_peak(self) -> int:
        return max(self.peak, self.largest_intermediate)

    def __add__(self, other: OpCost) -> OpCost:
        return OpCost(
            self.flops + other.flops,
            self.operations + other.operations,
            max(self.largest_intermediate, other.largest_intermediate),
            max(self.step_peak, other.step_peak),
            self.flags + other.flags,
            self.multiplications + other.multiplications,
        )

    @staticmethod
    def combine(costs: Iterable[OpCost]) -> OpCost:
        """The sum of ``costs`` (as ``+`` would add them from zero, without an object per
        step: a 100,000-term sum has 300,000 of them)."""
        flops, operations, largest, peak, multiplications = 0.0, 0, 0, 0, 0.0
        flags: tuple[str, ...] = ()
        for cost in costs:
            flops += cost.flops
            operations += cost.operations
            largest = max(largest, cost.largest_intermediate)
            peak = max(peak, cost.step_peak)
            if cost.flags:
                flags += cost.flags
            multiplications += cost.multiplications
        return OpCost(flops, operations, largest, peak, flags, multiplications)


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
    peak_memory : int
        Entries allocated at the same time at the worst moment of a call, inputs
        excluded: the arrays the plan still needs (liveness-aware: released after
        their last use) plus what the running step allocates along its path.
    flagged : tuple of str
        Steps whose intermediate is out of proportion to their operands and
        result (no contraction order avoids it), one line each.
    largest_intermediate : int
        Entries of the largest array allocated during evaluation, outputs
        included, inputs excluded.
    multiplications : float
        Scalar multiplications: of each contraction along its path (every
        combination of the indices of a pairwise step is one), of scaling by a
        coefficient and of squaring; additions, divisions and elementwise
        functions are not counted.  This is the count that Jacobian
        accumulation orders (``tc.jacobian_accumulation``) are compared by.

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
    # no defaults: a class attribute would show on the API page as a member
    peak_memory: int
    flagged: tuple[str, ...]
    multiplications: float

    @staticmethod
    def total(costs: Iterable[OpCost], peak_memory: int = 0) -> Cost:
        combined = OpCost.combine(costs)
        return Cost(
            float(combined.flops),
            int(combined.operations),
            int(combined.largest_intermediate),
            int(max(peak_memory, combined.largest_intermediate)),
            combined.flags,
            float(combined.multiplications),
        )

    def __str__(self) -> str:
        text = (
            f"{self.flops:.3g} flops ({self.multiplications:.3g} multiplications) in {self.operations} operations; "
            f"largest intermediate {self.largest_intermediate} entries; peak memory {self.peak_memory} entries"
        )
        return text + "".join(f"\n  out of proportion: {flag}" for flag in self.flagged)
