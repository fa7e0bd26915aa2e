"""Banded order-2 values of a compiled program: sums of diagonals, kept as vectors.

A Hessian built from slices (the chained Rosenbrock function's
``x[1:] - x[:-1]^2``) is a sum of diagonal matrices shifted by ``embed`` and
``slice``, scaled by vectors along one axis: written densely, ~10 passes over
n×n arrays for a matrix with three nonzero diagonals.  Like scipy.sparse's DIA
format, a *banded* slot holds such a value as a list of bands instead:

* a :class:`Band` is one stretch of entries of an ``R × C`` matrix on a line of
  slope ``rstep / cstep``: ``A[row + rstep t, col + cstep t]`` for ``t < length``
  (steps 1: a stretch of a diagonal; larger steps come from strided slices such
  as the extended Rosenbrock function's ``x[::2]``, whose Hessian is block
  diagonal);
* at run time the slot holds one value per band, a 1-D array of ``length``
  entries or a number (constant bands: ``delta(1)`` stays the number 1).

:func:`band_steps` finds, in plan order, the steps whose value is banded and
binds them to closures over those band values:

* a product term writing a diagonal (``v *(i,->ii) 1``, ``out`` ``(a, a)``) is
  its core vector on the main diagonal;
* a product term scaling a banded operand by vectors along its axes
  (``(ij,j->ij)``, ``(ij,i->ij)``), by a number, or transposing it, scales each
  band by the matching stretch of the vectors;
* ``embed`` places the bands (shift and, for a strided embed, stretch), ``slice``
  clips them (positive steps; a reversed slice stays dense);
* a sum adds bands (``delta(1)`` summands and embedded parts included); bands
  with the same stretch are added into one;
* a constant made of ``delta(1)``, ``embed``, ``slice`` and sums is banded with numbers
  (total variation's difference matrix ``I[1:] - I[:-1]``).

Any other reader gets the dense value, written once (:func:`write_bands`: a
zeroed array, each band written through a strided view of its diagonal, by the text
:data:`WRITE_BANDS_SOURCE` the generated source runs), as are the outputs.  Off the
bands such a value is exactly 0 (as a diagonal core's dense form is).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from ..core.nodes import Expr
from .cost import OpCost
from .fused import BandNumber, BandRef, BandScaled, BandStretch, BandSum, BandTerm
from .plan import AddItem, Plan, Step, Term

BandValues = tuple[Any, ...]  # per band: a 1-D array of its length, or a number
#: how one band value is computed: a description (:class:`.fused.BandRef`, ``BandNumber``,
#: ``BandScaled``, ``BandStretch`` or ``BandTerm``), whose closure :mod:`.closures` builds
BandPart = Any


#: the layout arithmetic of bands (a band as the tuple ``(row, col, length, rstep, cstep)``)
#: and the run-time parts of a banded step: one text, run here (:class:`Band`, :class:`Layout`,
#: :func:`_ranges`) and written into the shape-free ``tc.to_python()`` module, which lays its
#: bands out at run time from the lengths of the arguments (NumPy only)
BAND_SOURCE = """
# the module's function may be named range or len: the helpers read the builtins as imported
_brange, _blen, _bmax, _bmin, _bslice = range, len, max, min, slice
_bzip, _bany, _bisinstance, _bint, _btuple = zip, any, isinstance, int, tuple

def _band_gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def _band_placed(band, rows, cols):
    \"\"\"The band of a matrix written at the rows ``rows`` and columns ``cols`` (ranges) of a
    larger one (``embed``).\"\"\"
    row, col, length, rstep, cstep = band
    return (rows.start + rows.step * row, cols.start + cols.step * col, length, rows.step * rstep, cols.step * cstep)


def _band_transposed(band):
    row, col, length, rstep, cstep = band
    return (col, row, length, cstep, rstep)


def _band_clipped(band, rows, cols):
    \"\"\"The band of ``A[rows, cols]`` (ranges of positive step), the first ``t`` kept and the
    step between kept ``t``; None when no entry is kept.  An entry is kept when its row is in
    ``rows`` and its column in ``cols``: two congruences in ``t``, so the kept ``t`` repeat
    with the period ``every``.\"\"\"
    row, col, length, rstep, cstep = band
    first = _bmax(0, -((row - rows.start) // rstep), -((col - cols.start) // cstep))
    stop = _bmin(length, -((row - rows.stop) // rstep), -((col - cols.stop) // cstep))
    every_rows = rows.step // _band_gcd(rstep, rows.step)
    every_cols = cols.step // _band_gcd(cstep, cols.step)
    every = every_rows * every_cols // _band_gcd(every_rows, every_cols)
    for t in _brange(first, _bmin(stop, first + every)):
        if (row + rstep * t - rows.start) % rows.step == 0 and (col + cstep * t - cols.start) % cols.step == 0:
            kept = (
                (row + rstep * t - rows.start) // rows.step,
                (col + cstep * t - cols.start) // cols.step,
                _blen(_brange(t, stop, every)),
                rstep * every // rows.step,
                cstep * every // cols.step,
            )
            return kept, t, every
    return None


def _band_lines(band):
    \"\"\"The rows and the columns the band's entries lie on, as slices of vectors along them.\"\"\"
    row, col, length, rstep, cstep = band
    return _bslice(row, row + rstep * (length - 1) + 1, rstep), _bslice(col, col + cstep * (length - 1) + 1, cstep)


def _band_keys(width, bands):
    \"\"\"Per band, the slice of the flattened matrix (rows of ``width`` entries) it lies on.\"\"\"
    keys = []
    for row, col, length, rstep, cstep in bands:
        start, step = row * width + col, rstep * width + cstep
        keys.append(_bslice(start, start + (length - 1) * step + 1, step))
    return _btuple(keys)


def _band_disjoint(keys):
    \"\"\"No two bands share an entry: each band is written with ``=``, not ``+=`` (a read of
    fresh zeroed pages before the write faults each page in twice).\"\"\"
    flat = [_np.arange(key.start, key.stop, key.step) for key in keys]
    positions = _np.concatenate(flat) if flat else _np.zeros(0, dtype=_np.int64)
    return _blen(_np.unique(positions)) == _blen(positions)


def _band_ranges(items, shape):
    \"\"\"Per axis, the rows a slice (or embed) key selects; None unless slices of positive step.\"\"\"
    if _blen(items) != _blen(shape) or _bany(_bisinstance(item, _bint) for item in items):
        return None
    ranges = []
    for item, length in _bzip(items, shape):
        start, stop, step = _bslice(*item).indices(length)
        if step < 1:
            return None
        ranges.append(_brange(start, _bmax(start, stop), step))
    return ranges


def _bands(parts):
    \"\"\"A banded value ``(bands, values)`` from its parts ``(band, value)``: those of one
    stretch added into one, in order.\"\"\"
    groups = {}
    for band, value in parts:
        groups[band] = groups[band] + value if band in groups else value
    return _btuple(groups), _btuple(groups.values())


def _bands_identity(n, coef):
    \"\"\"``coef`` on the main diagonal of an ``n x n`` matrix.\"\"\"
    return [((0, 0, n, 1, 1), coef)] if n else []


def _bands_diagonal(core):
    \"\"\"The vector ``core`` on the main diagonal.\"\"\"
    n = _np.shape(core)[0]
    return [((0, 0, n, 1, 1), core)] if n else []


def _bands_scaled(banded, vectors, factor, transpose):
    \"\"\"Each band of ``banded`` times the stretch of each vector (``(vector, on_rows)``) along
    its rows or columns, and ``factor``; transposed where asked.\"\"\"
    parts = []
    for band, value in _bzip(*banded):
        rows, cols = _band_lines(band)
        for vector, on_rows in vectors:
            value = value * vector[rows if on_rows else cols]
        parts.append((_band_transposed(band) if transpose else band, value * factor if factor != 1 else value))
    return parts


def _bands_placed(banded, items, shape, coef):
    \"\"\"The bands of ``banded`` times ``coef``, written at the slices ``items`` of a ``shape``
    matrix (None: all of it).\"\"\"
    rows, cols = _band_ranges(items, shape) if items is not None else (_brange(shape[0]), _brange(shape[1]))
    return [(_band_placed(band, rows, cols), value if coef == 1 else value * coef) for band, value in _bzip(*banded)]


def _bands_clipped(banded, items, shape):
    \"\"\"The bands of ``A[items]`` for a banded ``A`` of ``shape``: each band's kept stretch.\"\"\"
    rows, cols = _band_ranges(items, shape)
    parts = []
    for band, value in _bzip(*banded):
        kept = _band_clipped(band, rows, cols)
        if kept is not None:
            clipped, first, every = kept
            stop = first + every * (clipped[2] - 1) + 1
            parts.append((clipped, value if _np.ndim(value) == 0 else value[first:stop:every]))
    return parts


def _bands_dense(banded, shape):
    \"\"\"The dense ``shape`` matrix of ``banded`` (:data:`WRITE_BANDS_SOURCE`'s ``_write_bands``).\"\"\"
    bands, values = banded
    keys = _band_keys(shape[1], bands)
    return _write_bands(values, shape, keys, _band_disjoint(keys))
"""

#: the dense matrix of bands as the generated code writes it: one text, which the shape-free
#: ``tc.to_python()`` module's ``_bands_dense`` (:data:`BAND_SOURCE`, written with it), the
#: ``tc.to_python(shapes=)`` module and fused function (:mod:`.source`, with the layout's keys
#: as constants) and the closure loop (:func:`write_bands`, the text run here once) call
WRITE_BANDS_SOURCE = """
def _write_bands(values, shape, keys, disjoint):
    \"\"\"The dense matrix of bands: zeros, each band's values written (added, where bands
    overlap) at its strided stretch ``keys[k]`` of the flattened matrix.\"\"\"
    # the arrays' dtypes (a number does not promote them; getattr: np.ndim makes an array of a number)
    out = _np.zeros(shape, dtype=_np.result_type(*[v for v in values if getattr(v, "ndim", 0)], _np.float64))
    flat = out.reshape(-1)
    for key, value in zip(keys, values):
        if disjoint:
            flat[key] = value
        else:
            flat[key] += value
    return out
"""
_namespace: dict[str, Any] = {"_np": np}
exec(compile(BAND_SOURCE + WRITE_BANDS_SOURCE, "<tenscalc bands>", "exec"), _namespace)  # noqa: S102 - the text above
_placed, _transposed, _clipped = _namespace["_band_placed"], _namespace["_band_transposed"], _namespace["_band_clipped"]
_lines, _keys, _disjoint = _namespace["_band_lines"], _namespace["_band_keys"], _namespace["_band_disjoint"]
_ranges = _namespace["_band_ranges"]
_write_bands = _namespace["_write_bands"]


@dataclass(frozen=True)
class Band:
    """The entries ``A[row + rstep t, col + cstep t]``, ``0 <= t < length`` (steps >= 1)."""

    row: int
    col: int
    length: int
    rstep: int = 1
    cstep: int = 1

    def placed(self, rows: range, cols: range) -> Band:
        """The band of a matrix written at rows ``rows``, columns ``cols`` of a larger one (``embed``)."""
        return Band(*_placed(self.tuple, rows, cols))

    def transposed(self) -> Band:
        return Band(*_transposed(self.tuple))

    def clipped(self, rows: range, cols: range) -> tuple[Band, int, int] | None:
        """The band of ``A[rows, cols]`` (positive steps), the first ``t`` kept and the
        step between kept ``t``; None when no entry is kept (``_band_clipped``)."""
        kept = _clipped(self.tuple, rows, cols)
        return None if kept is None else (Band(*kept[0]), kept[1], kept[2])

    def rows(self) -> slice:
        """The rows the band's entries lie on, as a slice of a vector along them."""
        return _lines(self.tuple)[0]

    def cols(self) -> slice:
        return _lines(self.tuple)[1]

    @property
    def tuple(self) -> tuple[int, int, int, int, int]:
        """``(row, col, length, rstep, cstep)``: the band as :data:`BAND_SOURCE` holds it."""
        return (self.row, self.col, self.length, self.rstep, self.cstep)


@dataclass(frozen=True)
class Layout:
    """Where a banded ``shape`` matrix's bands lie (the slot holds one value per band)."""

    shape: tuple[int, int]
    bands: tuple[Band, ...]

    @property
    def entries(self) -> int:
        return sum(band.length for band in self.bands)

    @functools.cached_property
    def keys(self) -> tuple[slice, ...]:
        """Per band, the slice of the flattened matrix it lies on."""
        return _keys(self.shape[1], [band.tuple for band in self.bands])

    @functools.cached_property
    def disjoint(self) -> bool:
        """No two bands share an entry: each band is written with ``=``, not ``+=``
        (a read of fresh zeroed pages before the write faults each page in twice)."""
        return _disjoint(self.keys)


@dataclass
class BandStep:
    """A banded step bound: its layout, how its band values are computed (per band, its parts'
    descriptions, :class:`.fused.BandSum`, or a constant's numbers, :class:`.fused.BandNumber`:
    the closure runner of :mod:`.closures` builds the closure from them), its cost, and how its
    bands are made, free of lengths (:data:`Recipe`: what the shape-free ``tc.to_python()``
    writes, laying the bands out at run time with :data:`BAND_SOURCE`)."""

    layout: Layout
    values: BandSum | BandNumber
    cost: OpCost
    recipe: Recipe = ()


#: a banded step's bands, free of lengths: for a constant ``(("constant", tree),)``, else its
#: parts in order (those of one stretch added), each one of
#:
#: * ``("identity", coef)``: ``coef`` on the main diagonal;
#: * ``("diagonal", term)``: the vector of the product term ``term`` on the main diagonal;
#: * ``("scaled", source, vectors, factor, transpose)``: the bands of ``source`` (a slot, or
#:   ``("constant", tree)`` of the step's shape, transposed first where ``transpose``), each
#:   times the stretch of each vector slot along its rows (``(slot, True)``) or columns, and
#:   ``factor``; transposed where ``transpose``;
#: * ``("placed", slot, items, coef)``: the bands of ``slot`` times ``coef`` written at the
#:   slices ``items`` of the step's shape (None: the same shape);
#: * ``("clipped", slot, items)``: the kept stretch of each band of ``slot[items]``;
#:
#: and a constant's ``tree`` one of ``("identity",)`` (``delta(1)``), ``("embed", items,
#: child, tree)``, ``("slice", items, child, tree)`` (``child``: the node, whose shape the
#: tree has) and ``("sum", ((coef, tree), ...))``
Recipe = tuple[tuple[Any, ...], ...]


def write_bands(layout: Layout, values: BandValues) -> np.ndarray:
    """The dense matrix: zeros, each band written (or added, where bands overlap)
    through a strided view of the flat array.  It is :data:`WRITE_BANDS_SOURCE`'s
    ``_write_bands``, the text the generated source and the fused function run, at the
    layout's keys: one text, so the loop and the written source cannot drift apart.

    >>> write_bands(Layout((2, 3), (Band(0, 0, 2), Band(0, 1, 2))), (1.0, np.array([5.0, 6.0]))).tolist()
    [[1.0, 5.0, 0.0], [0.0, 1.0, 6.0]]
    """
    return _write_bands(values, layout.shape, layout.keys, layout.disjoint)


def _merge(parts: list[tuple[Band, BandPart]]) -> tuple[tuple[Band, ...], BandSum]:
    """Bands of a sum: parts with the same stretch added into one (left to right)."""
    groups: dict[Band, list[BandPart]] = {}
    for band, part in parts:
        groups.setdefault(band, []).append(part)
    bands = tuple(groups)
    return bands, BandSum(tuple(tuple(groups[band]) for band in bands))


def _number(coef: Any) -> float | None:
    """``coef`` as a finite float, or None (coefficients beyond float64 stay dense)."""
    try:
        value = float(coef)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


class _Binder:
    """The forward pass of :func:`band_steps`."""

    def __init__(self, plan: Plan, dense: list[tuple[int, ...]], skip: set[int], resolver, backend, bind_term):
        self.plan = plan
        self.dense = dense
        self.skip = skip
        self.resolver = resolver
        self.backend = backend
        self.bind_term = bind_term
        self.steps: dict[int, BandStep] = {}
        self.static: dict[int, BandValues] = {}  # constant steps: their band numbers
        self.recipe: list[tuple[Any, ...]] = []  # the parts of the step being bound, free of lengths

    def fetch(self, slot: int, k: int) -> BandPart:
        """The value of band ``k`` of banded ``slot`` (a constant's number is baked in)."""
        if slot in self.static:
            return BandNumber(self.static[slot][k])
        return BandRef(slot, k)

    def bind(self, step: Step) -> BandStep | None:
        shape = self.dense[step.index]
        if len(shape) != 2 or step.index in self.skip:
            return None
        self.recipe = []
        if step.kind == "constant":
            found = self.constant(cast(Expr, step.data), shape)
            if found is None:
                return None
            bands, values, tree = found
            self.static[step.index] = values
            return BandStep(Layout(shape, bands), BandNumber(values), OpCost(0, 0, 0), (("constant", tree),))
        if step.kind == "product":
            parts = self.product(step, shape)
        elif step.kind == "add":
            parts = self.add(step, shape)
        elif step.kind in ("slice", "embed"):
            parts = self.reshaped(step, shape)
        else:
            return None
        if parts is None:
            return None
        parts, cost = parts
        bands, values = _merge(parts)
        layout = Layout(shape, bands)
        largest = max((band.length for band in bands), default=0)
        cost = cost + OpCost(layout.entries, len(bands), largest, layout.entries)
        return BandStep(layout, values, cost, tuple(self.recipe))

    # -------------------------------------------------------------- constants
    def constant(self, node: Expr, shape: tuple[int, ...]) -> tuple[tuple[Band, ...], BandValues, tuple] | None:
        """A constant of ``delta(1)``, ``embed`` and ``slice`` nodes as bands of numbers, and
        its tree (:data:`Recipe`)."""
        if node.op == "delta" and node.arg == 1 and shape[0] == shape[1]:
            return ((Band(0, 0, shape[0]),), (1.0,), ("identity",)) if shape[0] else ((), (), ("identity",))
        if node.op == "add":  # the difference matrix D = I[1:] - I[:-1] of total variation
            return self._constant_sum(node, shape)
        if node.op not in ("embed", "slice"):
            return None
        (child,) = node.children
        if node.op == "embed":
            ranges = _ranges(node.arg[0], shape)
            if ranges is None:
                return None
            inner = self.constant(child, (len(ranges[0]), len(ranges[1])))
            if inner is None:
                return None
            tree = ("embed", node.arg[0], child, inner[2])
            return tuple(band.placed(ranges[0], ranges[1]) for band in inner[0]), inner[1], tree
        try:
            child_shape = self.resolver.shape(child)
        except Exception:  # noqa: BLE001 - no axis information: stays dense
            return None
        ranges = _ranges(node.arg, child_shape) if len(child_shape) == 2 else None
        inner = self.constant(child, child_shape) if ranges is not None else None
        if inner is None or ranges is None:
            return None
        bands, values = [], []
        for band, value in zip(inner[0], inner[1]):
            kept = band.clipped(ranges[0], ranges[1])
            if kept is not None:
                bands.append(kept[0])
                values.append(value)
        return tuple(bands), tuple(values), ("slice", node.arg, child, inner[2])

    def _constant_sum(self, node: Expr, shape: tuple[int, ...]) -> tuple[tuple[Band, ...], BandValues, tuple] | None:
        """A sum of banded constants: the bands of its terms, scaled, those of one stretch added."""
        coefs = node.arg if node.arg is not None else (1,) * len(node.children)
        merged: dict[Band, float] = {}
        trees = []
        for child, coef in zip(node.children, coefs):
            number = _number(coef)
            inner = self.constant(child, shape) if number is not None else None
            if inner is None or number is None:
                return None
            for band, value in zip(inner[0], inner[1]):
                merged[band] = merged.get(band, 0.0) + number * value
            trees.append((number, inner[2]))
        return tuple(merged), tuple(merged.values()), ("sum", tuple(trees))

    # -------------------------------------------------------------- products
    def product(self, step: Step, shape: tuple[int, ...]):
        parts: list[tuple[Band, BandPart]] = []
        cost = OpCost(0, 0, 0)
        for term in cast("tuple[Term, ...]", step.data):
            if any(slot in self.skip for slot, _ in term.operands):
                return None
            if len(term.out) == 2 and term.out[0] == term.out[1]:
                found = self.diagonal_term(term, shape)
            else:
                found = self.scaled_term(term, shape)
            if found is None:
                return None
            parts.extend(found[0])
            cost = cost + found[1]
        return parts, cost

    def diagonal_term(self, term: Term, shape: tuple[int, ...]):
        """A term writing the main diagonal: its core vector, bound as a dense product."""
        if any(slot in self.steps for slot, _ in term.operands):
            return None
        n = shape[0]
        core = replace(term, out=term.out[:1])
        records: list = []
        bound, cost = self.bind_term(core, (n,), self.dense, self.resolver, self.backend, records=records)
        # the term and its record, for a writer that spells products itself (to_python); the
        # closure runner builds the term's closure from ``bound``
        value = BandTerm(core, (n,), records[0], bound)
        self.recipe.append(("diagonal", core))
        return ([(Band(0, 0, n), value)] if n else []), cost

    def scaled_term(self, term: Term, shape: tuple[int, ...]):
        """``factor * A[p, q] * u[p] * v[q] ...`` written as ``(p, q)`` or ``(q, p)``, A banded."""
        factor = _number(term.factor)
        at = [i for i, (slot, _) in enumerate(term.operands) if slot in self.steps]
        if factor is None or len(at) + len(term.constants) != 1:
            return None
        if at:
            slot, spec = term.operands[at[0]]
            others = [op for i, op in enumerate(term.operands) if i != at[0]]
        else:  # a banded constant (D = I[1:] - I[:-1]) scaled by vectors
            node, spec = term.constants[0]
            others = list(term.operands)
        if len(spec) != 2 or spec[0] == spec[1] or set(term.out) != set(spec) or len(term.out) != 2:
            return None
        p, q = spec
        if any(letter not in spec for letter, _ in term.refs):
            return None
        if any(len(other) != 1 or other[0] not in spec for _, other in others):
            return None
        if at:
            layout, fetch = self.steps[slot].layout, functools.partial(self.fetch, slot)
            source: Any = slot
        else:
            sizes = dict(zip(term.out, shape))
            found = self.constant(node, (sizes[p], sizes[q]))
            if found is None:
                return None
            layout, numbers = Layout((sizes[p], sizes[q]), found[0]), found[1]
            fetch = lambda k: BandNumber(numbers[k])  # noqa: E731
            source = ("constant", found[2])
        vectors = [(s, other[0] == p) for s, other in others]
        transpose = term.out == (q, p)
        self.recipe.append(("scaled", source, tuple(vectors), factor, transpose))
        parts = []
        for k, band in enumerate(layout.bands):
            stretches = []
            for s, on_rows in vectors:
                stretches.append((s, band.rows() if on_rows else band.cols()))
            parts.append((band.transposed() if transpose else band, _scaled(fetch(k), stretches, factor)))
        flops = layout.entries * (len(vectors) + (factor != 1))
        return parts, OpCost(flops, len(layout.bands), 0, multiplications=flops)

    # -------------------------------------------------------------- sums, embed, slice
    def add(self, step: Step, shape: tuple[int, ...]):
        parts: list[tuple[Band, BandPart]] = []
        for item in cast("tuple[AddItem, ...]", step.data):
            coef = _number(item.coef)
            if coef is None:
                return None
            if item.kind == "delta" and item.n == 1 and shape[0] == shape[1]:
                if shape[0]:
                    parts.append((Band(0, 0, shape[0]), BandNumber(coef)))
                self.recipe.append(("identity", coef))
                continue
            if item.kind not in ("slot", "embed") or item.slot not in self.steps:
                return None
            layout = self.steps[item.slot].layout
            ranges = [range(shape[0]), range(shape[1])]
            if item.kind == "embed":
                found = _ranges(item.items, shape)
                if found is None:
                    return None
                ranges = found
            elif layout.shape != shape:
                return None
            self.recipe.append(("placed", item.slot, item.items if item.kind == "embed" else None, coef))
            for k, band in enumerate(layout.bands):
                parts.append((band.placed(*ranges), _scaled(self.fetch(item.slot, k), [], coef)))
        return parts, OpCost(0, 0, 0)

    def reshaped(self, step: Step, shape: tuple[int, ...]):
        (source,) = step.args
        if source not in self.steps:
            return None
        layout = self.steps[source].layout
        parts = []
        if step.kind == "embed":
            ranges = _ranges(cast(tuple, step.data)[0], shape)
            if ranges is None:
                return None
            for k, band in enumerate(layout.bands):
                parts.append((band.placed(ranges[0], ranges[1]), self.fetch(source, k)))
            self.recipe.append(("placed", source, cast(tuple, step.data)[0], 1))
            return parts, OpCost(0, 0, 0)
        ranges = _ranges(cast(tuple, step.data), layout.shape)
        if ranges is None:
            return None
        for k, band in enumerate(layout.bands):
            kept = band.clipped(ranges[0], ranges[1])
            if kept is not None:
                parts.append((kept[0], _stretch(self.fetch(source, k), *kept[1:], kept[0].length)))
        self.recipe.append(("clipped", source, cast(tuple, step.data)))
        return parts, OpCost(0, 0, 0)


def _scaled(value: BandPart, stretches: list[tuple[int, slice]], factor: float) -> BandPart:
    """A band value times ``factor`` and the stretches of vector slots."""
    if not stretches and factor == 1:
        return value
    return BandScaled(value, tuple(stretches), factor)


def _stretch(value: BandPart, first: int, every: int, length: int) -> BandPart:
    """Entries ``first, first + every, ...`` (``length`` of them) of a band value (a number stays a number)."""
    return BandStretch(value, first, first + every * (length - 1) + 1, every)


def band_steps(
    plan: Plan, dense: list[tuple[int, ...]], skip: set[int], resolver, backend, bind_term
) -> tuple[dict[int, BandStep], set[int]]:
    """The banded steps of ``plan`` bound to the shapes ``dense``, and which of them
    are constants (their readers take the numbers; the slot stays dense if read densely).

    ``skip``: slots that are not to be read or made banded (diagonal cores);
    ``bind_term``: :func:`tenscalc.compiler.program._bind_term`, for diagonal cores (their
    records: :class:`.fused.BandTerm` ``bound``).
    """
    binder = _Binder(plan, dense, skip, resolver, backend, bind_term)
    for step in plan.steps:
        found = binder.bind(step)
        if found is not None:
            binder.steps[step.index] = found
    return binder.steps, set(binder.static)
