"""The shape-dependent half of compilation: a plan bound to one shape signature.

:func:`bind` resolves every axis length (with the interpreter's own
:func:`~tenscalc.interpreter.bind_lengths` and :func:`~tenscalc.interpreter.node_shape`),
searches each fused product's contraction path once with opt_einsum, and turns
every step into a closure over a flat list of slots.  Running the program is
then a loop over those closures, releasing slots after their last use.  The same
binding yields the cost estimate of :mod:`tenscalc.cost`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import opt_einsum

from ..axes import AxisGraph
from ..backends import Backend, letters
from ..cost import Cost, OpCost
from ..errors import EvaluationError
from ..interpreter import EVALUATORS, _shaped_value, bind_lengths, node_shape
from ..limits import check_entries, check_shape
from ..nodes import Expr
from .kernels import gram_contraction, gram_pattern
from .plan import AddItem, Plan, Step, Term

StepFn = Callable[[list], Any]


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

    def shape(self, node: Expr) -> tuple[int, ...]:
        error: EvaluationError | None = None
        for graph, lengths in zip(self.graphs, self.lengths):
            if id(node) in graph.first_slot:
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
            slots = graph.letter_slots.get(id(node))
            if slots is not None and letter in slots:
                cls = graph.find(slots[letter])
                if cls in lengths:
                    return lengths[cls]
        return None

    def constant(self, node: Expr, shape: tuple[int, ...]) -> Any:
        """A node made of constants only, as a NumPy array of ``shape``."""
        if self.estimate:
            return np.broadcast_to(np.float64(1.0), shape)
        check_shape(shape, what=f"a constant {node.op} node")
        for graph in self.graphs:
            if id(node) in graph.variable_free:
                return _shaped_value(graph, node, shape, {}, EVALUATORS, {})
        raise AssertionError("not a constant-only node")  # pragma: no cover


@dataclass
class Program:
    """A plan bound to shapes: closures over slots, and their estimated cost."""

    ops: list[tuple[StepFn, int, tuple[int, ...]]]
    input_slots: tuple[int, ...]
    outputs: tuple[int, ...]
    n_slots: int
    backend: Backend
    cost: Cost

    def run(self, arrays: Sequence[Any], like: Any = None) -> tuple[Any, ...]:
        env: list[Any] = [None] * (self.n_slots + 1)
        for slot, array in zip(self.input_slots, arrays):
            env[slot] = array
        env[-1] = like  # dtype/device reference for constants
        for fn, slot, release in self.ops:
            env[slot] = fn(env)
            for dead in release:
                env[dead] = None
        finish = self.backend.finish
        return tuple(finish(env[slot]) for slot in self.outputs)


def bind(plan: Plan, resolver: ShapeResolver, backend: Backend) -> Program:
    """Bind ``plan`` to the shapes known to ``resolver``."""
    shapes: list[tuple[int, ...]] = []
    ops: list[tuple[StepFn, int, tuple[int, ...]]] = []
    costs: list[OpCost] = []
    outputs = set(plan.outputs)
    for step in plan.steps:
        shape = _step_shape(step, resolver)
        shapes.append(shape)
        if step.kind == "input":
            continue
        if not resolver.estimate:  # before a binder bakes a constant, and before any call
            check_shape(shape, what=f"the result of a {step.kind} step")
        fn, cost = _BINDERS[step.kind](step, shape, shapes, resolver, backend, step.index in outputs)
        if not resolver.estimate:
            check_entries(cost.largest_intermediate, what=f"an intermediate of a {step.kind} step")
        ops.append((fn, step.index, plan.release[step.index]))
        costs.append(cost)
    input_slots = tuple(plan.inputs.values())
    # inputs released by liveness are dropped after their last use too
    return Program(ops, input_slots, plan.outputs, plan.n_slots, backend, Cost.total(costs))


# ------------------------------------------------------------------ step binders


def _step_shape(step: Step, resolver: ShapeResolver) -> tuple[int, ...]:
    if step.kind == "constant":  # shaped by where it is used
        return () if step.data is None else resolver.shape(step.data)
    return resolver.shape(step.node)


def _bind_ones(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    return (lambda env: backend.full(shape, 1.0, env[-1])), OpCost(size, 1, size)


def _bind_constant(step: Step, shape, shapes, resolver: ShapeResolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    value = resolver.constant(step.node, shape)
    cache: list[Any] = []

    def run(env):
        if not cache:  # moved to the backend once, on the device of the inputs
            cache.append(backend.from_numpy(value, env[-1]))
        if is_output:
            return backend.from_numpy(value.copy(), env[-1])
        return cache[0]

    return run, OpCost(size, 1, size)


def _bind_func(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    fn = backend.func(step.data)
    (a,) = step.args
    size = math.prod(shape)
    return (lambda env: fn(env[a])), OpCost(size, 1, size)


def _bind_pow(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    size = math.prod(shape)
    cost = OpCost(size, 1, size)
    if len(step.args) == 2:
        a, b = step.args
        return (lambda env: backend.power(env[a], env[b])), cost
    (a,) = step.args
    e = step.data
    if e == 1:
        return (lambda env: env[a]), OpCost(0, 0, 0)
    if e == 2:
        return (lambda env: env[a] * env[a]), cost
    if e == -1:
        return (lambda env: 1.0 / env[a]), cost
    if e == -2:
        return (lambda env: 1.0 / (env[a] * env[a])), OpCost(2 * size, 2, size)
    if e == 0.5:
        sqrt = backend.func("sqrt")
        return (lambda env: sqrt(env[a])), cost
    exponent = float(e)
    return (lambda env: backend.power(env[a], exponent)), cost


def _bind_inv(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    (a,) = step.args
    n = shape[0]

    def run(env):
        try:
            return backend.inv(env[a])
        except Exception as exc:  # noqa: BLE001 - each library has its own LinAlgError
            if "singular" in str(exc).lower():
                raise EvaluationError(f"inv: the matrix is singular ({exc})") from None
            raise

    return run, OpCost(n**3, 1, n * n)


def _bind_det(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    (a,) = step.args
    n = shapes[a][0]
    return (lambda env: backend.det(env[a])), OpCost(n**3, 1, 1)


def _bind_add(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    items: tuple[AddItem, ...] = step.data
    arrays = [(it.slot, it.coef) for it in items if it.kind == "slot"]
    # delta(0) is the scalar 1: added as a number (its "diagonal" is no array view)
    scalar = sum(it.coef for it in items if it.kind == "scalar" or (it.kind == "delta" and it.n == 0))
    deltas = [(it.n, it.coef) for it in items if it.kind == "delta" and it.n > 0]
    size = math.prod(shape)
    cost = OpCost(size * max(len(arrays) - 1 + (scalar != 0), 0) + len(deltas) * size, len(items) - 1, size)
    mutable = backend.mutable and backend.name == "numpy"

    def run(env):
        acc = None
        fresh = False
        for slot, coef in arrays:
            x = env[slot]
            if acc is None:
                if coef == 1:
                    acc = x
                else:
                    acc = -x if coef == -1 else coef * x
                    fresh = True
            elif fresh and mutable and acc.shape == shape and acc.dtype == x.dtype:
                if coef == 1:
                    acc += x
                elif coef == -1:
                    acc -= x
                else:
                    acc += coef * x
            else:
                acc = acc + x if coef == 1 else (acc - x if coef == -1 else acc + coef * x)
                fresh = True
        if acc is None:
            acc = backend.full(shape, scalar, env[-1])
            fresh = True
        elif scalar != 0:
            if fresh and mutable and acc.shape == shape:
                acc += scalar
            else:
                acc = acc + scalar
                fresh = True
        if tuple(acc.shape) != shape:
            acc = backend.broadcast(acc, shape)
            fresh = False
        for n, coef in deltas:
            acc = backend.add_diagonal(acc, n, coef, shape, fresh)
            fresh = True
        return acc

    return run, cost


def _bind_product(step: Step, shape, shapes, resolver, backend: Backend, is_output: bool):
    terms: tuple[Term, ...] = step.data
    alone = is_output and len(terms) == 1
    bound = [_bind_term(term, shape, shapes, resolver, backend, alone) for term in terms]
    size = math.prod(shape)
    cost = OpCost.combine([c for _, c in bound])
    if len(bound) == 1:
        return bound[0][0], cost
    fns = [fn for fn, _ in bound]
    cost = cost + OpCost(size * (len(fns) - 1), len(fns) - 1, size)

    def run(env):
        total = fns[0](env)
        for fn in fns[1:]:
            total = total + fn(env)
        return total

    return run, cost


def _bind_term(
    term: Term, shape: tuple[int, ...], shapes, resolver: ShapeResolver, backend: Backend, is_output: bool = False
):
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
    # operands: (slot or None, distinct letters, diagonal-read equation or None, baked constant)
    operands: list[tuple[int | None, tuple[int, ...], str | None, Any]] = []
    for slot, spec in term.operands:
        operands.append((slot, *_distinct(spec), None))
    for node, spec in term.constants:
        missing = [letter for letter in spec if letter not in sizes]
        if missing:
            raise EvaluationError(
                f"cannot tell the axis lengths of the constant `{node}` where it is used: no variable fixes them"
            )
        value = resolver.constant(node, tuple(sizes[letter] for letter in spec))
        operands.append((None, *_distinct(spec), backend.from_numpy(value)))
    present = set().union(*(spec for _, spec, _, _ in operands))
    factor = term.factor
    letters_all = set(sizes) | {letter for letter, _ in term.refs}
    for letter in letters_all:
        if letter not in present and letter not in out:  # summed over constants only
            if letter not in sizes:
                raise EvaluationError(
                    "cannot tell the length of a summed index that only constants carry: no variable fixes it"
                )
            factor *= sizes[letter]
    unique_shape = tuple(sizes[letter] for letter in unique)
    out_size = math.prod(shape)
    diagonal_out = len(unique) != len(out)

    if factor == 0 or not operands:
        value = 0.0 if factor == 0 else factor
        if diagonal_out and value != 0:
            core_shape = unique_shape

            def constant_diagonal(env):
                core = backend.full(core_shape, value, env[-1])
                return backend.write_diagonal(core, out, shape)

            return constant_diagonal, OpCost(out_size, 2, out_size)
        return (lambda env: backend.full(shape, value, env[-1])), OpCost(out_size, 1, out_size)

    target = tuple(letter for letter in unique if letter in present)
    eq = ",".join(letters(spec) for _, spec, _, _ in operands) + "->" + letters(target)
    op_shapes = [tuple(sizes[letter] for letter in spec) for _, spec, _, _ in operands]
    path, info = opt_einsum.contract_path(eq, *op_shapes, shapes=True, optimize="auto")
    specs = [spec for _, spec, _, _ in operands]
    gram = None
    if backend.name == "numpy" and all(d is None for _, _, d, _ in operands):
        gram = gram_pattern(specs, [slot for slot, _, _, _ in operands], target)
    if gram is None:  # else Xᵀ diag(d) X: symmetric, half the flops through syrk (below)
        contract = backend.contraction(eq, op_shapes, path)
    core_size = math.prod(sizes[letter] for letter in target)
    flops = float(info.opt_cost)
    largest = max([core_size, *info.size_list]) if info.size_list else core_size
    n_ops = len(path) + sum(d is not None for _, _, d, _ in operands)

    # the factor goes onto the smallest array it can scale (a Gram kernel takes it itself)
    scale_at = None
    if gram is not None:
        contract = gram_contraction(gram, specs, target, factor)
    elif factor != 1:
        sizes_in = [math.prod(s) for s in op_shapes]
        smallest = min(range(len(sizes_in)), key=sizes_in.__getitem__)
        scale_at = smallest if sizes_in[smallest] < core_size else -1
        flops += min(sizes_in[smallest], core_size)
        n_ops += 1
    fetch = [(slot, baked, None if d is None else d) for slot, _, d, baked in operands]
    plain = all(d is None and slot is not None for slot, _, d, _ in operands)
    slots = [slot for slot, _, _, _ in operands]
    einsum = backend.einsum

    def core(env):
        if plain:
            arrays = [env[s] for s in slots]
        else:
            arrays = [
                (env[s] if s is not None else baked) if d is None else einsum(d, env[s] if s is not None else baked)
                for s, baked, d in fetch
            ]
        if scale_at is not None and scale_at >= 0:
            arrays[scale_at] = arrays[scale_at] * factor
        result = contract(*arrays)
        if scale_at == -1:
            result = result * factor
        return result

    broadcast = len(target) != len(unique)
    if broadcast:
        index = tuple(slice(None) if letter in present else None for letter in unique)

        def expanded(env):
            return backend.broadcast(core(env)[index], unique_shape)

        produce = expanded
    else:
        produce = core
    if diagonal_out:

        def embedded(env):
            return backend.write_diagonal(produce(env), out, shape)

        return embedded, OpCost(flops + out_size, n_ops + 1, max(largest, out_size))
    if broadcast and is_output:  # handed to the user as a fresh array
        return produce, OpCost(flops + out_size, n_ops + 1, max(largest, out_size))
    return produce, OpCost(flops, n_ops, largest)


_BINDERS: dict[str, Callable] = {
    "ones": _bind_ones,
    "constant": _bind_constant,
    "func": _bind_func,
    "pow": _bind_pow,
    "inv": _bind_inv,
    "det": _bind_det,
    "add": _bind_add,
    "product": _bind_product,
}


def _distinct(spec: tuple[int, ...]) -> tuple[tuple[int, ...], str | None]:
    """An operand's distinct letters, and the einsum reading its diagonal if it repeats one."""
    distinct = tuple(dict.fromkeys(spec))
    return distinct, (letters(spec) + "->" + letters(distinct) if len(distinct) != len(spec) else None)
