"""The symbolic half of compilation: a DAG becomes a flat, shape-independent plan.

Done once per compiled function, whatever the arrays:

* **fusion** — a product whose operand is another product used only there (or a
  product that only relabels, scales, broadcasts or writes a diagonal, which is
  free to repeat, or a shared outer product, larger than its operands and never
  cheaper to read than to form) is inlined, so a chain of products between
  shared nodes becomes one multi-operand einsum ("term");
* **deltas and constants** leave products: ``delta`` operands join their paired
  letters (index renaming), constant operands become a scalar factor, and a
  letter left without an operand is either broadcast (output letter) or a
  length factor (summed letter);
* **distribution** — a sum whose only use is a product that reads its diagonal
  or sums one of its axes alone (``(u ⊗ v + w ⊗ z)_ii``) is pushed into the
  product, so each summand fuses and the full sum is never formed;
* **liveness** — every slot is released after its last use.

Shape-dependent work (contraction paths, kernels) is in :mod:`.program`.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..core.letters import LetterClasses
from ..core.nodes import Dims, Expr, topological
from ..core.products import scale_parts, unite_delta, unite_delta_letters
from ..interpreter import ELEMENTWISE

Spec = tuple[int, ...]
LetterRef = tuple[Expr, int]  # a product node of the DAG and one of its own letters


@dataclass(frozen=True)
class Term:
    """``factor * einsum(operands -> out)``; letters are ints.

    ``out`` may repeat a letter (the result lies on a diagonal); an operand spec
    may repeat one (a diagonal read).  ``constants`` are operands made of constants
    only (``exp(1)``-like), evaluated once per shape when the plan is bound.
    ``refs`` names, for letters, the product letters of the DAG they come from
    (where the axis graph knows their length).
    """

    factor: float
    operands: tuple[tuple[int, Spec], ...]  # (slot, letters)
    out: Spec
    refs: tuple[tuple[int, LetterRef], ...] = ()
    constants: tuple[tuple[Expr, Spec], ...] = ()
    #: per operand, then per constant: the summed letters whose written sums hold it
    #: (``sum(x) * y`` holds ``y`` in none, ``x *(i,j->j) y`` in ``i``); a sum over an empty
    #: axis is 0 whatever it holds (:mod:`.terms`).  Empty where unknown (a term rebuilt by
    #: the binder): :func:`.terms.inside_sums` then falls back on the paths of the DAG.
    holders: tuple[Spec, ...] = ()


@dataclass(frozen=True)
class AddItem:
    """One summand of an ``add`` step: an array slot, a scalar, a delta, or an
    embedding (``embed``: the slot holds the part, written at ``items``)."""

    kind: str  # "slot" | "scalar" | "delta" | "embed"
    coef: float
    slot: int = -1
    n: int = 0
    items: tuple = ()


SliceItems = tuple[int | tuple[int, int | None, int], ...]  # per axis: an index or (start, stop, step)

#: What a step carries, by kind: ``input`` and ``func`` a name, ``constant`` the node,
#: ``product`` its terms, ``add`` its summands, ``pow`` the constant exponent (or None),
#: ``slice`` the items, ``embed`` the items and the dimensions of the zeros; others None.
StepData = (
    str | int | float | Expr | tuple[Term, ...] | tuple[AddItem, ...] | SliceItems | tuple[SliceItems, Dims] | None
)


@dataclass(frozen=True)
class Step:
    """One operation of the plan, writing slot ``index``.

    kind: ``input`` (data: name),
    ``constant`` (a node made of constants only, evaluated once per shape; data:
    that node), ``product``
    (data: tuple of Terms, summed), ``add`` (data: tuple of AddItem), ``func``
    (data: name), ``pow`` (data: constant exponent or None; args: base [, exponent
    slot]), ``inv``, ``det``, ``slice`` (data: the items; a view) and ``embed``
    (data: items and dimensions; a write into zeros).
    """

    index: int
    kind: str
    node: Expr  # an original node with this step's shape (for ``constant``: the node computed)
    args: tuple[int, ...] = ()
    data: StepData = None


@dataclass
class Plan:
    steps: list[Step]
    outputs: tuple[int, ...]  # slot of each root
    inputs: dict[str, int]  # variable name -> slot
    release: list[tuple[int, ...]] = field(default_factory=list)  # slots dead after step k

    @property
    def n_slots(self) -> int:
        return len(self.steps)


_scale_parts = scale_parts


def _is_product(node: Expr) -> bool:
    return node.op == "mul" or _scale_parts(node) is not None


def _is_free(node: Expr) -> bool:
    """A product that moves, scales, broadcasts or diagonalises one operand without
    summing any of its entries: repeating it costs nothing."""
    if _scale_parts(node) is not None:
        return True
    if node.op != "mul":
        return False
    ins, out = node.arg
    data = []
    deltas = False
    for child, spec in zip(node.children, ins):
        if child.op == "delta":
            deltas = True
        elif child.op != "const":
            data.append(spec)
    if len(data) > 1:
        return False
    if not data:
        return True
    if not deltas:
        return set(data[0]).issubset(out)
    # deltas may rename letters: resolve them before asking whether data is summed
    classes = LetterClasses()
    unite_delta_letters(list(zip(node.children, ins)), classes)
    kept = {classes.find(letter) for letter in out}
    return all(classes.find(letter) in kept for letter in data[0])


def _is_expansion(node: Expr) -> bool:
    """A product that sums nothing and whose result no single operand spans, such as
    the outer product ``x *(i,j->ij) y``: its result is larger than its operands
    (n² entries from 2n), so forming it once for several readers costs more memory,
    and no fewer flops, than forming it (or contracting past it) inside each reader."""
    if node.op != "mul":
        return False
    ins, out = node.arg
    classes = LetterClasses()
    kept = unite_delta_letters(list(zip(node.children, ins)), classes)
    data = [{classes.find(letter) for letter in spec} for child, spec in kept if child.op != "const"]
    result = {classes.find(letter) for letter in out}
    if len(data) < 2 or not all(letters <= result for letters in data):
        return False  # one operand, or a summed letter: computing it once saves work
    return not any(letters >= result for letters in data)


def _as_float(value: int | float) -> float:
    """``value`` as a float; an integer beyond float64's range is inf, as NumPy makes it."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _magnitude(value: int | float) -> float:
    return abs(_as_float(value))


# A constant factor above this may overflow float64 with ordinary data (1e308 times
# entries of a few units): such a factor is applied where it is written, as evaluate
# applies it, because moving it across a sum (c a + c b for c (a + b)) can overflow
# a partial result that the written order keeps finite.
REGROUP_LIMIT = 1e150


def _regroupable(scale: float) -> bool:
    """Whether a term's constant factor is small enough to fuse or distribute."""
    return scale < REGROUP_LIMIT


#: node kind -> a bound on the entries of a constant-only node, from its children's
#: bounds (kinds not here: inf, the value may not be finite)
CONSTANT_BOUNDS: dict[str, Callable[[Expr, list[float]], float]] = {
    "const": lambda node, scales: _magnitude(node.arg[0]),
    "delta": lambda node, scales: 1.0,
    "mul": lambda node, scales: math.prod(scales),
    "add": lambda node, scales: sum(_magnitude(c) * b for b, c in zip(scales, node.arg)),
}

#: node kind -> the value of an order-0 node from its children's values, as evaluate
#: computes it in float64 (kinds not here: not folded)
SCALAR_FOLDS: dict[str, Callable[[Expr, list], float]] = {
    "func": lambda node, kids: float(ELEMENTWISE[node.arg](kids[0])),
    "pow": lambda node, kids: float(np.power(kids[0], kids[1])),
    "add": lambda node, kids: float(sum(np.float64(_as_float(c)) * v for v, c in zip(kids, node.arg))),
    "mul": lambda node, kids: float(math.prod(kids)),
}


#: a sum of at least this order, made of products, is pushed into a product that
#: contracts it (see _distributes)
DISTRIBUTE_ORDER = 3


def _distributes(parent: Expr, k: int, of_products: bool = False) -> bool:
    """Whether operand ``k`` (a sum) of product ``parent`` is better pushed inside:
    the product reads its diagonal or sums an axis no other operand has; or the sum
    (``of_products``: every summand a product used only there) has order 3 or more and
    the product contracts one of its axes.  Such a sum is a large array built from
    small factors (softmax regression's Hessian sums two order-4 outer products,
    10⁷ entries, before contracting them with X); pushed inside, each summand fuses
    with X into one einsum and the order-4 sum is never formed."""
    ins, out = parent.arg
    spec = ins[k]
    if len(set(spec)) != len(spec):
        return True
    others = set(out).union(*(s for j, s in enumerate(ins) if j != k))
    if any(letter not in others for letter in spec):
        return True
    return of_products and len(spec) >= DISTRIBUTE_ORDER and any(letter not in out for letter in spec)


@dataclass
class _Expansion:
    """One term of a product being expanded (a distributed sum forks it in several)."""

    factor: float
    letters: LetterClasses
    # each with the fresh letters of the sums holding it as written (Term.holders)
    finished: list[tuple[int, Spec, Spec]] = field(default_factory=list)  # (slot, letters, holders) operands
    constants: list[tuple[Expr, Spec, Spec]] = field(default_factory=list)  # constant-only operands
    pending: list[tuple[Expr, Spec, Spec]] = field(default_factory=list)  # operands still to open
    # letters of absorbed constants and deltas: summed alone, they count lengths
    absorbed: list[int] = field(default_factory=list)

    def branch(self, coef: float, operand: tuple[Expr, Spec, Spec]) -> _Expansion:
        """A copy for one summand ``coef * operand`` of a distributed sum."""
        return _Expansion(
            self.factor * coef,
            self.letters.copy(),
            list(self.finished),
            list(self.constants),
            self.pending + [operand],
            list(self.absorbed),
        )


class PlanBuilder:
    """Builds a :class:`Plan` for a list of roots."""

    def __init__(self, roots: Sequence[Expr]):
        self.roots = list(roots)
        self.nodes = topological(self.roots)
        self.root_set = set(self.roots)
        # nodes made of constants only are computed once when shapes are bound
        # (or absorbed into the products that use them): they get no step of their own
        self.constant_only: set[Expr] = set()
        for node in self.nodes:
            if node.op != "var" and all(c in self.constant_only for c in node.children):
                self.constant_only.add(node)
        #: the nodes whose constant factors bound a term's scale (:meth:`_own_scale`): the
        #: constant-only ones, also where a plan folds fewer of them
        self.constant_valued = self.constant_only
        self.live = self._live_nodes()
        self.users: dict[Expr, list[Expr]] = {n: [] for n in self.nodes}
        users = self.users
        for node in self.nodes:
            if node in self.live:
                for child in self._reads(node):
                    users[child].append(node)
        # products (``mul`` nodes and scalings ``c X``), asked about many times per node
        self.products: set[Expr] = {n for n in self.nodes if _is_product(n)}
        self.inline: set[Expr] = set()  # products expanded into their users' terms
        self.materialize: set[Expr] = set()  # nodes computed into a shared slot
        self.distributed: set[Expr] = set()  # sums pushed into their only product
        # a bound on the constant factor of the fused term a product or distributed sum
        # lies in (inf: a constant that may not be finite, such as 2^2222 or exp(1000))
        self.term_scale: dict[Expr, float] = {}
        self._constant_scales: dict[Expr, float] = {}
        self._constant_values: dict[Expr, float] = {}
        self.forced: set[Expr] = set()
        self.steps: list[Step] = []
        self.slot_of: dict[Expr, int] = {}
        self.inputs: dict[str, int] = {}
        self._fresh = itertools.count(1_000_000)  # letters of inlined products
        # fresh letters opened while expanding the current product -> (product node, its
        # letter): _resolve looks at these only (every letter ever created: quadratic)
        self._opened: dict[int, LetterRef] = {}
        self._known: dict[tuple, int] = {}  # step key -> slot

    @staticmethod
    def _reads(node: Expr) -> tuple[Expr, ...]:
        if node.op == "pow" and node.children[1].op == "const":
            return node.children[:1]
        return node.children

    def _live_nodes(self) -> set[Expr]:
        live = set(self.root_set)
        for node in reversed(self.nodes):
            if node in live:
                live.update(self._reads(node))
        return live

    # -------------------------------------------------------------- decisions
    def decide(self) -> None:
        """Which nodes get a slot, which are inlined, which sums are distributed.

        Parents are decided before their children (reverse topological order).
        """
        for node in reversed(self.nodes):
            if node not in self.live or node in self.constant_only:
                continue  # constants are absorbed, or evaluated once at binding
            users = self.users[node]
            is_root = node in self.root_set
            if node.op == "var":
                self.materialize.add(node)
                continue
            if self._embed_into_sum(node, users, is_root):
                self.inline.add(node)  # the sum writes the part into its own result
                continue
            fusing_users = [u for u in users if self._fuses(u)]
            is_product = node in self.products
            if is_product and not is_root and node not in self.forced:
                if _is_free(node) and fusing_users:
                    self.inline.add(node)
                    if len(users) > 1:
                        for child in self._data_children(node):
                            self.forced.add(child)  # computed once, relabelled per use
                elif len(users) == 1 and fusing_users:
                    self.inline.add(node)
                elif len(fusing_users) == len(users) and _is_expansion(node):
                    # shared, but recomputed in every reader: materialised it would be
                    # the largest array of the plan ((x ⊗ y) : (x ⊗ y) at n = 400,000
                    # needed 1.2 TB; fused, the reader contracts x·x and y·y)
                    self.inline.add(node)
                    for child in self._data_children(node):
                        self.forced.add(child)  # its operands are still computed once
            if is_product:
                own = self._own_scale(node)
                outer = max((self.term_scale.get(u, 1.0) for u in fusing_users), default=1.0)
                if node in self.inline and not _regroupable(own * outer):
                    # a constant that may not be finite (2^2222, 1e308 * 1e10 once fused) is
                    # applied where it is written: fused, it would move across a sum
                    self.inline.discard(node)
                self.term_scale[node] = own * outer if node in self.inline else own
            if (
                node.op == "add"
                and len(node.children) > 1
                and not is_root
                and node not in self.forced
                and len(users) == 1
                and users[0].op == "mul"
                and _distributes(
                    users[0],
                    users[0].children.index(node),
                    all(_is_product(c) and len(self.users[c]) == 1 for c in node.children),
                )
                # c (a - b) is not c a - c b when c is inf (or c a overflows): a constant
                # that may overflow keeps the sum whole, as evaluate computes it
                and _regroupable(self.term_scale.get(users[0], 1.0) * max(map(_magnitude, node.arg)))
            ):
                self.distributed.add(node)
                self.term_scale[node] = self.term_scale.get(users[0], 1.0) * max(map(_magnitude, node.arg))
                continue
            if is_root or node not in self.inline or len(fusing_users) < len(users):
                self.materialize.add(node)

    def _embed_into_sum(self, node: Expr, users: list[Expr], is_root: bool) -> bool:
        """An embedding whose only user is a sum: no zeros of its own, the sum adds
        the part into the slice of its result (a strided write)."""
        return (
            node.op == "embed"
            and not is_root
            and len(users) == 1
            and users[0].op == "add"
            and users[0] not in self.distributed
            and users[0] not in self.constant_only
        )

    def _own_scale(self, node: Expr) -> float:
        """A bound on the constant factor that product ``node``'s own operands give its term."""
        parts = _scale_parts(node)
        if parts is not None:
            return _magnitude(parts[1])
        scale = 1.0
        for child in node.children:
            if child in self.constant_valued:
                scale *= self._constant_scale(child)
        return scale

    def _constant_scale(self, node: Expr) -> float:
        """A bound on the entries of a node made of constants only (lengths aside):
        the value of a number (``log(2)``, ``2^2222``: inf), a bound for products and
        sums of numbers and deltas, inf (may not be finite) for anything else."""
        known = self._constant_scales.get(node)
        if known is not None:
            return known
        if not node.children:  # a number or a delta: no walk
            scale = self._constant_scales[node] = self._scale_from_children(node)
            return scale
        for n in topological(node):  # children first, iteratively (constants nest deeply)
            if n not in self._constant_scales:
                self._constant_scales[n] = self._scale_from_children(n)
        return self._constant_scales[node]

    def _scale_from_children(self, node: Expr) -> float:
        scales = [self._constant_scales[c] for c in node.children]
        if node.order == 0 and all(c.order == 0 for c in node.children):
            with np.errstate(all="ignore"):
                value = self._scalar_value(node)
            if value is not None:
                return abs(value) if math.isfinite(value) else math.inf
        rule = CONSTANT_BOUNDS.get(node.op)
        return rule(node, scales) if rule is not None else math.inf  # anything else may not be finite

    def _scalar_value(self, node: Expr) -> float | None:
        """The value of an order-0 constant whose children are order-0 constants with
        known values (as evaluate computes it), else None."""
        values = self._constant_values
        kids = [values.get(c) for c in node.children]
        if node.op == "const":
            value: float | None = _as_float(node.arg[0])
        elif None in kids or node.op not in SCALAR_FOLDS:
            return None
        else:
            value = SCALAR_FOLDS[node.op](node, [np.float64(v) for v in kids])
        if value is not None:
            values[node] = value
        return value

    def _fuses(self, user: Expr) -> bool:
        """Whether ``user`` expands its product operands into its own terms."""
        return user in self.products or user in self.distributed

    def _data_children(self, node: Expr) -> list[Expr]:
        parts = _scale_parts(node)
        if parts is not None:
            return [parts[0]]
        return [c for c in node.children if c not in self.constant_only]

    # -------------------------------------------------------------- emitting
    def build(self) -> Plan:
        self.decide()
        for node in self.nodes:
            if node in self.materialize:
                self._emit(node)
            elif node in self.root_set and _is_product(node):
                # a root of constants only (2 delta(1), the Hessian of x.x): its
                # deltas become a diagonal write, as inside any other product
                self._add_step(node, "product", data=self._terms(node))
            elif node in self.root_set:  # a root made of constants only
                self._add_step(node, "constant", data=node)
        outputs = tuple(self.slot_of[r] for r in self.roots)
        plan = Plan(self.steps, outputs, self.inputs)
        plan.release = _liveness(plan)
        return plan

    def _add_step(self, node: Expr, kind: str, args: tuple[int, ...] = (), data: StepData = None) -> int:
        # value numbering: a step equal to an earlier one (the same fused einsum
        # reached through differently nested products, then the same functions of
        # it) reuses that one's slot
        key = _step_key(kind, node, args, data)
        index = self._known.get(key) if key is not None else None
        if index is None:
            index = len(self.steps)
            self.steps.append(Step(index, kind, node, args, data))
            if key is not None:
                self._known[key] = index
        if kind != "constant" or node in self.root_set:
            self.slot_of[node] = index
        return index

    def _slot(self, child: Expr) -> int:
        """The slot holding ``child`` (a constant-only child gets a constant step)."""
        if child in self.constant_only:
            return self._add_step(child, "constant", data=child)
        return self.slot_of[child]

    def _emit(self, node: Expr) -> None:
        """The step computing ``node`` into its own slot, by the rule of its kind."""
        rule = PLAN_RULES.get(node.op)
        if rule is None:  # pragma: no cover - constants and deltas are absorbed, never emitted
            raise AssertionError(f"no plan rule for node kind {node.op!r}")
        rule(self, node)

    def _emit_var(self, node: Expr) -> None:
        slot = self._add_step(node, "input", data=node.arg[0])
        self.inputs[node.arg[0]] = slot

    def _emit_product(self, node: Expr) -> None:
        self._add_step(node, "product", data=self._terms(node))

    def _emit_add(self, node: Expr) -> None:
        if _is_product(node):  # a scaling c X is a one-operand product
            self._emit_product(node)
        else:
            self._add_step(node, "add", data=self._add_items(node))

    def _emit_func(self, node: Expr) -> None:
        self._add_step(node, "func", (self._slot(node.children[0]),), node.arg)

    def _emit_pow(self, node: Expr) -> None:
        base, exponent = node.children
        if exponent.op == "const":
            self._add_step(node, "pow", (self._slot(base),), exponent.arg[0])
        else:
            self._add_step(node, "pow", (self._slot(base), self._slot(exponent)), None)

    def _emit_inv(self, node: Expr) -> None:
        self._add_step(node, "inv", (self._slot(node.children[0]),))

    def _emit_det(self, node: Expr) -> None:
        self._add_step(node, "det", (self.slot_of[node.children[0]],))

    def _emit_adj(self, node: Expr) -> None:
        self._add_step(node, "adj", (self._slot(node.children[0]),), node.arg)

    def _emit_slice(self, node: Expr) -> None:  # a view of the child
        self._add_step(node, "slice", (self._slot(node.children[0]),), node.arg)

    def _emit_embed(self, node: Expr) -> None:
        # a strided write into zeros; the target's dimensions are part of the value
        self._add_step(node, "embed", (self._slot(node.children[0]),), node.arg)

    def _add_items(self, node: Expr) -> tuple[AddItem, ...]:
        items = []
        for child, coef in zip(node.children, node.arg):
            if child.op == "const":
                items.append(AddItem("scalar", coef * child.arg[0]))
            elif child.op == "delta":
                items.append(AddItem("delta", coef, n=child.arg))
            elif child in self.inline and child.op == "embed":
                items.append(AddItem("embed", coef, slot=self._slot(child.children[0]), items=child.arg[0]))
            else:
                items.append(AddItem("slot", coef, slot=self._slot(child)))
        return tuple(items)

    # -------------------------------------------------------------- fusion
    def _terms(self, node: Expr) -> tuple[Term, ...]:
        """Expand a product node into a sum of fused einsum terms."""
        simple = self._simple_term(node)
        if simple is not None:
            return (simple,)
        letters = LetterClasses()
        self._opened = {}
        factor, pairs, out = self._open(node, letters, None)
        states = [_Expansion(factor, letters, pending=list(pairs))]
        done_terms = []
        # with a constant that may not be finite, a delta's zeros times inf are nan (as
        # evaluate computes them): the delta stays an operand instead of renaming letters
        scale = self.term_scale.get(node)  # none for a root made of constants only
        keep_deltas = not math.isfinite(self._own_scale(node) if scale is None else scale)
        distributed, constant_only, inline = self.distributed, self.constant_only, self.inline
        while states:
            state = states.pop()
            pending = state.pending
            while pending:
                child, spec, holders = pending.pop()
                op = child.op
                if op == "delta" and keep_deltas:
                    state.constants.append((child, spec, holders))
                    continue
                if op == "const":
                    state.absorbed.extend(spec)
                    state.factor *= child.arg[0]
                elif op == "delta":
                    state.absorbed.extend(spec)
                    unite_delta(child, spec, state.letters)
                elif child in distributed:
                    for term, coef in zip(child.children, child.arg):
                        states.append(state.branch(coef, (term, spec, holders)))
                    break
                elif child in constant_only and (
                    child not in self.products or not math.isfinite(self._constant_scale(child))
                ):
                    state.constants.append((child, spec, holders))  # delta(1) 2^2222 is nan off the diagonal
                elif child in constant_only or (child in inline and (child not in self.materialize or _is_free(child))):
                    f, inner_pairs, _ = self._open(child, state.letters, spec, holders)
                    state.factor *= f
                    pending.extend(inner_pairs)
                else:
                    state.finished.append((self.slot_of[child], spec, holders))
            else:
                done_terms.append(
                    self._resolve(state.factor, state.letters, state.finished, state.constants, out, state.absorbed)
                )
        return tuple(reversed(done_terms))

    def _simple_term(self, node: Expr) -> Term | None:
        """The one term of a product whose operands are all slots or numbers (nothing
        to open, distribute or rename: most products of a long sum), built directly;
        None for any other product.  The same term as the general expansion gives:
        operands in the order it pops them (last first), letters named by first
        appearance in the operands, the output, then the numbers' letters."""
        if node.op != "mul":
            return None
        slot_of, distributed, constant_only = self.slot_of, self.distributed, self.constant_only
        inline, materialize = self.inline, self.materialize
        ins, out = node.arg
        finished = []
        absorbed = []
        factor = 1
        for child, spec in zip(reversed(node.children), reversed(ins)):
            if child.op == "const":
                absorbed.append(spec)
                factor *= child.arg[0]
            elif (
                child.op == "delta"
                or child in distributed
                or child in constant_only
                or (child in inline and (child not in materialize or _is_free(child)))
            ):
                return None
            else:
                finished.append((slot_of[child], spec))
        canon: dict[int, int] = {}
        setdefault = canon.setdefault
        operands = tuple([(slot, tuple([setdefault(x, len(canon)) for x in spec])) for slot, spec in finished])
        new_out = tuple([setdefault(x, len(canon)) for x in out])
        for spec in absorbed:
            for x in spec:
                setdefault(x, len(canon))
        refs = sorted([(canon[letter], (node, letter)) for letter in sorted(set().union(*ins))])
        summed = tuple([letter for letter in canon.values() if letter not in new_out])  # one sum holds all
        return Term(factor, operands, new_out, tuple(refs), (), (summed,) * len(operands))

    def _open(self, node: Expr, letters: LetterClasses, spec: Spec | None, holders: Spec = ()):
        """The operands of product ``node`` with fresh letters, joined to ``spec``
        (the letters the user reads the node with; None for the node itself), each with
        ``holders`` (the fresh letters of the sums around ``node``) and the node's own summed ones."""
        parts = _scale_parts(node)
        if parts is not None:
            child, coef = parts
            own = tuple(next(self._fresh) for _ in range(node.order))
            if spec is not None:
                for a, b in zip(own, spec):
                    letters.union(a, b)
            return coef, [(child, own, holders)], own
        ins, out = node.arg
        rename = {}
        opened, fresh = self._opened, self._fresh
        for letter in sorted(set().union(*ins)):
            new = rename[letter] = next(fresh)
            opened[new] = (node, letter)
        own_out = tuple([rename[letter] for letter in out])
        if spec is not None:
            union = letters.union
            for a, b in zip(own_out, spec):
                union(a, b)
        inner = holders + tuple([rename[letter] for letter in rename if letter not in out])
        pairs = [(child, tuple([rename[x] for x in s]), inner) for child, s in zip(node.children, ins)]
        return 1, pairs, own_out

    def _resolve(self, factor, letters: LetterClasses, finished, constants, out, absorbed) -> Term:
        canon: dict[int, int] = {}
        find, setdefault = letters.find, canon.setdefault

        def name(letter: int) -> int:
            return setdefault(find(letter), len(canon))

        operands = tuple([(slot, tuple([name(x) for x in spec])) for slot, spec, _ in finished])
        consts = tuple([(node, tuple([name(x) for x in spec])) for node, spec, _ in constants])
        new_out = tuple([name(x) for x in out])
        for letter in absorbed:
            name(letter)
        # a held letter joined to the output (by a delta) is summed by no sum of the term
        holders = tuple(
            [
                tuple(dict.fromkeys([c for c in _names(canon, find, held) if c not in new_out]))
                for *_, held in finished + constants
            ]
        )
        refs: dict[int, LetterRef] = {}
        for fresh, ref in self._opened.items():
            c = canon.get(find(fresh))
            if c is not None and c not in refs:
                refs[c] = ref
        return Term(factor, operands, new_out, tuple(sorted(refs.items())), consts, holders)


#: node kind -> the builder method writing the step of a node computed into its own slot
#: (constants and deltas have none: they are absorbed, or evaluated once at binding)
PLAN_RULES: dict[str, Callable[[PlanBuilder, Expr], None]] = {
    "var": PlanBuilder._emit_var,
    "mul": PlanBuilder._emit_product,
    "add": PlanBuilder._emit_add,
    "func": PlanBuilder._emit_func,
    "pow": PlanBuilder._emit_pow,
    "inv": PlanBuilder._emit_inv,
    "det": PlanBuilder._emit_det,
    "adj": PlanBuilder._emit_adj,
    "slice": PlanBuilder._emit_slice,
    "embed": PlanBuilder._emit_embed,
}


def _step_key(kind: str, node: Expr, args: tuple[int, ...], data: StepData) -> tuple | None:
    """A key equal for steps that compute the same value (None: never merged)."""
    if kind == "input":
        return (kind, data)
    if kind == "constant":
        return None
    if kind == "product":
        terms = cast("tuple[Term, ...]", data)
        key = (kind, tuple(_term_key(term) for term in terms))
        # a letter that no operand carries and no product names takes its length from
        # the node's axes: 2 delta(1) is the Hessian of x.x and of y.y, of two lengths
        return (*key, node.dims) if any(_unnamed_letters(term) for term in terms) else key
    return (kind, args, data)


def _names(canon: dict[int, int], find: Callable[[int], int], fresh: Spec) -> list[int]:
    """The term's names of the fresh letters ``fresh`` (a letter that names nothing is left out)."""
    return [c for c in [canon.get(find(letter)) for letter in fresh] if c is not None]


def _unnamed_letters(term: Term) -> set[int]:
    """The letters of ``term`` whose length neither an operand nor a product letter gives."""
    present = set().union(*[s for _, s in term.operands], *[s for _, s in term.constants], dict(term.refs))
    return set(term.out) - present


def _term_key(term: Term) -> tuple:
    ops = term.operands
    if len(ops) > 1:
        ops = tuple(sorted(ops, key=lambda op: (op[0], len(op[1]))))  # stable: ties keep their order
    rename: dict[int, int] = {}
    setdefault = rename.setdefault
    operands = tuple([(slot, tuple([setdefault(x, len(rename)) for x in spec])) for slot, spec in ops])
    constants = tuple([(node, tuple([setdefault(x, len(rename)) for x in spec])) for node, spec in term.constants])
    out = tuple([setdefault(x, len(rename)) for x in term.out])
    # a letter no operand carries (summed alone, or an output written from a delta
    # or a constant) takes its length from its product: that is part of the value
    present = set().union(*[s for _, s in term.operands], *[s for _, s in term.constants])
    # sorted by the renamed letter alone (one entry per letter): nodes have no order
    extra = tuple(
        sorted(
            [(setdefault(x, len(rename)), ref[0], ref[1]) for x, ref in term.refs if x not in present],
            key=lambda entry: entry[0],
        )
    )
    # not the holders: y ⊙ (X w) and the one einsum X_ij w_j y_i differ only where an axis of
    # w is empty and y has an inf (nan against 0), and the plan computes them once (logreg's exp)
    return (term.factor, operands, constants, out, extra)


def _liveness(plan: Plan) -> list[tuple[int, ...]]:
    """For every step, the slots whose last use it is (outputs are never released)."""
    last: dict[int, int] = {}
    for step in plan.steps:
        for slot in step_reads(step):
            last[slot] = step.index
    keep = set(plan.outputs)
    release: list[list[int]] = [[] for _ in plan.steps]
    for slot, index in last.items():
        if slot not in keep:
            release[index].append(slot)
    return [tuple(r) for r in release]


def step_reads(step: Step) -> list[int]:
    """The slots ``step`` reads (an embedded summand of a sum is read too), one entry
    per read: the binder, the fused path and the liveness here share this one function."""
    if step.kind == "product":
        return [slot for term in cast("tuple[Term, ...]", step.data) for slot, _ in term.operands]
    if step.kind == "add":
        return [item.slot for item in cast("tuple[AddItem, ...]", step.data) if item.kind in ("slot", "embed")]
    return list(step.args)


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a plan is built.

    Building a plan allocates a few objects per node and frees none; every full
    collection then rescans all of them, which made compiling a 100,000-term sum
    superlinear (25k / 50k / 100k terms: 5.8 / 16.7 / 41 s with the collector,
    6.0 / 12.3 / 24.4 s without, on a loaded 2-core machine).  Nothing cyclic
    is freed meanwhile; the collector's previous state is restored afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_plan(roots: Sequence[Expr]) -> Plan:
    """The plan computing every root (shared subexpressions once)."""
    return PlanBuilder(roots).build()


class _ConstantPlanBuilder(PlanBuilder):
    """The plan of one node made of constants only, folding only its leaves (numbers and
    deltas): the shape-free ``tc.to_python()`` writes a constant step from this plan's
    steps, lengths being known only when it runs.  Bounds on constant factors still
    read every constant-only node (a delta times ``2^2222`` stays an operand: nan off
    the diagonal, as evaluate computes it)."""

    def __init__(self, roots: Sequence[Expr]):
        super().__init__(roots)  # constant_valued: every constant-only node
        self.constant_only = {node for node in self.constant_valued if not node.children}


def build_constant_plan(node: Expr) -> Plan:
    """The plan computing constant-only ``node`` step by step (its numbers and deltas folded).

    >>> import tenscalc as tc
    >>> [step.kind for step in build_constant_plan(tc.parse("sin(2) + exp(1)")).steps]
    ['constant', 'func', 'constant', 'func', 'add']
    """
    return _ConstantPlanBuilder([node]).build()
