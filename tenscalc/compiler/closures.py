"""The closure runner: each lowered op's closure, built from its record alone.

:func:`.program.bind` decides and keeps the decisions in each op's record
(:mod:`.records`, :class:`.terms.TermPlan`, :class:`.sums.SumPlan` ...); this module reads
them, one function per record type (:data:`CLOSURE_RUNNERS`), and builds the closure over
the slot list that :meth:`.program.Program.run_steps` calls, for any array library (the
``backend``).  Nothing here decides again: the same record gives the same closure.  What
the fused writer may write in a closure's place is read from the same record, by the
parallel table of :mod:`.descriptions`; a closure carries nothing a writer reads.

>>> import numpy as np
>>> from tenscalc.compiler.backends import get_backend
>>> from tenscalc.compiler.records import PowRecord
>>> square = closure(PowRecord((0,), 2, "square"), get_backend("numpy"))
>>> square([np.array([1.0, 3.0]), None]).tolist()
[1.0, 9.0]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .accumulate import AccumulateRecord, accumulate_closure
from .backends import Backend
from .banded import write_bands
from .cholesky import factor_det, factor_inv, library_factor
from .fused import BandNumber, BandRef, BandScaled, BandStretch, BandTerm, band_stretch
from .generated import cholesky_det, cholesky_factor, cholesky_inv, linalg_adj, linalg_det, linalg_inv
from .kernels import contraction_kernel, gram_contraction
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
from .sums import sum_closure
from .terms import TermPlan

__all__ = ["CLOSURE_RUNNERS", "StepFn", "closure", "term_kernel"]

StepFn = Callable[[list], Any]


def closure(record: Any, backend: Backend) -> StepFn:
    """The closure computing the op ``record`` describes, over the slot list, with ``backend``."""
    return CLOSURE_RUNNERS[type(record)](record, backend)


def _constant(record: ConstantRecord, backend: Backend) -> StepFn:
    value, output = record.value, record.output
    cache: list[Any] = []

    def run(env):
        if not cache:  # moved to the backend once, on the device of the inputs
            cache.append(backend.from_numpy(value, env[-1]))
        if output:
            return backend.from_numpy(value.copy(), env[-1])
        return cache[0]

    return run


def _func(record: FuncRecord, backend: Backend) -> StepFn:
    fn = backend.func(record.name)
    a = record.slot
    return lambda env: fn(env[a])


def _pow(record: PowRecord, backend: Backend) -> StepFn:
    form, a = record.form, record.args[0]
    if form == "both":
        b = record.args[1]
        return lambda env: backend.power(env[a], env[b])
    if form == "same":  # x itself, no new array
        return lambda env: env[a]
    if form == "square":
        return lambda env: env[a] * env[a]
    if form == "reciprocal":
        return lambda env: 1.0 / env[a]
    if form == "inverse_square":
        return lambda env: 1.0 / (env[a] * env[a])
    if form == "sqrt":
        sqrt = backend.func("sqrt")
        return lambda env: sqrt(env[a])
    exponent = float(record.exponent)  # type: ignore[arg-type]  # form "power" has one
    return lambda env: backend.power(env[a], exponent)


def _slice(record: SliceRecord, backend: Backend) -> StepFn:
    a, key = record.slot, record.key
    take = backend.take  # torch spells a negative step its own way
    if record.output:  # never hand out a view of the caller's array
        return lambda env: _copy(take(env[a], key))
    return lambda env: take(env[a], key)  # basic indexing: a view, no copy


def _copy(value: Any) -> Any:
    if hasattr(value, "clone"):  # torch
        return value.clone()
    return value.copy() if hasattr(value, "copy") else value


def _embed(record: EmbedRecord, backend: Backend) -> StepFn:
    a, key, shape = record.slot, record.key, record.shape
    return lambda env: backend.embed(env[a], key, shape, env[-1])


def _linalg(record: LinalgRecord, backend: Backend) -> StepFn:
    a, k, label = record.slot, record.k, record.label
    if backend.runs_numpy_helpers:  # the text the fused function and the generated module run (.generated)
        if record.what == "inv":
            return lambda env: linalg_inv(env[a], label)
        if record.what == "det":
            return lambda env: linalg_det(env[a], label)
        return lambda env: linalg_adj(env[a], k, label)
    what = record.what  # the same checks and words (.backends.Backend.checked_linalg)
    return lambda env: backend.checked_linalg(what, env[a], label, k)


def _sum(record: SumRecord, backend: Backend) -> StepFn:
    plan, tiles = record.sum, record.tiles
    run = sum_closure(plan, backend)
    if tiles is not None:
        parts, shape = list(tiles.parts), tiles.shape

        def run_tiles(env):
            values = [env[slot] if coef == 1 else coef * env[slot] for slot, coef, _ in parts]
            dtype = values[0].dtype
            if any(v.dtype != dtype for v in values):
                return run(env)  # mixed float/complex parts: the general sum (the record's)
            out = np.empty(shape, dtype=dtype)
            for value, (_, _, key) in zip(values, parts):
                out[key] = value
            return out

        return run_tiles
    return run


#: kernels kept per layout (NumPy) or per library, equation, shapes and path (the others): the
#: terms of one program, and of programs bound again, share them, as the binder's memo did
KERNELS_KEPT = 4096


@functools.lru_cache(maxsize=KERNELS_KEPT)
def _layout_kernel(layout: Any) -> Callable[..., Any]:
    return contraction_kernel(layout)


@functools.lru_cache(maxsize=KERNELS_KEPT)
def _library_kernel(backend: Backend, eq: str, op_shapes: tuple, path: tuple) -> Callable[..., Any]:
    return backend.contraction(eq, list(op_shapes), [tuple(step) for step in path])


def term_kernel(plan: TermPlan, backend: Backend) -> Callable[..., Any]:
    """The callable contracting a term's core as its record says (the closure runner's, and
    what :mod:`.descriptions` asks whether it is ``np.multiply``)."""
    if plan.gram is not None:  # Xᵀ diag(d) X: symmetric, half the flops through syrk
        return gram_contraction(plan.gram, [op.letters for op in plan.operands], plan.target, plan.factor)
    if plan.layout is not None:  # NumPy: the kernels of the record's layout, which to_python writes too
        return _layout_kernel(plan.layout)
    return _library_kernel(backend, plan.eq, plan.op_shapes, plan.path)


def _term(record: TermRecord, backend: Backend) -> StepFn:
    """One einsum term: its core contracted as the record says (the common shapes without
    the general path's list and tests), broadcast or written on its diagonal."""
    plan = record.plan
    shape, out, unique_shape, factor = plan.shape, plan.out, plan.unique_shape, plan.factor
    if plan.fill is not None:
        value = plan.fill
        if plan.diagonal_out and value != 0:
            core_shape = unique_shape

            def constant_diagonal(env):
                core = backend.full(core_shape, value, env[-1])
                return backend.write_diagonal(core, out, shape)

            return constant_diagonal
        return lambda env: backend.full(shape, value, env[-1])
    operands = plan.operands
    values = [None if value is None else backend.from_numpy(value) for value in record.constants]
    scale_at = plan.scale_at
    contract = term_kernel(plan, backend)
    after = record.after
    fetch = [(index, op.slot, op.diagonal) for index, op in enumerate(operands)]
    on_device = backend.placed(values)  # the baked constants on the call's device (torch: CUDA too)
    plain = all(op.diagonal is None and op.slot is not None for op in operands)
    slots = [op.slot for op in operands]
    einsum = backend.einsum

    def general_core(env):
        if plain:
            arrays = [env[s] for s in slots]
        else:
            baked = on_device(env[-1])
            arrays = [env[s] if s is not None else baked[i] for i, s, _ in fetch]
            arrays = [a if d is None else einsum(d, a) for a, (_, _, d) in zip(arrays, fetch)]
        if scale_at is not None and scale_at >= 0:
            arrays[scale_at] = arrays[scale_at] * factor
        result = contract(*arrays)
        if scale_at == -1:
            result = result * factor
        if after != 1.0:
            result = result * after
        return result

    # the common shapes of a term, without the general path's list and tests (the record's form)
    form = record.core
    if form == "pair":
        first, second = cast("list[int]", slots)  # the common binary product: one call, no list

        def core(env):
            return contract(env[first], env[second])

    elif form == "scaled":
        (only,) = cast("list[int]", slots)  # c * x: one multiplication, no contraction call

        def core(env):
            return env[only] * factor

    elif form == "scaled pair":
        first, second = cast("list[int]", slots)

        def core(env):
            return contract(env[first], env[second]) * factor

    else:
        core = general_core

    produce = core
    if plan.broadcast:
        index = tuple(slice(None) if letter in plan.target else None for letter in plan.unique)

        def expanded(env):
            return backend.broadcast(core(env)[index], unique_shape)

        produce = expanded
    if plan.diagonal_out:

        def embedded(env):
            return backend.write_diagonal(produce(env), out, shape)

        return embedded
    return produce


def _terms(record: TermsRecord, backend: Backend) -> StepFn:
    fns = [_term(term, backend) for term in record.terms]

    def run(env):
        total = fns[0](env)
        for fn in fns[1:]:
            total = total + fn(env)
        return total

    return run


def _full_sums(record: FullSumsRecord, backend: Backend) -> StepFn:
    parts = record.parts

    def run(env):
        total = None
        for slots, factor in parts:
            value = env[slots[0]]
            for slot in slots[1:]:
                value = value * env[slot]
            if factor != 1:
                value = value * factor
            total = value if total is None else total + value
        return total.sum()

    return run


def _transposed(record: TransposedRecord, backend: Backend) -> StepFn:
    compute = _term(record.term, backend)
    return lambda env: compute(env).T  # a view of the result


def _accumulate(record: AccumulateRecord, backend: Backend) -> StepFn:
    return accumulate_closure(record, lambda term: _term(term, backend))


def _band(record: BandRecord, backend: Backend) -> StepFn:
    """A banded step's tuple of band values, each band its parts added left to right."""
    values = record.values
    if isinstance(values, BandNumber):  # a constant's numbers
        numbers = values.value
        return lambda env: numbers
    fns = [[_band_part(part, backend) for part in group] for group in values.groups]

    def run(env: list) -> tuple:
        out = []
        for group in fns:
            total = group[0](env)
            for fn in group[1:]:
                total = total + fn(env)
            out.append(total)
        return tuple(out)

    return run


def _band_part(part: Any, backend: Backend) -> StepFn:
    """The closure of one band value's description (its inner values' closures inside)."""
    if isinstance(part, BandRef):
        slot, k = part.slot, part.k
        return lambda env: env[slot][k]
    if isinstance(part, BandNumber):
        number = part.value
        return lambda env: number
    if isinstance(part, BandScaled):
        value, stretches, factor = _band_part(part.value, backend), part.stretches, part.factor

        def scaled(env: list) -> Any:
            result = value(env)
            for slot, key in stretches:
                result = result * env[slot][key]
            return result * factor if factor != 1 else result

        return scaled
    if isinstance(part, BandStretch):
        inner, first, stop, every = _band_part(part.value, backend), part.first, part.stop, part.every
        return lambda env: band_stretch(inner(env), first, stop, every)
    assert isinstance(part, BandTerm), f"a band value's description: {part!r}"
    return _term(part.bound, backend)


def _twin(record: TwinRecord, backend: Backend) -> StepFn:
    layout, slot = record.layout, record.slot
    return lambda env: write_bands(layout, env[slot])


def _factor(record: FactorRecord, backend: Backend) -> StepFn:
    name, matrix = record.name, record.matrix
    if backend.runs_numpy_helpers:
        return lambda env: cholesky_factor(env[matrix], name)  # the helper text every NumPy runner runs
    return lambda env: library_factor(name, env[matrix])  # PyTorch's, JAX's or Dask's (Backend.factorises)


def _factor_reader(record: FactorReaderRecord, backend: Backend) -> StepFn:
    what, factor = record.what, record.factor
    if what == "unused":  # a det read only by logs computed from the factor
        return lambda env: None
    library = not backend.runs_numpy_helpers  # PyTorch's, JAX's or Dask's factor (see _factor)
    if what == "inv":
        if library:
            return lambda env: factor_inv(env[factor], backend)
        return lambda env: cholesky_inv(env[factor])
    log = what == "logdet"
    if library:
        return lambda env: factor_det(env[factor], log, backend)
    return lambda env: cholesky_det(env[factor], log)


#: record type -> the function building its op's closure from the record and the backend
CLOSURE_RUNNERS: dict[type, Callable[[Any, Backend], StepFn]] = {
    ConstantRecord: _constant,
    FuncRecord: _func,
    PowRecord: _pow,
    SliceRecord: _slice,
    EmbedRecord: _embed,
    LinalgRecord: _linalg,
    SumRecord: _sum,
    TermRecord: _term,
    TermsRecord: _terms,
    FullSumsRecord: _full_sums,
    TransposedRecord: _transposed,
    AccumulateRecord: _accumulate,
    BandRecord: _band,
    TwinRecord: _twin,
    FactorRecord: _factor,
    FactorReaderRecord: _factor_reader,
}
