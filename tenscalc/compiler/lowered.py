"""The lowered program: one frozen record per bound op, and the cost read from them.

:func:`.program.bind` turns a plan bound to one shape signature into a list of
:class:`Op` records.  Each says which slot it writes, which slots it reads, which
slots die after it, the array it leaves in its slot and its estimated cost, the
record of the binder's decisions for it (:mod:`.records`), the closure the loop
runs, which the closure runner (:mod:`.closures`) builds from that record alone, and
what the fused writer of :mod:`.fused` may write in the closure's place, read from the
same record by :mod:`.descriptions`.  The runners read these records: the loop of
:meth:`.program.Program.run_steps`, the fused function, a backend's own compiler
over the loop; :func:`program_cost` computes the whole call's cost from
them alone.

>>> import tenscalc as tc
>>> run = tc.compile(tc.gradient(tc.parse("sum(exp(x) .* x)"), "x"))
>>> program = run._bind({"x": (3,)})
>>> sorted(op.kind for op in program.ops)  # exp(x), x exp(x), their sum (in the plan's order)
['add', 'func', 'product']
>>> program.ops[0].reads, program.ops[0].release  # exp reads x, which later ops still read
((0,), ())
>>> program_cost(program.ops) == program.cost
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .cost import Cost, OpCost

__all__ = ["Op", "program_cost"]


@dataclass(frozen=True)
class Op:
    """One op of a lowered program.

    ``kind``: the plan step's kind (``product``, ``add``, ``func`` ...), or ``pair``
    (a contraction several products share), ``band`` (a banded step) or ``twin`` (the
    dense array of a banded slot); ``slot``: the slot it writes; ``reads``: the slots it
    reads; ``release``: the slots dead after it; ``shape``: the array it leaves in its
    slot (a diagonal core or band vector where the step is structured); ``cost``: its
    estimated cost; ``fn``: the closure over the slot list computing it, built by the
    closure runner (:mod:`.closures`) from ``record``: the binder's decisions for the op
    (:mod:`.records`, :class:`.terms.TermPlan`, :class:`.sums.SumPlan` ...); ``inline``: what
    the fused writer may write in the closure's place (:mod:`.fused`), or None, read from
    ``record`` by :func:`.descriptions.fused_description`.
    """

    kind: str
    slot: int
    reads: tuple[int, ...]
    release: tuple[int, ...]
    shape: tuple[int, ...]
    cost: OpCost
    fn: Callable[[list], Any]
    record: Any = None
    inline: Any = None


def program_cost(ops: Sequence[Op]) -> Cost:
    """The cost of one call: the ops' costs summed, and the liveness-aware peak (every
    array still needed when an op runs, plus what that op allocates)."""
    live: dict[int, int] = {}  # slot -> entries of the arrays the program allocated
    live_total = 0  # sum(live.values()), kept up to date (summing per op was quadratic)
    peak = 0
    for op in ops:
        peak = max(peak, live_total + op.cost.step_peak)
        size = math.prod(op.shape)
        live_total += size - live.get(op.slot, 0)
        live[op.slot] = size
        for dead in op.release:
            live_total -= live.pop(dead, 0)
    return Cost.total([op.cost for op in ops], peak)
