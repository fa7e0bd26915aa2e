"""Two rewrites of a plan's sums, made when the plan is bound (see :func:`.program.bind`).

* :func:`scale_broadcasts` — a sum's coefficient on a broadcast (``20 (u ⊗ 1)``)
  moves into the product that broadcasts, which applies it to the vector before
  broadcasting it: ``n`` multiplications instead of ``n²`` (the entropic
  optimal-transport gradient's ``20 (u ⊗ 1) + 20 (1 ⊗ v) − 20 C``).
* :func:`factor_shared` — products of a sum that share an operand read the
  same way, ``X P + X Q``, become one product of it with a sum, ``X (P + Q)``,
  when that costs fewer flops for the shapes bound (the A-optimal design
  gradient ``−X S⁻²ᵀ − X S⁻²``: one 2000×400×400 GEMM instead of two).  Not
  always cheaper: ``X u vᵀ + X w zᵀ`` stays two matrix-vector and two outer
  products, where ``X (u vᵀ + w zᵀ)`` would be a GEMM.

Both are run by the binder and by ``to_python(shapes=)``.  They leave every
entry's value the same up to the order of floating-point additions; a
coefficient moved across a sum is one that cannot overflow a partial result
(:data:`.plan.REGROUP_LIMIT`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from .backends import letters
from .plan import REGROUP_LIMIT, AddItem, Plan, Step, Term, _liveness, step_reads

Spec = tuple[int, ...]
Shape = tuple[int, ...]
#: a path search: (equation, operand shapes, result size) -> (path, opt_einsum's info)
PathSearch = Callable[[str, Sequence[Shape], int], tuple]


def _readers(plan: Plan) -> dict[int, list[int]]:
    """slot -> the steps reading it, one entry per read."""
    readers: dict[int, list[int]] = {}
    for step in plan.steps:
        for slot in step_reads(step):
            readers.setdefault(slot, []).append(step.index)
    return readers


def _real(coef: object) -> bool:
    return isinstance(coef, (int, float)) and not isinstance(coef, bool) and math.isfinite(coef)


def _only_term(plan: Plan, slot: int, reader: int, readers: dict[int, list[int]], skip: frozenset[int]) -> Term | None:
    """The one term of the product step writing ``slot`` when ``reader`` is its only
    reader (once) and it is no output; else None."""
    step = plan.steps[slot]
    if step.kind != "product" or slot in skip or slot in plan.outputs or readers.get(slot) != [reader]:
        return None
    terms = cast("tuple[Term, ...]", step.data)
    if len(terms) != 1 or terms[0].constants or not math.isfinite(terms[0].factor):
        return None
    return terms[0]


# ------------------------------------------------------------------ scale_broadcasts


def scale_broadcasts(plan: Plan, skip: frozenset[int] = frozenset()) -> Plan:
    """``plan`` with each sum's coefficient on a broadcast moved into the broadcast.

    A summand ``c b`` where ``b`` is a one-operand product with more output letters
    than its operand (``u *(i,j->ij) 1``), read by that sum only, becomes ``± b'``
    with ``b'`` the product scaled by ``|c|``: the product scales its operand (``u``)
    and broadcasts it, the sum adds or subtracts it (no scaled ``n × n`` array).

    >>> import tenscalc as tc
    >>> f = tc.parse("exp(20 * (u *(i,j->ij) 1 + 1 *(i,j->ij) v - C)) *(ij,->) 1", {"u": 1, "v": 1, "C": 2})
    >>> plan = tc.compile(tc.gradient(f, "u")).plan  # its sum 20 (u ⊗ 1) + 20 (1 ⊗ v) - 20 C
    >>> [[item.coef for item in step.data] for step in plan.steps if step.kind == "add"]
    [[20, 20, -20]]
    >>> [[item.coef for item in step.data] for step in scale_broadcasts(plan).steps if step.kind == "add"]
    [[1, 1, -20]]
    """
    readers = _readers(plan)
    steps = list(plan.steps)
    changed = False
    for step in plan.steps:
        if step.kind != "add" or step.index in skip:
            continue
        items = list(cast("tuple[AddItem, ...]", step.data))
        for k, item in enumerate(items):
            if item.kind != "slot" or not _real(item.coef) or abs(item.coef) in (0, 1):
                continue
            term = _only_term(plan, item.slot, step.index, readers, skip)
            if term is None or len(term.operands) != 1 or not set(term.out) > set(term.operands[0][1]):
                continue
            scaled = replace(term, factor=term.factor * abs(item.coef))
            steps[item.slot] = replace(steps[item.slot], data=(scaled,))
            items[k] = replace(item, coef=1 if item.coef > 0 else -1)
            changed = True
        steps[step.index] = replace(steps[step.index], data=tuple(items))
    return replace(plan, steps=steps) if changed else plan


# ------------------------------------------------------------------ factor_shared


@dataclass(frozen=True)
class _Summand:
    """A summand ``coef * term`` of a sum: the one term of the product in ``slot``."""

    slot: int
    coef: float
    term: Term


@dataclass(frozen=True)
class _Factoring:
    """Summands of one sum (one-term products) as ``factor * shared · inner`` (no
    ``shared``: the inner sum broadcast, ``c (u ⊗ 1) + d (w ⊗ 1) = (c u + d w) ⊗ 1``)."""

    slots: tuple[int, ...]  # the summands' slots, ascending
    shared: tuple[int, Spec] | None  # the common operand, in the first summand's letters
    inner: tuple[Term, ...]  # the rests, in those letters, each of output ``letters``
    letters: Spec  # the axes of the inner sum
    shape: Shape  # their lengths
    out: Spec  # the first summand's output letters
    out_shape: Shape  # their lengths
    factor: float  # the product's own factor (a coefficient common to all summands)
    after: float  # flops of the inner sum and the product with the common operand
    refs: tuple = ()  # where the broadcast letters' lengths are known (Term.refs)


@dataclass
class _Flops:
    """Flops of one einsum along the path ``search`` picks (kept in ``memo`` as the
    binder keeps them: each equation and shapes searched once); an operand alone:
    one pass over it."""

    search: PathSearch
    memo: dict

    def __call__(self, operands: Sequence[tuple[Spec, Shape]], out: Spec, sizes: dict[int, int]) -> float:
        if len(operands) == 1:
            return float(math.prod(operands[0][1]))
        eq = ",".join(letters(spec) for spec, _ in operands) + "->" + letters(out)
        op_shapes = tuple(shape for _, shape in operands)
        out_size = math.prod(sizes[x] for x in out)
        key = (eq, op_shapes, out_size)
        if key not in self.memo:
            self.memo[key] = [*self.search(eq, op_shapes, out_size)]
        return float(self.memo[key][1].opt_cost)


def _match(a: Term, b: Term, i: int, j: int) -> dict[int, int] | None:
    """Letters of ``b`` renamed to ``a``'s so that operand ``j`` of ``b`` reads like
    operand ``i`` of ``a`` and the outputs agree; None if they cannot."""
    (slot_a, spec_a), (slot_b, spec_b) = a.operands[i], b.operands[j]
    if slot_a != slot_b or len(a.out) != len(b.out):
        return None
    rename: dict[int, int] = {}
    for x, y in zip(spec_b + b.out, spec_a + a.out):
        if rename.setdefault(x, y) != y:
            return None
    if len(set(rename.values())) != len(rename):
        return None
    fresh = max([*a.out, *(x for _, s in a.operands for x in s)], default=-1) + 1
    for _, spec in b.operands:
        for x in spec:
            if x not in rename:
                rename[x] = fresh
                fresh += 1
    return rename


def _sizes(operands: Sequence[tuple[int, Spec]], shapes: Sequence[Shape]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for slot, spec in operands:
        sizes.update(zip(spec, shapes[slot]))
    return sizes


def _shaped(operands: Sequence[tuple[int, Spec]], sizes: dict[int, int]) -> list[tuple[Spec, Shape]]:
    return [(spec, tuple(sizes[x] for x in spec)) for _, spec in operands]


def _factorable(summand: _Summand) -> bool:
    """Two operands or more, no diagonal, every letter an operand's, a coefficient that may move."""
    term = summand.term
    specs = [spec for _, spec in term.operands] + [term.out]
    present = {x for spec in specs[:-1] for x in spec}
    return (
        len(term.operands) >= 2
        and all(len(set(spec)) == len(spec) for spec in specs)
        and set(term.out) <= present
        # a letter no operand carries counts its length into the term: kept as it is
        and all(x in present for x, _ in term.refs)
        # moved across the sum, a larger coefficient could overflow a partial result
        and abs(term.factor * summand.coef) < REGROUP_LIMIT
    )


def _group(lead: _Summand, others: Sequence[_Summand], i: int, shapes: Sequence[Shape]):
    """``lead`` and the summands of ``others`` that read ``lead``'s operand ``i`` as it
    does, their rests in ``lead``'s letters, and the inner sum's letters; None when
    none of ``others`` does."""
    a = lead.term
    shared = a.operands[i]
    sizes = _sizes(a.operands, shapes)
    keep = set(shared[1]) | set(a.out)
    rest_a = tuple(op for k, op in enumerate(a.operands) if k != i)
    inner = tuple(dict.fromkeys(x for _, spec in rest_a for x in spec if x in keep))
    if not set(a.out) <= set(shared[1]) | set(inner):
        return None
    members, rests = [lead], [rest_a]
    for other in others:
        b = other.term
        for j in range(len(b.operands)):
            rename = _match(a, b, i, j)
            if rename is None:
                continue
            rest_b = tuple(
                (slot, tuple(rename[x] for x in spec)) for k, (slot, spec) in enumerate(b.operands) if k != j
            )
            b_sizes = _sizes(rest_b, shapes)
            if {x for _, spec in rest_b for x in spec if x in keep} == set(inner) and all(
                b_sizes[x] == sizes[x] for x in inner
            ):
                members.append(other)
                rests.append(rest_b)
                break
    return (members, rests, inner, sizes) if len(members) > 1 else None


def _broadcast(summand: _Summand) -> bool:
    """A broadcast of one operand (``u *(i,j->ij) 1``): every letter an output
    letter, some output letter no operand's, a coefficient that may move."""
    term = summand.term
    if len(term.operands) != 1 or term.constants:
        return False
    spec = term.operands[0][1]
    return (
        len(set(spec)) == len(spec)
        and len(set(term.out)) == len(term.out)
        and set(spec) < set(term.out)
        and all(x in term.out for x, _ in term.refs)
        and abs(term.factor * summand.coef) < REGROUP_LIMIT
    )


def _broadcasts(lead: _Summand, others: Sequence[_Summand], shapes: Sequence[Shape]) -> _Factoring | None:
    """``lead`` and the broadcasts of ``others`` along the same output axes, summed
    before they are broadcast once; None when there is none to sum with."""
    a = lead.term
    ((slot_a, inner),) = a.operands
    sizes = dict(zip(inner, shapes[slot_a]))
    members, rests = [lead], [a.operands]
    for other in others:
        b = other.term
        if not _broadcast(other) or len(b.out) != len(a.out):
            continue
        rename = dict(zip(b.out, a.out))
        ((slot_b, spec_b),) = b.operands
        spec = tuple(rename[x] for x in spec_b)
        if set(spec) == set(inner) and all(sizes[x] == n for x, n in zip(spec, shapes[slot_b])):
            members.append(other)
            rests.append(((slot_b, spec),))
    if len(members) < 2:
        return None
    inner_shape = tuple(sizes[x] for x in inner)
    size = math.prod(inner_shape)
    out_shape = tuple(shapes[lead.slot])
    # the sum of the broadcasts (n m each) against the sum of their operands (n each)
    before, after = (len(members) - 1) * math.prod(out_shape), (len(members) - 1) * size
    if after >= before:
        return None
    scales = [m.term.factor * m.coef for m in members]
    terms = tuple(Term(c, rest, inner) for c, rest in zip(scales, rests))
    order = sorted(range(len(members)), key=lambda k: members[k].slot)
    refs = tuple((x, ref) for x, ref in a.refs if x not in inner)
    slots = tuple(members[k].slot for k in order)
    return _Factoring(
        slots, None, tuple(terms[k] for k in order), inner, inner_shape, a.out, out_shape, 1.0, after, refs
    )


def _factoring(summands: Sequence[_Summand], shapes: Sequence[Shape], flops: _Flops) -> _Factoring | None:
    """The cheapest factoring of the first of ``summands`` with others of them (None:
    none is cheaper than computing them apart and adding them)."""
    lead, others = summands[0], summands[1:]
    if _broadcast(lead):
        return _broadcasts(lead, others, shapes)
    best = None
    for i in range(len(lead.term.operands)):
        grouped = _group(lead, others, i, shapes)
        if grouped is None:
            continue
        members, rests, inner, sizes = grouped
        out = lead.term.out
        inner_shape = tuple(sizes[x] for x in inner)
        out_shape = tuple(sizes[x] for x in out)
        before = (len(members) - 1) * math.prod(out_shape)
        after = (len(members) - 1) * math.prod(inner_shape)
        for member, rest in zip(members, rests):
            own = _sizes(member.term.operands, shapes)
            before += flops(_shaped(member.term.operands, own), member.term.out, own)
            rest_sizes = _sizes(rest, shapes)
            after += flops(_shaped(rest, rest_sizes), inner, rest_sizes)
        shared = lead.term.operands[i]
        after += flops([(shared[1], shapes[shared[0]]), (inner, inner_shape)], out, sizes)
        if after < before and (best is None or after < best.after):
            scales = [m.term.factor * m.coef for m in members]
            # a common coefficient (-X P - X Q) stays on the product: the inner sum adds
            common = scales[0] != 0 and all(abs(c) == abs(scales[0]) for c in scales)
            outer = scales[0] if common else 1.0
            terms = tuple(Term(c / outer, rest, inner) for c, rest in zip(scales, rests))
            order = sorted(range(len(members)), key=lambda k: members[k].slot)
            slots = tuple(members[k].slot for k in order)
            best = _Factoring(
                slots, shared, tuple(terms[k] for k in order), inner, inner_shape, out, out_shape, outer, after
            )
    return best


def factor_shared(
    plan: Plan, dense: list[Shape], skip: frozenset[int], search: PathSearch, memo: dict | None = None
) -> tuple[Plan, list[Shape], frozenset[int]]:
    """``plan`` with sums of products sharing an operand factored where cheaper.

    Summands of a sum that are one-term products of two or more operands read by the
    sum only, ``c_1 X P_1 + c_2 X P_2 + ...`` (``X`` read with the same letters
    relative to the output), become ``X (c_1 P_1 + c_2 P_2 + ...)`` when the flops
    of the inner sum and the one product, for the shapes ``dense`` gives, are fewer
    than those of the products apart and their sum.  The inner sum and the product
    take the slots of the last two products (of the last one and the sum's, when
    they were the whole sum); the others are no longer computed.  Returns the plan,
    the shapes per slot and the slots not computed (with ``skip``, those no pass
    may use).  ``search``: the binder's path search (:func:`.program.choose_path`);
    ``memo``: the paths it found, by equation and shapes (the binder's own, so none
    is searched twice).
    """
    if all(shape == () for shape in dense):
        # every value a number: the straight-line float path (.scalar) computes the plan
        # as written, and the NumPy program must agree with it bit for bit
        return plan, dense, skip
    flops = _Flops(search, {} if memo is None else memo)
    readers = _readers(plan)
    steps, shapes = list(plan.steps), list(dense)
    dropped: set[int] = set()
    changed = False
    for step in plan.steps:
        if step.kind != "add" or step.index in skip:
            continue
        items = list(cast("tuple[AddItem, ...]", step.data))
        summands = []
        for item in items:
            term = _only_term(plan, item.slot, step.index, readers, skip) if item.kind == "slot" else None
            summand = None if term is None or not _real(item.coef) else _Summand(item.slot, item.coef, term)
            if summand is not None and (_factorable(summand) or _broadcast(summand)):
                summands.append(summand)
        # each summand is a lead once, tried with the summands sharing an operand (or a
        # broadcast pattern) with it, not with every other one: linear in a long sum
        index: dict[tuple, list[_Summand]] = {}
        for summand in summands:
            for key in _keys(summand):
                index.setdefault(key, []).append(summand)
        done: set[int] = set()
        for lead in summands:
            if lead.slot in done:
                continue
            done.add(lead.slot)
            near = {o.slot: o for key in _keys(lead) for o in index[key] if o.slot not in done}
            found = _factoring([lead, *near.values()], dense, flops) if near else None
            placed = None if found is None else _place(found, step, items, steps, shapes)
            if found is not None and placed is not None:
                dropped.update(placed)
                done.update(found.slots)
                changed = True
        if items != list(cast("tuple[AddItem, ...]", step.data)) and steps[step.index].kind == "add":
            steps[step.index] = replace(steps[step.index], data=tuple(items))
    if not changed:
        return plan, dense, skip
    for slot in dropped:
        steps[slot] = replace(steps[slot], data=())  # reads nothing: its operands may be released earlier
    new_plan = replace(plan, steps=steps)
    new_plan.release = _liveness(new_plan)
    return new_plan, shapes, skip | dropped


def _keys(summand: _Summand) -> list[tuple]:
    """What a summand may share with another: an operand's slot, or for a broadcast,
    the output positions its operand's letters take."""
    term = summand.term
    if _broadcast(summand):
        ((_, spec),) = term.operands
        return [("broadcast", len(term.out), tuple(sorted(term.out.index(x) for x in spec)))]
    return [("operand", slot) for slot, _ in term.operands]


def _place(
    found: _Factoring, add: Step, items: list[AddItem], steps: list[Step], shapes: list[Shape]
) -> tuple[int, ...] | None:
    """Write ``found`` into ``steps``: the inner sum and the product with the common
    operand in two slots of its summands (or the last one and the sum's own, when it
    is the whole sum); ``items`` loses the summands folded.  Returns the slots no
    longer computed; None (nothing written) when the inner sum cannot come before
    the product."""
    slots = found.slots
    whole = len(items) == len(slots)
    inner_slot, product_slot = (slots[-1], add.index) if whole else (slots[-2], slots[-1])
    # inputs are there from the start; a rest computed after the inner sum's slot: not here
    reads = [slot for term in found.inner for slot, _ in term.operands if steps[slot].kind != "input"]
    if reads and max(reads) >= inner_slot:
        return None
    steps[inner_slot] = replace(steps[inner_slot], data=found.inner)
    shapes[inner_slot] = found.shape
    shared = () if found.shared is None else (found.shared,)
    product = Term(found.factor, (*shared, (inner_slot, found.letters)), found.out, found.refs)
    if whole:
        steps[add.index] = Step(add.index, "product", add.node, data=(product,))
        items.clear()
        return slots[:-1]
    steps[product_slot] = replace(steps[product_slot], data=(product,))
    shapes[product_slot] = found.out_shape
    kept = [item for item in items if item.slot not in slots[:-1] or item.kind != "slot"]
    items[:] = [replace(item, coef=1) if item.kind == "slot" and item.slot == product_slot else item for item in kept]
    return slots[:-2]
