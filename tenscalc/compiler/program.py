"""The shape-dependent half of compilation: a plan bound to one shape signature.

:func:`bind` resolves every axis length (with the interpreter's own
:func:`~tenscalc.interpreter.bind_lengths` and :func:`~tenscalc.interpreter.node_shape`),
searches each fused product's contraction path once with opt_einsum, and decides
every step once: each op's record (:mod:`.records`, :class:`.terms.TermPlan`,
:class:`.sums.SumPlan`, :class:`.accumulate.AccumulateRecord`; the kinds and the records
each carries: :data:`OP_RECORDS`), from which the closure runner (:mod:`.closures`)
builds a closure over a flat list of slots.  Running the program is then a loop over
those closures, releasing slots after their last use.  The same binding yields the
cost estimate of :mod:`tenscalc.compiler.cost`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial, wraps
from typing import Any, cast

import numpy as np
import opt_einsum

from ..core.axes import AxisGraph
from ..core.letters import LetterClasses
from ..core.nodes import Expr
from ..errors import EvaluationError
from ..interpreter import bind_lengths, node_shape, run_interpreter
from ..limits import MAX_AXES, check_entries, check_shape, memory_limit
from ..linalg import matrix_label
from .accumulate import AccumulateRecord, Part, accumulates, bind_accumulate, gather_sums
from .backends import Backend, get_backend
from .banded import BandStep, Layout, band_steps, write_bands
from .cholesky import bind_factor, bind_reader, plan_factors
from .closures import closure
from .cost import Cost, OpCost
from .descriptions import fused_description
from .factoring import factor_shared, scale_broadcasts
from .fused import Same, Tiles, fresh_results, fuse
from .kernels import laid_in_order
from .lowered import Op, program_cost
from .plan import AddItem, LetterRef, Plan, Step, Term, paused_gc, step_reads
from .records import (
    BandRecord,
    ConstantRecord,
    EmbedRecord,
    FactorReaderRecord,
    FactorRecord,
    FullSumsRecord,
    FuncRecord,
    LinalgRecord,
    PowRecord,
    SliceRecord,
    SumRecord,
    TermRecord,
    TermsRecord,
    TransposedRecord,
    TwinRecord,
)
from .sums import SumPlan, plan_sum
from .terms import plan_term, sums_an_empty_axis

StepFn = Callable[[list], Any]

#: A contraction whose intermediate exceeds this many times the largest of its
#: operands and its result is "out of proportion": the path search avoids it when
#: another order exists, and ``cost()`` flags it when none does.
PROPORTION = 16
#: Intermediates below this many entries are never flagged (small problems).
FLAG_FLOOR = 1 << 16
#: Products of at most this many operands get opt_einsum's dynamic-programming
#: search (size-aware ``combo`` objective); larger ones its greedy search.
DP_MAX_OPERANDS = 12


@dataclass(frozen=True)
class _PathInfo:
    """The parts of opt_einsum's ``PathInfo`` the binder reads."""

    opt_cost: int
    size_list: list[int]
    largest_intermediate: int
    contraction_list: list[tuple]
    size_dict: dict[str, int]


def _hadamard_path(eq: str, op_shapes: Sequence[tuple[int, ...]]):
    """The path of an entrywise product (every operand carries exactly the result's
    letters), or None: multiply the operands in turn, each step one array of the
    result's size.  Every order costs the same, and opt_einsum's search is
    quadratic in the operands (the gradient of ``sin`` nested 10,000 deep fuses
    10,000 of them into one product).

    >>> path, info = _hadamard_path("ab,ba,ab->ab", [(2, 3), (3, 2), (2, 3)])
    >>> path, info.opt_cost, info.largest_intermediate
    ([(1, 2), (0, 1)], 12, 6)
    """
    lhs, target = eq.split("->")
    specs = lhs.split(",")
    letter_set = set(target)
    if len(specs) < 2 or any(len(spec) != len(target) or set(spec) != letter_set for spec in specs):
        return None
    size_dict = dict(zip(specs[0], op_shapes[0]))
    size = math.prod(op_shapes[0])
    steps = len(specs) - 1
    # the last two each time: running the path pops from the end of the operand list
    path = [(n - 2, n - 1) for n in range(len(specs), 1, -1)]
    contractions: list[tuple] = [(pair, frozenset(), f"{target},{target}->{target}", (), False) for pair in path]
    info = _PathInfo(steps * size, [size] * steps, size, contractions, size_dict)
    return path, info


def choose_path(eq: str, op_shapes: Sequence[tuple[int, ...]], out_size: int):
    """A contraction path for ``eq`` that bounds memory, with opt_einsum's info.

    opt_einsum's ``auto`` choice (``branch-2`` from 7 operands on) can build an
    intermediate far larger than every operand and the result: on the issue's
    3-layer network HVP (X 512×256) a 512×256×256 array, 2.4e8 flops, where
    ``dp``/``greedy`` need a 512×256 one and 1.4e8 flops.  ``memory_limit``
    is no cure: past the limit opt_einsum contracts everything left in one
    einsum (3.4e10 flops there).  So from 4 operands on we also run ``dp``
    (``combo``: flops plus 64× the intermediate sizes) or ``greedy`` and keep,
    among the paths whose largest intermediate stays within :data:`PROPORTION`
    times the operands and result, the one with the fewest flops.

    >>> shapes = [(512, 256), (256, 256), (512, 256), (512, 256), (256, 256), (10, 256), (10, 256)]
    >>> path, info = choose_path("ab,bc,ad,ac,cd,ef,eb->af", shapes, 512 * 256)
    >>> int(info.largest_intermediate)  # 512 x 256; `auto` alone builds 512 x 256 x 256
    131072
    """
    if len(op_shapes) > DP_MAX_OPERANDS:
        hadamard = _hadamard_path(eq, op_shapes)
        if hadamard is not None:
            return hadamard
    auto = opt_einsum.contract_path(eq, *op_shapes, shapes=True, optimize="auto")
    if len(op_shapes) == 3:
        return _in_output_order(eq, op_shapes, auto)
    if len(op_shapes) < 4:
        return auto
    if len(op_shapes) <= DP_MAX_OPERANDS:
        other = opt_einsum.DynamicProgramming(minimize="combo")
    else:
        other = "greedy"
    candidates = [auto, opt_einsum.contract_path(eq, *op_shapes, shapes=True, optimize=other)]
    scaled = _scaled_first(eq, op_shapes, out_size, other)
    if scaled is not None:
        candidates.append(scaled)
    bound = PROPORTION * max([out_size, *(math.prod(s) for s in op_shapes)])

    def key(candidate):
        info = candidate[1]
        return (info.largest_intermediate > bound, float(info.opt_cost), info.largest_intermediate)

    return min(candidates, key=key)


def _scaled_first(eq: str, op_shapes: Sequence[tuple[int, ...]], out_size: int, search: Any):
    """A path that first multiplies each operand carrying only result letters (a row or
    column scaling, ``c`` in ``ab,b,a,c,bd,ca->cd``) into the smallest other operand that
    has all its letters, where that one is smaller than the result; the rest searched as
    ``search`` does.  opt_einsum's searches leave such a scaling for the finished result
    (the wide Jacobian's ``tanh'`` multiplied into its 10x1000 result, not into the
    10x200 weight it could scale first): None where no operand is one, or nothing is
    smaller than the result.

    >>> path, info = _scaled_first("ab,b,a,c,bd,ca->cd", [(200, 200), (200,), (200,), (10,), (200, 1000), (10, 200)],
    ...                            10 * 1000, "dp")
    >>> path[0], info.contraction_list[0][2]  # c scales ca (10x200) before any product
    ((3, 5), 'ca,c->ca')
    """
    lhs, target = eq.split("->")
    specs, shapes = lhs.split(","), list(op_shapes)
    path: list[tuple[int, int]] = []
    while len(specs) > 2:
        step = _first_scaling(specs, shapes, set(target), out_size)
        if step is None:
            break
        i, host = step
        path.append((min(i, host), max(i, host)))
        host_spec, host_shape = specs[host], shapes[host]
        for k in sorted((i, host), reverse=True):  # opt_einsum's order: the rest, then the product
            del specs[k], shapes[k]
        specs.append(host_spec)
        shapes.append(host_shape)
    if not path:
        return None
    rest, _ = opt_einsum.contract_path(",".join(specs) + "->" + target, *shapes, shapes=True, optimize=search)
    return opt_einsum.contract_path(eq, *op_shapes, shapes=True, optimize=path + [tuple(s) for s in rest])


def _first_scaling(specs: list[str], shapes: list[tuple[int, ...]], result: set[str], out_size: int):
    """(operand, host) of the first scaling :func:`_scaled_first` applies, or None."""
    sizes = [math.prod(shape) for shape in shapes]
    for i, spec in enumerate(specs):
        if not set(spec) <= result:
            continue
        hosts = [k for k, other in enumerate(specs) if k != i and set(spec) <= set(other) and sizes[k] >= sizes[i]]
        if hosts:
            host = min(hosts, key=sizes.__getitem__)
            if sizes[host] < out_size and set(specs[host]) != set(spec):
                return i, host
    return None


def _in_output_order(eq: str, op_shapes: Sequence[tuple[int, ...]], best):
    """Of three operands' paths as cheap as ``best``, one whose result the kernels lay out
    in the output's order, where ``best``'s is not: the CP model ``A ⊙ C`` then ``B``
    was laid ``(i, k, j)`` and the ``T - M`` reading it strode across the tensor
    (tie-breaking among equal flops and intermediates only)."""
    if laid_in_order(eq, op_shapes, best[0]):
        return best
    for pair in ((0, 1), (0, 2), (1, 2)):
        path = [pair, (0, 1)]
        other = opt_einsum.contract_path(eq, *op_shapes, shapes=True, optimize=path)
        tied = other[1].opt_cost <= best[1].opt_cost and other[1].largest_intermediate <= best[1].largest_intermediate
        if tied and laid_in_order(eq, op_shapes, path):
            return other
    return best


def path_multiplications(info) -> float:
    """Scalar multiplications along a contraction path: a step contracting ``k``
    operands multiplies ``k - 1`` times for every combination of its indices (a
    step of one operand only sums).

    >>> _, info = opt_einsum.contract_path("ij,jk,k->i", (2, 3), (3, 4), (4,), shapes=True, optimize="greedy")
    >>> path_multiplications(info)  # (jk,k->j): 12, then (ij,j->i): 6
    18.0
    """
    total = 0.0
    for contraction in info.contraction_list:
        inputs = contraction[2].split("->")[0].split(",")
        letters_in = set("".join(inputs))
        total += math.prod(info.size_dict[c] for c in letters_in) * (len(inputs) - 1)
    return total


def path_peak(info, op_sizes: Sequence[int]) -> int:
    """Entries allocated at once along a contraction path: the intermediates still
    waiting to be used plus the one being built (operands themselves excluded)."""
    sizes = [(size, False) for size in op_sizes]  # (entries, is an intermediate)
    alive = 0
    peak = 0
    for contraction in info.contraction_list:
        positions = contraction[0]
        result = contraction[2].split("->")[1]
        size = math.prod(info.size_dict[c] for c in result)
        peak = max(peak, alive + size)
        for position in sorted(positions, reverse=True):
            entries, temporary = sizes.pop(position)
            if temporary:
                alive -= entries
        sizes.append((size, True))
        alive += size
    return peak


def variable_orders(graphs: Sequence[AxisGraph]) -> dict[str, int]:
    """Each variable's order: those the axis graphs give slots to, then those only read
    for their shape (both ``tc.compile`` and ``tc.to_python(shapes=)`` take these inputs).

    >>> import tenscalc as tc
    >>> from tenscalc.core.axes import axis_graph
    >>> variable_orders([axis_graph(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}))])
    {'A': 2, 'x': 1}
    """
    orders: dict[str, int] = {}
    for graph in graphs:
        for name, order in graph.all_variables().items():
            orders.setdefault(name, order)
    return orders


@dataclass
class _Shape:
    shape: tuple[int, ...]


class ShapeResolver:
    """Axis lengths of every node, from the variables' shapes (one axis graph per root)."""

    def __init__(self, graphs: Sequence[AxisGraph], shapes: Mapping[str, tuple[int, ...]], estimate: bool = False):
        self.graphs = list(graphs)
        # estimate: binding for a cost estimate only, which must allocate nothing and
        # may describe shapes over the memory limit (constants are zero-size stand-ins)
        self.estimate = estimate
        shims = {name: _Shape(tuple(shape)) for name, shape in shapes.items()}
        self.lengths = [bind_lengths(graph, shims) for graph in self.graphs]
        # (einsum, operand shapes, result size) -> [path, path info, NumPy's pair layout once
        # asked for], found once per binding: the terms of a long sum mostly repeat a few
        # contractions (the kernels are the closure runner's, cached by layout: .closures)
        self.contractions: dict[tuple, list[Any]] = {}
        # (term, shape, operand shapes, Gram allowed) -> its decisions (.terms.plan_term)
        self.terms: dict[tuple, Any] = {}
        # slot -> its plan node, set by bind: which sums hold an order-0 operand (.terms.held_letters)
        self.slot_nodes: dict[int, Expr] = {}
        self._constants: dict[tuple, Any] = {}  # (node, shape) -> its array, made once

    def shape(self, node: Expr) -> tuple[int, ...]:
        error: EvaluationError | None = None
        for graph, lengths in zip(self.graphs, self.lengths):
            if node in graph.first_slot:
                try:
                    return node_shape(graph, lengths, node)
                except EvaluationError as exc:
                    error = exc
        if error is None:  # pragma: no cover - every plan node is under some root
            raise EvaluationError(f"no axis information for a node of kind {node.op}")
        raise error

    def letter_length(self, node: Expr, letter: int) -> int | None:
        """Length of ``letter`` of product ``node`` when the axis graph fixes it."""
        for graph, lengths in zip(self.graphs, self.lengths):
            slots = graph.letter_slots.get(node)
            if slots is not None and letter in slots:
                cls = graph.find(slots[letter])
                if cls in lengths:
                    return lengths[cls]
        return None

    def constant(self, node: Expr, shape: tuple[int, ...]) -> Any:
        """A node made of constants only, as a NumPy array of ``shape`` (its own shape,
        or one it broadcasts to where a product reads it with repeated letters)."""
        if self.estimate:  # a cost estimate allocates nothing
            return np.broadcast_to(np.float64(1.0), shape)
        made = self._constants.get((node, shape))
        if made is not None:  # the binder's closures and the fused function's writer share one array
            return made
        check_shape(shape, what=f"a constant {node.op} node")
        for graph, lengths in zip(self.graphs, self.lengths):
            if node in graph.first_slot:
                value = np.asarray(run_interpreter(graph, {}, lengths, root=node))
                made = value if value.shape == shape else np.broadcast_to(value, shape)
                self._constants[(node, shape)] = made
                return made
        raise AssertionError("not a node of the compiled expressions")  # pragma: no cover


@dataclass(frozen=True)
class BoundStep:
    """What the binder computes for one op that evaluates a step or a shared pair: the
    step as bound, after every rewrite (reading hoisted pairs and dense twins, a diagonal
    step's core terms, a transposed product's swapped term), read by the source writer
    of ``tc.to_python(shapes=)`` (:mod:`.source`), which decides none of it again.

    ``shape``: the array the step as bound computes (a diagonal core; the swapped shape
    of a transposed product); ``pattern``: a diagonal step's pattern (its slot holds the
    core, written out densely where it is handed out); ``transposed``: the slot holds the
    transposed view of what the step computes; ``factor``: (input slot, ``inv``, ``det``,
    ``logdet`` or ``unused``) for a step read off a declared positive-definite input's
    Cholesky factor (:mod:`.cholesky`); ``parts``: the parts of a sum of terms added into
    one buffer (:func:`.accumulate.bind_accumulate`), and ``take``: whether its first
    dense term's array is that buffer (written into; else copied:
    :func:`.accumulate.takes_first`); ``sum``: a sum's record (its parts, the buffer it
    starts from, whether it writes into it: :func:`.sums.plan_sum`), which its closure
    and the source writers follow; ``output``: the step was bound as a
    result handed out as it is (a slice or a constant is then copied: never a view of an
    input, nor the program's own constant).
    """

    step: Step
    shape: tuple[int, ...]
    pattern: tuple[int, ...] | None = None
    transposed: bool = False
    factor: tuple[int, str] | None = None
    parts: tuple[Part, ...] | None = None  # a sum added into one buffer: its parts (.accumulate)
    output: bool = False
    sum: SumPlan | None = None  # a sum of the plan (an ``add`` step): its record (.sums)
    take: bool = False  # a sum into one buffer: its first dense term's array is the buffer (.accumulate)


@dataclass
class Program:
    """A plan bound to shapes: the lowered ops (:mod:`.lowered`), and their estimated cost."""

    ops: list[Op]
    input_slots: tuple[int, ...]
    outputs: tuple[int, ...]
    n_slots: int
    backend: Backend
    cost: Cost
    #: output slot -> function making the dense array from a diagonal core
    densify: dict[int, Callable[[Any], Any]] = field(default_factory=dict)
    #: the whole run as one generated function (:mod:`.fused`): the results, or None
    #: when an input is not float64 (the loop below runs then)
    fused: Callable[[Sequence[Any], Any], tuple[Any, ...] | None] | None = None
    fused_source: str = ""
    #: writes the fused function; called on the program's second run, so the first
    #: call (which also binds) does not pay for compiling its source
    fuse_later: Callable[[], Any] | None = None
    runs: int = 0
    #: every result is an array the program allocated (no view of an input): the
    #: caller's copy check (``Backend.unalias``) can be skipped
    fresh: bool = False
    #: (closure, slot, released) per op: the loop's own tuples, unpacked faster than records
    loop: list[tuple[StepFn, int, tuple[int, ...]]] = field(init=False, repr=False)
    #: the whole program handed to the backend's compiler (``jax.jit``, ``torch.compile``:
    #: :meth:`.Backend.whole_program`), which traces :meth:`run_steps` once per dtype
    whole: Callable[[Sequence[Any], Any], tuple[Any, ...]] | None = None
    #: the plan as bound (squares folded, broadcasts scaled, shared factors taken out), the
    #: dense shape of each of its slots, the slots it does not compute, and the bands of each
    #: banded slot: what ``tc.to_python(shapes=)`` writes (:mod:`.source`)
    bound_plan: Plan | None = None
    dense: list[tuple[int, ...]] = field(default_factory=list)
    skipped: frozenset[int] = frozenset()
    layouts: dict[int, Layout] = field(default_factory=dict)
    #: op slot -> the step the op computes, as bound (every op but band, twin and cholesky)
    steps: dict[int, BoundStep] = field(default_factory=dict)
    #: the array each slot holds (a diagonal core, a band vector where the step is structured)
    held: list[tuple[int, ...]] = field(default_factory=list)
    #: every einsum term's record the binder bound (.terms.plan_term's key -> TermPlan)
    terms: dict[tuple, Any] = field(default_factory=dict)
    #: the values a backend's compiler must compute once and keep, not copy into each
    #: reader (:func:`costly_shared`); read by :meth:`traced_steps`
    fenced: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        self.loop = [(op.fn, op.slot, op.release) for op in self.ops]

    def run(self, arrays: Sequence[Any], like: Any = None) -> tuple[Any, ...]:
        whole = self.whole
        if whole is not None:
            return whole(arrays, like)
        fused = self.fused
        if fused is None and self.fuse_later is not None:
            fused = self._fuse_when_repeated()
        if fused is not None:
            results = fused(arrays, like)
            if results is not None:
                return results
        return self.run_steps(arrays, like)

    def traced_steps(self, arrays: Sequence[Any], like: Any = None) -> tuple[Any, ...]:
        """The steps as a backend's compiler traces them (``jax.jit``, ``torch.compile``):
        :meth:`run_steps`, but the :attr:`fenced` values are computed by the backend's
        :meth:`~.Backend.fence`, which keeps them out of the compiler's fusion where it
        would copy them into every reader.  Fences cost a little each, so they are grouped
        in waves (:func:`fence_waves`): every op before the wave it reads from.  Nothing is
        released: a traced program's buffers are the compiler's to free."""
        if not self.fenced:
            return self.run_steps(arrays, like)
        env: list[Any] = [None] * (self.n_slots + 1)
        for slot, array in zip(self.input_slots, arrays):
            env[slot] = array
        env[-1] = like
        fence = self.backend.fence
        for plain, fenced in fence_waves(self.ops, self.fenced):
            for op in plain:
                env[op.slot] = op.fn(env)
            if fenced:
                groups = stacked_groups(fenced, self.steps)
                fns = [group[0].fn if len(group) == 1 else self._stacked(group) for group in groups]
                for group, value in zip(groups, fence(fns, env, _operands(fenced))):
                    if len(group) == 1:
                        env[group[0].slot] = value
                    else:  # one row per op of the group
                        for row, op in enumerate(group):
                            env[op.slot] = value[row]
        finish = self.backend.finish
        densify = self.densify
        return tuple([finish(densify[slot](env[slot]) if slot in densify else env[slot]) for slot in self.outputs])

    def _stacked(self, group: Sequence[Op]) -> Callable[[list], Any]:
        """One closure computing the ops of ``group`` (one elementwise function of one
        operand each, :func:`stacked_groups`) on their operands stacked: its value's rows
        are their values."""
        first, stack = group[0], self.backend.stack
        (slot,) = first.reads
        operands = [op.reads[0] for op in group]

        def run(env: list) -> Any:
            local = list(env)  # at trace time only: the first op's closure reads the stack
            local[slot] = stack([env[operand] for operand in operands])
            return first.fn(local)

        return run

    def run_steps(self, arrays: Sequence[Any], like: Any = None) -> tuple[Any, ...]:
        """The loop over the bound steps (what a backend's compiler traces)."""
        env: list[Any] = [None] * (self.n_slots + 1)
        for slot, array in zip(self.input_slots, arrays):
            env[slot] = array
        env[-1] = like  # dtype/device reference for constants
        for fn, slot, release in self.loop:
            env[slot] = fn(env)
            for dead in release:
                env[dead] = None
        finish = self.backend.finish
        densify = self.densify
        if not densify:  # the common case, without a test per output
            return tuple([finish(env[slot]) for slot in self.outputs])
        return tuple([finish(densify[slot](env[slot]) if slot in densify else env[slot]) for slot in self.outputs])

    def _fuse_when_repeated(self) -> Callable[[Sequence[Any], Any], tuple[Any, ...] | None] | None:
        """The fused function, written on the second run (None before).  Threads racing
        here may both write it: the same function, one of them kept."""
        self.runs += 1
        make = self.fuse_later
        if self.runs < 2 or make is None:
            return None
        self.fuse_later = None
        made = make()
        if made is not None:
            self.fused_source = made[1]
            self.fused = made[0]
        return self.fused


def _collector_paused(fn: Callable[..., Program]) -> Callable[..., Program]:
    """``fn`` run with the cyclic garbage collector paused (see :func:`.plan.paused_gc`):
    binding allocates a few closures per step and frees none."""

    @wraps(fn)
    def run(*args: Any) -> Program:
        with paused_gc():
            return fn(*args)

    return run


@_collector_paused
def bind(
    plan: Plan,
    resolver: ShapeResolver,
    backend: Backend,
    pd: frozenset[str] = frozenset(),
    op_source: Callable[..., Any] | None = None,
) -> Program:
    """Bind ``plan`` to the shapes known to ``resolver``; the ``inv`` and ``det`` of the
    inputs named in ``pd`` (declared positive definite) read one Cholesky factorisation
    each (:mod:`.cholesky`).  ``op_source``: the op writer the fused NumPy function is
    written with (:class:`.source.FusedOpSource`; without it, the ops it would write
    are calls of their closures)."""
    plan, folded = fold_squares(plan)
    plan = scale_broadcasts(plan, folded)
    dense = [step_shape(step, resolver) for step in plan.steps]
    plan, dense, folded = factor_shared(plan, dense, folded, choose_path, resolver.contractions)
    if backend.runs_numpy_helpers:  # sums written into one buffer (ACCUMULATE_SOURCE)
        plan, folded = gather_sums(plan, dense, folded)
    structured = _structured_slots(plan)
    banded, twins, early = _banded_slots(plan, dense, structured, resolver, backend)
    hoisted, rewritten = _shared_pairs(plan, dense, {**structured, **dict.fromkeys(banded, ())})
    transposed: set[int] = set()
    if backend.runs_numpy_kernels:  # its kernels lay a pair's result out as the readers read it
        transposed = _transposed_slots(plan, rewritten, hoisted, dense, set(structured) | set(banded))
    n_slots = plan.n_slots + len(hoisted)
    for slot in twins:  # a dense copy of a banded slot for the readers that need one
        twins[slot] = n_slots
        n_slots += 1
    factors = plan_factors(plan, _pd_slots(plan, pd, backend), n_slots)
    n_slots += len(factors.slots)
    # per slot: the array it holds (a diagonal core for structured slots)
    shapes: list[tuple[int, ...]] = [()] * n_slots
    for step in plan.steps:  # an input is there from the start: a factored step may read one
        if step.kind == "input":  # that the plan meets later (y'inv(K)y + l'y: (inv(K)y + l)'y)
            shapes[step.index] = dense[step.index]
    ops: list[Op] = []
    outputs = set(plan.outputs)
    densify: dict[int, Callable[[Any], Any]] = {}
    first_use: dict[int, list[_Pair]] = {}
    release: dict[int, list[int]] = {}
    bound_steps: dict[int, BoundStep] = {}  # op slot -> the step as bound (for the source writer)
    # the size guard's limit, read once (the checks below raise past it); a lazy backend
    # (dask) holds no whole array, only chunks: its own chunking bounds them, and the
    # steps it computes in one block (inv, det, adj) check that block themselves
    guard = None if resolver.estimate or backend.lazy else memory_limit() // 8
    for pair in hoisted:
        first_use.setdefault(pair.first, []).append(pair)
        release.setdefault(pair.last, []).append(pair.slot)
    for index, slots in factors.last.items():
        release.setdefault(index, []).extend(slots)

    def account(
        kind: str, record: Any, slot: int, dead: tuple[int, ...], cost: OpCost, shape: tuple[int, ...], read: list[int]
    ) -> None:
        """The op deciding ``record``; its closure, the closure runner's (:mod:`.closures`)."""
        if guard is not None and cost.largest_intermediate > guard:  # refuse before any call allocates
            check_entries(cost.largest_intermediate, what=f"an intermediate of step {slot}")
        fn, inline = closure(record, backend), fused_description(record, backend)  # both from the record alone
        ops.append(Op(kind, slot, tuple(read), tuple(dead), tuple(shape), cost, fn, record, inline))

    resolver.slot_nodes = {step.index: step.node for step in plan.steps}
    for step in plan.steps:
        shape = dense[step.index]
        if step.kind == "input" or step.index in folded:
            shapes[step.index] = shape
            continue
        if guard is not None and (math.prod(shape) > guard or len(shape) > MAX_AXES):
            # before a binder bakes a constant, and before any call
            check_shape(shape, what=f"the result of a {step.kind} step")
        for pair in first_use.get(step.index, ()):  # shared sub-products, computed once
            shapes[pair.slot] = pair.shape
            # a product of its two operands (node: its first reader's, for the step's type only)
            pair_step = Step(pair.slot, "product", step.node, data=(pair.term,))
            if pair.slot in transposed:
                fn, cost = _bind_transposed(pair.term, pair.shape, shapes, resolver, backend)
                bound_steps[pair.slot] = _transposed_step(pair_step, pair.shape)
            else:
                fn, cost = _bind_term(pair.term, pair.shape, shapes, resolver, backend)
                bound_steps[pair.slot] = BoundStep(pair_step, pair.shape)
            account("pair", fn, pair.slot, (), cost, pair.shape, [s for s, _ in pair.term.operands])
        for matrix in factors.first.get(step.index, ()):  # before its first reader
            shapes[factors.slots[matrix]] = shapes[matrix]
            fn, cost = bind_factor(_input_name(plan, matrix), matrix, shapes[matrix][0])
            account("cholesky", fn, factors.slots[matrix], (), cost, shapes[matrix], [matrix])
        dead = plan.release[step.index] + tuple(release.get(step.index, ()))
        dead += tuple(twins[slot] for slot in dead if slot in twins)
        if step.index in banded:  # bands only: a dense twin or the output is written once
            band_step = banded[step.index]
            layout = band_step.layout
            shapes[step.index] = (layout.entries,)
            cost = band_step.cost
            if step.index in outputs:
                densify[step.index] = partial(write_bands, layout)
                cost = cost + OpCost(math.prod(shape), 1, math.prod(shape), math.prod(shape) + layout.entries)
            twin = twins.get(step.index)
            band_reads = step_reads(step)
            band_dead = () if twin is not None else dead
            account("band", BandRecord(band_step.values), step.index, band_dead, cost, (layout.entries,), band_reads)
            if twin is not None:
                shapes[twin] = shape
                size = math.prod(shape)
                twin_dead = dead + early.get(step.index, ())
                twin_record = TwinRecord(step.index, layout)
                account("twin", twin_record, twin, twin_dead, OpCost(size, 1, size), shape, [step.index])
            continue
        if step.index in rewritten:
            step = rewritten[step.index]
        if twins:
            step = _rename_reads(step, twins)
        if structured:
            step = _read_structure(step, structured)
        pattern = structured.get(step.index)
        if pattern is not None:
            # computed as its diagonal core only: sums of such steps add cores
            core_shape = _core_shape(pattern, shape)
            shapes[step.index] = core_shape
            if step.kind == "product":
                step = replace(step, data=tuple(_core_term(term) for term in _terms_of(step)))
            fn, cost = BIND_RULES[step.kind](step, core_shape, shapes, resolver, backend, False)
            if step.index in outputs:  # written once into a zeroed array when handed out
                densify[step.index] = _densifier(backend, pattern, shape)
                size = math.prod(shape)
                cost = cost + OpCost(size, 1, size, size + math.prod(core_shape))
            bound_steps[step.index] = BoundStep(step, core_shape, pattern)
            shape = core_shape
        elif step.index in transposed:
            shapes[step.index] = shape
            fn, cost = _bind_transposed(_terms_of(step)[0], shape, shapes, resolver, backend)
            bound_steps[step.index] = _transposed_step(step, shape)
        elif step.index in factors.readers:  # inv, det or log det from the factorisation
            shapes[step.index] = shape
            matrix, what = factors.readers[step.index]
            fn, cost = bind_reader(what, factors.slots[matrix], shapes[matrix][0])
            bound_steps[step.index] = BoundStep(step, shape, factor=(matrix, what))
            account(step.kind, fn, step.index, dead, cost, shape, [factors.slots[matrix]])
            continue
        else:
            shapes[step.index] = shape
            output = step.index in outputs
            fn, cost = BIND_RULES[step.kind](step, shape, shapes, resolver, backend, output)
            bound_steps[step.index] = BoundStep(step, shape, output=output)
        if cost.flags:
            cost = replace(cost, flags=tuple(f"step {step.index} ({step.kind}): {flag}" for flag in cost.flags))
        # a sum written into one buffer (:mod:`.accumulate`) is an op kind of its own
        kind = step.kind
        if isinstance(fn, AccumulateRecord):
            kind = "accumulate"
            bound_steps[step.index] = replace(bound_steps[step.index], parts=fn.parts, take=fn.take)
        if isinstance(fn, SumRecord):  # the source writers write the sum from its record
            bound_steps[step.index] = replace(bound_steps[step.index], sum=fn.sum)
        account(kind, fn, step.index, dead, cost, shape, step_reads(step))
    input_slots = tuple(plan.inputs.values())
    # inputs released by liveness are dropped after their last use too
    program = Program(ops, input_slots, plan.outputs, n_slots, backend, program_cost(ops), densify)
    program.bound_plan, program.dense, program.skipped = plan, dense, folded
    program.layouts = {slot: band_step.layout for slot, band_step in banded.items()}
    program.steps, program.held, program.terms = bound_steps, shapes, resolver.terms
    if backend.fences:
        program.fenced = costly_shared(ops, bound_steps)
    if backend.runs_numpy_source and not resolver.estimate:
        program.fresh = fresh_results(ops, shapes, plan.outputs, densify)
        program.fuse_later = partial(
            fuse, ops, shapes, input_slots, plan.outputs, n_slots, densify, program, resolver, op_source
        )
    return program


#: elementwise functions as cheap to compute again in each reader as to read back
CHEAP_FUNCTIONS = frozenset({"abs", "sign", "relu"})

#: a value read by several ops of a batch of scalar programs is fenced where the ops of
#: its cone (those since the inputs and the fenced values) times its readers beyond the
#: first reach this: XLA copies the cone into each reader's fusion.  The batched Roe
#: flux (305 steps) ran 3,371 vector operations in its fusions, against JAX's 1,521
FENCED_CONE = 40


def costly_shared(ops: Sequence[Op], steps: Mapping[int, BoundStep]) -> frozenset[int]:
    """The slots of transcendental values (``sin``, ``exp``, a power other than a small
    integer) that two or more ops read, in a batch of scalar programs (every op of one
    shape: :func:`entrywise_batch`).  A fusing compiler should compute each once: XLA
    on a CPU copies an operation of one operand into the fusion of every reader, so the
    batched robot arm's Jacobian (31 diagonals, each its own fusion) evaluated 126 sines
    and 129 cosines per point for its 6 and 6, and ran 3.8-6.8x JAX's ``jacfwd``.

    Elsewhere the values a compiler fuses are mostly read by contractions, which it does
    not fuse into, and reading a large array back costs more than computing it again
    (the optimal-transport dual's 2,000 x 2,000 ``exp``, read by a row and a column sum,
    ran 2.75x slower fenced): nothing is fenced there.

    >>> import tenscalc as tc  # the NumPy backend's ops (it fences nothing itself: no JAX needed)
    >>> run = tc.compile([tc.parse("sin(x) .* x"), tc.parse("sin(x) .* y")])
    >>> program = run._bind({"x": (3,), "y": (3,)})
    >>> [program.steps[slot].step.data for slot in sorted(costly_shared(program.ops, program.steps))]
    ['sin']
    >>> other = tc.compile([tc.parse("sin(x) .* x"), tc.parse("sin(x) *(i,j->ij) y")])
    >>> program = other._bind({"x": (3,), "y": (2,)})  # an outer product: not one shape
    >>> costly_shared(program.ops, program.steps)
    frozenset()
    """
    if not entrywise_batch(ops):
        return frozenset()
    readers: dict[int, int] = {}
    for op in ops:
        for slot in set(op.reads):
            readers[slot] = readers.get(slot, 0) + 1
    costly = set()
    cone: dict[int, int] = {}  # slot -> the ops a compiler copies into each reader of its value
    for op in ops:
        size = 1 + sum(cone.get(slot, 0) for slot in set(op.reads))
        cone[op.slot] = size
        bound = steps.get(op.slot)
        extra = readers.get(op.slot, 0) - 1  # readers beyond the first
        if bound is None or extra < 1:
            continue
        step = bound.step
        if (
            (step.kind == "func" and step.data not in CHEAP_FUNCTIONS)
            or (step.kind == "pow" and not isinstance(op.inline, Same) and step.data not in (2, -1, -2))
            or size * extra >= FENCED_CONE
        ):
            costly.add(op.slot)
            cone[op.slot] = 0  # its readers read it back
    return frozenset(costly)


def fence_waves(ops: Sequence[Op], fenced: frozenset[int]) -> list[tuple[list[Op], list[Op]]]:
    """``ops`` in waves (the ops computed plainly, then the fenced ones computed together):
    an op's wave is the number of fences on its deepest path of reads, so each fenced op
    waits only for what it reads, and a wave's plain ops for the fences before them.
    Each list keeps the program's order.

    >>> from types import SimpleNamespace as Op
    >>> ops = [Op(slot=1, reads=(0,)), Op(slot=2, reads=(0,)), Op(slot=3, reads=(1, 2)), Op(slot=4, reads=(3,))]
    >>> [([o.slot for o in plain], [o.slot for o in fence]) for plain, fence in fence_waves(ops, frozenset({1, 4}))]
    [([2], [1]), ([3], [4])]
    """
    depth: dict[int, int] = {}  # slot -> the fences on its deepest path (its own included)
    waves: list[tuple[list[Op], list[Op]]] = []
    for op in ops:
        wave = max([depth.get(slot, 0) for slot in op.reads], default=0)
        while len(waves) <= wave:
            waves.append(([], []))
        if op.slot in fenced:
            waves[wave][1].append(op)
            depth[op.slot] = wave + 1
        else:
            waves[wave][0].append(op)
            depth[op.slot] = wave
    return waves


def stacked_groups(fenced: Sequence[Op], steps: Mapping[int, BoundStep]) -> list[list[Op]]:
    """The fenced ops of one wave, grouped where one call can compute them: ops applying
    the same elementwise function (``sin``; ``pow`` with one exponent) to one operand
    each, computed on their operands stacked.  XLA on a CPU then runs one kernel for the
    group instead of one per value (the batched robot arm's 6 sines and 6 cosines: one
    sine and one cosine of a 6-row stack, was 12 kernels).  Each group keeps the wave's
    order; a lone op is a group of one.

    >>> from types import SimpleNamespace as N
    >>> steps = {1: N(step=N(kind="func", data="sin", args=(0,))), 2: N(step=N(kind="func", data="cos", args=(0,))),
    ...          3: N(step=N(kind="func", data="sin", args=(5,))), 4: N(step=N(kind="pow", data=0.5, args=(6,)))}
    >>> ops = [N(slot=1, reads=(0,)), N(slot=2, reads=(0,)), N(slot=3, reads=(5,)), N(slot=4, reads=(6,))]
    >>> [[op.slot for op in group] for group in stacked_groups(ops, steps)]
    [[1, 3], [2], [4]]
    """
    groups: dict[tuple, list[Op]] = {}
    for op in fenced:
        step = steps[op.slot].step
        key: tuple = (op.slot,)  # alone, unless it is one elementwise function of one operand
        if step.kind in ("func", "pow") and len(step.args) == 1 and len(op.reads) == 1:
            key = (step.kind, step.data)
        groups.setdefault(key, []).append(op)
    return list(groups.values())


def entrywise_batch(ops: Sequence[Op]) -> bool:
    """Every op makes an array of one shape (not a number): a batch of scalar programs,
    such as the batched Jacobians of ``tc.jacobian_accumulation``."""
    shapes = {op.shape for op in ops}
    return len(shapes) == 1 and () not in shapes


def _operands(ops: Sequence[Op]) -> tuple[int, ...]:
    """The slots a group of ops reads from outside the group, in order."""
    inside = {op.slot for op in ops}
    return tuple(dict.fromkeys(slot for op in ops for slot in op.reads if slot not in inside))


def _pd_slots(plan: Plan, pd: frozenset[str], backend: Backend) -> frozenset[int]:
    """The input slots of the matrices declared positive definite, where the backend
    factorises them by Cholesky (``Backend.factorises``; the others take the generic path)."""
    if not backend.factorises:
        return frozenset()
    return frozenset(plan.inputs[name] for name in pd if name in plan.inputs)


def _input_name(plan: Plan, slot: int) -> str:
    return next(name for name, input_slot in plan.inputs.items() if input_slot == slot)


# ------------------------------------------------------------------ squares


def fold_squares(plan: Plan) -> tuple[Plan, frozenset[int]]:
    """``plan`` with each square read by one single-operand product term read twice
    instead, and the square steps no longer computed.

    ``sum(a^2)`` becomes ``a *(i,i->) a``: one dot product (BLAS) instead of an
    elementwise square and a reduction, and no temporary; ``c a^2`` becomes one
    multiplication either way.  Only a term of one operand is rewritten, so a fused
    product (a Gram pattern, a path) is left as the plan made it.  The base's
    release moves to the product when the skipped square was its last reader.

    >>> import tenscalc as tc
    >>> f = tc.parse("sum((x - 1).^2)")
    >>> plan = tc.compile(f).plan
    >>> [step.kind for step in plan.steps]
    ['input', 'add', 'pow', 'product']
    >>> folded_plan, folded = fold_squares(plan)
    >>> sorted(folded), folded_plan.steps[3].data[0].operands
    ([2], ((1, (0,)), (1, (0,))))
    """
    readers: dict[int, list[int]] = {}
    for step in plan.steps:
        for slot in step_reads(step):
            readers.setdefault(slot, []).append(step.index)
    outputs = set(plan.outputs)
    steps = list(plan.steps)
    release = [list(dead) for dead in plan.release]
    released_at = {slot: k for k, dead in enumerate(plan.release) for slot in dead}
    folded: set[int] = set()
    for step in plan.steps:
        if step.kind != "product":
            continue
        terms = list(_terms_of(steps[step.index]))
        for t, term in enumerate(terms):
            if len(term.operands) != 1 or term.constants:
                continue
            ((slot, spec),) = term.operands
            square = plan.steps[slot]
            if (
                square.kind != "pow"
                or square.data != 2
                or len(square.args) != 1
                or readers.get(slot) != [step.index]
                or slot in outputs
            ):
                continue
            (base,) = square.args
            terms[t] = replace(term, operands=((base, spec), (base, spec)))
            folded.add(slot)
            # the base now lives until this product if the square was its last reader
            last = released_at.get(base)
            if last is not None and last < step.index:
                release[last].remove(base)
                release[step.index].append(base)
                released_at[base] = step.index
        if folded:
            steps[step.index] = replace(steps[step.index], data=tuple(terms))
    if not folded:
        return plan, frozenset()
    new_plan = replace(plan, steps=steps, release=[tuple(dead) for dead in release])
    return new_plan, frozenset(folded)


# ------------------------------------------------------------------ banded slots


def _banded_slots(
    plan: Plan, dense: list[tuple[int, ...]], structured: dict[int, tuple[int, ...]], resolver, backend: Backend
) -> tuple[dict[int, BandStep], dict[int, int], dict[int, tuple[int, ...]]]:
    """The steps computed as bands (:mod:`.banded`; NumPy only), the banded slots some
    other step reads densely (to be given a dense twin slot, numbered by the caller),
    and per such slot itself when only its twin is read (released once the twin is written).

    A banded constant read densely stays a dense (cached) constant: its banded readers
    take its numbers.
    """
    if not backend.runs_numpy_helpers:  # band values and their dense value: NumPy's text
        return {}, {}, {}
    banded, constants = band_steps(plan, dense, set(structured), resolver, backend, _bind_term)
    return _band_reads(plan, banded, constants)


def _band_reads(
    plan: Plan, banded: dict[int, BandStep], constants: set[int]
) -> tuple[dict[int, BandStep], dict[int, int], dict[int, tuple[int, ...]]]:
    """:func:`_banded_slots`'s banded steps, twins and early releases, from every banded step
    :func:`.banded.band_steps` found (``banded``, changed) and which of them are constants."""
    dense_read: set[int] = set()
    band_read: set[int] = set()
    for step in plan.steps:
        (band_read if step.index in banded else dense_read).update(step_reads(step))
    outputs = set(plan.outputs)
    for slot in constants & dense_read:
        del banded[slot]
    twins = {slot: -1 for slot in banded if slot in dense_read}
    early = {slot: (slot,) for slot in twins if slot not in band_read and slot not in outputs}
    return banded, twins, early


def band_decision(
    plan: Plan, resolver: ShapeResolver, dense: list[tuple[int, ...]] | None = None
) -> tuple[dict[int, BandStep], set[int], dict[int, BandStep]]:
    """``tc.compile``'s band decision over ``plan`` as it stands (not rewritten for the shapes)
    at the shapes ``resolver`` knows: the banded steps, those some other step reads densely (a
    dense twin), and every step :func:`.banded.band_steps` bands, the constants read densely
    too (their banded readers take their bands).  The shape-free ``tc.to_python()`` takes it
    at lengths of its own choosing (its steps' :data:`.banded.Recipe` hold no length);
    ``dense``: the steps' shapes where the plan was rewritten (:func:`.factoring.factor_shared`)."""
    dense = [step_shape(step, resolver) for step in plan.steps] if dense is None else dense
    numpy = get_backend("numpy")
    found, constants = band_steps(plan, dense, set(_structured_slots(plan)), resolver, numpy, _bind_term)
    every = dict(found)
    banded, twins, _ = _band_reads(plan, found, constants)
    return banded, set(twins), every


def _rename_reads(step: Step, names: Mapping[int, int]) -> Step:
    """``step`` reading ``names[slot]`` wherever it read ``slot``."""
    if step.kind == "product":
        terms = tuple(
            replace(term, operands=tuple((names.get(slot, slot), spec) for slot, spec in term.operands))
            for term in _terms_of(step)
        )
        return replace(step, data=terms)
    if step.kind == "add":
        items = tuple(
            replace(item, slot=names.get(item.slot, item.slot)) if item.kind in ("slot", "embed") else item
            for item in _items_of(step)
        )
        return replace(step, data=items)
    return replace(step, args=tuple(names.get(slot, slot) for slot in step.args))


# ------------------------------------------------------------------ shared sub-products


def _terms_of(step: Step) -> tuple[Term, ...]:
    """A product step's terms (``Step.data`` is a union over the step kinds)."""
    return cast("tuple[Term, ...]", step.data)


def _items_of(step: Step) -> tuple[AddItem, ...]:
    """An add step's summands."""
    return cast("tuple[AddItem, ...]", step.data)


@dataclass
class _Pair:
    """A pairwise contraction several fused terms share, computed once into ``slot``."""

    slot: int
    term: Term  # the pair as a two-operand term
    shape: tuple[int, ...]
    first: int  # the first step using it (computed just before)
    last: int  # the last step using it (released after)


#: rounds of pair sharing: a pair found in one round may be an operand of the next
SHARING_ROUNDS = 4


def _shared_pairs(
    plan: Plan, dense: list[tuple[int, ...]], structured: dict[int, tuple[int, ...]]
) -> tuple[list[_Pair], dict[int, Step]]:
    """Pairs of operands that several fused terms of the plan contract the same way.

    A pair qualifies when it sums letters no other operand of the term (nor its
    output) carries, so every contraction order may start with it, or multiplies
    two operands of the same letters elementwise; its result is no larger than the
    larger of the two operands.  The logistic-loss HVP and the 3-layer network HVP
    form such products (``X vᵀ``) inside two or three fused einsums; they are
    computed once and read by every term.  Sharing runs in rounds, so a shared pair
    may be an operand of a larger shared product: the network HVP's
    ``(S₁ ⊙ X vᵀ) W₂ᵀ`` is ``X vᵀ``, then ``S₁ ⊙ ·``, then ``· W₂ᵀ``.  Returns the
    pairs (in the order they are computed) and the product steps rewritten to read them.
    """
    steps = list(plan.steps)
    dense = list(dense)
    pairs: list[_Pair] = []
    rewritten: dict[int, Step] = {}
    for _ in range(SHARING_ROUNDS):
        found, edits = _shared_pairs_round(steps, plan.n_slots + len(pairs), dense, structured)
        if not found:
            break
        pairs += found
        dense += [pair.shape for pair in found]
        for index, step in edits.items():
            steps[index] = rewritten[index] = step
    # a pair a later round took in is read by that pair, not by the terms any more:
    # released after its last reader as it is now, not after the terms it served
    readers: dict[int, list[int]] = {}
    for step in steps:
        for slot in step_reads(step):
            readers.setdefault(slot, []).append(step.index)
    for pair in pairs:
        for slot, _ in pair.term.operands:
            readers.setdefault(slot, []).append(pair.first)
    for pair in pairs:
        pair.last = max(readers.get(pair.slot, [pair.first]))
    return pairs, rewritten


def _shared_pairs_round(
    steps: list[Step], base: int, dense: list[tuple[int, ...]], structured: dict[int, tuple[int, ...]]
) -> tuple[list[_Pair], dict[int, Step]]:
    """One round of :func:`_shared_pairs`: new pairs get the slots ``base, base + 1, ...``."""
    found: dict[tuple, list[tuple[int, int, int, int, tuple[int, ...]]]] = {}
    for step in steps:
        if step.kind != "product" or step.index in structured:
            continue
        for t, term in enumerate(cast("tuple[Term, ...]", step.data)):
            ops = term.operands
            if len(ops) < 2 or any(slot in structured for slot, _ in ops) or sums_an_empty_axis(term, dense):
                continue  # no pair (a sum over an empty axis holds what it holds as written: .terms)
            counts: dict[int, int] = {}
            for spec in [*(spec for _, spec in ops), *(spec for _, spec in term.constants), term.out]:
                for letter in spec:
                    counts[letter] = counts.get(letter, 0) + 1
            # only two operands sharing a letter found nowhere else can qualify: find them
            # through such letters (trying every pair was quadratic in a term's operands,
            # and the gradient of a deep nesting fuses thousands into one term)
            holders: dict[int, list[int]] = {}
            for p, (_, spec) in enumerate(ops):
                for letter in spec:
                    if counts[letter] == 2:
                        holders.setdefault(letter, []).append(p)
            candidate_set = {(h[0], h[1]) for h in holders.values() if len(h) == 2 and h[0] != h[1]}
            # operands with the same letters (an elementwise product) may pair too: every
            # pair of a group, but only neighbours in a long entrywise product (linear)
            groups: dict[frozenset, list[int]] = {}
            for p, (_, spec) in enumerate(ops):
                groups.setdefault(frozenset(spec), []).append(p)
            for group in groups.values():
                if len(group) <= DP_MAX_OPERANDS:
                    candidate_set.update(itertools.combinations(group, 2))
                else:
                    candidate_set.update(zip(group, group[1:]))
            candidates = sorted(candidate_set)
            for p, q in candidates:
                key, result = _pair_key(ops[p], ops[q], counts, dense)
                if key is not None:
                    found.setdefault(key, []).append((step.index, t, p, q, result))
    # one pair per term: the most shared first
    taken: set[tuple[int, int]] = set()
    chosen: list[tuple[tuple, list]] = []
    for key, uses in sorted(found.items(), key=lambda kv: -len(kv[1])):
        free = [u for u in uses if (u[0], u[1]) not in taken]
        if len({(u[0], u[1]) for u in free}) < 2:
            continue
        per_term: dict[tuple[int, int], tuple] = {}
        for use in free:
            per_term.setdefault((use[0], use[1]), use)
        taken.update(per_term)
        chosen.append((key, list(per_term.values())))
    pairs: list[_Pair] = []
    edits: dict[tuple[int, int], tuple[int, int, int, tuple[int, ...]]] = {}
    for k, (_key, uses) in enumerate(chosen):
        slot = base + k
        step_index, t, p, q, result = uses[0]
        term = _terms_of(steps[step_index])[t]
        (sp, spec_p), (sq, spec_q) = term.operands[p], term.operands[q]
        lengths = dict(zip(spec_p, dense[sp])) | dict(zip(spec_q, dense[sq]))
        shape = tuple(lengths[letter] for letter in result)
        pair_term = Term(1, ((sp, spec_p), (sq, spec_q)), result)
        steps_using = [u[0] for u in uses]
        pairs.append(_Pair(slot, pair_term, shape, min(steps_using), max(steps_using)))
        for step_index, t, p, q, result in uses:
            edits[(step_index, t)] = (slot, p, q, result)
    rewritten: dict[int, Step] = {}
    for step_index in sorted({s for s, _ in edits}):
        step = steps[step_index]
        terms = list(_terms_of(step))
        for t, term in enumerate(terms):
            edit = edits.get((step_index, t))
            if edit is None:
                continue
            slot, p, q, result = edit
            operands = [op for j, op in enumerate(term.operands) if j not in (p, q)] + [(slot, result)]
            # the summed letters live in the pair now: a letter left in refs without an
            # operand would count as summed over constants (a length factor)
            summed = (set(term.operands[p][1]) | set(term.operands[q][1])) - set(result)
            refs = tuple((letter, ref) for letter, ref in term.refs if letter not in summed)
            terms[t] = replace(term, operands=tuple(operands), refs=refs)
        rewritten[step_index] = replace(step, data=tuple(terms))
    return pairs, rewritten


def _pair_key(a, b, counts: dict[int, int], dense: list[tuple[int, ...]]):
    """The canonical key of contracting operands ``a`` and ``b`` of a term (None when
    the pair does not qualify), and its result letters in the term's naming."""
    (sa, spec_a), (sb, spec_b) = a, b
    if len(set(spec_a)) != len(spec_a) or len(set(spec_b)) != len(spec_b):
        return None, ()
    shared = set(spec_a) & set(spec_b)
    private = {letter for letter in shared if counts[letter] == 2}
    # else an elementwise product of arrays: shareable too (of numbers: not worth a step)
    if not private and (not spec_a or set(spec_a) != set(spec_b)):
        return None, ()
    result = tuple(dict.fromkeys(x for x in spec_a + spec_b if x not in private))
    lengths = dict(zip(spec_a, dense[sa])) | dict(zip(spec_b, dense[sb]))
    if math.prod(lengths[x] for x in result) > max(math.prod(dense[sa]), math.prod(dense[sb])):
        return None, ()
    if (sb, spec_b) < (sa, spec_a) and sb != sa:
        (sa, spec_a), (sb, spec_b) = (sb, spec_b), (sa, spec_a)
    names: dict[int, int] = {}
    canon = [tuple(names.setdefault(x, len(names)) for x in spec) for spec in (spec_a, spec_b, result)]
    return (sa, canon[0], sb, canon[1], canon[2]), result


# ------------------------------------------------------------------ structured (diagonal) slots


def _canonical(out: tuple[int, ...]) -> tuple[int, ...]:
    """``out`` with its letters renamed in order of first appearance: (5, 2, 5) -> (0, 1, 0)."""
    names: dict[int, int] = {}
    return tuple(names.setdefault(letter, len(names)) for letter in out)


def _structured_slots(plan: Plan) -> dict[int, tuple[int, ...]]:
    """Slots that can hold only the diagonal core of their value, with its pattern.

    A product whose terms all write the same diagonal (``out`` repeats letters
    the same way), and a sum of such slots with the same pattern (no scalar or
    delta summand), are kept as the core: a block-diagonal Hessian's terms are
    then added as cores and written into one zeroed array at the end, instead of
    several dense arrays summed.  Every reader must be a product (it reads the
    core by joining the repeated letters) or such a sum; outputs are densified.
    """
    readers: dict[int, list[Step]] = {}
    for step in plan.steps:
        for slot in step_reads(step):
            readers.setdefault(slot, []).append(step)
    banned: set[int] = set()
    while True:
        pattern = _forward_patterns(plan, banned)
        bad = {
            slot
            for slot in pattern
            for reader in readers.get(slot, ())
            if not (reader.kind == "product" or (reader.kind == "add" and reader.index in pattern))
        }
        if not bad:
            return pattern
        banned |= bad


def _forward_patterns(plan: Plan, banned: set[int]) -> dict[int, tuple[int, ...]]:
    """Diagonal patterns of the steps, in plan order, reading earlier structured
    slots as cores (so a product of a diagonal operand can be diagonal itself)."""
    pattern: dict[int, tuple[int, ...]] = {}
    for step in plan.steps:
        if step.index in banned:
            continue
        if step.kind == "product":
            terms = list(_terms_of(step))
            if any(slot in pattern for term in terms for slot, _ in term.operands):
                terms = [_join_term(term, pattern) for term in terms]
            outs = {_canonical(term.out) for term in terms}
            if len(outs) == 1:
                (p,) = outs
                if len(set(p)) != len(p):
                    pattern[step.index] = p
        elif step.kind == "add":
            found = {pattern.get(item.slot) if item.kind == "slot" else None for item in _items_of(step)}
            common = found.pop() if len(found) == 1 else None
            if common is not None:
                pattern[step.index] = common
    return pattern


def _transposed_slots(
    plan: Plan, rewritten: dict[int, Step], hoisted: list[_Pair], dense: list[tuple[int, ...]], skip: set[int]
) -> set[int]:
    """Matrix products to compute in transposed memory layout (and hand on as a
    transposed view): those whose readers are all products, and which more often meet
    an operand of the other axis order there entrywise than one of their own.

    The DAG fixes each node's axis order, not its layout in memory: the network HVP's
    shared ``X vᵀ`` is ``(h, m)`` but meets ``(m, h)`` arrays entrywise in two fused
    products, where each multiplication strode through one operand (512x256: 0.41 ms
    against 0.03 ms).  Only 2-D results of one term (plan steps or shared pairs), not
    outputs; a reader that is not a product (an elementwise chain would carry the
    layout on) rules a slot out.
    """
    candidates = {pair.slot for pair in hoisted if _is_matrix_term(pair.term)}
    for step in plan.steps:
        if step.kind == "product" and len(step.data) == 1 and len(dense[step.index]) == 2:
            if step.index not in rewritten and _is_matrix_term(_terms_of(step)[0]):
                candidates.add(step.index)
    excluded = skip | set(plan.outputs)
    votes = dict.fromkeys(candidates, 0)
    terms = [pair.term for pair in hoisted]
    for step in plan.steps:
        step = rewritten.get(step.index, step)
        if step.kind == "product":
            terms.extend(_terms_of(step))
        else:
            excluded.update(step_reads(step))
    for term in terms:
        for k, (slot, spec) in enumerate(term.operands):
            if slot not in votes or len(spec) != 2:
                continue
            for j, (_, other) in enumerate(term.operands):
                if j != k and tuple(other) == (spec[1], spec[0]):
                    votes[slot] += 1
                elif j != k and tuple(other) == tuple(spec):
                    votes[slot] -= 1
    return {slot for slot, vote in votes.items() if vote > 0 and slot not in excluded}


def _is_matrix_term(term: Term) -> bool:
    """A product of two distinct axes, without constants or a diagonal."""
    return len(term.out) == 2 and term.out[0] != term.out[1] and not term.constants


def _swapped(term: Term) -> Term:
    """The matrix term ``term`` with its output axes swapped."""
    return replace(term, out=term.out[::-1])


def _transposed_step(step: Step, shape: tuple[int, ...]) -> BoundStep:
    """The record of a one-term matrix product bound by :func:`_bind_transposed`."""
    return BoundStep(replace(step, data=(_swapped(_terms_of(step)[0]),)), shape[::-1], transposed=True)


def _bind_transposed(term: Term, shape: tuple[int, ...], shapes, resolver: ShapeResolver, backend: Backend):
    """A one-term matrix product computed with its axes swapped (the kernel lays the
    result out in the term's order), handed on as a transposed view: same values,
    same cost, the other memory layout (see :func:`_transposed_slots`)."""
    record, cost = _bind_term(_swapped(term), shape[::-1], shapes, resolver, backend)
    return TransposedRecord(record), cost


def _core_shape(pattern: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    lengths: dict[int, int] = {}
    for letter, length in zip(pattern, shape):
        lengths.setdefault(letter, length)
    return tuple(lengths[letter] for letter in dict.fromkeys(pattern))


def _core_term(term: Term) -> Term:
    """The term writing only the core of its diagonal output: its distinct letters in
    order of first appearance, as the canonical pattern orders them."""
    return replace(term, out=tuple(dict.fromkeys(term.out)))


def _read_structure(step: Step, structured: dict[int, tuple[int, ...]]) -> Step:
    """A product reading structured slots reads their cores: the letters on the
    repeated positions of the pattern are joined (renamed to one)."""
    if step.kind != "product" or not any(slot in structured for term in _terms_of(step) for slot, _ in term.operands):
        return step
    return replace(step, data=tuple(_join_term(term, structured) for term in _terms_of(step)))


def _join_term(term: Term, structured: dict[int, tuple[int, ...]]) -> Term:
    classes = LetterClasses()
    for slot, spec in term.operands:
        p = structured.get(slot)
        if p is not None:
            first: dict[int, int] = {}
            for letter, position_letter in zip(spec, p):
                if position_letter in first:
                    classes.union(first[position_letter], letter)
                else:
                    first[position_letter] = letter

    def name(letter: int) -> int:
        return classes.find(letter)

    operands = []
    for slot, spec in term.operands:
        p = structured.get(slot)
        if p is not None:
            first_of: dict[int, int] = {}  # the operand's letter at the first position of each core letter
            for letter, q in zip(spec, p):
                first_of.setdefault(q, letter)
            spec = tuple(first_of.values())
        operands.append((slot, tuple(name(x) for x in spec)))
    refs: dict[int, LetterRef] = {}
    for letter, ref in term.refs:
        refs.setdefault(name(letter), ref)
    return Term(
        term.factor,
        tuple(operands),
        tuple(name(x) for x in term.out),
        tuple(sorted(refs.items())),
        tuple((node, tuple(name(x) for x in spec)) for node, spec in term.constants),
    )


def _densifier(backend: Backend, pattern: tuple[int, ...], shape: tuple[int, ...]) -> Callable[[Any], Any]:
    def densify(core: Any) -> Any:
        return backend.write_diagonal(core, pattern, shape)

    return densify


# ------------------------------------------------------------------ step binders


def step_shape(step: Step, resolver: ShapeResolver) -> tuple[int, ...]:
    return resolver.shape(step.node)


def _bind_constant(step: Step, shape, shapes, resolver: ShapeResolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    return ConstantRecord(resolver.constant(step.node, shape), is_output), OpCost(size, 1, size)


def _bind_func(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    (a,) = step.args
    return FuncRecord(a, step.data), OpCost(size, 1, size)


#: exponent -> the form its power is computed in (any other: the library's power)
POW_FORM = {1: "same", 2: "square", -1: "reciprocal", -2: "inverse_square", 0.5: "sqrt"}


def _bind_pow(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    cost = OpCost(size, 1, size)
    if len(step.args) == 2:
        return PowRecord(tuple(step.args), None, "both"), cost
    e = step.data
    form = POW_FORM.get(e, "power")
    record = PowRecord(tuple(step.args), e, form)
    if form == "same":  # x itself, no new array
        return record, OpCost(0, 0, 0)
    if form == "square":
        return record, replace(cost, multiplications=size)
    if form == "inverse_square":
        return record, OpCost(2 * size, 2, size, multiplications=size)
    return record, cost


def _bind_inv(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    (a,) = step.args
    n = shape[0]
    cost = OpCost(n**3, 1, n * n, multiplications=n**3)
    label = matrix_label(step.node.children[0])  # the errors name the matrix (tenscalc/linalg.py)
    return LinalgRecord("inv", a, label=label), _finite_check(cost, n)  # every backend checks (.closures)


def _bind_det(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    (a,) = step.args
    n = shapes[a][0]
    cost = OpCost(n**3, 1, 1, multiplications=n**3 / 3)
    label = matrix_label(step.node.children[0])
    return LinalgRecord("det", a, label=label), _finite_check(cost, n)


def _finite_check(cost: OpCost, n: int) -> OpCost:
    """``cost`` with the check that the n x n matrix is finite (n² reads: ``generated.LINALG_HELPER``'s
    ``_finite`` on NumPy, :meth:`.Backend.checked_linalg` on the others) added."""
    return replace(cost, flops=cost.flops + n * n)


def _bind_adj(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    # the k-th derivative of det through an SVD (exact at any rank), then k contractions
    (a,) = step.args
    n, k = shapes[a][0], step.data
    size = math.prod(shape)
    flops = 12 * n**3 + 2 * k * n ** (2 * k + 1) + math.factorial(k) * size
    cost = OpCost(flops, 1, size, multiplications=flops)
    label = matrix_label(step.node.children[0])
    return LinalgRecord("adj", a, k, label), _finite_check(cost, n)


def _bind_add(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    items = _items_of(step)
    # every decision is the record's (.sums: made once, read by the source writers too)
    record = plan_sum(items, shape, shapes)
    size = math.prod(shape)
    arrays = [part for part in record.parts if part.how in ("dense", "broadcast")]
    n_diagonals = sum(part.how == "diagonal" for part in record.parts)
    scaled = sum(1 for it in items if it.kind in ("slot", "embed") and it.coef not in (1, -1))
    cost = OpCost(
        size * max(len(arrays) - 1 + (record.scalar != 0), 0) + n_diagonals * size,
        len(items) - 1,
        size,
        multiplications=scaled * size,  # an upper bound: an embedded part is smaller
    )
    mutable = backend.runs_numpy_helpers  # each part written into its view of an empty array
    embeds = [(p.slot, p.coef, p.key) for p in record.parts if p.how == "embedded"]
    tiles = None
    if mutable and not arrays and not n_diagonals and record.scalar == 0 and _partitions(embeds, shape):
        # parts that tile the result (x[::2] and x[1::2]): each written once into an
        # empty array, as a hand-written gradient does (no zeros, no += pass)
        tiles = Tiles(shape, tuple(embeds))
    return SumRecord(record, tiles), cost


def _partitions(embeds: list, shape: tuple[int, ...]) -> bool:
    """Whether the embedded parts' slices cover every entry of ``shape`` exactly once
    (checked on a mask once, when binding; large shapes are not checked)."""
    if not embeds or math.prod(shape) > PARTITION_CHECK_LIMIT:
        return False
    mask = np.zeros(shape, dtype=np.int8)
    for _, _, key in embeds:
        mask[key] += 1
    return bool(np.all(mask == 1))


#: entries up to which a sum of embedded parts is checked for tiling its result
PARTITION_CHECK_LIMIT = 1 << 18


def _bind_product(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    terms = _terms_of(step)
    if len(terms) > 1 and shape == () and backend.fuses_sums:
        merged = _bind_full_sums(terms, shapes, resolver)
        if merged is not None:
            return merged
    if backend.runs_numpy_helpers and accumulates(terms, shape):
        # one buffer, outer products gathered into one GEMM, diagonals through a view (a
        # sum of general terms only is added below, as the fused function writes it)
        describe = partial(fused_description, backend=backend)
        return bind_accumulate(terms, shape, shapes, resolver, backend, _bind_term, describe)
    alone = is_output and len(terms) == 1
    bound = [_bind_term(term, shape, shapes, resolver, backend, alone) for term in terms]
    if len(bound) == 1:
        return bound[0]
    size = math.prod(shape)
    cost = OpCost.combine([c for _, c in bound])
    # the running sum stays allocated while each later term is computed
    cost = cost + OpCost(size * (len(bound) - 1), len(bound) - 1, size, size + cost.step_peak)
    return TermsRecord(tuple(record for record, _ in bound), tuple(shape)), cost


def _bind_full_sums(terms: Sequence[Term], shapes, resolver: ShapeResolver):
    """A sum of full contractions of arrays of one shape, ``sum(a*b) + c*sum(d*e)``, as the
    sum of one elementwise chain, ``sum(a*b + c*d*e)``; None for any other sum of terms.

    For a backend whose compiler fuses an elementwise chain into the reduction reading it
    (XLA): the terms' own sums are a loop and a reduction each (the chained Rosenbrock
    value's two sums of squares: 6 XLA fusions against 4 for ``jax.jit`` of JAX's own
    transform, which sums the one chain the user wrote)."""
    parts: list[tuple[tuple[int, ...], float]] = []
    common = None
    for term in terms:
        record = plan_term(term, (), shapes, resolver, False, choose_path)
        operands = record.operands
        if record.fill is not None or record.scalars or not math.isfinite(record.factor) or record.factor == 0:
            return None  # a constant term, or order-0 numbers applied after the sum (an inf)
        if any(op.slot is None or op.diagonal is not None for op in operands):
            return None
        if len({op.letters for op in operands}) != 1 or (common is not None and operands[0].shape != common):
            return None  # not an elementwise product of arrays of the common shape
        common = operands[0].shape
        parts.append((tuple([cast(int, op.slot) for op in operands]), record.factor))
    size = math.prod(cast("tuple[int, ...]", common))
    products = sum(len(slots) - 1 + (factor != 1) for slots, factor in parts)
    cost = OpCost(size * (products + len(parts)), products + len(parts), size, 2 * size, (), size * products)
    return FullSumsRecord(tuple(parts)), cost


def _bind_term(
    term: Term,
    shape: tuple[int, ...],
    shapes,
    resolver: ShapeResolver,
    backend: Backend,
    is_output: bool = False,
    records: list | None = None,
) -> tuple[TermRecord, OpCost]:
    """The record of ``term`` at ``shape`` (its closure: :mod:`.closures`) and its cost;
    ``records``, where given, gets the term's :class:`.terms.TermPlan` (a banded step's core
    term: kept with its op, :class:`.fused.BandTerm`)."""
    # every decision is the record's (.terms: made once, read by the source writer too)
    record = plan_term(term, shape, shapes, resolver, backend.runs_numpy_kernels, choose_path)
    if records is not None:
        records.append(record)
    out_size = math.prod(shape)
    # an order-0 constant (2^2222, exp(1000), sin(1)) is one number that multiplies the
    # contraction of the other operands after it, as in evaluate and the generated code:
    # with an inf, multiplying it in before summing could turn a 0 entry into nan
    after = 1.0
    for number in record.scalars:
        after = after * float(resolver.constant(term.constants[number][0], ()))

    if record.fill is not None:
        if record.diagonal_out and record.fill != 0:
            return TermRecord(record, (), after), OpCost(out_size, 2, out_size)
        return TermRecord(record, (), after), OpCost(out_size, 1, out_size)

    operands = record.operands
    constants = tuple(  # the constant operands' arrays, made now (baked into the closure)
        None if op.constant is None else resolver.constant(term.constants[op.constant][0], op.shape) for op in operands
    )
    eq, core_size, gram, scale_at = record.eq, record.core_size, record.gram, record.scale_at
    op_shapes = list(record.op_shapes)
    memo = resolver.contractions[(eq, record.op_shapes, core_size)]
    path, info = memo[:2]
    flops = float(info.opt_cost)
    multiplications = path_multiplications(info)
    largest = max([core_size, *info.size_list]) if info.size_list else core_size
    op_sizes = [math.prod(s) for s in op_shapes]
    peak = max(path_peak(info, op_sizes), core_size)
    flags: tuple[str, ...] = ()
    proportion = max([core_size, *op_sizes])
    if largest > PROPORTION * proportion and largest >= FLAG_FLOOR:
        flags = (
            f"`{eq}` builds an intermediate of {largest} entries, {largest / proportion:.0f}x its largest "
            f"operand or result ({proportion} entries); no contraction order of this product avoids it",
        )
    n_ops = len(path) + sum(op.diagonal is not None for op in operands)
    if gram is None and scale_at is not None:
        scaled = op_sizes[scale_at] if scale_at >= 0 else core_size
        flops += scaled
        multiplications += scaled
        n_ops += 1
    bound = TermRecord(record, constants, after)
    if record.diagonal_out or (record.broadcast and is_output):  # written out, or handed out as a fresh array
        cost = OpCost(flops + out_size, n_ops + 1, max(largest, out_size), peak + out_size, flags, multiplications)
        return bound, cost
    return bound, OpCost(flops, n_ops, largest, peak, flags, multiplications)


def _bind_slice(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    from ..interpreter import slice_key

    (a,) = step.args
    record = SliceRecord(a, slice_key(step.data), is_output)
    if is_output:  # never hand out a view of the caller's array: a copy
        return record, OpCost(0, 1, math.prod(shape))
    return record, OpCost(0, 0, 0)  # basic indexing: a view, no copy


def _bind_embed(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    from ..interpreter import slice_key

    (a,) = step.args
    size = math.prod(shapes[a])
    return EmbedRecord(a, slice_key(step.data[0]), tuple(shape)), OpCost(size, 1, math.prod(shape))


#: step kind -> the binder deciding a step's record (the closure runner, :mod:`.closures`, builds
#: its closure from it), with its cost
BIND_RULES: dict[str, Callable[..., tuple[Any, OpCost]]] = {
    "constant": _bind_constant,
    "func": _bind_func,
    "pow": _bind_pow,
    "inv": _bind_inv,
    "det": _bind_det,
    "adj": _bind_adj,
    "add": _bind_add,
    "product": _bind_product,
    "slice": _bind_slice,
    "embed": _bind_embed,
}

#: op kind -> the record types an op of that kind carries (the closure runner builds each
#: one's closure: :data:`.closures.CLOSURE_RUNNERS`): the plan's step kinds (the ``inv``,
#: ``det`` and ``log`` of a declared positive-definite matrix read from its Cholesky factor),
#: and the binder's own ops: a pair several products share, a sum into one buffer, a banded
#: step, the dense twin of one, a Cholesky factor
OP_RECORDS: dict[str, tuple[type, ...]] = {
    "constant": (ConstantRecord,),
    "func": (FuncRecord, FactorReaderRecord),
    "pow": (PowRecord,),
    "inv": (LinalgRecord, FactorReaderRecord),
    "det": (LinalgRecord, FactorReaderRecord),
    "adj": (LinalgRecord,),
    "add": (SumRecord,),
    "product": (TermRecord, TermsRecord, FullSumsRecord, TransposedRecord),
    "slice": (SliceRecord,),
    "embed": (EmbedRecord,),
    "pair": (TermRecord, TransposedRecord),
    "accumulate": (AccumulateRecord,),
    "band": (BandRecord,),
    "twin": (TwinRecord,),
    "cholesky": (FactorRecord,),
}
