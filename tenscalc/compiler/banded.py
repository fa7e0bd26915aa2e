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
zeroed array, each band written through a strided view of its diagonal), as
are the outputs.  Off the bands such a value is exactly 0 (as a diagonal core's
dense form is).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from ..core.nodes import Expr
from .cost import OpCost
from .fused import BandNumber, BandRef, BandScaled, BandStretch, BandSum, BandTerm, band_stretch, describe
from .plan import AddItem, Plan, Step, Term

BandValues = tuple[Any, ...]  # per band: a 1-D array of its length, or a number
BandFn = Callable[[list], BandValues]


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
        return Band(
            rows.start + rows.step * self.row,
            cols.start + cols.step * self.col,
            self.length,
            rows.step * self.rstep,
            cols.step * self.cstep,
        )

    def transposed(self) -> Band:
        return Band(self.col, self.row, self.length, self.cstep, self.rstep)

    def clipped(self, rows: range, cols: range) -> tuple[Band, int, int] | None:
        """The band of ``A[rows, cols]`` (positive steps), the first ``t`` kept and the
        step between kept ``t``; None when no entry is kept.

        An entry is kept when its row is in ``rows`` and its column in ``cols``: two
        congruences in ``t``, so the kept ``t`` repeat with the period ``every``.
        """
        first = max(0, _ceil_div(rows.start - self.row, self.rstep), _ceil_div(cols.start - self.col, self.cstep))
        stop = min(
            self.length, _ceil_div(rows.stop - self.row, self.rstep), _ceil_div(cols.stop - self.col, self.cstep)
        )
        every = math.lcm(rows.step // math.gcd(self.rstep, rows.step), cols.step // math.gcd(self.cstep, cols.step))
        for t in range(first, min(stop, first + every)):
            if (self.row + self.rstep * t - rows.start) % rows.step == 0 and (
                self.col + self.cstep * t - cols.start
            ) % cols.step == 0:
                band = Band(
                    (self.row + self.rstep * t - rows.start) // rows.step,
                    (self.col + self.cstep * t - cols.start) // cols.step,
                    len(range(t, stop, every)),
                    self.rstep * every // rows.step,
                    self.cstep * every // cols.step,
                )
                return band, t, every
        return None

    def rows(self) -> slice:
        """The rows the band's entries lie on, as a slice of a vector along them."""
        return slice(self.row, self.row + self.rstep * (self.length - 1) + 1, self.rstep)

    def cols(self) -> slice:
        return slice(self.col, self.col + self.cstep * (self.length - 1) + 1, self.cstep)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


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
        width = self.shape[1]
        keys = []
        for band in self.bands:
            start = band.row * width + band.col
            step = band.rstep * width + band.cstep
            keys.append(slice(start, start + (band.length - 1) * step + 1, step))
        return tuple(keys)

    @functools.cached_property
    def disjoint(self) -> bool:
        """No two bands share an entry: each band is written with ``=``, not ``+=``
        (a read of fresh zeroed pages before the write faults each page in twice)."""
        flat = [np.arange(key.start, key.stop, key.step) for key in self.keys]
        positions = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
        return len(np.unique(positions)) == len(positions)


@dataclass
class BandStep:
    """A banded step bound: its layout, the closure computing its band values, its cost."""

    layout: Layout
    run: BandFn
    cost: OpCost


def write_bands(layout: Layout, values: BandValues) -> np.ndarray:
    """The dense matrix: zeros, each band written (or added, where bands overlap)
    through a strided view of the flat array."""
    dtype = _F64
    for value in values:
        if getattr(value, "dtype", _F64) is not _F64:  # complex or float32 bands: NumPy's promotion
            dtype = np.result_type(*[v for v in values if not isinstance(v, (int, float))], np.float64)
            break
    out = np.zeros(layout.shape, dtype=dtype)
    flat = out.reshape(-1)
    if layout.disjoint:
        for key, value in zip(layout.keys, values):
            flat[key] = value
    else:
        for key, value in zip(layout.keys, values):
            flat[key] += value
    return out


_F64 = np.dtype(np.float64)


def _merge(parts: list[tuple[Band, Callable[[list], Any]]]) -> tuple[tuple[Band, ...], BandFn]:
    """Bands of a sum: parts with the same stretch added into one."""
    groups: dict[Band, list[Callable[[list], Any]]] = {}
    for band, fn in parts:
        groups.setdefault(band, []).append(fn)
    bands = tuple(groups)
    fns = [groups[band] for band in bands]

    def run(env: list) -> BandValues:
        values = []
        for group in fns:
            total = group[0](env)
            for fn in group[1:]:
                total = total + fn(env)
            values.append(total)
        return tuple(values)

    return bands, describe(run, BandSum(tuple(tuple(group) for group in fns)))


def _number(coef: Any) -> float | None:
    """``coef`` as a finite float, or None (coefficients beyond float64 stay dense)."""
    try:
        value = float(coef)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _ranges(items: Sequence, shape: Sequence[int]) -> list[range] | None:
    """Per axis, the rows a slice (or embed) key selects; None unless slices of positive step."""
    if len(items) != len(shape) or any(isinstance(item, int) for item in items):
        return None
    ranges = []
    for item, length in zip(items, shape):
        start, stop, step = slice(*item).indices(length)
        if step < 1:
            return None
        ranges.append(range(start, max(start, stop), step))
    return ranges


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

    def fetch(self, slot: int, k: int) -> Callable[[list], Any]:
        """The value of band ``k`` of banded ``slot`` (a constant's number is baked in)."""
        if slot in self.static:
            value = self.static[slot][k]
            return describe(lambda env: value, BandNumber(value))
        return describe(lambda env: env[slot][k], BandRef(slot, k))

    def bind(self, step: Step) -> BandStep | None:
        shape = self.dense[step.index]
        if len(shape) != 2 or step.index in self.skip:
            return None
        if step.kind == "constant":
            found = self.constant(cast(Expr, step.data), shape)
            if found is None:
                return None
            bands, values = found
            self.static[step.index] = values
            return BandStep(Layout(shape, bands), describe(lambda env: values, BandNumber(values)), OpCost(0, 0, 0))
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
        bands, run = _merge(parts)
        layout = Layout(shape, bands)
        largest = max((band.length for band in bands), default=0)
        return BandStep(layout, run, cost + OpCost(layout.entries, len(bands), largest, layout.entries))

    # -------------------------------------------------------------- constants
    def constant(self, node: Expr, shape: tuple[int, ...]) -> tuple[tuple[Band, ...], BandValues] | None:
        """A constant of ``delta(1)``, ``embed`` and ``slice`` nodes as bands of numbers."""
        if node.op == "delta" and node.arg == 1 and shape[0] == shape[1]:
            return ((Band(0, 0, shape[0]),), (1.0,)) if shape[0] else ((), ())
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
            return tuple(band.placed(ranges[0], ranges[1]) for band in inner[0]), inner[1]
        try:
            child_shape = self.resolver.shape(child)
        except Exception:  # noqa: BLE001 - no axis information: stays dense
            return None
        ranges = _ranges(node.arg, child_shape) if len(child_shape) == 2 else None
        inner = self.constant(child, child_shape) if ranges is not None else None
        if inner is None or ranges is None:
            return None
        bands, values = [], []
        for band, value in zip(*inner):
            kept = band.clipped(ranges[0], ranges[1])
            if kept is not None:
                bands.append(kept[0])
                values.append(value)
        return tuple(bands), tuple(values)

    def _constant_sum(self, node: Expr, shape: tuple[int, ...]) -> tuple[tuple[Band, ...], BandValues] | None:
        """A sum of banded constants: the bands of its terms, scaled, those of one stretch added."""
        coefs = node.arg if node.arg is not None else (1,) * len(node.children)
        merged: dict[Band, float] = {}
        for child, coef in zip(node.children, coefs):
            number = _number(coef)
            inner = self.constant(child, shape) if number is not None else None
            if inner is None or number is None:
                return None
            for band, value in zip(*inner):
                merged[band] = merged.get(band, 0.0) + number * value
        return tuple(merged), tuple(merged.values())

    # -------------------------------------------------------------- products
    def product(self, step: Step, shape: tuple[int, ...]):
        parts: list[tuple[Band, Callable[[list], Any]]] = []
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
        fn, cost = self.bind_term(core, (n,), self.dense, self.resolver, self.backend)
        # the term, for a writer that spells products itself (to_python); the fused function calls fn
        value = describe(lambda env: fn(env), BandTerm(core, (n,), fn))
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
        else:
            sizes = dict(zip(term.out, shape))
            found = self.constant(node, (sizes[p], sizes[q]))
            if found is None:
                return None
            layout, numbers = Layout((sizes[p], sizes[q]), found[0]), found[1]
            fetch = lambda k: describe(lambda env, v=numbers[k]: v, BandNumber(numbers[k]))  # noqa: E731
        vectors = [(s, other[0] == p) for s, other in others]
        transpose = term.out == (q, p)
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
        parts: list[tuple[Band, Callable[[list], Any]]] = []
        for item in cast("tuple[AddItem, ...]", step.data):
            coef = _number(item.coef)
            if coef is None:
                return None
            if item.kind == "delta" and item.n == 1 and shape[0] == shape[1]:
                if shape[0]:
                    parts.append((Band(0, 0, shape[0]), describe(lambda env, c=coef: c, BandNumber(coef))))
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
            return parts, OpCost(0, 0, 0)
        ranges = _ranges(cast(tuple, step.data), layout.shape)
        if ranges is None:
            return None
        for k, band in enumerate(layout.bands):
            kept = band.clipped(ranges[0], ranges[1])
            if kept is not None:
                parts.append((kept[0], _stretch(self.fetch(source, k), *kept[1:], kept[0].length)))
        return parts, OpCost(0, 0, 0)


def _scaled(value: Callable[[list], Any], stretches: list[tuple[int, slice]], factor: float) -> Callable[[list], Any]:
    """A band value times ``factor`` and the stretches of vector slots."""
    if not stretches and factor == 1:
        return value

    def run(env: list) -> Any:
        result = value(env)
        for slot, key in stretches:
            result = result * env[slot][key]
        return result * factor if factor != 1 else result

    return describe(run, BandScaled(value, tuple(stretches), factor))


def _stretch(value: Callable[[list], Any], first: int, every: int, length: int) -> Callable[[list], Any]:
    """Entries ``first, first + every, ...`` (``length`` of them) of a band value (a number stays a number)."""
    stop = first + every * (length - 1) + 1

    def run(env: list) -> Any:
        return band_stretch(value(env), first, stop, every)

    return describe(run, BandStretch(value, first, stop, every))


def band_steps(
    plan: Plan, dense: list[tuple[int, ...]], skip: set[int], resolver, backend, bind_term
) -> tuple[dict[int, BandStep], set[int]]:
    """The banded steps of ``plan`` bound to the shapes ``dense``, and which of them
    are constants (their readers take the numbers; the slot stays dense if read densely).

    ``skip``: slots that are not to be read or made banded (diagonal cores);
    ``bind_term``: :func:`tenscalc.compiler.program._bind_term`, for diagonal cores.
    """
    binder = _Binder(plan, dense, skip, resolver, backend, bind_term)
    for step in plan.steps:
        found = binder.bind(step)
        if found is not None:
            binder.steps[step.index] = found
    return binder.steps, set(binder.static)
