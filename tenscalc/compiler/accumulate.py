"""Sums of terms written into one buffer (NumPy): the accumulate op.

A product step of several terms (a sum whose summand products :func:`gather_sums`
took into it when binding, or a distributed sum) would otherwise
compute every term as an array of the sum's shape and add them: on the
log-sum-exp Hessian ``diag(p) - p pᵀ`` two n×n arrays and a third for the sum, on
the Rayleigh quotient's six.  :func:`parts` sorts the terms by structure, once per
shape signature, into a description that the binder (:func:`bind_accumulate`) and
the source writer (:mod:`.source`) both follow:

* :class:`Outer` — ``c u_a v_b`` (no summed letter joins the row and column
  operands): every such term gives one column of ``U`` (n×r) and ``V`` (m×r), and
  all of them are one GEMM ``U Vᵀ``, the buffer itself when no dense term comes first;
* :class:`Diagonal` — a term writing the diagonal ``(a, a)``: its core vector is
  added through the buffer's diagonal view;
* :class:`Broadcast` — a term whose operands lack an output letter: its small core
  is added with broadcasting (``u ⊗ 1``), never materialised;
* :class:`Copy` — ``s A`` or ``s Aᵀ`` (one array of the sum's letters, scaled by
  numbers and 0-d slots): added in row blocks, so no scaled copy is allocated;
* :class:`Dense` — anything else: computed as the binder computes any term, the
  first fresh one taken as the buffer, the others added into it.

So the sum's peak memory is one result plus the largest single term's operands
(its small vectors, a block, or one dense term), whatever the number of terms.

>>> from tenscalc.compiler.plan import Term
>>> outer = Term(-2.0, ((1, (0,)), (2, (1,)), (3, ())), (1, 0))  # -2 s v_j u_i, written (i, j)
>>> diagonal = Term(1.0, ((1, (0,)),), (0, 0))
>>> [type(p).__name__ for p in parts((outer, diagonal), (4, 4))]
['Outer', 'Diagonal']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from ..core.letters import LetterClasses
from .cost import OpCost
from .fused import Chain, Fresh
from .plan import REGROUP_LIMIT, AddItem, Plan, Step, Term, _liveness, step_reads

__all__ = [
    "Broadcast",
    "Copy",
    "Dense",
    "Diagonal",
    "AccumulateRecord",
    "Outer",
    "accumulate_closure",
    "accumulates",
    "bind_accumulate",
    "block_rows",
    "gather_sums",
    "part_lists",
    "parts",
]

#: entries of one block of a blocked update (a scaled copy, a GEMM into an existing
#: buffer): the temporary stays in cache and no array of the sum's size is made
BLOCK = 1 << 15


@dataclass(frozen=True)
class Outer:
    """``row ⊗ col`` written ``(a, b)``: ``row`` (out ``(a,)``) carries the factor and
    the numbers, ``col`` (out ``(b,)``)."""

    row: Term
    col: Term


@dataclass(frozen=True)
class Diagonal:
    """The core (out ``(a,)``) of a term written on the diagonal ``(a, a)``."""

    core: Term


@dataclass(frozen=True)
class Broadcast:
    """A term's core over the output letters its operands carry, and the index that
    broadcasts it to the sum's shape (``None`` where a letter is missing)."""

    core: Term
    index: tuple[slice | None, ...]


@dataclass(frozen=True)
class Copy:
    """``factor * scalars... * slot.transpose(perm)``."""

    slot: int
    perm: tuple[int, ...]
    factor: float
    scalars: tuple[int, ...]  # 0-d slots multiplying it


@dataclass(frozen=True)
class Dense:
    """A term computed as a whole array of the sum's shape."""

    term: Term


Part = Outer | Diagonal | Broadcast | Copy | Dense


#: and at most this fraction of the sum's rows (a block is small next to the result)
BLOCK_FRACTION = 16


def block_rows(shape: Sequence[int]) -> int:
    """Rows of the sum's first axis per block (at least one): ``_block_rows`` of
    :data:`ACCUMULATE_SOURCE`, which the shape-free ``tc.to_python()`` module runs at run time.

    >>> block_rows((2000, 2000)), block_rows((200, 200)), block_rows((5,))
    (16, 13, 1)
    """
    return int(_namespace["_block_rows"](tuple(shape), BLOCK, BLOCK_FRACTION))


def accumulates(terms: Sequence[Term], shape: tuple[int, ...]) -> bool:
    """Whether the NumPy binder writes a product step of ``terms`` (a sum, :func:`gather_sums`)
    of ``shape`` into one buffer (:func:`bind_accumulate`): two or more terms, an array of 2
    or more axes, some term not dense.  The shape-free ``tc.to_python()`` asks the same."""
    return len(terms) > 1 and len(shape) >= 2 and any(not isinstance(part, Dense) for part in parts(terms, shape))


def part_lists(
    found: Sequence[Part],
    shape: Sequence[Any],
    held: Callable[[Term, tuple], str],
    read: Callable[[int], str],
    number: Callable[[float], str],
) -> str | None:
    """The text of the lists :data:`ACCUMULATE_SOURCE`'s ``_accumulate`` takes for the
    parts of ``found`` that are not dense terms (outer products, diagonal cores,
    broadcasts, scaled copies), as both generated modules write them; None where there
    are none.  ``shape``: the sum's lengths (numbers, or their texts in a shape-free
    module); ``held(term, lengths)``: the name of a statement the writer adds computing
    ``term``; ``read(slot)`` and ``number(value)``: the writer's spellings.

    >>> copy = Copy(3, (1, 0), 2.0, ())
    >>> part_lists([copy], (4, 5), None, lambda slot: f"_s{slot}", repr)
    '[], [], [], [_s3.transpose((1, 0))], [2.0]'
    """
    rows = [
        f"({held(p.row, tuple(shape[:1]))}, {held(p.col, tuple(shape[1:]))})" for p in found if isinstance(p, Outer)
    ]
    cores = [held(p.core, tuple(shape[:1])) for p in found if isinstance(p, Diagonal)]
    spread = []
    for p in found:
        if isinstance(p, Broadcast):
            core = held(p.core, tuple(n for n, i in zip(shape, p.index) if i is not None))
            spread.append(f"_np.asarray({core})[{', '.join(':' if i is not None else 'None' for i in p.index)}]")
    sources, scales = [], []
    for p in found:
        if isinstance(p, Copy):
            source = read(p.slot)
            sources.append(source if list(p.perm) == sorted(p.perm) else f"{source}.transpose({p.perm!r})")
            scales.append(" * ".join([number(float(p.factor)), *(read(slot) for slot in p.scalars)]))
    if not (rows or cores or spread or sources):
        return None
    return ", ".join(f"[{', '.join(texts)}]" for texts in (rows, cores, spread, sources, scales))


def parts(terms: Sequence[Term], shape: tuple[int, ...]) -> list[Part]:
    """The parts of a sum of ``terms`` of ``shape``."""
    return [_part(term, shape) for term in terms]


def _part(term: Term, shape: tuple[int, ...]) -> Part:
    out = term.out
    if len(set(out)) != len(out):
        if len(out) == 2 and shape[0] == shape[1]:
            return Diagonal(replace(term, out=out[:1]))
        return Dense(term)
    if term.constants:
        return Dense(term)
    present = set().union(*[spec for _, spec in term.operands])
    if not set(out) <= present:
        # a letter no operand carries is broadcast (out) or a length factor (summed):
        # the core keeps the refs of the summed ones only
        missing = set(out) - present
        core = replace(
            term,
            out=tuple(letter for letter in out if letter in present),
            refs=tuple((letter, ref) for letter, ref in term.refs if letter not in missing),
        )
        return Broadcast(core, tuple(slice(None) if letter in present else None for letter in out))
    copy = _copy(term)
    if copy is not None:
        return copy
    if len(out) == 2:
        outer = _outer(term)
        if outer is not None:
            return outer
    return Dense(term)


def _copy(term: Term) -> Copy | None:
    arrays = [(slot, spec) for slot, spec in term.operands if spec]
    if len(arrays) != 1:
        return None
    slot, spec = arrays[0]
    if len(set(spec)) != len(spec) or set(spec) != set(term.out):
        return None
    if any(letter not in spec for letter, _ in term.refs):
        return None  # a length factor: the general term counts it
    scalars = tuple(s for s, sp in term.operands if not sp)
    return Copy(slot, tuple(spec.index(letter) for letter in term.out), term.factor, scalars)


def _outer(term: Term) -> Outer | None:
    a, b = term.out
    classes = LetterClasses()
    for _, spec in term.operands:
        for letter in spec[1:]:
            classes.union(spec[0], letter)
    row_class, col_class = classes.find(a), classes.find(b)
    if row_class == col_class:
        return None  # a summed letter joins the row and column: a contraction
    rows: list[tuple[int, tuple[int, ...]]] = []
    cols: list[tuple[int, tuple[int, ...]]] = []
    for slot, spec in term.operands:
        (cols if spec and classes.find(spec[0]) == col_class else rows).append((slot, spec))
    col_letters = {letter for _, spec in cols for letter in spec}
    row_refs = tuple((letter, ref) for letter, ref in term.refs if letter not in col_letters and letter != b)
    col_refs = tuple((letter, ref) for letter, ref in term.refs if letter in col_letters)
    row = Term(term.factor, tuple(rows), (a,), row_refs)
    col = Term(1, tuple(cols), (b,), col_refs)
    return Outer(row, col)


def gather_sums(plan: Plan, dense: Sequence[tuple[int, ...]], skip: frozenset[int]) -> tuple[Plan, frozenset[int]]:
    """``plan`` with each sum of order 2 or more that has a summand product of outer,
    broadcast, diagonal or scaled-copy terms only (read by that sum alone, not an output)
    written as one product step: those products' terms scaled by their coefficients,
    any other summand a one-operand term, a number or ``delta`` a constant term.  The
    binder then writes the whole sum into one buffer (:func:`bind_accumulate`).  Made
    when binding, after :mod:`.factoring`'s rewrites of the same sums (``X P + X Q``
    factored, a coefficient moved onto a broadcast).  Returns the plan and the slots
    no longer computed (with ``skip``).

    >>> import tenscalc as tc
    >>> f = tc.compile(tc.parse("u *(i,j->ij) v - C", {"u": 1, "v": 1, "C": 2}))
    >>> [step.kind for step in f.plan.steps]
    ['input', 'input', 'product', 'input', 'add']
    >>> plan, skip = gather_sums(f.plan, [(3,), (4,), (3, 4), (3, 4), (3, 4)], frozenset())
    >>> plan.steps[4].kind, len(plan.steps[4].data), sorted(skip)
    ('product', 2, [2])
    """
    readers: dict[int, list[int]] = {}
    for step in plan.steps:
        for slot in step_reads(step):
            readers.setdefault(slot, []).append(step.index)
    steps = list(plan.steps)
    dropped: set[int] = set()
    outputs = set(plan.outputs)
    inputs = set(plan.inputs.values())
    for step in plan.steps:
        shape = tuple(dense[step.index])
        if step.kind != "add" or step.index in skip or len(shape) < 2:
            continue
        items = cast("tuple[AddItem, ...]", step.data)
        if any(item.kind not in ("slot", "scalar", "delta") or not _real(item.coef) for item in items):
            continue
        taken = {
            item.slot
            for item in items
            if item.kind == "slot"
            and item.slot not in skip
            and item.slot not in outputs
            and readers.get(item.slot) == [step.index]
            and (
                _structured_product(steps[item.slot], item.coef, shape, tuple(dense[item.slot]))
                or _alive_anyway(steps[item.slot], item.coef, shape, dense[item.slot], step.index, readers, inputs)
            )
        }
        if not taken:
            continue
        steps[step.index] = Step(step.index, "product", step.node, data=_terms(items, taken, steps, len(shape)))
        for slot in taken:
            steps[slot] = replace(steps[slot], data=())  # reads nothing: never computed
        dropped |= taken
    if not dropped:
        return plan, skip
    gathered = replace(plan, steps=steps)
    gathered.release = _liveness(gathered)
    return gathered, skip | dropped


def _real(coef: object) -> bool:
    return isinstance(coef, (int, float)) and not isinstance(coef, bool) and math.isfinite(coef)


def _structured_product(step: Step, coef: float, shape: tuple[int, ...], own: tuple[int, ...]) -> bool:
    """Whether product ``step`` is written into a sum's buffer without a temporary of its
    own: every term an outer product, a broadcast, a diagonal or a scaled copy (``c A``,
    ``c Aᵀ``), with a finite factor the coefficient can join."""
    if step.kind != "product" or own != shape:
        return False
    terms = cast("tuple[Term, ...]", step.data)
    if not terms or any(not _real(t.factor) or abs(t.factor * coef) >= REGROUP_LIMIT for t in terms):
        return False
    return all(not isinstance(p, Dense) for p in parts(terms, shape))


def _alive_anyway(
    step: Step,
    coef: float,
    shape: tuple[int, ...],
    own: Sequence[int],
    at: int,
    readers: dict[int, list[int]],
    inputs: set[int],
) -> bool:
    """Whether product ``step`` (general contractions: ``A B + C D``) may be computed at
    the sum ``at`` instead, added into its buffer as soon as it is made: each of its
    operands is an input or read at or after the sum anyway, so none lives longer (an
    operand that died at the product would then live on to the sum: the network HVP's
    peak rose that way).  Its terms then cost one temporary at a time, not one each."""
    if step.kind != "product" or tuple(own) != shape:
        return False
    terms = cast("tuple[Term, ...]", step.data)
    if not terms or any(not _real(t.factor) or abs(t.factor * coef) >= REGROUP_LIMIT for t in terms):
        return False
    for term in terms:
        for slot, _ in term.operands:
            if slot not in inputs and not any(r >= at for r in readers.get(slot, ()) if r != step.index):
                return False
    return True


def _terms(items: Sequence[AddItem], taken: set[int], steps: list[Step], order: int) -> tuple[Term, ...]:
    own = tuple(range(order))
    terms: list[Term] = []
    for item in items:
        if item.kind == "slot" and item.slot in taken:
            product = cast("tuple[Term, ...]", steps[item.slot].data)
            terms.extend(replace(term, factor=term.factor * item.coef) for term in product)
        elif item.kind == "slot":
            terms.append(Term(item.coef, ((item.slot, own),), own))
        elif item.kind == "delta" and item.n > 0:  # written on its diagonal
            terms.append(Term(item.coef, (), tuple(range(item.n)) * 2))
        else:  # a number (delta(0) is the number 1)
            terms.append(Term(item.coef, (), own))
    return tuple(terms)


#: the binder of one term: (term, shape, shapes, resolver, backend) -> (its record, its cost)
BindTerm = Callable[..., tuple[Any, OpCost]]


@dataclass(frozen=True)
class AccumulateRecord:
    """A sum of terms written into one buffer of ``shape`` as bound: its ``parts`` (in order),
    each part's term records (:class:`.records.TermRecord`: ``dense`` of the sum's shape,
    ``outers`` row and column vectors, ``diagonals`` cores, ``broadcasts`` small cores with
    the index spreading them), its scaled ``copies``, whether the first dense term's array
    is the buffer (``take``) and the rows per block; the closure runner (:mod:`.closures`)
    and the source writers follow it."""

    shape: tuple[int, ...]
    parts: tuple[Part, ...]
    take: bool
    dense: tuple[Any, ...]
    outers: tuple[tuple[Any, Any], ...]
    diagonals: tuple[Any, ...]
    broadcasts: tuple[tuple[Any, tuple], ...]
    copies: tuple[Copy, ...]
    block: int


def bind_accumulate(
    terms: Sequence[Term],
    shape: tuple[int, ...],
    shapes: Sequence[tuple[int, ...]],
    resolver: Any,
    backend: Any,
    bind_term: BindTerm,
    term_description: Callable[[Any], Any],
) -> tuple[AccumulateRecord, OpCost]:
    """The record of the sum of ``terms`` written into one buffer, and its cost (NumPy);
    ``term_description``: a term record's description (:mod:`.descriptions`: the first dense
    term's array may be the buffer where its closure allocates it, :func:`takes_first`)."""
    found = parts(terms, shape)
    size = math.prod(shape)
    costs: list[OpCost] = []  # of the small parts (vectors), computed first and held
    dense_costs: list[OpCost] = []
    small = 0  # entries of the vectors held until they are added

    def bound(term: Term, term_shape: tuple[int, ...]) -> Any:
        nonlocal small
        record, cost = bind_term(term, term_shape, shapes, resolver, backend)
        (dense_costs if term_shape == shape else costs).append(cost)
        if term_shape != shape:
            small += math.prod(term_shape)
        return record

    dense = [bound(p.term, shape) for p in found if isinstance(p, Dense)]
    take = bool(dense) and takes_first(term_description(dense[0]))
    outers = [(bound(p.row, shape[:1]), bound(p.col, shape[1:])) for p in found if isinstance(p, Outer)]
    diagonals = [bound(p.core, shape[:1]) for p in found if isinstance(p, Diagonal)]
    broadcasts = [
        (bound(p.core, tuple(n for n, i in zip(shape, p.index) if i is not None)), p.index)
        for p in found
        if isinstance(p, Broadcast)
    ]
    copies = [p for p in found if isinstance(p, Copy)]
    rank = len(outers)
    gemm = 0.0
    if rank:
        rank = max(rank, 2)  # a rank-1 update is padded to 2 (see ACCUMULATE_SOURCE)
        small += rank * (shape[0] + shape[1])  # U and V
        gemm = 2.0 * size * rank
    scaled = sum(1 for c in copies if c.factor not in (1, -1) or c.scalars)
    # a block-sized temporary for scaled copies, and for a GEMM added into a dense term
    temp = min(block_rows(shape) * math.prod(shape[1:]), size) if scaled or (rank and dense) else 0
    peak = small + max([c.step_peak for c in costs], default=0)
    if dense:
        peak = max(peak, small + dense_costs[0].step_peak)
        peak = max(peak, small + size + max([c.step_peak for c in dense_costs[1:]], default=0))
    peak = max(peak, size + small + temp)
    n_adds = len(found) - 1
    cost = OpCost.combine(costs + dense_costs)
    cost = OpCost(
        cost.flops + gemm + size * (n_adds + scaled),
        cost.operations + n_adds + (1 if rank else 0),
        max(cost.largest_intermediate, size),
        peak,
        cost.flags,
        cost.multiplications + gemm / 2 + size * scaled,
    )
    record = AccumulateRecord(
        tuple(shape), tuple(found), take, tuple(dense), tuple(outers), tuple(diagonals), tuple(broadcasts),
        tuple(copies), block_rows(shape),
    )  # fmt: skip
    return record, cost


def accumulate_closure(record: AccumulateRecord, term_closure: Callable[[Any], Callable[[list], Any]]) -> Any:
    """The closure adding ``record``'s parts into one buffer (NumPy), its terms' closures made
    by ``term_closure`` (the closure runner's, :mod:`.closures`)."""
    shape, take, block = record.shape, record.take, record.block
    dense = [term_closure(term) for term in record.dense]
    outers = [(term_closure(u), term_closure(v)) for u, v in record.outers]
    diagonals = [term_closure(term) for term in record.diagonals]
    broadcasts = [(term_closure(term), index) for term, index in record.broadcasts]
    copies = list(record.copies)

    def run(env: list) -> Any:
        # the small parts first (held until added), then the dense terms one at a time
        rows = [(u(env), v(env)) for u, v in outers]
        cores = [d(env) for d in diagonals]
        spread = [np.asarray(b(env))[index] for b, index in broadcasts]
        sources = [env[c.slot].transpose(c.perm) for c in copies]
        scales = [_scale(c, env) for c in copies]
        buf = None
        for k, fn in enumerate(dense):
            value = fn(env)
            buf = (value if take else np.array(value)) if k == 0 else _add_into(buf, value)
        if not (rows or cores or spread or sources):
            return buf
        return _accumulate(buf, shape, rows, cores, spread, sources, scales, block)

    return run


def takes_first(description: Any) -> bool:
    """Whether the first dense term's array may be the sum's buffer (written into): only
    where its record describes (``description``, :mod:`.descriptions`) an array nobody else
    holds (an elementwise chain's, a contraction's new array), never an input, a view of
    one, or a slot read later.  Decided once, when binding; the closure, the fused function
    and ``tc.to_python`` follow it (``BoundStep.take``), copying the term's value otherwise."""
    return isinstance(description, (Chain, Fresh))


def _scale(copy: Copy, env: list) -> Any:
    scale: Any = copy.factor
    for slot in copy.scalars:
        scale = scale * env[slot]
    return scale  # a Python float stays weak: a float32 array scaled by it stays float32


#: the run-time half, as source: the binder runs it, and ``tc.to_python`` writes the same
#: text into the generated module (which needs NumPy only), so both add the same way
ACCUMULATE_SOURCE = '''
# builtins under names of their own: the generated function may be named like one
_len, _range, _min, _max, _zip = len, range, min, max, zip


def _block_rows(shape, block=BLOCK_ENTRIES, fraction=BLOCK_FRACTION):
    """Rows of the sum's first axis per block of about ``block`` entries (at least one, at
    most a ``fraction`` of the rows)."""
    row = 1
    for n in shape[1:]:
        row *= n
    return _max(1, _min(block // _max(row, 1), -(-shape[0] // fraction)))

def _add_into(buf, value):
    """``buf + value``, written into ``buf`` when its dtype holds the sum."""
    if _np.result_type(buf, value) != buf.dtype:
        return buf + value
    _np.add(buf, value, out=buf)
    return buf


def _accumulate(buf, shape, rows, cores, spread, sources, scales, block):
    """``buf`` (None: nothing yet) plus, in that one buffer: the outer products ``u vᵀ`` of
    ``rows`` as one GEMM ``U Vᵀ``, the copies ``scale * source`` and the broadcast parts
    ``spread`` (a block of ``block`` rows at a time: no temporary of the whole shape), and
    the diagonal ``cores`` through the buffer's diagonal view."""
    dtype = _np.result_type(*[x for pair in rows for x in pair], *cores, *spread, *sources, *scales)
    if buf is not None:
        dtype = _np.result_type(buf, dtype)
        if buf.dtype != dtype:
            buf = buf.astype(dtype)
    n = shape[0]
    if rows:
        # U and V stored transposed (one row per term); rank 1 padded with a zero row:
        # NumPy's matmul of an inner length 1 does not call BLAS (2,000 x 2,000: 25 ms
        # against 8 ms for the padded GEMM, one core)
        pad = [_np.zeros(n, dtype)] if _len(rows) == 1 else []
        ut = _np.array([row for row, _ in rows] + pad, dtype)
        vt = _np.array([col for _, col in rows] + [_np.zeros(shape[1], dtype)] * _len(pad), dtype)
        if buf is None:
            buf = ut.T @ vt
        else:
            temp = _np.empty((_min(block, n), shape[1]), dtype)
            for lo in _range(0, n, block):
                part = _np.matmul(ut[:, lo : lo + block].T, vt, out=temp[: _min(block, n - lo)])
                _np.add(buf[lo : lo + block], part, out=buf[lo : lo + block])
    # no buffer yet: the first write makes it, without a pass over zeros
    if buf is None and _len(spread) >= 2:  # u ⊗ 1 + 1 ⊗ v in one pass, as np.add.outer(u, v)
        buf = _np.add(spread[0], spread[1], out=_np.empty(shape, dtype))
        spread = spread[2:]
    elif buf is None and spread and sources and scales[0] in (1, -1):
        combine = _np.add if scales[0] == 1 else _np.subtract
        buf = combine(spread[0], sources[0], out=_np.empty(shape, dtype))
        spread, sources, scales = spread[1:], sources[1:], scales[1:]
    if buf is None and sources:
        buf = _np.multiply(sources[0], scales[0], out=_np.empty(shape, dtype))
        sources, scales = sources[1:], scales[1:]
    if buf is None:
        buf = _np.zeros(shape, dtype)
    if sources:
        # copies of one scale are summed before it is applied: s (A + Aᵀ), one multiply
        groups = []
        for source, scale in _zip(sources, scales):
            for group in groups:
                if group[0] == scale:
                    group[1].append(source)
                    break
            else:
                groups.append((scale, [source]))
        temp = _np.empty((_min(block, n), *shape[1:]), dtype)
        for lo in _range(0, n, block):
            view = buf[lo : lo + block]
            for scale, group in groups:
                if scale == 1 or scale == -1:
                    for source in group:
                        (_np.add if scale == 1 else _np.subtract)(view, source[lo : lo + block], out=view)
                    continue
                part = temp[: _min(block, n - lo)]
                if _len(group) == 1:
                    _np.multiply(group[0][lo : lo + block], scale, out=part)
                else:
                    _np.add(group[0][lo : lo + block], group[1][lo : lo + block], out=part)
                    for source in group[2:]:
                        _np.add(part, source[lo : lo + block], out=part)
                    _np.multiply(part, scale, out=part)
                _np.add(view, part, out=view)
    for value in spread:
        _np.add(buf, value, out=buf)
    if cores:
        # the diagonal view: every (n + 1)-th entry of a C-ordered buffer (einsum's view otherwise)
        diagonal = buf.reshape(-1)[:: n + 1] if buf.flags.c_contiguous else _np.einsum("ii->i", buf)
        for core in cores:
            _np.add(diagonal, core, out=diagonal)
    return buf
'''.replace("BLOCK_ENTRIES", str(BLOCK)).replace("BLOCK_FRACTION", str(BLOCK_FRACTION))

_namespace: dict[str, Any] = {"_np": np}
exec(compile(ACCUMULATE_SOURCE, "<tenscalc accumulate>", "exec"), _namespace)  # noqa: S102 - the text above
_accumulate = _namespace["_accumulate"]
_add_into = _namespace["_add_into"]
