"""The compiler's program as Python source: what ``tc.to_python(..., shapes=...)`` writes.

The plan of :mod:`.plan` (fusion, sharing, deltas and constants removed) is walked
step by step, and each step is written as the NumPy statement the compiler's
binder in :mod:`.program` would run for the given shapes: contraction paths are
searched here, once, with opt_einsum, and every pairwise contraction is written
as the ``matmul`` / broadcast ``multiply`` that :mod:`.kernels` would call, with
its permutations and reshapes spelled out; ``Xᵀ diag(d) X`` goes through the same
Gram kernel.  The plan walked is the one :func:`.program.bind` prepares for the
shapes (squares folded, shared factors taken out), and the steps it binds as bands
(:mod:`.banded`) or as tiled sums are written from its own records with the fused
function's writer (:func:`.fused.band_tuple`, :func:`.fused.tiles_lines`): a banded
Hessian is a tuple of band vectors until its dense value is written once, as in
``tc.compile``.  The generated module needs NumPy only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np

from ..adjugate import ADJUGATE_SOURCE
from ..errors import TensCalcError
from ..printing.text import slice_text  # the language writes slices as Python indexes them
from .accumulate import ACCUMULATE_SOURCE, Broadcast, Copy, Dense, Diagonal, Outer, block_rows, parts
from .backends import letters
from .cholesky import plan_factors
from .fused import BandSum, Spelling, Tiles, band_tuple, tiles_lines
from .generated import (
    ALIASES,
    CHOLESKY_HELPER,
    LAPACK_HELPER,
    RESULT_HELPER,
    SYMMETRIC_HELPER,
    dtype_line,
    python_names,
    signature,
)
from .kernels import GramPattern, _layout_rank, _oriented_pair, _reference, is_identity_permutation
from .lowered import Op
from .numpy_names import numpy_call  # the generated code's spelling of each function
from .plan import AddItem, Plan, Step, Term
from .program import Program, ShapeResolver, choose_path, step_shape, variable_orders
from .terms import TermPlan, plan_term

# helpers the generated module defines when it uses them (NumPy only)
HELPERS = {
    "_write_diagonal": '''
def _write_diagonal(core, eq, shape):
    """A zero array of ``shape`` with ``core`` written on the diagonal ``eq`` reads."""
    full = _np.zeros(shape, dtype=_np.result_type(core, 0.0))
    _np.einsum(eq, full)[...] = core
    return full
''',
    "_add_diagonal": '''
def _add_diagonal(x, eq, coef, shape):
    """``x`` (broadcast to ``shape``) plus ``coef`` on the diagonal ``eq`` reads."""
    x = _np.array(_np.broadcast_to(x, shape), dtype=_np.result_type(x, 0.0))
    _np.einsum(eq, x)[...] += coef
    return x
''',
    "_embed": '''
def _embed(part, key, shape):
    """Zeros of ``shape`` with ``part`` written at the basic index ``key``."""
    out = _np.zeros(shape, dtype=_np.result_type(part, 0.0))
    out[key] = part
    return out
''',
    "_add_embedded": '''
def _add_embedded(x, part, key, coef, shape):
    """``x`` (broadcast to ``shape``) plus ``coef * part`` at the basic index ``key``."""
    x = _np.array(_np.broadcast_to(x, shape), dtype=_np.result_type(x, part, 0.0))
    x[key] += coef * part
    return x
''',
    "_gram": '''
def _gram(x, d, scale):
    """``scale * xᵀ diag(d) x`` (``d`` None: ``xᵀ x``); through ``bᵀ b`` when ``d`` has one sign."""
    if d is None:
        gram = x.T @ x
        return gram if scale == 1.0 else gram * scale
    if scale != 1.0:
        d = d * scale
    if d.size == 0 or d.min() >= 0:  # an empty batch: min() of nothing raises
        b = x * _np.sqrt(d)[:, None]
        return b.T @ b
    if d.max() <= 0:
        b = x * _np.sqrt(-d)[:, None]
        gram = b.T @ b
        _np.negative(gram, out=gram)
        return gram
    return (x * d[:, None]).T @ x
''',
    "_lapack": LAPACK_HELPER,
    # banded steps (:mod:`.banded`): a slot holds a tuple of band values, numbers or vectors
    "_stretch": '''
def _stretch(value, first, stop, every):
    """Entries ``first:stop:every`` of a band value; a number stays a number."""
    return value if _np.ndim(value) == 0 else value[first:stop:every]
''',
    "_write_bands": '''
def _write_bands(values, shape, keys, disjoint):
    """The dense matrix of bands: zeros, each band's values written (added, where bands
    overlap) at its strided stretch ``keys[k]`` of the flattened matrix."""
    out = _np.zeros(shape, dtype=_np.result_type(*[v for v in values if _np.ndim(v)], _np.float64))
    flat = out.reshape(-1)
    for key, value in zip(keys, values):
        if disjoint:
            flat[key] = value
        else:
            flat[key] += value
    return out
''',
    "_cholesky": CHOLESKY_HELPER,
    "_adjugate": "\n" + ADJUGATE_SOURCE,
    "_accumulate": ACCUMULATE_SOURCE,
}


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
    """Writes the statements of one plan bound to one set of shapes.

    ``bound``: the program :func:`.program.bind` made of the same plan for these shapes, and
    ``planner`` the resolver it bound with: each einsum term is written from the binder's
    record of it (:func:`.terms.plan_term`: path, Gram form, factor placement), read, not
    decided again;
    its banded steps (and their dense twins) and its tiled sums are written from its own
    records, with the fused function's writer (:func:`.fused.band_tuple`,
    :func:`.fused.tiles_lines`), so the module computes what ``tc.compile`` runs.
    """

    def __init__(
        self,
        plan: Plan,
        resolver: ShapeResolver,
        dense: Sequence[tuple[int, ...]] = (),
        skip: frozenset[int] = frozenset(),
        bound: Program | None = None,
        pd: Mapping[int, str] | None = None,
        planner: ShapeResolver | None = None,
    ):
        self.plan = plan
        # the resolver the binder bound ``bound`` with: its term records (.terms) are read,
        # not decided again; ``resolver`` (which makes real constants) where none is given
        self.planner = planner if planner is not None else resolver
        self.records: list[TermPlan] = []  # every term's record, in the order written
        # the inv, det and log det of the inputs declared positive definite (slot -> name)
        # read one Cholesky factor each, as in tc.compile (.cholesky)
        self.pd = dict(pd or {})
        self.factors = plan_factors(plan, frozenset(self.pd), 0)
        self.factor_names = {slot: f"_f{matrix}" for matrix, slot in self.factors.slots.items()}
        self.resolver = resolver
        # the shape of each slot where a rewrite (factoring.factor_shared) changed it, and
        # the slots it no longer computes
        self.dense = list(dense)
        self.skip: frozenset[int] = skip
        self.lines: list[str] = []
        self.constants: list[str] = []  # module-level lines
        self.helpers: set[str] = set()
        self.shapes: list[tuple[int, ...]] = []
        self.names: dict[int, str] = {}
        self._temp = 0
        ops: list[Op] = bound.ops if bound is not None else []
        self.layouts = bound.layouts if bound is not None else {}
        # slot -> what the bound program computes there, for the steps written from its records
        self.band_ops = {op.slot: op for op in ops if op.kind == "band"}
        self.twin_ops = {op.reads[0]: op for op in ops if op.kind == "twin"}
        self.tiled = {op.slot: op.inline for op in ops if op.kind == "add" and isinstance(op.inline, Tiles)}
        self.bands: dict[int, str] = {}  # banded slot -> the name of its tuple of band values
        self.spelling = Spelling(
            slot=lambda slot: self.bands.get(slot) or self.names[slot],
            key=repr,  # basic indexes: slices, tuples of slices and integers, each its own source
            number=self._band_number,
            call=_undescribed,
            stretch="_stretch",
            multiply="_np.multiply",
            term=lambda band: self._term(band.term, band.shape, False),
        )

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
        outputs = set(self.plan.outputs)
        steps = self.plan.steps
        self.shapes = self.dense or [step_shape(step, self.resolver) for step in steps]
        # every input is there from the start (a factored sum may read one before its step)
        self.names.update({step.index: input_names[step.index] for step in steps if step.kind == "input"})
        for step in steps:
            shape = self.shapes[step.index]
            if step.index in self.skip or step.kind == "input":
                continue
            name = f"_s{step.index}"
            temps = self._temp
            dead: list[str] = []
            for matrix in self.factors.first.get(step.index, ()):  # before its first reader, as bind does
                self.lines.append(f"_f{matrix} = _cholesky({self._arg(matrix)}, {self.pd[matrix]!r})")
                self.helpers.update(("_cholesky", "_lapack"))
            reader = self.factors.readers.get(step.index)
            if reader is not None and reader[1] == "unused":
                pass  # a det whose log reads the factor: not computed
            elif step.index in self.band_ops:
                dead += self._banded(step.index, name, shape)
            elif step.index in self.tiled and self.tiled[step.index].shape == shape:
                self._tiles(step.index, name)
            else:
                if reader is not None:  # inv, det or log det from the factor of a declared pd input
                    text = self._from_factor(*reader)
                else:
                    text = SOURCE_RULES[step.kind](self, step, shape, step.index in outputs)
                self.lines.append(f"{name} = {text}")
                self.names[step.index] = name
            # what the compiled program releases after this step is deleted here too (and the
            # step's own path intermediates), so the function's peak memory is the program's
            dead = [f"_p{k}" for k in range(temps + 1, self._temp + 1)] + dead
            for slot in self.plan.release[step.index]:
                dead += [names[slot] for names in (self.names, self.bands) if slot in names]
            dead += [self.factor_names[slot] for slot in self.factors.last.get(step.index, ())]
            if dead:
                self.lines.append("del " + ", ".join(dict.fromkeys(dead)))
        return self.lines

    def _arg(self, slot: int) -> str:
        return self.names[slot]

    def result(self, slot: int) -> str:
        """A result's dense value (a banded output's bands written into zeros, as compile does)."""
        if slot in self.bands and slot not in self.twin_ops:
            return self._dense_bands(slot)
        return self.names[slot]

    # ------------------------------------------------------------------ bound records
    def _banded(self, slot: int, name: str, shape: tuple[int, ...]) -> list[str]:
        """``name = `` the band values of a banded step; its dense twin after it where
        another step reads it densely.  Returns the names dead once the twin is written."""
        inline = self.band_ops[slot].inline
        if isinstance(inline, BandSum):
            text = band_tuple(inline, self.spelling)
        else:  # a banded constant: its band numbers
            text = self._band_number(inline.value)
        self.lines.append(f"{name} = {text}")
        self.bands[slot] = name
        twin = self.twin_ops.get(slot)
        if twin is None:
            return []
        self.lines.append(f"_w{slot} = {self._dense_bands(slot)}")
        self.names[slot] = f"_w{slot}"
        if slot not in twin.release:
            return []
        del self.bands[slot]  # only the twin is read from now on
        return [name]

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

    def _from_factor(self, matrix: int, what: str) -> str:
        """``inv``, ``det`` or ``logdet`` of the declared positive-definite input in slot
        ``matrix`` from its Cholesky factor ``_f<matrix>`` (written before its first reader)."""
        factor = f"_f{matrix}"
        if what == "inv":  # the factor carries the matrix: the plan may release the input after the factor
            return f"_cho_inv({factor})"
        return f"_cho_det({factor}, {what == 'logdet'})"

    # ------------------------------------------------------------------ steps
    def _constant_step(self, step: Step, shape, is_output: bool) -> str:
        text = self._constant(self.resolver.constant(step.node, shape))
        return f"_np.array({text})" if is_output else text  # never hand out the module's own array

    def _func(self, step: Step, shape, is_output: bool) -> str:
        (a,) = step.args
        return numpy_call(step.data, self._arg(a))

    def _pow(self, step: Step, shape, is_output: bool) -> str:
        if len(step.args) == 2:
            a, b = step.args
            return f"_np.power({self._arg(a)}, {self._arg(b)})"
        (a,) = step.args
        x, e = self._arg(a), step.data
        if e == 1:
            return x
        if e == 2:
            return f"{x} * {x}"
        if e == -1:
            return f"1.0 / {x}"
        if e == -2:
            return f"1.0 / ({x} * {x})"
        if e == 0.5:
            return f"_np.sqrt({x})"
        return f"_np.power({x}, {literal(e)})"

    def _slice(self, step: Step, shape, is_output: bool) -> str:
        view = f"{self._arg(step.args[0])}[{slice_text(step.data)}]"
        return f"_np.array({view})" if is_output else view  # never hand out a view of an input

    def _embed(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.add("_embed")
        return f"_embed({self._arg(step.args[0])}, _np.s_[{slice_text(step.data[0])}], {shape!r})"

    def _inv(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.add("_lapack")
        return f"_lapack(_np.linalg.inv, {self._arg(step.args[0])})"

    def _det(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.add("_lapack")
        return f"_lapack(_np.linalg.det, {self._arg(step.args[0])})"

    def _adj(self, step: Step, shape, is_output: bool) -> str:
        self.helpers.update(("_adjugate", "_lapack"))
        return f"_lapack(lambda _m: _adjugate(_m, {step.data}), {self._arg(step.args[0])})"

    def _add(self, step: Step, shape, is_output: bool) -> str:
        items = cast("tuple[AddItem, ...]", step.data)
        text = ""
        for item in items:
            if item.kind != "slot":
                continue
            x, coef = self._arg(item.slot), item.coef
            if not text:
                text = x if coef == 1 else (f"-{x}" if coef == -1 else f"{literal(coef)} * {x}")
            elif coef == 1:
                text += f" + {x}"
            elif coef == -1:
                text += f" - {x}"
            else:
                text += f" + {literal(coef)} * {x}"
        # delta(0) is the number 1, as in the compiled program
        scalar = sum(it.coef for it in items if it.kind == "scalar" or (it.kind == "delta" and it.n == 0))
        if not text:
            text = f"_np.full({shape!r}, {literal(scalar)})"
        elif scalar != 0:
            text += f" + {literal(scalar)}"
        if not any(self.shapes[it.slot] == shape for it in items if it.kind == "slot"):
            text = f"_np.broadcast_to({text}, {shape!r})"
        for item in items:
            if item.kind == "embed":  # a part written into its slice of the sum
                self.helpers.add("_add_embedded")
                key = f"_np.s_[{slice_text(item.items)}]"
                text = f"_add_embedded({text}, {self._arg(item.slot)}, {key}, {literal(item.coef)}, {shape!r})"
            if item.kind == "delta" and item.n > 0:
                self.helpers.add("_add_diagonal")
                eq = letters(tuple(range(item.n)) * 2) + "->" + letters(range(item.n))
                text = f"_add_diagonal({text}, {eq!r}, {literal(item.coef)}, {shape!r})"
        return text

    def _product(self, step: Step, shape, is_output: bool) -> str:
        terms = cast("tuple[Term, ...]", step.data)
        if len(terms) > 1 and len(shape) >= 2:
            if any(not isinstance(part, Dense) for part in parts(terms, shape)):
                return self._accumulate(terms, shape)
        return " + ".join(self._term(term, shape, is_output and len(terms) == 1) for term in terms)

    def _accumulate(self, terms: Sequence[Term], shape: tuple[int, ...]) -> str:
        """A sum of terms written into one buffer, as the compiled program adds it
        (:mod:`.accumulate`: the same parts, the same run-time function)."""
        found = parts(terms, shape)

        def held(term: Term, term_shape: tuple[int, ...]) -> str:
            name = self._fresh()
            self.lines.append(f"{name} = {self._term(term, term_shape, False)}")
            return name

        rows = [f"({held(p.row, shape[:1])}, {held(p.col, shape[1:])})" for p in found if isinstance(p, Outer)]
        cores = [held(p.core, shape[:1]) for p in found if isinstance(p, Diagonal)]
        spread = []
        for p in found:
            if isinstance(p, Broadcast):
                core = held(p.core, tuple(n for n, i in zip(shape, p.index) if i is not None))
                index = ", ".join(":" if i is not None else "None" for i in p.index)
                spread.append(f"_np.asarray({core})[{index}]")
        sources, scales = [], []
        for p in found:
            if isinstance(p, Copy):
                source = self._arg(p.slot)
                sources.append(source if is_identity_permutation(p.perm) else f"{source}.transpose({p.perm!r})")
                scales.append(" * ".join([literal(p.factor), *(self._arg(slot) for slot in p.scalars)]))
        buf = "None"
        for k, p in enumerate(p for p in found if isinstance(p, Dense)):
            text = self._term(p.term, shape, False)
            if k == 0:
                buf = self._fresh()
                reads = "".join(f"{self._arg(slot)}, " for slot, _ in p.term.operands)
                self.lines.append(f"{buf} = _owned({text}, ({reads}))")
            else:
                self.lines.append(f"{buf} = _add_into({buf}, {text})")
        self.helpers.add("_accumulate")
        if not (rows or cores or spread or sources):
            return buf
        lists = ", ".join(f"[{', '.join(texts)}]" for texts in (rows, cores, spread, sources, scales))
        return f"_accumulate({buf}, {shape!r}, {lists}, {block_rows(shape)})"

    # ------------------------------------------------------------------ one einsum
    def _term(self, term: Term, shape: tuple[int, ...], is_output: bool) -> str:
        # the binder's own record of the term (.terms): its path, Gram form, factor placement
        record = plan_term(term, shape, self.shapes, self.planner, True, choose_path)
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
            core = self._contraction(record.eq, record.op_shapes, list(record.path), texts)
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

    def _contraction(self, eq: str, shapes: Sequence[tuple[int, ...]], path: list, texts: list[str]) -> str:
        """``np.einsum(eq, *texts)`` along ``path``, as matmul/multiply source."""
        lhs, target = eq.split("->")
        specs = lhs.split(",")
        sizes: dict[str, int] = {}
        for spec, shape in zip(specs, shapes):
            sizes.update(zip(spec, shape))
        current = list(specs)
        values = list(texts)
        rank = _layout_rank(specs, target)
        for number, positions in enumerate(path):
            positions = tuple(sorted(positions, reverse=True))
            picked = [current.pop(p) for p in positions]
            picked_values = [values.pop(p) for p in positions]
            keep = set(target).union(*current)
            if len(picked) == 1:
                drop = "".join(c for c in picked[0] if c not in keep)
                text, labels = _reduce(picked_values[0], picked[0], drop)
            else:
                # the pair in the order the compiled program multiplies it (kernels: the
                # result laid out as it is read next, a sum's T - M included)
                needed = {c for c in picked[0] + picked[1] if c in keep}
                _, _, swapped = _oriented_pair(picked[0], picked[1], needed, sizes, _reference(current, needed, rank))
                first, second = (1, 0) if swapped else (0, 1)
                text, labels = _pair(
                    picked[first], picked[second], keep, sizes, picked_values[first], picked_values[second]
                )
            if number < len(path) - 1:  # an intermediate of the path: its own statement
                name = self._fresh()
                self.lines.append(f"{name} = {text}")
                text = name
            current.append(labels)
            values.append(text)
        (final,) = current
        text = values[0]
        drop = "".join(c for c in final if c not in target)
        text, final = _reduce(text, final, drop)
        perm = tuple(final.index(c) for c in target)
        if not is_identity_permutation(perm):
            text = f"{_atom(text)}.transpose({perm!r})"
        return text


def _undescribed(fn: Callable) -> str:
    raise AssertionError(f"a band value without a description: {fn!r}")  # the binder describes every one


def _atom(text: str) -> str:
    """``text`` safe to follow with ``.method`` or an operator."""
    return text if re.fullmatch(r"[A-Za-z_]\w*", text) else f"({text})"


def _reduce(text: str, spec: str, drop: str) -> tuple[str, str]:
    if not drop:
        return text, spec
    axes = tuple(k for k, c in enumerate(spec) if c in drop)
    rest = "".join(c for c in spec if c not in drop)
    return f"{_atom(text)}.sum(axis={axes!r})", rest


def _pair(a: str, b: str, keep: set[str], sizes: dict[str, int], xa: str, xb: str) -> tuple[str, str]:
    """Source contracting ``xa`` (labels ``a``) and ``xb`` (labels ``b``), as
    :func:`.kernels.pair_kernel` does it; returns it with the result's labels."""
    xa, a2 = _reduce(xa, a, "".join(c for c in a if c not in b and c not in keep))
    xb, b2 = _reduce(xb, b, "".join(c for c in b if c not in a and c not in keep))
    batch = [c for c in a2 if c in b2 and c in keep]
    inner = [c for c in a2 if c in b2 and c not in keep]
    left = [c for c in a2 if c not in b2]
    right = [c for c in b2 if c not in a2]
    result = "".join(batch + left + right)
    out_shape = tuple(sizes[c] for c in result)

    def prepared(x: str, spec: str, order: list[str], shape: tuple[int, ...]) -> str:
        perm = tuple(spec.index(c) for c in order)
        if not is_identity_permutation(perm):
            x = f"{_atom(x)}.transpose({perm!r})"
        if tuple(sizes[c] for c in order) != shape:
            x = f"{_atom(x)}.reshape({shape!r})"
        return x

    if inner:
        nb = math.prod(sizes[c] for c in batch)
        nl = math.prod(sizes[c] for c in left)
        nk = math.prod(sizes[c] for c in inner)
        nr = math.prod(sizes[c] for c in right)
        # always 2-D without a batch (see kernels.pair_kernel: BLAS gemv stalls on shared cores)
        shape_a, shape_b = ((nb, nl, nk), (nb, nk, nr)) if batch else ((nl, nk), (nk, nr))
        left_factor = _atom(prepared(xa, a2, batch + left + inner, shape_a))
        product = f"{left_factor} @ {_atom(prepared(xb, b2, batch + inner + right, shape_b))}"
        if (shape_a[:-1] + shape_b[-1:]) != out_shape:
            product = f"({product}).reshape({out_shape!r})"
        return product, result
    xa = prepared(xa, a2, batch + left, tuple(sizes[c] for c in batch + left))
    xb = prepared(xb, b2, batch + right, tuple(sizes[c] for c in batch + right))
    if right:
        xa = f"{_atom(xa)}[{', '.join([':'] * (len(batch) + len(left)) + ['None'] * len(right))}]"
    if left:
        xb = f"{_atom(xb)}[{', '.join([':'] * len(batch) + ['None'] * len(left) + [':'] * len(right))}]"
    return f"{_atom(xa)} * {_atom(xb)}", result


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
    fixed = {p: tuple(int(n) for n in shapes[p]) for p in params}
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
    bound = bind(plan, planner, get_backend("numpy"))
    assert bound.bound_plan is not None
    plan = bound.bound_plan
    pd_slots = {slot: n for n, slot in plan.inputs.items() if n in pd}
    writer = ProgramSource(plan, resolver, bound.dense, bound.skipped, bound, pd_slots, planner)
    body = writer.write({slot: names[var_name] for var_name, slot in plan.inputs.items()})
    # _result: the inputs' dtype (see .generated), an array the caller may write to
    results = [f"_result({writer.result(slot)}, _dtype)" for slot in plan.outputs]
    lines = [header, "import numpy as _np", "", ALIASES, RESULT_HELPER.rstrip()]
    if symmetric:
        lines.append(SYMMETRIC_HELPER.rstrip())
    lines += writer.constants
    for helper in sorted(writer.helpers):
        lines.append(HELPERS[helper].rstrip())
    head, *reads = signature(name, names)
    lines += ["", "", head] + [f"    {line}" for line in reads]
    lines.append(f"    {dtype_line(names)}")  # from the values as passed: a Python number is weak
    for p, python in names.items():
        # complex input stays complex and float32 float32, as in evaluate; integers become floats
        lines.append(f"    {python} = _np.asarray({python})")
        lines.append(f'    if {python}.dtype.kind not in "fc":')
        lines.append(f"        {python} = {python}.astype(_np.float64)")
        lines.append(f"    if {python}.shape != {fixed[p]!r}:")
        lines.append(
            f'        raise _ValueError(f"{name} was generated for {p} of shape {fixed[p]!r}, got {{{python}.shape}}: '
            f'generate it again with tc.to_python(..., shapes=...)")'
        )
    for p in sorted(set(symmetric) & set(names)):  # the declarations, on the data (generated.SYMMETRIC_HELPER)
        lines.append(f"    {names[p]} = _symmetric({names[p]}, {p!r}, {symmetric[p]!r})")
    lines += [f"    {line}" for line in body]
    if single:
        lines.append(f"    return {results[0]}")
    else:
        lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    return "\n".join(lines) + "\n"
