"""One einsum term's decisions at one shape signature, made once: a frozen record.

:func:`plan_term` decides, for a :class:`~.plan.Term` bound to shapes, everything the
binder (:func:`.program._bind_term`) and the source writer of ``tc.to_python(shapes=)``
(:mod:`.source`) need to agree on: the operands' distinct letters and diagonal reads,
which order-0 constants multiply the result afterwards, the factor (with the lengths of
letters only constants carry), the equation over distinct letters, the contraction path,
the Gram form ``Xᵀ diag(d) X``, where the factor is applied, which operands a sum over an
empty axis takes out (:data:`EMPTY_SUM_SOURCE`), and how the core becomes the result
(broadcast, diagonal write).  The record is kept in the resolver
(``ShapeResolver.terms``): the binder builds it, the source writer reads the same one
when it is given the binder's resolver, so neither searches a path or recognises a Gram
twice.

>>> from types import SimpleNamespace
>>> from tenscalc.compiler.plan import Term
>>> from tenscalc.compiler.program import choose_path
>>> resolver = SimpleNamespace(terms={}, contractions={})  # the two memos plan_term keeps
>>> term = Term(-0.5, ((0, (0, 1)), (0, (0, 2))), (1, 2))  # -0.5 X[a,j] X[a,k] -> (j, k)
>>> record = plan_term(term, (3, 3), [(2, 3)], resolver, True, choose_path)
>>> record.eq, record.gram is not None, record.scale_at  # a Gram: its kernel takes the factor
('ab,ac->bc', True, None)
>>> plan_term(term, (3, 3), [(2, 3)], resolver, True, choose_path) is record  # decided once
True
>>> plan_term(term, (3, 3), [(2, 3)], resolver, False, choose_path).scale_at  # no Gram kernel: X, smaller than 3x3
0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.nodes import Expr
from ..errors import EvaluationError
from .backends import letters
from .kernels import ContractionLayout, GramPattern, contraction_layout, gram_pattern
from .plan import Term

__all__ = [
    "EMPTY_SUM_SOURCE",
    "TermOperand",
    "TermPlan",
    "empty_sums",
    "held_letters",
    "inside_sums",
    "plan_term",
    "sums_an_empty_axis",
]

#: the one rule for a contraction that sums an axis of length 0, as evaluate computes it: a sum
#: written over an empty axis is 0 whatever it holds (``x *(i,j->) y`` with ``x`` empty is 0
#: even where ``y`` has an inf), and that 0 multiplies what the sum does not hold, as written
#: (``sum(x) * sum(y)`` is ``0 * inf``: nan; ``sum(x) * y`` is ``[nan, 0]`` at ``y = [inf, 1]``).
#: The operands such a sum holds are taken out of the einsum, one 0 stands for them.  Left to
#: the einsum, its path decided: an inf became 0 or nan by the order of the pairs.  Run here
#: for the records (every runner reads ``TermPlan``: its operands, fill and factor) and written
#: into the modules of shape-free ``tc.to_python``, which decide at run time (:mod:`.codegen`).
#: Any other contraction keeps its operands on the path searched with them: its cost is unchanged.
EMPTY_SUM_SOURCE = '''
def _empty_sums(spec, shapes, inside):
    """Where the einsum ``spec`` at ``shapes`` sums an axis of length 0: the positions of its
    operands that such a sum holds (their sums are 0, whatever they hold); None where none
    is.  ``inside``: position -> the letters of the sums holding it as written (``sum(x) * y``
    holds ``y`` in none, ``x *(i,j->j) y`` in ``i``); an operand carrying the letter is held."""
    if all(0 not in shape for shape in shapes):
        return None
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    sizes = {}
    for term, shape in zip(terms, shapes):
        sizes.update(zip(term, shape))
    empty = {letter for letter in sizes if sizes[letter] == 0 and letter not in output}
    if not empty:
        return None
    return tuple([k for k, term in enumerate(terms) if empty.intersection(term + inside.get(k, ""))])
'''
_namespace: dict = {}
exec(compile(EMPTY_SUM_SOURCE, "<tenscalc empty sums>", "exec"), _namespace)  # noqa: S102 - the text above
#: :data:`EMPTY_SUM_SOURCE`'s function: ``empty_sums("a,b->", [(0,), (2,)], {})`` is ``(0,)``
#: (``sum(x) * sum(y)``: ``y`` multiplies the 0); with ``{1: "a"}`` (``x *(i,j->) y``) ``(0, 1)``
empty_sums: Callable[[str, Sequence[tuple[int, ...]], Mapping[int, str]], tuple[int, ...] | None] = _namespace[
    "_empty_sums"
]


def inside_sums(term: Term, nodes: Mapping[int, Expr] | None, computed: Collection[int]) -> dict[int, tuple[int, ...]]:
    """Each operand of ``term`` (its position: the slots, then the constants) -> the summed
    letters whose written sums hold it (:attr:`.plan.Term.holders`).  A term the binder rebuilt
    (no holders): its order-0 slots by the paths of the DAG (:func:`held_letters`, ``nodes``:
    each slot's node, None: none known), the others held by the sums of their own letters.

    >>> import tenscalc as tc
    >>> from tenscalc.compiler.plan import build_plan
    >>> def inside(text):
    ...     (term,) = build_plan([tc.parse(text, {"x": 1, "y": 1})]).steps[-1].data
    ...     return inside_sums(term, None, ())
    >>> inside("sum(x) * y"), inside("x *(i,j->j) y")
    ({0: (), 1: (1,)}, {0: (1,), 1: (1,)})
    """
    count = len(term.operands) + len(term.constants)
    if len(term.holders) == count:
        return dict(enumerate(term.holders))
    operands = [*term.operands, *term.constants]
    summed = set().union(*[spec for _, spec in operands]) - set(term.out)
    found = {k: tuple([x for x in dict.fromkeys(spec) if x in summed]) for k, (_, spec) in enumerate(operands)}
    if nodes:
        found.update(held_letters(term, nodes, computed))
    return found


def held_letters(term: Term, nodes: Mapping[int, Expr], computed: Collection[int]) -> dict[int, tuple[int, ...]]:
    """Each order-0 operand of ``term`` (its position) -> the summed letters whose sums hold it
    as written: ``sum(a * x)`` holds ``a``, ``a * sum(x)`` does not.  A letter is summed at
    its ``term.refs`` node (the outermost that has it); that node holds the operand where it
    reaches the slot's node through nodes no slot computes (``computed``: their ids), the
    products fused into the term.  A slot read ``m`` times is read along ``m`` paths: each
    path is held by the sums on it, nested sums together, sibling sums apart
    (``a * sum(a * x)``: one of two held; ``sum(a * x) * sum(a * y)``: both held, one by
    each sum).  ``nodes``: each slot's node; a slot without one (a pair the binder hoisted)
    is held by no sum.

    >>> import tenscalc as tc
    >>> from tenscalc.compiler.plan import build_plan
    >>> def held(text):
    ...     plan = build_plan([tc.parse(text, {"a": 0, "x": 1, "y": 1})])
    ...     nodes = {step.index: step.node for step in plan.steps}
    ...     (term,) = plan.steps[-1].data
    ...     return held_letters(term, nodes, {id(n) for n in nodes.values()})
    >>> held("sum(a * x)"), held("a * sum(x)"), held("a * sum(a * x)")
    ({1: (0,)}, {1: ()}, {1: (0,), 2: ()})
    >>> held("sum(a * x) * sum(a * y)")
    {1: (0,), 3: (1,)}
    """
    by_slot: dict[int, list[int]] = {}
    for position, (slot, spec) in enumerate(term.operands):
        if not spec:
            by_slot.setdefault(slot, []).append(position)
    summed = [(letter, ref) for letter, (ref, _) in term.refs if letter not in term.out]
    held: dict[int, tuple[int, ...]] = {}
    for slot, positions in by_slot.items():
        node = nodes.get(slot)
        reads = _holding(summed, node, computed) if node is not None else []
        for rank, position in enumerate(positions):
            held[position] = reads[rank] if rank < len(reads) else ()
    return held


Path = tuple[tuple[int, int], ...]  # the edges (id of a node, index of its child) from a sum's node down


def _holding(summed: Sequence[tuple[int, Expr]], node: Expr, computed: Collection[int]) -> list[tuple[int, ...]]:
    """The letters of ``summed`` holding each path down to ``node`` that some of their sums hold:
    one tuple per such path (a read of the operand), the letters of the sums along it.  A sum's
    path and an outer sum's are one read where the outer one ends with the inner one."""
    found = [(letter, path) for letter, ref in summed for path in _path_list(ref, node, computed)]

    def within(inner: Path, outer: Path) -> bool:
        return len(inner) <= len(outer) and outer[len(outer) - len(inner) :] == inner

    outermost = [path for _, path in found if not any(len(o) > len(path) and within(path, o) for _, o in found)]
    reads = dict.fromkeys(outermost)
    return [tuple(dict.fromkeys(letter for letter, path in found if within(path, read))) for read in reads]


def _path_list(root: Expr, node: Expr, computed: Collection[int]) -> list[Path]:
    """Every path from ``root`` down to ``node`` through nodes no slot computes, without
    recursion (expressions may be deep); a node read twice by one parent is two paths."""
    paths: list[Path] = []
    stack: list[tuple[Expr, Path]] = [(root, ())]
    while stack:
        top, path = stack.pop()
        for k, child in enumerate(top.children):
            edge = path + ((id(top), k),)
            if child is node:
                paths.append(edge)
            elif id(child) not in computed:
                stack.append((child, edge))
    return paths


#: a path search: (equation, operand shapes, result size) -> (path, opt_einsum's info)
PathSearch = Callable[[str, Sequence[tuple[int, ...]], int], tuple[list, Any]]


@dataclass(frozen=True)
class TermOperand:
    """One operand of the contraction: an array slot, or a constant of the term."""

    slot: int | None  # None: the term's constant number ``constant``
    constant: int | None  # index into ``Term.constants`` for a constant operand
    letters: tuple[int, ...]  # its distinct letters
    diagonal: str | None  # the einsum reading its diagonal when its spec repeats a letter
    shape: tuple[int, ...]  # the array as read (a constant is made at this shape)


@dataclass(frozen=True)
class TermPlan:
    """The decisions for one term at one shape signature (see the module docstring).

    ``fill``: not None where the term is that number everywhere (a zero factor, or
    constants only); the contraction fields are then unset.  ``scale_at``: the operand
    the factor scales, ``-1`` for the result, None where the factor is 1 or a Gram
    kernel takes it.  ``scalars``: the order-0 constants multiplied into the result
    after the contraction (an inf there must not turn a summed 0 into nan).  Where the term
    sums an axis of length 0, ``operands`` are those no such sum holds and ``factor`` is 0 (the
    sum's 0, :data:`EMPTY_SUM_SOURCE`); where the sums hold every operand, ``fill`` is 0, or
    (an order-0 constant or an infinite factor multiplying it after) the one operand is an
    empty one summed whole (``diagonal``: ``"ab->"``).
    """

    shape: tuple[int, ...]
    out: tuple[int, ...]
    unique: tuple[int, ...]  # the output's distinct letters
    unique_shape: tuple[int, ...]
    operands: tuple[TermOperand, ...]
    scalars: tuple[int, ...]
    factor: float
    fill: float | None = None
    target: tuple[int, ...] = ()  # the core's letters: the output's that some operand has
    eq: str = ""
    op_shapes: tuple[tuple[int, ...], ...] = ()
    core_size: int = 1
    path: tuple[tuple[int, ...], ...] = ()
    gram: GramPattern | None = None
    scale_at: int | None = None
    #: NumPy, no Gram form: each pairwise step's layout (.kernels), read by the kernel and the source writer
    layout: ContractionLayout | None = field(default=None, repr=False)

    @property
    def broadcast(self) -> bool:
        """The core lacks output letters: it is broadcast along them."""
        return len(self.target) != len(self.unique)

    @property
    def diagonal_out(self) -> bool:
        """The output repeats a letter: the core is written on a diagonal."""
        return len(self.unique) != len(self.out)


def plan_term(
    term: Term, shape: tuple[int, ...], shapes: Sequence[tuple[int, ...]], resolver: Any, gram: bool, search: PathSearch
) -> TermPlan:
    """The record of ``term`` giving an array of ``shape`` (``shapes``: each slot's
    array), made once per resolver; ``gram``: whether the Gram kernel may be used
    (NumPy only); ``search``: the path search (:func:`.program.choose_path`), memoised
    in ``resolver.contractions`` as the binder keeps it."""
    key = (term, shape, tuple([shapes[slot] for slot, _ in term.operands]), gram)
    found = resolver.terms.get(key)
    if found is None:
        found = resolver.terms[key] = _plan(term, shape, shapes, resolver, gram, search)
    return found


def _plan(term: Term, shape, shapes, resolver, gram_ok: bool, search: PathSearch) -> TermPlan:
    out = term.out
    unique = tuple(dict.fromkeys(out))
    sizes: dict[int, int] = {}
    for position, letter in enumerate(out):
        sizes.setdefault(letter, shape[position])
    for slot, spec in term.operands:
        for letter, length in zip(spec, shapes[slot]):
            if sizes.setdefault(letter, length) != length:  # pragma: no cover - the axis graph forbids it
                raise EvaluationError(f"inconsistent axis lengths {sizes[letter]} and {length} in a product")
    for letter, (node, original) in term.refs:
        if letter not in sizes:
            length = resolver.letter_length(node, original)
            if length is not None:
                sizes[letter] = length
    operands = [TermOperand(slot, None, *_distinct(spec), tuple(shapes[slot])) for slot, spec in term.operands]
    scalars: list[int] = []
    others = bool(term.operands) or any(spec for _, spec in term.constants)
    for number, (node, spec) in enumerate(term.constants):
        if not spec and others:
            scalars.append(number)
            continue
        if any(letter not in sizes for letter in spec):
            raise EvaluationError(
                f"cannot tell the axis lengths of the constant `{node}` where it is used: no variable fixes them"
            )
        operands.append(TermOperand(None, number, *_distinct(spec), tuple(sizes[letter] for letter in spec)))
    present = set().union(*[op.letters for op in operands])
    factor = term.factor
    letters_all = set(sizes)
    letters_all.update([letter for letter, _ in term.refs])
    letters_all.difference_update(present)
    for letter in letters_all:  # a set's order, as the binder always multiplied them
        if letter not in out:  # summed over constants only
            if letter not in sizes:
                raise EvaluationError(
                    "cannot tell the length of a summed index that only constants carry: no variable fixes it"
                )
            factor *= sizes[letter]
    unique_shape = tuple(sizes[letter] for letter in unique)
    plan = TermPlan(shape, out, unique, unique_shape, tuple(operands), tuple(scalars), factor)
    if factor == 0 or not operands:
        return replace(plan, fill=0.0 if factor == 0 else factor)
    target = tuple([letter for letter in unique if letter in present])
    eq = ",".join([letters(op.letters) for op in operands]) + "->" + letters(target)
    op_shapes = tuple([tuple([sizes[letter] for letter in op.letters]) for op in operands])
    if empty_sums(eq, op_shapes, {}) is not None:  # a sum over an empty axis (read from shapes: no cost otherwise)
        kept = _outside_empty_sums(term, operands, eq, op_shapes, resolver)
        if not kept and not scalars and math.isfinite(factor):
            return replace(plan, operands=(), fill=0.0)  # the empty sums hold every operand: zeros
        if kept:
            operands = [operands[k] for k in kept]
            factor = 0.0 * factor  # the 0 of the sums, on what they do not hold (an inf there: nan)
        else:  # an order-0 constant, or a factor that is not finite (its product is not fused),
            # multiplies the 0 after: the 0 kept as an operand, an empty one summed whole
            k = next(k for k, shape in enumerate(op_shapes) if 0 in shape)  # slots first, as in term.operands
            op = operands[k]
            spec = term.operands[k][1] if op.constant is None else term.constants[op.constant][1]
            operands = [replace(op, letters=(), diagonal=letters(spec) + "->")]
        present = set().union(*[op.letters for op in operands])
        target = tuple([letter for letter in unique if letter in present])
        eq = ",".join([letters(op.letters) for op in operands]) + "->" + letters(target)
        op_shapes = tuple([tuple([sizes[letter] for letter in op.letters]) for op in operands])
        plan = replace(plan, operands=tuple(operands), factor=factor)
    core_size = math.prod([sizes[letter] for letter in target])
    memo_key = (eq, op_shapes, core_size)
    memo = resolver.contractions.get(memo_key)
    if memo is None:
        memo = resolver.contractions[memo_key] = [*search(eq, op_shapes, core_size)]
    gram = None
    # an infinite factor goes onto the result, as the order-0 constants do
    if gram_ok and math.isfinite(factor) and factor != 0 and all(op.diagonal is None for op in operands):
        gram = gram_pattern([op.letters for op in operands], [op.slot for op in operands], target)
    # the factor goes onto the smallest array it can scale (a Gram kernel takes it itself);
    # one above 1 goes onto the result, as evaluate applies it: scaling an operand first can
    # overflow a partial product that the written order keeps finite (-2 X_ai X_aj at X ~ 1e154)
    scale_at = None
    if gram is None and factor != 1:
        sizes_in = [math.prod(s) for s in op_shapes]
        smallest = min(range(len(sizes_in)), key=sizes_in.__getitem__)
        scale_at = smallest if sizes_in[smallest] < core_size and abs(factor) <= 1 else -1
    path = tuple([tuple(step) for step in memo[0]])
    # the kernels' layout of each pair (NumPy's, as gram_ok says the backend is), one per
    # equation, shapes and path: kept after the path and its info in the memo
    layout = None
    if gram_ok and gram is None:
        if len(memo) < 3:
            memo.append(contraction_layout(eq, op_shapes, path))
        layout = memo[2]
    return replace(plan, target=target, eq=eq, op_shapes=op_shapes, core_size=core_size, path=path,
                   gram=gram, scale_at=scale_at, layout=layout)  # fmt: skip


def sums_an_empty_axis(term: Term, shapes: Sequence[tuple[int, ...]]) -> bool:
    """Whether ``term`` sums a letter of length 0 at ``shapes`` (each slot's array): the binder
    then pairs none of its operands into a shared slot, which would move what a sum holds."""
    return any(
        n == 0 and letter not in term.out for slot, spec in term.operands for letter, n in zip(spec, shapes[slot])
    )


def _outside_empty_sums(
    term: Term, operands: list[TermOperand], eq: str, shapes: Sequence[tuple[int, ...]], resolver
) -> list[int]:
    """The operands (positions in ``operands``) that no sum over an empty axis holds as written
    (:data:`EMPTY_SUM_SOURCE`): the others are taken out of the term, a 0 stands for them."""
    nodes = getattr(resolver, "slot_nodes", None)  # the binder's: each slot's node (bind)
    inside = inside_sums(term, nodes, {id(node) for node in nodes.values()} if nodes else ())
    count = len(term.operands)

    def holders(op: TermOperand, k: int) -> str:
        return letters(inside.get(k if op.constant is None else count + op.constant, ()))

    held = empty_sums(eq, shapes, {k: holders(op, k) for k, op in enumerate(operands)}) or ()
    return [k for k in range(len(operands)) if k not in held]


def _distinct(spec: tuple[int, ...]) -> tuple[tuple[int, ...], str | None]:
    """An operand's distinct letters, and the einsum reading its diagonal if it repeats one."""
    distinct = tuple(dict.fromkeys(spec))
    return distinct, (letters(spec) + "->" + letters(distinct) if len(distinct) != len(spec) else None)
