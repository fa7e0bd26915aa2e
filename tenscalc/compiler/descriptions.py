"""What the fused writer may write in each lowered op's place, read from the op's record alone.

The binder keeps its decisions for an op in the op's record (:mod:`.records`); the closure
runner (:data:`.closures.CLOSURE_RUNNERS`) builds the closure the loop calls from it, and this
module, one function per record type in the parallel table :data:`FUSED_DESCRIPTIONS`,
describes the same work for the writers that do not call the closure: an elementwise chain of
ufunc calls (:class:`.fused.Chain`), a view (:class:`.fused.View`), the slot itself
(:class:`.fused.Same`), tiles, a banded step's band values, or a step known to allocate its
result (:class:`.fused.Fresh`, :class:`.fused.Terms`).  The fused function (:mod:`.fused`), the
NumPy source writer (:mod:`.source`) and the float runner (:mod:`.scalar`) read it as
:attr:`.lowered.Op.inline`, which the binder sets to :func:`fused_description` of the op's record;
None where a writer must call the closure.  A description holds numbers, slots, ufuncs and
records, never a closure, so a closure carries nothing a writer reads.

>>> from tenscalc.compiler.backends import get_backend
>>> from tenscalc.compiler.records import PowRecord
>>> fused_description(PowRecord((0,), 2, "square"), get_backend("numpy"))  # doctest: +ELLIPSIS
Chain(calls=(Call(ufunc=<ufunc 'multiply'>, args=(Slot(index=0), Slot(index=0)), op='*'),))
>>> fused_description(PowRecord((0,), 1, "same"), get_backend("numpy"))
Same(slot=0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .accumulate import AccumulateRecord
from .backends import Backend
from .closures import term_kernel
from .fused import Call, Chain, Const, Fresh, Inline, Same, Slot, Temp, Terms, View
from .records import (
    BandRecord,
    ConstantRecord,
    EmbedRecord,
    FactorReaderRecord,
    FactorRecord,
    FullSumsRecord,
    FuncRecord,
    LinalgRecord,
    PowRecord,
    SliceRecord,
    SumRecord,
    TermRecord,
    TermsRecord,
    TransposedRecord,
    TwinRecord,
)

__all__ = ["FUSED_DESCRIPTIONS", "fused_description"]

Description = Inline | None


def fused_description(record: Any, backend: Backend) -> Description:
    """What the fused writer may write in place of the closure of ``record`` with ``backend``
    (None: the closure is called)."""
    return FUSED_DESCRIPTIONS[type(record)](record, backend)


def _none(record: Any, backend: Backend) -> Description:
    return None  # its closure is called (or a source writer writes it from the record)


def _func(record: FuncRecord, backend: Backend) -> Description:
    if not backend.runs_numpy_source:
        return None
    fn, a = backend.func(record.name), record.slot
    if isinstance(fn, np.ufunc) and fn.nin == 1:
        return Chain((Call(fn, (Slot(a),)),))
    if record.name == "relu":  # NumpyBackend's relu: np.maximum(x, 0.0)
        return Chain((Call(np.maximum, (Slot(a), Const(0.0))),))
    return None  # a function NumPy runs as no ufunc


def _pow(record: PowRecord, backend: Backend) -> Description:
    form, a = record.form, record.args[0]
    if form == "same":  # x itself, with any library
        return Same(a)
    if not backend.runs_numpy_source:
        return None
    if form == "both":  # NumpyBackend.power is np.power (operands of different shapes broadcast)
        return Chain((Call(np.power, (Slot(a), Slot(record.args[1]))),))
    if form == "square":
        return Chain((Call(np.multiply, (Slot(a), Slot(a)), "*"),))
    if form == "reciprocal":
        return Chain((Call(np.divide, (Const(1.0), Slot(a)), "/"),))
    if form == "inverse_square":
        return Chain((Call(np.multiply, (Slot(a), Slot(a)), "*"), Call(np.divide, (Const(1.0), Temp(0)), "/")))
    if form == "sqrt":
        return Chain((Call(np.sqrt, (Slot(a),)),))
    return Chain((Call(np.power, (Slot(a), Const(float(cast("float", record.exponent))))),))


def _slice(record: SliceRecord, backend: Backend) -> Description:
    if record.output or not backend.runs_numpy_source:  # a copy handed out; torch spells a view its own way
        return None
    return View(record.slot, record.key)


def _sum(record: SumRecord, backend: Backend) -> Description:
    plan = record.sum
    if record.tiles is not None:
        return record.tiles
    if not backend.runs_numpy_source:
        return None
    if plan.chain is not None and not plan.added and not plan.broadcast:
        return plan.chain  # the dense parts' ufunc calls
    if plan.fresh:
        return Fresh()  # a new array, aliasing none of its reads
    return None


def _term(record: TermRecord, backend: Backend) -> Description:
    """The term's core as the closure runner computes it (:attr:`.records.TermRecord.core`),
    where the term's value is that core (not broadcast, not written on a diagonal)."""
    plan = record.plan
    if not backend.runs_numpy_source or plan.fill is not None or plan.broadcast or plan.diagonal_out:
        return None
    form, slots = record.core, [op.slot for op in plan.operands]
    if form == "scaled":
        return Chain((Call(np.multiply, (Slot(cast("int", slots[0])), Const(plan.factor)), "*"),))
    if form in ("pair", "scaled pair") and plan.gram is None and term_kernel(plan, backend) is np.multiply:
        first, second = cast("list[int]", slots)
        product = Call(np.multiply, (Slot(first), Slot(second)))
        if form == "pair":
            return Chain((product,))
        return Chain((product, Call(np.multiply, (Temp(0), Const(plan.factor)), "*")))
    if plan.gram is not None or any(len(step) == 2 for step in plan.path):
        return Fresh()  # a pairwise product allocates the result
    return None


def _terms(record: TermsRecord, backend: Backend) -> Description:
    if not backend.runs_numpy_source or record.shape == ():
        return None
    # every term's closure returns an array of the product's shape (the core, its broadcast,
    # or its diagonal written out), so the running total may be added into in place; into
    # the first term's own array only if it is fresh
    return Terms(isinstance(_term(record.terms[0], backend), (Chain, Fresh)))


def _band(record: BandRecord, backend: Backend) -> Description:
    return record.values  # band values are described by the binder's record itself (.banded)


def _accumulate(record: AccumulateRecord, backend: Backend) -> Description:
    return Fresh()  # the buffer it adds into is its own (.accumulate)


#: record type -> the function describing its op for the fused writer, from the record and the
#: backend: the same keys as :data:`.closures.CLOSURE_RUNNERS`
FUSED_DESCRIPTIONS: dict[type, Callable[[Any, Backend], Description]] = {
    ConstantRecord: _none,
    FuncRecord: _func,
    PowRecord: _pow,
    SliceRecord: _slice,
    EmbedRecord: _none,
    LinalgRecord: _none,
    SumRecord: _sum,
    TermRecord: _term,
    TermsRecord: _terms,
    FullSumsRecord: _none,
    TransposedRecord: _none,  # a view of the term's result, whose buffer must never be reused
    AccumulateRecord: _accumulate,
    BandRecord: _band,
    TwinRecord: _none,
    FactorRecord: _none,
    FactorReaderRecord: _none,
}
