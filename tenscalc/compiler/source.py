"""The compiler's program as Python source: what ``tc.to_python(..., shapes=...)`` writes.

The plan of :mod:`.plan` is bound for the given shapes by :func:`.program.bind`, as
``tc.compile`` binds it (squares folded, shared factors taken out, shared pairs
hoisted, diagonal cores, transposed layouts, bands, tiled sums, Cholesky factors),
and the bound program is written op by op from the binder's own records, deciding
nothing again: each step as bound (:class:`.program.BoundStep`), each einsum term's
record (:class:`.terms.TermPlan`: its path, Gram form and factor placement), each
pairwise contraction's layout as :mod:`.kernels` lays it out (``matmul`` / broadcast
``multiply`` with its permutations and reshapes spelled out), and each op's releases.
The banded steps and tiled sums are written with the fused function's writer
(:func:`.fused.band_tuple`, :func:`.fused.tiles_lines`): a banded Hessian is a tuple
of band vectors until its dense value is written once, as in ``tc.compile``; an
elementwise step the binder describes as a :class:`.fused.Chain` is written from that
description (:class:`.fused.ChainWriter`).  ``tc.compile``'s fused function writes its
ops with the same writer (:class:`FusedOpSource`).  The generated module needs NumPy only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import cast

import numpy as np

from ..adjugate import ADJUGATE_SOURCE
from ..errors import TensCalcError
from ..printing.text import slice_text  # the language writes slices as Python indexes them
from . import kernels
from .accumulate import ACCUMULATE_SOURCE, Dense, Part, block_rows, part_lists
from .backends import letters
from .banded import WRITE_BANDS_SOURCE
from .fused import BandSum, Chain, ChainWriter, Spelling, Tiles, band_tuple, tiles_lines
from .generated import (
    ALIASES,
    CHOLESKY_HELPER,
    LAPACK_HELPER,
    LINALG_ERROR,
    LINALG_HELPER,
    NUMBERS_HELPER,
    RESULT_HELPER,
    SYMMETRIC_HELPER,
    dtype_line,
    input_lines,
    label_literal,
    python_names,
    read_aliases_only,
    shield_function_name,
    signature,
)
from .kernels import (
    COLUMN_OUTER_SOURCE,
    GRAM_SOURCE,
    ContractionLayout,
    GramPattern,
    PairLayout,
    is_identity_permutation,
)
from .lowered import Op
from .numpy_names import numpy_call  # the generated code's spelling of each function
from .plan import Step, Term
from .program import Program, ShapeResolver, variable_orders
from .records import PowRecord
from .sums import EMBED_HELPER, PARTS_HELPER, SumPlan
from .terms import TermPlan

# helpers the generated module defines when it uses them (NumPy only)
HELPERS = {
    "_write_diagonal": '''
def _write_diagonal(core, eq, shape):
    """A zero array of ``shape`` with ``core`` written on the diagonal ``eq`` reads."""
    full = _np.zeros(shape, dtype=_np.result_type(core, 0.0))
    _np.einsum(eq, full)[...] = core
    return full
''',
    "_embed": EMBED_HELPER,  # zeros with a part at its slice (.sums)
    "_add_parts": PARTS_HELPER,  # a sum's embedded and diagonal parts into one buffer (.sums)
    "_gram": GRAM_SOURCE,  # the Gram kernel's own text (.kernels)
    "_outer_columns": COLUMN_OUTER_SOURCE,  # the long-by-short outer product's own text (.kernels)
    "_lapack": LAPACK_HELPER,
    # the texts tc.compile's closures run too (.generated), errors included: inv, det and adj,
    # the check of a declared symmetric matrix, the Cholesky factor of a declared pd one
    "_error": LINALG_ERROR,
    "_numbers": NUMBERS_HELPER,  # every input made an array of numbers, as every runner does
    "_linalg": LINALG_HELPER,
    "_symmetric": SYMMETRIC_HELPER,
    "_cholesky": CHOLESKY_HELPER,
    # banded steps (:mod:`.banded`): a slot holds a tuple of band values, numbers or vectors
    "_stretch": '''
def _stretch(value, first, stop, every):
    """Entries ``first:stop:every`` of a band value; a number stays a number."""
    return value if _np.ndim(value) == 0 else value[first:stop:every]
''',
    "_write_bands": WRITE_BANDS_SOURCE,  # the dense matrix of bands (.banded, the shape-free module's too)
    "_adjugate": "\n" + ADJUGATE_SOURCE,
    "_accumulate": ACCUMULATE_SOURCE,
}


#: the error class of a module without :data:`LINALG_ERROR` (which tries tenscalc's own, a
#: ValueError too): the module needs NumPy only
PLAIN_ERROR = "\n_EvaluationError = ValueError  # the class of the errors this module raises\n"

#: the helpers each helper calls (defined with it)
REQUIRES = {
    "_linalg": ("_error", "_lapack"),
    "_symmetric": ("_error",),
    "_cholesky": ("_error", "_lapack", "_linalg", "_symmetric"),
    "_bands": ("_write_bands",),  # the shape-free module's bands (.banded.BAND_SOURCE)
}


def helper_texts(helpers: Iterable[str], texts: Mapping[str, str] | None = None) -> list[str]:
    """The texts (from ``texts``, :data:`HELPERS` by default) of ``helpers`` and of the
    helpers they call (:data:`REQUIRES`), each once.

    >>> [name for name, text in HELPERS.items() if text in helper_texts(["_symmetric"])]
    ['_error', '_symmetric']
    """
    names = set(helpers)
    for name in list(names):
        names.update(REQUIRES.get(name, ()))
    texts = HELPERS if texts is None else texts
    found = [texts[name] for name in sorted(names)]
    if "_numbers" in names and "_error" not in names:  # a module of no linalg imports nothing of tenscalc
        found.insert(0, PLAIN_ERROR)
    return found


def literal(value: float) -> str:
    """Python source for one number."""
    value = float(value)
    if math.isnan(value):
        return "_np.nan"
    if math.isinf(value):
        return "_np.inf" if value > 0 else "(-_np.inf)"
    return repr(value)


def array_literal(value: np.ndarray) -> str:
    """Python source for a constant array: ``_np.full`` when it is one number."""
    value = np.asarray(value, dtype=float)
    if value.ndim == 0:
        return literal(value)
    flat = value.ravel()
    if flat.size == 0:  # a constant with an empty axis
        return f"_np.zeros({value.shape!r})"
    if np.all(flat == flat[0]) or (np.isnan(flat).all()):
        return f"_np.full({value.shape!r}, {literal(flat[0])})"
    nonzero = np.flatnonzero(flat)
    if len(nonzero) * 4 <= flat.size:  # a delta's structure: its entries, not its zeros
        at = ", ".join(str(int(k)) for k in nonzero)
        entries = ", ".join(literal(v) for v in flat[nonzero])
        return f"_np.bincount([{at}], weights=[{entries}], minlength={flat.size}).reshape({value.shape!r})"
    rows = ", ".join(literal(v) for v in flat)
    return f"_np.array([{rows}]).reshape({value.shape!r})"


class ProgramSource:
    """Writes the statements of the program :func:`.program.bind` bound, op by op.

    ``bound``: the program bound for the shapes; ``resolver``: a resolver of the same
    shapes that makes the constants' values.  Each op is written from the binder's own
    records, decided nothing again: the step as bound (:class:`.program.BoundStep`:
    shared pairs hoisted, diagonal cores, transposed layouts, Cholesky readers), each
    einsum term's record (:class:`.terms.TermPlan`: path, Gram form, factor placement),
    the banded steps, their dense twins and tiled sums (with the fused function's
    writer, :func:`.fused.band_tuple` and :func:`.fused.tiles_lines`), and the ops'
    releases, so the module computes what ``tc.compile`` runs, with its peak memory.
    ``pd``: the slots of the inputs declared positive definite, with their names.
    """

    def __init__(self, bound: Program, resolver: ShapeResolver, pd: Mapping[int, str] | None = None):
        assert bound.bound_plan is not None, "a program bound from a plan"
        self.plan = bound.bound_plan
        self.bound = bound
        self.ops = {op.slot: op for op in bound.ops}
        self.resolver = resolver
        self.records: list[TermPlan] = []  # every term's record, in the order written
        self.pairs: list[PairLayout] = []  # every pairwise contraction's layout, in the order written
        self.pd = dict(pd or {})
        # the dense shape of each plan slot, and the array each slot holds as bound
        self.dense = bound.dense
        self.shapes: list[tuple[int, ...]] = bound.held
        self.lines: list[str] = []
        self.constants: list[str] = []  # module-level lines
        self.helpers: set[str] = set()
        self.names: dict[int, str] = {}
        self._temp = 0
        self.layouts = bound.layouts
        # band slot -> its dense twin's slot; slot -> the tiles of a sum written tile by tile
        self.twins = {op.reads[0]: op.slot for op in bound.ops if op.kind == "twin"}
        self.tiled = {op.slot: op.inline for op in bound.ops if op.kind == "add" and isinstance(op.inline, Tiles)}
        self.bands: dict[int, str] = {}  # banded slot -> the name of its tuple of band values
        self.spelling = Spelling(
            slot=lambda slot: self.bands.get(slot) or self.names[slot],
            key=repr,  # basic indexes: slices, tuples of slices and integers, each its own source
            number=self._band_number,
            stretch="_stretch",
            multiply="_np.multiply",
            # a band's core term: written from the record its op holds (.banded)
            term=lambda band: self._written_term(band.record, band.term, band.shape),
        )

    @property
    def chains(self) -> ChainWriter:
        """The writer of an elementwise chain, with this source's names."""
        return ChainWriter(self.shapes, self._arg, lambda ufunc: f"_np.{ufunc.__name__}", literal)

    # ------------------------------------------------------------------ plumbing
    def _fresh(self) -> str:
        self._temp += 1
        return f"_p{self._temp}"

    def _constant(self, value: np.ndarray) -> str:
        text = array_literal(value)
        if not text.startswith(("_np.array(", "_np.full(", "_np.bincount(")):
            return text  # a plain number
        name = f"_K{len(self.constants)}"
        self.constants.append(f"{name} = {text}")
        return name

    def write(self, input_names: Mapping[int, str]) -> list[str]:
        """The function body computing the bound program from the inputs (slot -> name)."""
        self.names.update(input_names)
        for op in self.bound.ops:
            lines, dead = self.statements(op)
            self.lines += lines
            # what the compiled program releases after this op is deleted here too (and the
            # op's own path intermediates), so the function's peak memory is the program's
            for slot in op.release:
                dead += [names.pop(slot) for names in (self.names, self.bands) if slot in names]
            if dead:
                self.lines.append("del " + ", ".join(dict.fromkeys(dead)))
        return self.lines

    def statements(self, op: Op) -> tuple[list[str], list[str]]:
        """The statements of one op (naming its slot's value :meth:`slot_name`), and the
        names of the path intermediates they leave, dead after the op: what both the
        module ``tc.to_python(shapes=)`` and ``tc.compile``'s fused function
        (:func:`.fused.fuse`) write for the op."""
        start, temps = len(self.lines), self._temp
        self._op(op)
        lines = self.lines[start:]
        del self.lines[start:]
        return _early_deletes(lines, [f"_p{k}" for k in range(temps + 1, self._temp + 1)])

    def slot_name(self, slot: int) -> str:
        """The name the source gives the value of ``slot`` an op computes."""
        return f"_s{slot}"

    def _op(self, op: Op) -> None:
        """The statement(s) of one op, naming its slot's value (:data:`OP_WRITERS`)."""
        OP_WRITERS[op.kind](self, op, self.slot_name(op.slot))

    def _factor_op(self, op: Op, name: str) -> None:
        """A Cholesky factor, before its first reader, as bind runs it (.generated.CHOLESKY_HELPER)."""
        (matrix,) = op.reads
        variable = self.pd.get(matrix) or next(n for n, slot in self.plan.inputs.items() if slot == matrix)
        factor = self.factor_name(op.slot, matrix)
        self.lines.append(f"{factor} = _cholesky({self._arg(matrix)}, {variable!r})")
        self.helpers.add("_cholesky")
        self.names[op.slot] = factor

    def _twin_op(self, op: Op, name: str) -> None:
        """The dense array of a banded slot, for its dense readers."""
        self.lines.append(f"{name} = {self._dense_bands(op.reads[0])}")
        self.names[op.slot] = name

    def _step_op(self, op: Op, name: str) -> None:
        """An op computing a step of the plan as bound (:class:`.program.BoundStep`): a pair
        several products share and a sum into one buffer are products."""
        bound = self.bound.steps[op.slot]
        if op.kind in CHAIN_KINDS and isinstance(op.inline, Chain):
            # the binder's description of the elementwise work, spelled by the fused function's
            # writer (without its out= buffers: the module takes any dtype)
            self.lines += self.chains.lines(name, op.inline, [], reuse=False)
            self.names[op.slot] = name
            return
        if bound.factor is not None:
            matrix, what = bound.factor
            if what == "unused":  # a det whose log reads the factor: not computed
                return
            text = self._from_factor(op.reads[0], what)
        elif op.slot in self.tiled and self.tiled[op.slot].shape == bound.shape:
            self._tiles(op.slot, name)
            return
        elif bound.parts is not None:  # the binder adds this sum's parts into one buffer
            text = self._accumulate(bound.parts, bound.shape, bound.take)
        else:
            # whether the binder bound it as a result handed out as it is (a slice or constant: copied)
            text = SOURCE_RULES[bound.step.kind](self, bound.step, bound.shape, bound.output)
        if bound.transposed:  # computed with its axes swapped, handed on as the transposed view
            text = f"{_atom(text)}.T"
        self.lines.append(f"{name} = {text}")
        self.names[op.slot] = name

    def _arg(self, slot: int) -> str:
        return self.names[slot]

    def result(self, slot: int) -> str:
        """A result's dense value: a banded output's dense twin or its bands written into
        zeros, a diagonal output's core written on its diagonal, as compile hands them out."""
        twin = self.twins.get(slot)
        if twin is not None and twin in self.names:
            return self.names[twin]
        if slot in self.bands:
            return self._dense_bands(slot)
        bound = self.bound.steps.get(slot)
        if bound is not None and bound.pattern is not None:
            self.helpers.add("_write_diagonal")
            eq = letters(bound.pattern) + "->" + letters(tuple(dict.fromkeys(bound.pattern)))
            return f"_write_diagonal({self.names[slot]}, {eq!r}, {self.dense[slot]!r})"
        return self.names[slot]

    # ------------------------------------------------------------------ bound records
    def _banded(self, op: Op, name: str) -> None:
        """``name = `` the band values of a banded step."""
        inline = op.inline
        if isinstance(inline, BandSum):
            text = band_tuple(inline, self.spelling)
            if "_stretch(" in text:
                self.helpers.add("_stretch")
        else:  # a banded constant: its band numbers
            text = self._band_number(inline.value)
        self.lines.append(f"{name} = {text}")
        self.bands[op.slot] = name

    def _dense_bands(self, slot: int) -> str:
        self.helpers.add("_write_bands")
        layout = self.layouts[slot]
        return f"_write_bands({self.bands[slot]}, {layout.shape!r}, {layout.keys!r}, {layout.disjoint!r})"

    def _band_number(self, value) -> str:
        """A number of a band (or a constant's tuple of them) as source."""
        if isinstance(value, tuple):
            return f"({''.join(self._band_number(v) + ', ' for v in value)})"
        if isinstance(value, (int, float)):
            return literal(value)
        return self._constant(np.asarray(value))

    def _tiles(self, slot: int, name: str) -> None:
        """``name = `` a sum of parts tiling an empty array, each written once (no zeros)."""
        tiles = self.tiled[slot]
        parts = ", ".join(dict.fromkeys(self.names[slot] for slot, _, _ in tiles.parts))
        allocate = f"_np.empty({tiles.shape!r}, dtype=_np.result_type({parts}))"
        shapes = lambda slot: self.shapes[slot]  # noqa: E731
        self.lines += tiles_lines(tiles, name, allocate, set(), self.spelling, shapes)
        self.names[slot] = name

    def factor_name(self, slot: int, matrix: int) -> str:
        """The name of the Cholesky factor (op slot ``slot``) of the input in slot ``matrix``."""
        return f"_f{matrix}"

    def _from_factor(self, slot: int, what: str) -> str:
        """``inv``, ``det`` or ``logdet`` of a declared positive-definite input from its
        Cholesky factor, the value of slot ``slot`` (written before its first reader)."""
        factor = self._arg(slot)
        if what == "inv":  # the factor carries the matrix: the plan may release the input after the factor
            return f"_cho_inv({factor})"
        return f"_cho_det({factor}, {what == 'logdet'})"

    # ------------------------------------------------------------------ steps
    def _constant_step(self, step: Step, shape, is_output: bool) -> str:
        text = self._constant(self.resolver.constant(step.node, shape))
        return f"_np.array({text})" if is_output else text  # never hand out the module's own array

    def _func(self, step: Step, shape, is_output: bool) -> str:
        # a function NumPy runs as no ufunc (a registered one): the binder describes no chain
        (a,) = step.args
        return numpy_call(step.data, self._arg(a))

    def _pow(self, step: Step, shape, is_output: bool) -> str:
        # every power is described as a chain (closures._pow), written from that description in
        # _step_op, but x^1: the array itself, as the binder's record says (records.PowRecord)
        record = self.ops[step.index].record
        assert isinstance(record, PowRecord) and record.form == "same", "every other power is a Chain"
        return self._arg(record.args[0])

    def _slice(self, step: Step, shape, is_output: bool) -> str:
        view = f"{self._arg(step.args[0])}[{slice_text(step.data)}]"
        return f"_np.array({view})" if is_output else view  # never hand out a view of an input

    def _embed(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.add("_embed")
        return f"_embed({self._arg(step.args[0])}, _np.s_[{slice_text(step.data[0])}], {shape!r})"

    # inv, det and adj: the text tc.compile's closures run too (.generated.LINALG_HELPER), errors included
    def _inv(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.update(("_linalg", "_lapack"))
        return f"_inv({self._arg(step.args[0])}, {label_literal(step.node)})"

    def _det(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.update(("_linalg", "_lapack"))
        return f"_det({self._arg(step.args[0])}, {label_literal(step.node)})"

    def _adj(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.update(("_linalg", "_adjugate", "_lapack"))
        return f"_adj({self._arg(step.args[0])}, {step.data}, {label_literal(step.node)})"

    def _add(self, step: Step, shape, is_output: bool) -> str:
        record = self.bound.steps[step.index].sum  # every sum the binder binds has its record (.sums)
        assert record is not None and record.shape == tuple(shape), "program._bind_add records every sum"
        return self._sum(record)

    def _sum(self, record: SumPlan) -> str:
        """A sum as the binder bound it (:class:`.sums.SumPlan`), deciding nothing: the
        buffer it starts from (the chain's new array, a slot as it is, the first embedded
        part in zeros, or the number over the shape), then the embedded and diagonal parts
        added into it by ``_add_parts``, in place only where the record's ``take`` says."""
        shape = record.shape
        if record.chain is not None:
            start = self._fresh()
            self.lines += self.chains.lines(start, record.chain, [], reuse=False)
        elif record.start == "slot":
            start = self._arg(next(p.slot for p in record.parts if p.how in ("dense", "broadcast")))
        elif record.start == "embedded":
            first = next(p for p in record.parts if p.how == "embedded")
            self.helpers.add("_embed")
            scaled = self._arg(first.slot) if first.coef == 1 else f"{literal(first.coef)} * {self._arg(first.slot)}"
            start = f"_embed({scaled}, {key_text(first.key)}, {shape!r})"
        else:
            start = f"_np.full({shape!r}, {literal(record.scalar)})"
        if not record.added:
            return f"_np.broadcast_to({start}, {shape!r})" if record.broadcast else start
        self.helpers.add("_add_parts")
        parts = []
        for part in record.added:
            if part.how == "embedded":
                parts.append(f"({self._arg(part.slot)}, {key_text(part.key)}, {literal(part.coef)}, None)")
            else:
                parts.append(f"(None, (), {literal(part.coef)}, {part.eq!r})")
        return f"_add_parts({start}, {record.take!r}, {shape!r}, ({''.join(p + ', ' for p in parts)}))"

    def _product(self, step: Step, shape, is_output: bool) -> str:
        terms = cast("tuple[Term, ...]", step.data)  # a sum the binder adds term by term (else: _accumulate)
        return " + ".join(self._term(term, shape) for term in terms)

    def _accumulate(self, found: Sequence[Part], shape: tuple[int, ...], take: bool = False) -> str:
        """A sum of terms written into one buffer, as the compiled program adds it
        (:mod:`.accumulate`: the binder's parts, the same run-time function); ``take``: the
        binder's decision that the first dense term's array is the buffer (else a copy)."""

        def held(term: Term, term_shape: tuple[int, ...]) -> str:
            name = self._fresh()
            self.lines.append(f"{name} = {self._term(term, term_shape)}")
            return name

        lists = part_lists(found, shape, held, self._arg, literal)
        buf = "None"
        for k, p in enumerate(p for p in found if isinstance(p, Dense)):
            text = self._term(p.term, shape)
            if k == 0:
                buf = self._fresh()
                self.lines.append(f"{buf} = {text if take else f'_np.array({text})'}")
            else:
                self.lines.append(f"{buf} = _add_into({buf}, {text})")
        self.helpers.add("_accumulate")
        if lists is None:
            return buf
        return f"_accumulate({buf}, {shape!r}, {lists}, {block_rows(shape)})"

    # ------------------------------------------------------------------ one einsum
    def _term(self, term: Term, shape: tuple[int, ...], shapes: Sequence[tuple[int, ...]] | None = None) -> str:
        """The value of one einsum term, written from the record the binder bound it with
        (its path, Gram form, factor placement); ``shapes``: the slots' arrays as the
        binder read them (those the slots hold, unless given)."""
        shapes = self.shapes if shapes is None else shapes
        key = (term, shape, tuple([shapes[slot] for slot, _ in term.operands]), True)
        record = self.bound.terms.get(key)
        if record is None:  # the writer writes what the binder bound, nothing else
            raise AssertionError(f"the binder bound no record of the term {term} at shape {shape}")
        return self._written_term(record, term, shape)

    def _written_term(self, record: TermPlan, term: Term, shape: tuple[int, ...]) -> str:
        """The value of ``term`` at ``shape``, written from ``record`` (.terms.TermPlan)."""
        self.records.append(record)
        diagonal_eq = letters(record.out) + "->" + letters(record.unique)
        if record.fill is not None:
            if record.diagonal_out and record.fill != 0:
                self.helpers.add("_write_diagonal")
                full = f"_np.full({record.unique_shape!r}, {literal(record.fill)})"
                return f"_write_diagonal({full}, {diagonal_eq!r}, {shape!r})"
            return f"_np.full({shape!r}, {literal(record.fill)})"
        texts = []
        for op in record.operands:
            if op.constant is None:
                text = self._arg(cast("int", op.slot))
            else:
                text = self._constant(self.resolver.constant(term.constants[op.constant][0], op.shape))
                if not op.letters:  # a number: as a 0-d array it takes part in the contraction like the others
                    text = f"_np.asarray({text})"
            if op.diagonal is not None:
                text = f"_np.einsum({op.diagonal!r}, {text})"
            texts.append(text)
        factor, scale_at = record.factor, record.scale_at
        if record.gram is not None:
            core = self._gram(record.gram, [op.letters for op in record.operands], texts, factor)
        else:
            if scale_at is not None and scale_at >= 0:
                texts[scale_at] = f"{_atom(texts[scale_at])} * {literal(factor)}"
            assert record.layout is not None, "a NumPy term's record lays its contraction out"
            core = self._contraction(record.layout, texts)
            if scale_at == -1:
                core = f"{_atom(core)} * {literal(factor)}"
        after = 1.0  # the order-0 constants, multiplied in after the contraction as the binder does
        for number in record.scalars:
            after = after * float(self.resolver.constant(term.constants[number][0], ()))
        if after != 1.0:
            core = f"{_atom(core)} * {literal(after)}"
        if record.broadcast:  # along output letters no operand has
            index = ", ".join(":" if letter in record.target else "None" for letter in record.unique)
            core = f"_np.broadcast_to(({core})[{index}], {record.unique_shape!r})"
        if record.diagonal_out:
            self.helpers.add("_write_diagonal")
            core = f"_write_diagonal({core}, {diagonal_eq!r}, {shape!r})"
        return core

    def _gram(self, pattern: GramPattern, specs: list[tuple[int, ...]], texts: list[str], factor: float) -> str:
        p, q, vectors, axis = pattern
        self.helpers.add("_gram")
        x = texts[p] if axis == 0 else f"{texts[p]}.T"
        scale = " * ".join([literal(factor)] + [texts[m] for m in vectors if len(specs[m]) == 0])
        lines = [texts[m] for m in vectors if len(specs[m]) == 1]
        d = " * ".join(lines) if lines else "None"
        return f"_gram({x}, {d}, {scale})"

    def _contraction(self, layout: ContractionLayout, texts: list[str]) -> str:
        """The contraction of ``texts`` as matmul/multiply source, step by step as the
        kernels of the same ``layout`` (:mod:`.kernels`) compute it: the same pairs, in
        the same orientation, laid out the same way."""
        sizes = dict(layout.sizes)
        values = list(texts)
        for number, step in enumerate(layout.steps):
            picked = [values.pop(p) for p in step.positions]
            if step.pair is None:
                text = _reduce(picked[0], step.spec, step.drop)[0]
            else:
                # positions are popped in reverse: (later, earlier); a swapped pair is taken (earlier, later)
                first, second = (picked[1], picked[0]) if step.pair.swapped else (picked[0], picked[1])
                text = _pair(step.pair, sizes, first, second)
                if text.startswith("_outer_columns("):
                    self.helpers.add("_outer_columns")
                self.pairs.append(step.pair)
            if number < len(layout.steps) - 1:  # an intermediate of the path: its own statement
                name = self._fresh()
                self.lines.append(f"{name} = {text}")
                text = name
            values.append(text)
        (text,) = values
        target = layout.target
        text, final = _reduce(text, layout.final, "".join(c for c in layout.final if c not in target))
        perm = tuple(final.index(c) for c in target)
        if not is_identity_permutation(perm):
            text = f"{_atom(text)}.transpose({perm!r})"
        return text


class _EnvNames(dict):
    """slot -> ``env[slot]``, for any slot."""

    def __missing__(self, slot: int) -> str:
        return f"env[{slot}]"

    def get(self, slot, default=None):  # type: ignore[override]
        return self[slot]


class FusedOpSource(ProgramSource):
    """The op writer as ``tc.compile``'s fused function (:func:`.fused.fuse`) uses it: the
    same statements as the module's, with each slot's value in ``env[slot]``, constant
    arrays and helpers as names in the function's ``namespace`` (its inputs are float64:
    a sum of terms is added into the first term's buffer, :meth:`terms_statements`).
    """

    def __init__(self, bound: Program, resolver: ShapeResolver, namespace: dict):
        super().__init__(bound, resolver)
        self.namespace = namespace
        # every slot's value, a banded slot's tuple of band values too, is env[slot]
        self.names, self.bands = _EnvNames(), _EnvNames()

    def slot_name(self, slot: int) -> str:
        return f"env[{slot}]"

    def _arg(self, slot: int) -> str:
        return f"env[{slot}]"

    def factor_name(self, slot: int, matrix: int) -> str:
        return f"env[{slot}]"

    def _constant(self, value: np.ndarray) -> str:
        value = np.asarray(value)
        if value.ndim == 0:  # a number, as the module writes it
            return literal(value)
        name = f"_K{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def terms_statements(self, op: Op, fresh: bool) -> list[str]:
        """``env[slot] = `` the sum of a product's terms, each term as the module writes it,
        added into the running total's buffer once it is one this function allocated
        (``fresh``: the first term's array is); each term's path intermediates deleted
        after it, as its closure drops them."""
        bound = self.bound.steps[op.slot]
        terms = cast("tuple[Term, ...]", bound.step.data)
        self.namespace.setdefault("_u_add", np.add)  # the name the fused writer gives np.add
        lines = []
        for k, term in enumerate(terms):
            start, temps = len(self.lines), self._temp
            text = self._term(term, bound.shape)
            lines += self.lines[start:]
            del self.lines[start:]
            out = ", out=_s" if fresh or k > 1 else ""
            lines.append(f"_s = {text}" if k == 0 else f"_s = _u_add(_s, {text}{out})")
            if self._temp > temps:
                lines.append("del " + ", ".join(f"_p{j}" for j in range(temps + 1, self._temp + 1)))
        return [*lines, f"env[{op.slot}] = _s", "del _s"]

    def define_helpers(self) -> None:
        """Define the helpers the written statements call in the namespace."""
        exec(ALIASES, self.namespace)  # noqa: S102 - the module's own aliases
        for text in helper_texts(self.helpers):
            exec(compile(text, "<tenscalc helper>", "exec"), self.namespace)  # noqa: S102


def _early_deletes(lines: list[str], temps: list[str]) -> tuple[list[str], list[str]]:
    """``lines`` with each intermediate in ``temps`` deleted after the statement that reads it
    last, as a closure's intermediate dies when the next NumPy call has read it; those the
    last statement reads are returned, to be deleted after it."""
    last: dict[str, int] = {}
    for k, line in enumerate(lines):
        for name in re.findall(r"\b_p\d+\b", line.split(" = ", 1)[1] if " = " in line else line):
            last[name] = k
    out: list[str] = []
    for k, line in enumerate(lines):
        out.append(line)
        dead = [name for name in temps if last.get(name) == k]
        if dead and k < len(lines) - 1:
            out.append("del " + ", ".join(dead))
    return out, [name for name in temps if last.get(name, len(lines) - 1) == len(lines) - 1]


def key_text(key: tuple) -> str:
    """A basic index (integers and slices) as source: ``_np.s_[...]``.

    >>> key_text((slice(1, None, None), 0, slice(None, -1, 2)))
    '_np.s_[1:, 0, :-1:2]'
    """

    def one(item: int | slice) -> str:
        if isinstance(item, slice):
            bounds = ["" if b is None else str(b) for b in (item.start, item.stop)]
            return ":".join(bounds if item.step is None else [*bounds, str(item.step)])
        return str(item)

    return f"_np.s_[{', '.join(one(item) for item in key)}]" if key else "_np.s_[()]"


def _atom(text: str) -> str:
    """``text`` safe to follow with ``.method`` or an operator."""
    return text if re.fullmatch(r"[A-Za-z_]\w*(\[\d+\])?", text) else f"({text})"  # a name, or env[slot]


def _reduce(text: str, spec: str, drop: str) -> tuple[str, str]:
    if not drop:
        return text, spec
    axes = tuple(k for k, c in enumerate(spec) if c in drop)
    rest = "".join(c for c in spec if c not in drop)
    return f"{_atom(text)}.sum(axis={axes!r})", rest


def _pair(layout: PairLayout, sizes: dict[str, int], xa: str, xb: str) -> str:
    """Source contracting ``xa`` (labels ``layout.a``) and ``xb`` (``layout.b``) as
    :func:`.kernels.layout_kernel` does it (a ``matmul`` over the inner letters, else a
    broadcast ``multiply``), with its permutations and reshapes spelled out."""
    a2, b2 = layout.reduced
    xa = _reduce(xa, layout.a, layout.drop_a)[0]
    xb = _reduce(xb, layout.b, layout.drop_b)[0]
    batch, inner, left, right = list(layout.batch), list(layout.inner), list(layout.left), list(layout.right)
    out_shape = tuple(sizes[c] for c in layout.result)

    def prepared(x: str, spec: str, order: list[str], shape: tuple[int, ...]) -> str:
        perm = tuple(spec.index(c) for c in order)
        if not is_identity_permutation(perm):
            x = f"{_atom(x)}.transpose({perm!r})"
        if tuple(sizes[c] for c in order) != shape:
            x = f"{_atom(x)}.reshape({shape!r})"
        return x

    # the branches of kernels.layout_kernel, in its order: the same NumPy call on the same operands
    nl = math.prod(sizes[c] for c in left)
    nr = math.prod(sizes[c] for c in right)
    if inner:
        nb = math.prod(sizes[c] for c in batch)
        nk = math.prod(sizes[c] for c in inner)
        if not batch and not left and not right:  # a full inner product: one np.dot of two vectors
            vector_a = prepared(xa, a2, inner, (nk,))
            return f"_np.dot({vector_a}, {prepared(xb, b2, inner, (nk,))})"
        # always 2-D without a batch (see kernels.layout_kernel: BLAS gemv stalls on shared cores)
        shape_a, shape_b = ((nb, nl, nk), (nb, nk, nr)) if batch else ((nl, nk), (nk, nr))
        factor_a = prepared(xa, a2, batch + left + inner, shape_a)
        factor_b = prepared(xb, b2, batch + inner + right, shape_b)
        if not batch and min(nl, nr) == 1 and nl * nk * nr >= kernels.MATVEC_EINSUM_SIZE:
            product = f"_np.einsum('lk,kr->lr', {factor_a}, {factor_b})"
        else:
            product = f"{_atom(factor_a)} @ {_atom(factor_b)}"
        if (shape_a[:-1] + shape_b[-1:]) != out_shape:
            product = f"({product}).reshape({out_shape!r})"
        return product
    xa = prepared(xa, a2, batch + left, tuple(sizes[c] for c in batch + left))
    xb = prepared(xb, b2, batch + right, tuple(sizes[c] for c in batch + right))
    if not batch and left and right and nr <= kernels.COLUMN_OUTER_MAX and nl >= kernels.COLUMN_OUTER_MIN_ROWS:
        # a long x and a short y: one column of the result at a time (kernels._column_outer)
        return f"_outer_columns({xa}, {xb}, {tuple(sizes[c] for c in left)!r}, {nr}, {out_shape!r})"
    if right:
        xa = f"{_atom(xa)}[{', '.join([':'] * (len(batch) + len(left)) + ['None'] * len(right))}]"
    if left:
        xb = f"{_atom(xb)}[{', '.join([':'] * len(batch) + ['None'] * len(left) + [':'] * len(right))}]"
    return f"{_atom(xa)} * {_atom(xb)}"


#: the step kinds whose op the binder describes as an elementwise :class:`.fused.Chain` where it
#: can (a function, a power, a sum of same-shape arrays): written from that description
CHAIN_KINDS = frozenset({"func", "pow", "add"})

#: op kind -> the method writing the op's statements: the binder's own ops (a Cholesky factor,
#: a banded step, its dense twin), and the ops computing a step of the plan as bound (the step
#: kinds, a pair several products share, a sum into one buffer), each step by :data:`SOURCE_RULES`
OP_WRITERS: dict[str, Callable[[ProgramSource, Op, str], None]] = {
    "cholesky": ProgramSource._factor_op,
    "band": ProgramSource._banded,
    "twin": ProgramSource._twin_op,
    "pair": ProgramSource._step_op,
    "accumulate": ProgramSource._step_op,
}

#: step kind -> the method writing the step's value as Python source
SOURCE_RULES: dict[str, Callable[[ProgramSource, Step, tuple[int, ...], bool], str]] = {
    "constant": ProgramSource._constant_step,
    "func": ProgramSource._func,
    "pow": ProgramSource._pow,
    "inv": ProgramSource._inv,
    "det": ProgramSource._det,
    "adj": ProgramSource._adj,
    "add": ProgramSource._add,
    "product": ProgramSource._product,
    "slice": ProgramSource._slice,
    "embed": ProgramSource._embed,
}
OP_WRITERS.update(dict.fromkeys(SOURCE_RULES, ProgramSource._step_op))


def program_source(
    roots: Sequence,
    name: str,
    shapes: Mapping[str, tuple[int, ...]],
    single: bool,
    header: str,
    symmetric: Mapping[str, str] | None = None,
    pd: frozenset[str] = frozenset(),
) -> str:
    """The module source of ``name(**arrays)`` computing ``roots`` at ``shapes``; the
    variables in ``symmetric`` (name -> what they are declared) are checked on entry, the
    ``inv`` and ``det`` of those in ``pd`` read one Cholesky factor."""
    symmetric = symmetric or {}
    from ..core.axes import axis_graph
    from .backends import get_backend
    from .given_shapes import lengths
    from .plan import build_plan
    from .program import bind

    plan = build_plan(list(roots))
    graphs = [axis_graph(roots[0] if len(roots) == 1 else tuple(roots))]  # one graph: shared nodes once
    orders = variable_orders(graphs)
    params = sorted(orders)
    names = python_names(params)  # variable -> its Python name (a keyword renamed)
    missing = [p for p in params if p not in shapes]
    if missing:
        raise TensCalcError(f"to_python: no shape given for {', '.join(missing)}")
    fixed = {p: lengths(p, shapes[p]) for p in params}
    for p in params:
        if len(fixed[p]) != orders[p]:
            raise TensCalcError(f"to_python: '{p}' has order {orders[p]} but the shape given is {fixed[p]}")
    try:
        resolver = ShapeResolver(graphs, fixed)
    except Exception as exc:  # the shapes disagree with each other: say so now, not in the code
        raise TensCalcError(f"to_python: the shapes do not fit the expressions: {exc}") from None
    # the plan as compile binds it for these shapes (squares folded, X (P + Q) factored, banded
    # steps and tiled sums chosen): an estimate's binding, which allocates nothing
    planner = ShapeResolver(graphs, fixed, estimate=True)
    bound = bind(plan, planner, get_backend("numpy"), pd)
    assert bound.bound_plan is not None
    plan = bound.bound_plan
    pd_slots = {slot: n for n, slot in plan.inputs.items() if n in pd}
    writer = ProgramSource(bound, resolver, pd_slots)
    body = writer.write({slot: names[var_name] for var_name, slot in plan.inputs.items()})
    # _result: the inputs' dtype (see .generated), an array the caller may write to
    results = [f"_result({writer.result(slot)}, _dtype)" for slot in plan.outputs]
    # a declared matrix the program factorises is checked by its factor, when it is made (as
    # tc.compile checks it); the others on entry
    factored = {pd_slots[op.reads[0]] for op in bound.ops if op.kind == "cholesky"}
    checked = sorted(set(symmetric) & set(names) - factored)
    if checked:
        writer.helpers.add("_symmetric")
    if names:
        writer.helpers.add("_numbers")
    lines = [header, "import numpy as _np", "", ALIASES, RESULT_HELPER.rstrip()]
    lines += writer.constants
    lines += [text.rstrip() for text in helper_texts(writer.helpers)]
    head, *reads = signature(name, names)
    lines += ["", "", head] + [f"    {line}" for line in reads]
    lines.append(f"    {dtype_line(names)}")  # from the values as passed: a Python number is weak
    # complex input stays complex and float32 float32, as in evaluate; integers become floats
    lines += [f"    {line}" for line in input_lines(names)]
    for p, python in names.items():
        lines.append(f"    if {python}.shape != {fixed[p]!r}:")
        lines.append(
            f'        raise _ValueError(f"{name} was generated for {p} of shape {fixed[p]!r}, got {{{python}.shape}}: '
            f'generate it again with tc.to_python(..., shapes=...)")'
        )
    for p in checked:  # the declarations, on the data (generated.SYMMETRIC_HELPER)
        lines.append(f"    {names[p]} = _symmetric({names[p]}, {p!r}, {symmetric[p]!r})")
    lines += [f"    {line}" for line in body]
    if single:
        lines.append(f"    return {results[0]}")
    else:
        lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return shield_function_name(read_aliases_only("\n".join(lines) + "\n"), name)
