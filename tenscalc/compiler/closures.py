"""The closure runner: each lowered op's closure, built from its record alone.

:func:`.program.bind` decides and keeps the decisions in each op's record
(:mod:`.records`, :class:`.terms.TermPlan`, :class:`.sums.SumPlan` ...); this module reads
them, one function per record type (:data:`CLOSURE_RUNNERS`), and builds the closure over
the slot list that :meth:`.program.Program.run_steps` calls, for any array library (the
``backend``).  A NumPy closure is described for the fused writer (:func:`.fused.describe`)
where its work is elementwise ufunc calls or a view.  Nothing here decides again: the same
record gives the same closure.

>>> import numpy as np
>>> from tenscalc.compiler.backends import get_backend
>>> from tenscalc.compiler.records import PowRecord
>>> square = closure(PowRecord((0,), 2, "square"), get_backend("numpy"))
>>> square([np.array([1.0, 3.0]), None]).tolist(), square.inline  # doctest: +ELLIPSIS
([1.0, 9.0], Chain(calls=(Call(ufunc=<ufunc 'multiply'>, args=(Slot(index=0), Slot(index=0)), op='*'),)))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import EvaluationError
from .backends import Backend
from .banded import write_bands
from .cholesky import factor_det, factor_inv, torch_factor
from .fused import Call, Chain, Const, Same, Slot, Temp, View, describe
from .generated import cholesky_det, cholesky_factor, cholesky_inv, linalg_adj, linalg_det, linalg_inv
from .records import (
    ConstantRecord,
    EmbedRecord,
    FactorReaderRecord,
    FactorRecord,
    FuncRecord,
    LinalgRecord,
    PowRecord,
    SliceRecord,
    TwinRecord,
)

__all__ = ["CLOSURE_RUNNERS", "StepFn", "closure"]

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
    run = lambda env: fn(env[a])  # noqa: E731
    if backend.name == "numpy" and isinstance(fn, np.ufunc) and fn.nin == 1:
        run = describe(run, Chain((Call(fn, (Slot(a),)),)))
    elif backend.name == "numpy" and record.name == "relu":  # np.maximum(x, 0.0)
        run = describe(run, Chain((Call(np.maximum, (Slot(a), Const(0.0))),)))
    return run


def _pow(record: PowRecord, backend: Backend) -> StepFn:
    numpy = backend.name == "numpy"
    form, a = record.form, record.args[0]
    if form == "both":
        b = record.args[1]
        both = lambda env: backend.power(env[a], env[b])  # noqa: E731
        if numpy:  # NumpyBackend.power is np.power (operands of different shapes broadcast)
            both = describe(both, Chain((Call(np.power, (Slot(a), Slot(b))),)))
        return both
    if form == "same":  # x itself, no new array
        return describe(lambda env: env[a], Same(a))
    if form == "square":
        square = lambda env: env[a] * env[a]  # noqa: E731
        if numpy:
            square = describe(square, Chain((Call(np.multiply, (Slot(a), Slot(a)), "*"),)))
        return square
    if form == "reciprocal":
        reciprocal = lambda env: 1.0 / env[a]  # noqa: E731
        if numpy:
            reciprocal = describe(reciprocal, Chain((Call(np.divide, (Const(1.0), Slot(a)), "/"),)))
        return reciprocal
    if form == "inverse_square":
        inverse_square = lambda env: 1.0 / (env[a] * env[a])  # noqa: E731
        if numpy:
            calls = (Call(np.multiply, (Slot(a), Slot(a)), "*"), Call(np.divide, (Const(1.0), Temp(0)), "/"))
            inverse_square = describe(inverse_square, Chain(calls))
        return inverse_square
    if form == "sqrt":
        sqrt = backend.func("sqrt")
        root = lambda env: sqrt(env[a])  # noqa: E731
        if numpy:
            root = describe(root, Chain((Call(np.sqrt, (Slot(a),)),)))
        return root
    exponent = float(record.exponent)  # type: ignore[arg-type]  # form "power" has one
    power = lambda env: backend.power(env[a], exponent)  # noqa: E731
    if numpy:  # NumpyBackend.power is np.power
        power = describe(power, Chain((Call(np.power, (Slot(a), Const(exponent))),)))
    return power


def _slice(record: SliceRecord, backend: Backend) -> StepFn:
    a, key = record.slot, record.key
    take = backend.take  # torch spells a negative step its own way
    if record.output:  # never hand out a view of the caller's array
        return lambda env: _copy(take(env[a], key))
    if backend.name == "numpy":
        return describe(lambda env: env[a][key], View(a, key))
    return lambda env: take(env[a], key)  # basic indexing: a view, no copy


def _copy(value: Any) -> Any:
    if hasattr(value, "clone"):  # torch
        return value.clone()
    return value.copy() if hasattr(value, "copy") else value


def _embed(record: EmbedRecord, backend: Backend) -> StepFn:
    a, key, shape = record.slot, record.key, record.shape
    return lambda env: backend.embed(env[a], key, shape, env[-1])


def _linalg(record: LinalgRecord, backend: Backend) -> StepFn:
    a, k = record.slot, record.k
    if backend.name == "numpy":  # the text the fused function and the generated module run (.generated)
        if record.what == "inv":
            return lambda env: linalg_inv(env[a])
        if record.what == "det":
            return lambda env: linalg_det(env[a])
        return lambda env: linalg_adj(env[a], k)
    if record.what == "det":
        return lambda env: backend.det(env[a])
    if record.what == "inv":

        def inv(env):
            try:
                return backend.inv(env[a])
            except Exception as exc:  # noqa: BLE001 - each library has its own LinAlgError
                if "singular" in str(exc).lower():
                    raise EvaluationError(f"inv: the matrix is singular ({exc})") from None
                raise

        return inv

    def adj(env):
        try:
            return backend.adj(env[a], k)
        except Exception as exc:  # noqa: BLE001 - each library has its own LinAlgError
            if "converge" in str(exc).lower():
                raise EvaluationError(f"adj: the SVD did not converge ({exc}); are the entries finite?") from None
            raise

    return adj


def _twin(record: TwinRecord, backend: Backend) -> StepFn:
    layout, slot = record.layout, record.slot
    return lambda env: write_bands(layout, env[slot])


def _factor(record: FactorRecord, backend: Backend) -> StepFn:
    name, matrix = record.name, record.matrix
    if backend.name == "torch":
        import torch

        # its checks read the values (bool, int): torch.compile (jit=True) breaks its graph here
        # either way, and said so in 20 lines of Dynamo warnings ("Graph break from Tensor.item()")
        factor = torch.compiler.disable(torch_factor)
        return lambda env: factor(name, env[matrix])
    return lambda env: cholesky_factor(env[matrix], name)  # the helper text every NumPy runner runs


def _factor_reader(record: FactorReaderRecord, backend: Backend) -> StepFn:
    what, factor = record.what, record.factor
    if what == "unused":  # a det read only by logs computed from the factor
        return lambda env: None
    torch = backend.name == "torch"
    if what == "inv":
        if torch:
            return lambda env: factor_inv(env[factor], backend)
        return lambda env: cholesky_inv(env[factor])
    log = what == "logdet"
    if torch:
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
    TwinRecord: _twin,
    FactorRecord: _factor,
    FactorReaderRecord: _factor_reader,
}
