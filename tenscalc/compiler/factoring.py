"""Two rewrites of a plan's sums, made when the plan is bound (see :func:`.program.bind`).

* :func:`scale_broadcasts` — a sum's coefficient on a broadcast (``20 (u ⊗ 1)``)
  moves into the product that broadcasts, which applies it to the vector before
  broadcasting it: ``n`` multiplications instead of ``n²`` (the entropic
  optimal-transport gradient's ``20 (u ⊗ 1) + 20 (1 ⊗ v) − 20 C``).
* :func:`factor_shared` — two products of a sum that share an operand read the
  same way, ``X P + X Q``, become one product of it with a sum, ``X (P + Q)``,
  when that costs fewer flops for the shapes bound (the A-optimal design
  gradient ``−X S⁻²ᵀ − X S⁻²``: one 2000×400×400 GEMM instead of two).

Both leave every entry's value the same up to the order of floating-point
additions; a coefficient moved across a sum is one that cannot overflow a
partial result (:data:`.plan.REGROUP_LIMIT`).
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
    >>> f = tc.compile(tc.parse("exp(20 * (u *(i,j->ij) 1 - C))", {"u": 1, "C": 2}))
    >>> [item.coef for item in f.plan.steps[3].data]
    [20, -20]
    >>> [item.coef for item in scale_broadcasts(f.plan).steps[3].data]
    [1, -20]
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
class _Factoring:
    """``coef_a a + coef_b b`` (slots of one-term products) as ``shared · inner``."""

    shared: tuple[int, Spec]  # the common operand, in a's letters
    inner: tuple[Term, Term]  # the two rests, a's letters, out ``letters``
    letters: Spec  # the axes of the inner sum
    out: Spec  # a's output letters
    factor: float  # the product's own factor (a coefficient common to both)
    before: float  # flops of a, b and their sum
    after: float  # flops of the inner sum and the product with the common operand


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
            self.memo[key] = [*self.search(eq, op_shapes, out_size), None]
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


def _factoring(
    a: Term, coef_a: float, b: Term, coef_b: float, shapes: Sequence[Shape], flops: _Flops
) -> _Factoring | None:
    """The cheapest way to factor ``coef_a a + coef_b b`` (None: none is cheaper)."""
    specs = [spec for _, spec in a.operands + b.operands] + [a.out, b.out]
    if any(len(set(spec)) != len(spec) for spec in specs) or len(a.operands) < 2 or len(b.operands) < 2:
        return None  # diagonals and lone operands: left as they are
    scale_a, scale_b = a.factor * coef_a, b.factor * coef_b
    if max(abs(scale_a), abs(scale_b)) >= REGROUP_LIMIT:
        return None  # moved across the sum, such a coefficient could overflow a partial result
    sizes: dict[int, int] = {}
    for slot, spec in a.operands:
        sizes.update(zip(spec, shapes[slot]))
    own_b: dict[int, int] = {}
    for slot, spec in b.operands:
        own_b.update(zip(spec, shapes[slot]))
    if not set(a.out) <= set(sizes) or not set(b.out) <= set(own_b):
        return None  # a broadcast letter: its length is not an operand's
    best = None
    for i in range(len(a.operands)):
        for j in range(len(b.operands)):
            rename = _match(a, b, i, j)
            if rename is None:
                continue
            shared_spec = a.operands[i][1]
            rest_a = [op for k, op in enumerate(a.operands) if k != i]
            rest_b = [(slot, tuple(rename[x] for x in spec)) for k, (slot, spec) in enumerate(b.operands) if k != j]
            b_sizes = dict(sizes)
            for slot, spec in rest_b:
                b_sizes.update(zip(spec, shapes[slot]))
            keep = set(shared_spec) | set(a.out)
            inner = tuple(dict.fromkeys(x for _, spec in rest_a for x in spec if x in keep))
            inner_b = {x for _, spec in rest_b for x in spec if x in keep}
            if (
                set(inner) != inner_b
                or any(b_sizes[x] != sizes[x] for x in inner)
                or not set(a.out) <= (set(shared_spec) | set(inner))
            ):
                continue
            shape_of = lambda ops, s: [(spec, tuple(s[x] for x in spec)) for _, spec in ops]  # noqa: E731
            before = (
                flops(shape_of(a.operands, sizes), a.out, sizes)
                + flops(shape_of(b.operands, own_b), b.out, own_b)
                + math.prod(sizes[x] for x in a.out)
            )
            inner_shape = tuple(sizes[x] for x in inner)
            after = (
                flops(shape_of(rest_a, sizes), inner, sizes)
                + flops(shape_of(rest_b, b_sizes), inner, b_sizes)
                + math.prod(inner_shape)
                + flops([(shared_spec, shapes[a.operands[i][0]]), (inner, inner_shape)], a.out, sizes)
            )
            if after < before and (best is None or after < best.after):
                # a common coefficient (-X P - X Q) stays on the product: the inner sum adds
                outer = scale_a if scale_a != 0 and abs(scale_a) == abs(scale_b) else 1.0
                terms = (Term(scale_a / outer, tuple(rest_a), inner), Term(scale_b / outer, tuple(rest_b), inner))
                best = _Factoring(a.operands[i], terms, inner, a.out, outer, before, after)
    return best


def factor_shared(
    plan: Plan, dense: list[Shape], skip: frozenset[int], search: PathSearch, memo: dict | None = None
) -> tuple[Plan, list[Shape], frozenset[int]]:
    """``plan`` with sums of two products sharing an operand factored where cheaper.

    A sum of exactly two summands, each a one-term product of two or more operands
    read by the sum only, ``c_a X P + c_b X Q`` (``X`` read with the same letters
    relative to the output), becomes ``X (c_a P + c_b Q)`` when the flops of the
    inner sum and the one product, for the shapes ``dense`` gives, are fewer than
    those of the two products and their sum.  The inner sum takes the later
    product's slot, the product with ``X`` the sum's; the earlier product's slot is
    no longer computed.  Returns the plan, the shapes per slot and the slots not
    computed (with ``skip``, those no pass may use).  ``search``: the binder's
    path search (:func:`.program.choose_path`); ``memo``: the paths it found, by
    equation and shapes (the binder's own, so none is searched twice).
    """
    flops = _Flops(search, {} if memo is None else memo)
    readers = _readers(plan)
    steps, shapes = list(plan.steps), list(dense)
    dropped: set[int] = set()
    for step in plan.steps:
        if step.kind != "add" or step.index in skip:
            continue
        items = cast("tuple[AddItem, ...]", step.data)
        if len(items) != 2 or any(item.kind != "slot" or not _real(item.coef) for item in items):
            continue
        (first, coef_a), (second, coef_b) = sorted((item.slot, item.coef) for item in items)
        a = _only_term(plan, first, step.index, readers, skip)
        b = _only_term(plan, second, step.index, readers, skip)
        if a is None or b is None or first == second:
            continue
        found = _factoring(a, coef_a, b, coef_b, dense, flops)
        if found is None:
            continue
        # the inner sum where the later product was (both rests are computed by then)
        steps[second] = replace(steps[second], data=found.inner)
        shapes[second] = tuple(_letter_lengths(found, dense))
        product = Term(found.factor, (found.shared, (second, found.letters)), found.out)
        steps[step.index] = Step(step.index, "product", step.node, data=(product,))
        steps[first] = replace(steps[first], data=())  # reads nothing: its operands may be released earlier
        dropped.add(first)
    if not dropped:
        return plan, dense, skip
    new_plan = replace(plan, steps=steps)
    new_plan.release = _liveness(new_plan)
    return new_plan, shapes, skip | dropped


def _letter_lengths(found: _Factoring, dense: list[Shape]) -> list[int]:
    """The lengths of the inner sum's letters, from the operands of its first term."""
    sizes: dict[int, int] = {}
    for slot, spec in found.inner[0].operands:
        sizes.update(zip(spec, dense[slot]))
    slot, spec = found.shared
    sizes.update(zip(spec, dense[slot]))
    return [sizes[x] for x in found.letters]
