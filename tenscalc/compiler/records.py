"""The binder's decisions per lowered op, as frozen records (issue 26: decisions as data).

:func:`.program.bind` decides, for each op at one shape signature, everything a runner
needs and keeps it in the op's record (:attr:`.lowered.Op.record`): which slots it reads,
the function's name, the exponent and the form its power takes, the slice key, the
constant's value, the Cholesky factor it reads, the term's equation, path and scale
placement (:class:`TermRecord` of a :class:`.terms.TermPlan`), the sum's parts
(:class:`SumRecord` of a :class:`.sums.SumPlan`), the parts of a sum into one buffer
(:class:`.accumulate.AccumulateRecord`), a banded step's band values (:class:`BandRecord`).
Which op kind carries which records: :data:`.program.OP_RECORDS`. The runners read the
records: the closure runner of any array library (:mod:`.closures`, one function per record
type, which builds the closure :attr:`.lowered.Op.fn` the loop runs), the NumPy source
writer (:mod:`.source`) and the float runner (:mod:`.scalar`). A record holds numbers,
slots, keys and the other modules' records, never a closure.

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

from .fused import BandNumber, BandSum, Tiles
from .sums import SumPlan
from .terms import TermPlan

__all__ = [
    "BandRecord",
    "ConstantRecord",
    "EmbedRecord",
    "FactorReaderRecord",
    "FactorRecord",
    "FuncRecord",
    "LinalgRecord",
    "PowRecord",
    "SliceRecord",
    "TERM_CORES",
    "FullSumsRecord",
    "SumRecord",
    "TermRecord",
    "TermsRecord",
    "TransposedRecord",
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
    """``inv``, ``det`` or ``adj`` (``what``; ``k``: the adjugate's order) of the matrix in ``slot``,
    which its errors name ``label`` (:func:`tenscalc.linalg.matrix_label`)."""

    what: str
    slot: int
    k: int = 0
    label: str | None = None


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


@dataclass(frozen=True)
class SumRecord:
    """A sum of the plan (an ``add`` step): its parts as bound (:class:`.sums.SumPlan`) and,
    where they tile the result (NumPy), the tiles each part is written into once (no zeros)."""

    sum: SumPlan
    tiles: Tiles | None = None


#: the forms a term's core takes (:attr:`TermRecord.core`): ``fill`` (one number everywhere),
#: ``pair`` (one kernel call on two slots), ``scaled`` (``c * x``), ``scaled pair`` (one kernel
#: call, times the factor) and ``general`` (the path's list, diagonal reads, constants, held
#: and late order-0 slots)
TERM_CORES = ("fill", "pair", "scaled", "scaled pair", "general")


@dataclass(frozen=True)
class TermRecord:
    """One einsum term at one shape: its decisions (:class:`.terms.TermPlan`: equation, path,
    Gram form, where the factor goes, diagonal reads and writes), its constant operands'
    arrays (per operand, None for a slot), and ``after``: the order-0 constants' product,
    multiplied into the result after the contraction."""

    plan: TermPlan
    constants: tuple[Any, ...] = field(repr=False)
    after: float = 1.0

    @property
    def core(self) -> str:
        """How the core is computed (:data:`TERM_CORES`): the closure runner builds that
        closure and :mod:`.descriptions` describes that one, so the two cannot disagree."""
        plan = self.plan
        if plan.fill is not None:
            return "fill"
        plain = all(op.diagonal is None and op.slot is not None for op in plan.operands)
        if not plain or self.after != 1.0:
            return "general"
        count = len(plan.operands)
        if count == 2 and plan.scale_at is None:
            return "pair"
        if count == 1 and plan.scale_at == -1 and plan.operands[0].letters == plan.target:
            return "scaled"
        if count == 2 and plan.scale_at == -1:
            return "scaled pair"
        return "general"


@dataclass(frozen=True)
class TermsRecord:
    """A product of several terms of ``shape``, each computed as its record says and added in order."""

    terms: tuple[TermRecord, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True)
class FullSumsRecord:
    """A sum of full contractions of arrays of one shape as the sum of one elementwise chain
    (for a library whose compiler fuses the chain into the sum): per term, its slots
    multiplied in order and its factor."""

    parts: tuple[tuple[tuple[int, ...], float], ...]


@dataclass(frozen=True)
class TransposedRecord:
    """A one-term matrix product computed with its axes swapped (``term``), handed on as the
    transposed view of that result."""

    term: TermRecord


@dataclass(frozen=True)
class BandRecord:
    """A banded step's band values (.banded): per band, its parts' descriptions added left to
    right (:class:`.fused.BandSum`: band ``k`` of a slot, numbers, scaled and stretched values,
    diagonal core terms with their :class:`TermRecord`), or a constant's numbers."""

    values: BandSum | BandNumber
