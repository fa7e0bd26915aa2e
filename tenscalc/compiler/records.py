"""The binder's decisions per lowered op, as frozen records (issue 26: decisions as data).

:func:`.program.bind` decides, for each op at one shape signature, everything a runner
needs and keeps it in the op's record (:attr:`.lowered.Op.record`): which slots it reads,
the function's name, the exponent and the form its power takes, the slice key, the
constant's value, the Cholesky factor it reads, the term's equation, path and scale
placement (:class:`.terms.TermPlan`), the sum's parts (:class:`.sums.SumPlan`).  The
runners read the records: the closure runner of any array library
(:mod:`.closures`, one function per record type, which builds the closure
:attr:`.lowered.Op.fn` the loop runs), the NumPy source writer (:mod:`.source`) and the
float runner (:mod:`.scalar`).  A record holds numbers, slots, keys and the other
modules' records, never a closure.

>>> import tenscalc as tc
>>> run = tc.compile(tc.parse("sin(x[1:]) .^ 2"))
>>> program = run._bind({"x": (4,)})
>>> [type(op.record).__name__ for op in program.ops]
['SliceRecord', 'FuncRecord', 'PowRecord']
>>> program.ops[0].record, program.ops[2].record  # x[1:] (a view), then the square (x * x)
(SliceRecord(slot=0, key=(slice(1, None, 1),), output=False), PowRecord(args=(2,), exponent=2, form='square'))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ConstantRecord",
    "EmbedRecord",
    "FactorReaderRecord",
    "FactorRecord",
    "FuncRecord",
    "LinalgRecord",
    "PowRecord",
    "SliceRecord",
    "TwinRecord",
]


@dataclass(frozen=True)
class ConstantRecord:
    """A constant's value at the step's shape (moved to the inputs' library and device once,
    on the first call); ``output``: handed out, so each call hands out a copy."""

    value: Any = field(repr=False)  # the NumPy array (the binder's resolver made it)
    output: bool


@dataclass(frozen=True)
class FuncRecord:
    """The elementwise function ``name`` (the language's) of slot ``slot``."""

    slot: int
    name: str


#: the forms :class:`PowRecord` takes: ``both`` (``a ^ b`` of two slots), ``same`` (``x^1``:
#: the slot itself), ``square`` (``x * x``), ``reciprocal`` (``1 / x``), ``inverse_square``
#: (``1 / (x * x)``), ``sqrt`` and ``power`` (the library's power of a number)
POW_FORMS = ("both", "same", "square", "reciprocal", "inverse_square", "sqrt", "power")


@dataclass(frozen=True)
class PowRecord:
    """A power of the slot ``args[0]``: by the slot ``args[1]`` (form ``both``) or by
    ``exponent``, computed in the ``form`` (:data:`POW_FORMS`) the binder chose for it."""

    args: tuple[int, ...]
    exponent: float | None
    form: str


@dataclass(frozen=True)
class SliceRecord:
    """``slot[key]`` (basic indexing); ``output``: handed out, so a copy (never a view of an input)."""

    slot: int
    key: tuple
    output: bool


@dataclass(frozen=True)
class EmbedRecord:
    """Zeros of ``shape`` with slot ``slot`` written at the basic index ``key``."""

    slot: int
    key: tuple
    shape: tuple[int, ...]


@dataclass(frozen=True)
class LinalgRecord:
    """``inv``, ``det`` or ``adj`` (``what``; ``k``: the adjugate's order) of the matrix in ``slot``."""

    what: str
    slot: int
    k: int = 0


@dataclass(frozen=True)
class TwinRecord:
    """The dense array of the banded slot ``slot``, its bands laid out by ``layout`` (.banded)."""

    slot: int
    layout: Any = field(repr=False)


@dataclass(frozen=True)
class FactorRecord:
    """The Cholesky factor of the declared positive-definite matrix ``name`` in slot ``matrix``."""

    name: str
    matrix: int


@dataclass(frozen=True)
class FactorReaderRecord:
    """``inv``, ``det`` or ``logdet`` (``what``; ``unused``: a det only its logs read, not
    computed) of a matrix from its Cholesky factor in slot ``factor`` (.cholesky)."""

    what: str
    factor: int
