"""A sum (an ``add`` step) bound to shapes: one frozen record, read by every runner.

:func:`plan_sum` decides, once per shape signature, how a sum of the plan is computed:
each part (its slot, coefficient, and how it enters: ``dense``, an array of the sum's
shape; ``broadcast``, a smaller one NumPy broadcasts; ``embedded``, written into its
slice of the sum; ``diagonal``, the coefficient of a ``delta`` added on the diagonal
its pattern reads), the ufunc calls adding the dense and broadcast parts and the number
(a :class:`.fused.Chain`), the buffer the sum starts from, and whether the sum may write
into that buffer (:attr:`SumPlan.take`: an array of the sum's shape the sum itself made,
never a caller's input or a slot another op still reads or hands out).  The binder
(:func:`.program._bind_add`) keeps the record on its op, the closure runner
(:mod:`.closures`) builds its closure from it (:func:`sum_closure`), and the source writer
of ``tc.to_python(shapes=)`` and of ``tc.compile``'s fused function (:mod:`.source`)
writes the same statements from it, deciding nothing again: the dense and broadcast
parts as the chain's ufunc calls, then :data:`PARTS_HELPER`'s ``_add_parts`` (the text the
NumPy closure runs, and the shape-free ``tc.to_python`` writes) adding the embedded and
diagonal parts into one buffer.

>>> from tenscalc.compiler.plan import AddItem
>>> x, lower_rows = AddItem("slot", 1.0, slot=0), AddItem("embed", -2.0, slot=1, items=((1, None, 1),))
>>> items = (x, lower_rows, AddItem("delta", 1.0, n=1))  # x - 2 (y written at rows 1:) + I
>>> record = plan_sum(items, (3, 3), [(3, 3), (2, 3)])
>>> [(part.how, part.slot, part.coef) for part in record.parts]
[('dense', 0, 1.0), ('embedded', 1, -2.0), ('diagonal', -1, 1.0)]
>>> record.start, record.take  # x as it is: the first embedded part copies it once
('slot', False)
>>> [part.how for part in record.added], record.added[1].eq
(['embedded', 'diagonal'], 'aa->a')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backends import letters
from .fused import Call, Chain, Const, Slot, Temp
from .plan import AddItem

__all__ = ["PARTS_HELPER", "SumPart", "SumPlan", "plan_sum", "run_chain", "sum_chain", "sum_closure"]


@dataclass(frozen=True)
class SumPart:
    """One summand of a bound sum: ``coef * slot`` entering as ``how``.

    ``dense``: an array of the sum's shape; ``broadcast``: an array of fewer entries,
    broadcast over the sum's leading ``axes`` (NumPy aligns the trailing ones);
    ``embedded``: written into the sum's slice ``key`` (a basic index); ``diagonal``:
    ``coef`` added on the diagonal the letters ``pattern`` read (``slot`` -1: a ``delta``).
    """

    how: str
    slot: int
    coef: float
    axes: tuple[int, ...] = ()
    key: tuple = ()
    pattern: tuple[int, ...] = ()

    @property
    def eq(self) -> str:
        """A diagonal part's einsum reading the sum's diagonal (a writeable view)."""
        return letters(self.pattern) + "->" + letters(tuple(dict.fromkeys(self.pattern)))


@dataclass(frozen=True)
class SumPlan:
    """A sum of ``shape`` as bound: its ``parts`` in the plan's order, the ``scalar`` added.

    ``start``: the buffer it starts from: ``chain`` (the value of ``chain``, the dense and
    broadcast parts and the number as ufunc calls: a new array), ``slot`` (the one dense
    part as it is), ``full`` (the number written over the shape) or ``embedded`` (the first
    embedded part written into zeros); ``broadcast``: that value is smaller than the sum
    (broadcast to it: a read-only view); ``take``: the sum may write its other parts into
    that buffer (one it made itself, of the sum's shape); otherwise the first write copies
    it, so a caller's input or a slot still read is never written.
    """

    shape: tuple[int, ...]
    parts: tuple[SumPart, ...]
    scalar: float
    start: str
    chain: Chain | None
    broadcast: bool
    take: bool

    @property
    def added(self) -> tuple[SumPart, ...]:
        """The embedded and diagonal parts added into the buffer, in order."""
        later = [part for part in self.parts if part.how in ("embedded", "diagonal")]
        if self.start == "embedded":  # the first embedded part is the buffer (written into zeros)
            later.remove(next(part for part in later if part.how == "embedded"))
        return tuple(later)

    @property
    def fresh(self) -> bool:
        """Whether the sum's value is always an array it made (never a view of a slot)."""
        return bool(self.added) or (self.take and not self.broadcast)


def plan_sum(items: Sequence[AddItem], shape: tuple[int, ...], shapes: Sequence[tuple[int, ...]]) -> SumPlan:
    """The record of the sum of ``items`` of ``shape`` (``shapes``: each slot's array as held)."""
    shape = tuple(shape)
    # delta(0) is the number 1: added as a number (its "diagonal" is no array view)
    scalar = sum(it.coef for it in items if it.kind == "scalar" or (it.kind == "delta" and it.n == 0))
    parts: list[SumPart] = []
    for it in items:
        if it.kind == "slot":
            own = tuple(shapes[it.slot])
            if own == shape:
                parts.append(SumPart("dense", it.slot, it.coef))
            else:
                parts.append(SumPart("broadcast", it.slot, it.coef, axes=tuple(range(len(shape) - len(own)))))
        elif it.kind == "embed":
            from ..interpreter import slice_key  # the interpreter's own reading of a slice

            parts.append(SumPart("embedded", it.slot, it.coef, key=slice_key(it.items)))
        elif it.kind == "delta" and it.n > 0:
            parts.append(SumPart("diagonal", -1, it.coef, pattern=tuple(range(it.n)) * 2))
    arrays = [(p.slot, p.coef) for p in parts if p.how in ("dense", "broadcast")]
    # `1 - x` and `x + 2` are one operation: the number joins the first summand of
    # coefficient ±1 (a tensor of the sum's shape: broadcasting a smaller one with it
    # would allocate the full shape before the other summands are added)
    join = scalar != 0 and bool(arrays) and arrays[0][1] in (1, -1) and tuple(shapes[arrays[0][0]]) == shape
    chain = sum_chain(arrays, scalar, join) if arrays else None
    if arrays:
        start = "chain" if chain is not None else "slot"
        made = tuple(np.broadcast_shapes(*[tuple(shapes[slot]) for slot, _ in arrays]))
    else:
        embedded = any(p.how == "embedded" for p in parts)
        start = "embedded" if embedded and scalar == 0 else "full"
        made = shape
    broadcast = made != shape
    take = start != "slot" and not broadcast
    return SumPlan(shape, tuple(parts), scalar, start, chain, broadcast, take)


def sum_chain(arrays: Sequence[tuple[int, float]], scalar: float, join: bool) -> Chain | None:
    """The ufunc calls adding ``coef * slot`` over ``arrays`` and ``scalar``, in order
    (``join``: the number joins the first summand, ``1 - x``); None when the sum is one
    array as it is (no new array)."""
    calls: list[Call] = []
    acc: Slot | Temp | None = None
    operators = {np.add: "+", np.subtract: "-", np.negative: "-", np.multiply: "*"}

    def call(ufunc: np.ufunc, *args: Slot | Const | Temp) -> Temp:
        calls.append(Call(ufunc, args, operators[ufunc]))
        return Temp(len(calls) - 1)

    pending = scalar
    for slot, coef in arrays:
        x = Slot(slot)
        if acc is None:
            if join:
                acc = call(np.add, x, Const(pending)) if coef == 1 else call(np.subtract, Const(pending), x)
                pending = 0
            elif coef == 1:
                acc = x
            else:
                acc = call(np.negative, x) if coef == -1 else call(np.multiply, Const(coef), x)
        elif coef == 1:
            acc = call(np.add, acc, x)
        elif coef == -1:
            acc = call(np.subtract, acc, x)
        else:
            acc = call(np.add, acc, call(np.multiply, Const(coef), x))
    if pending != 0 and acc is not None:
        acc = call(np.add, acc, Const(pending))
    return Chain(tuple(calls)) if calls else None


def run_chain(chain: Chain, env: list) -> Any:
    """The value of ``chain`` over the slot list, with the Python operator a call names
    (any array library), its ufunc otherwise."""
    temps: list[Any] = []

    def value(arg: Any) -> Any:
        if isinstance(arg, Slot):
            return env[arg.index]
        return temps[arg.index] if isinstance(arg, Temp) else arg.value

    for call in chain.calls:
        args = [value(arg) for arg in call.args]
        if call.op == "+":
            temps.append(args[0] + args[1])
        elif call.op == "-":
            temps.append(-args[0] if len(args) == 1 else args[0] - args[1])
        elif call.op == "*":
            temps.append(args[0] * args[1])
        else:
            temps.append(call.ufunc(*args))
    return temps[-1]


#: the sum of embedded parts and diagonals into one buffer, as source: the NumPy closure of
#: a bound sum runs it, ``tc.to_python(shapes=)`` and the fused function write it, and the
#: shape-free ``tc.to_python`` writes it for its own sums (:mod:`.codegen`)
PARTS_HELPER = '''
def _add_parts(x, fresh, shape, parts):
    """``x`` (broadcast to ``shape``) plus, in order, each ``coef * part`` written at its basic
    index ``key`` (on the diagonal the einsum ``eq`` reads there, where ``part`` is a diagonal
    matrix's core) and each ``coef`` on a diagonal (``part`` None, ``eq`` reading it); added
    into ``x`` itself where it is an array of the sum just made (``fresh``), of the shape and
    dtype of the sum, else into one copy."""
    dtype = _np.result_type(x, *[part for part, _, _, _ in parts if part is not None], 0.0)
    if not (fresh and _np.shape(x) == shape and x.dtype == dtype):
        x = _np.array(_np.broadcast_to(x, shape), dtype=dtype)
    for part, key, coef, eq in parts:
        if part is None:
            _np.einsum(eq, x)[...] += coef
        elif eq is not None:
            _np.einsum(eq, x[key])[...] += part if coef == 1.0 else coef * part
        elif coef == 1.0:
            x[key] += part
        else:
            x[key] += coef * part
    return x'''

#: zeros with one part written at its slice (an ``embed`` step, a sum's first embedded part)
EMBED_HELPER = '''
def _embed(part, key, shape):
    """Zeros of ``shape`` with ``part`` written at the basic index ``key``."""
    out = _np.zeros(shape, dtype=_np.result_type(part, 0.0))
    out[key] = part
    return out
'''

_namespace: dict[str, Any] = {"_np": np}
exec(compile(PARTS_HELPER + "\n" + EMBED_HELPER, "<tenscalc sums>", "exec"), _namespace)  # noqa: S102 - the text above
_add_parts = _namespace["_add_parts"]
_embed = _namespace["_embed"]


def sum_closure(record: SumPlan, backend: Any) -> Any:
    """The closure computing ``record``'s sum over the slot list: for NumPy the helper text
    the generated source writes (:data:`PARTS_HELPER`), for any other library its backend's
    ``embed``, ``broadcast`` and ``add_diagonal`` (no array written in place)."""
    shape, chain = record.shape, record.chain
    first = next((p for p in record.parts if p.how == "embedded"), None) if record.start == "embedded" else None
    dense = next((p.slot for p in record.parts if p.how in ("dense", "broadcast")), -1)
    added = record.added
    numpy = backend.runs_numpy_helpers  # PARTS_HELPER's in-place writes

    def start(env: list) -> Any:
        if chain is not None:
            return run_chain(chain, env)
        if record.start == "slot":
            return env[dense]
        if first is not None:
            part = env[first.slot] if first.coef == 1 else first.coef * env[first.slot]
            return _embed(part, first.key, shape) if numpy else backend.embed(part, first.key, shape)
        return backend.full(shape, record.scalar, env[-1])

    if numpy:
        extras = [(p.slot, p.key, p.coef, p.eq if p.how == "diagonal" else None) for p in added]

        def run(env: list) -> Any:
            value = start(env)
            if not extras:
                return np.broadcast_to(value, shape) if record.broadcast else value
            parts = [(None if slot < 0 else env[slot], key, coef, eq) for slot, key, coef, eq in extras]
            return _add_parts(value, record.take, shape, parts)

        return run

    def run_any(env: list) -> Any:
        value, fresh = start(env), record.take
        if record.broadcast:
            value, fresh = backend.broadcast(value, shape), False
        for part in added:
            if part.how == "embedded":
                scaled = env[part.slot] if part.coef == 1 else part.coef * env[part.slot]
                value = value + backend.embed(scaled, part.key, shape)
            else:
                value = backend.add_diagonal(value, len(part.pattern) // 2, part.coef, shape, fresh)
            fresh = True
        return value

    return run_any
