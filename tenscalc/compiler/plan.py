"""The symbolic half of compilation: a DAG becomes a flat, shape-independent plan.

Done once per compiled function, whatever the arrays:

* **fusion** — a product whose operand is another product used only there (or a
  product that only relabels, scales, broadcasts or writes a diagonal, which is
  free to repeat) is inlined, so a chain of products between shared nodes
  becomes one multi-operand einsum ("term");
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.letters import LetterClasses
from ..core.nodes import Expr, topological
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


@dataclass(frozen=True)
class AddItem:
    """One summand of an ``add`` step: an array slot, a scalar, a delta, or an
    embedding (``embed``: the slot holds the part, written at ``items``)."""

    kind: str  # "slot" | "scalar" | "delta" | "embed"
    coef: float
    slot: int = -1
    n: int = 0
    items: tuple = ()


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
    data: object = None


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
    data = [spec for child, spec in zip(node.children, ins) if child.op not in ("const", "delta")]
    if len(data) > 1:
        return False
    if not data:
        return True
    # deltas may rename letters: resolve them before asking whether data is summed
    classes = LetterClasses()
    unite_delta_letters(list(zip(node.children, ins)), classes)
    kept = {classes.find(letter) for letter in out}
    return all(classes.find(letter) in kept for letter in data[0])


def _as_float(value: int | float) -> float:
    """``value`` as a float; an integer beyond float64's range is inf, as NumPy makes it."""
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _magnitude(value: int | float) -> float:
    return abs(_as_float(value))


def _distributes(parent: Expr, k: int) -> bool:
    """Whether operand ``k`` (a sum) of product ``parent`` is better pushed inside:
    the product reads its diagonal or sums an axis no other operand has."""
    ins, out = parent.arg
    spec = ins[k]
    if len(set(spec)) != len(spec):
        return True
    others = set(out).union(*(s for j, s in enumerate(ins) if j != k))
    return any(letter not in others for letter in spec)


class PlanBuilder:
    """Builds a :class:`Plan` for a list of roots."""

    def __init__(self, roots: Sequence[Expr]):
        self.roots = list(roots)
        self.nodes = topological(self.roots)
        self.root_ids = {id(r) for r in self.roots}
        # nodes made of constants only are computed once when shapes are bound
        # (or absorbed into the products that use them): they get no step of their own
        self.constant_only: set[int] = set()
        for node in self.nodes:
            if node.op != "var" and all(id(c) in self.constant_only for c in node.children):
                self.constant_only.add(id(node))
        self.live = self._live_nodes()
        self.users: dict[int, list[Expr]] = {id(n): [] for n in self.nodes}
        for node in self.nodes:
            if id(node) in self.live:
                for child in self._reads(node):
                    self.users[id(child)].append(node)
        self.inline: set[int] = set()  # products expanded into their users' terms
        self.materialize: set[int] = set()  # nodes computed into a shared slot
        self.distributed: set[int] = set()  # sums pushed into their only product
        # a bound on the constant factor of the fused term a product or distributed sum
        # lies in (inf: a constant that may not be finite, such as 2^2222 or exp(1000))
        self.term_scale: dict[int, float] = {}
        self._constant_scales: dict[int, float] = {}
        self._constant_values: dict[int, float] = {}
        self.forced: set[int] = set()
        self.steps: list[Step] = []
        self.slot_of: dict[int, int] = {}
        self.inputs: dict[str, int] = {}
        self._fresh = itertools.count(1_000_000)  # letters of inlined products
        self._refs: dict[int, LetterRef] = {}  # fresh letter -> (product node, its letter)
        # fresh letters opened while expanding the current product: _resolve looks at
        # these only (walking every letter ever created made compilation quadratic)
        self._opened: list[int] = []
        self._known: dict[tuple, int] = {}  # step key -> slot

    @staticmethod
    def _reads(node: Expr) -> tuple[Expr, ...]:
        if node.op == "pow" and node.children[1].op == "const":
            return node.children[:1]
        return node.children

    def _live_nodes(self) -> set[int]:
        live = set(self.root_ids)
        for node in reversed(self.nodes):
            if id(node) in live:
                live.update(id(c) for c in self._reads(node))
        return live

    # -------------------------------------------------------------- decisions
    def decide(self) -> None:
        """Which nodes get a slot, which are inlined, which sums are distributed.

        Parents are decided before their children (reverse topological order).
        """
        for node in reversed(self.nodes):
            key = id(node)
            if key not in self.live or key in self.constant_only:
                continue  # constants are absorbed, or evaluated once at binding
            users = self.users[key]
            is_root = key in self.root_ids
            if node.op == "var":
                self.materialize.add(key)
                continue
            if self._embed_into_sum(node, users, is_root):
                self.inline.add(key)  # the sum writes the part into its own result
                continue
            fusing_users = [u for u in users if self._fuses(u)]
            if _is_product(node) and not is_root and key not in self.forced:
                if _is_free(node) and fusing_users:
                    self.inline.add(key)
                    if len(users) > 1:
                        for child in self._data_children(node):
                            self.forced.add(id(child))  # computed once, relabelled per use
                elif len(users) == 1 and fusing_users:
                    self.inline.add(key)
            if _is_product(node):
                own = self._own_scale(node)
                outer = max((self.term_scale.get(id(u), 1.0) for u in fusing_users), default=1.0)
                if key in self.inline and not math.isfinite(own * outer):
                    # a constant that may not be finite (2^2222, 1e308 * 1e10 once fused) is
                    # applied where it is written: fused, it would move across a sum
                    self.inline.discard(key)
                self.term_scale[key] = own * outer if key in self.inline else own
            if (
                node.op == "add"
                and len(node.children) > 1
                and not is_root
                and key not in self.forced
                and len(users) == 1
                and users[0].op == "mul"
                and _distributes(users[0], users[0].children.index(node))
                # c (a - b) is not c a - c b when c is inf: a constant that may not be
                # finite keeps the sum whole, as evaluate computes it
                and math.isfinite(self.term_scale.get(id(users[0]), 1.0) * max(map(_magnitude, node.arg)))
            ):
                self.distributed.add(key)
                self.term_scale[key] = self.term_scale.get(id(users[0]), 1.0) * max(map(_magnitude, node.arg))
                continue
            if is_root or key not in self.inline or len(fusing_users) < len(users):
                self.materialize.add(key)

    def _embed_into_sum(self, node: Expr, users: list[Expr], is_root: bool) -> bool:
        """An embedding whose only user is a sum: no zeros of its own, the sum adds
        the part into the slice of its result (a strided write)."""
        return (
            node.op == "embed"
            and not is_root
            and len(users) == 1
            and users[0].op == "add"
            and id(users[0]) not in self.distributed
            and id(users[0]) not in self.constant_only
        )

    def _own_scale(self, node: Expr) -> float:
        """A bound on the constant factor that product ``node``'s own operands give its term."""
        parts = _scale_parts(node)
        if parts is not None:
            return _magnitude(parts[1])
        scale = 1.0
        for child in node.children:
            if id(child) in self.constant_only:
                scale *= self._constant_scale(child)
        return scale

    def _constant_scale(self, node: Expr) -> float:
        """A bound on the entries of a node made of constants only (lengths aside):
        the value of a number (``log(2)``, ``2^2222``: inf), a bound for products and
        sums of numbers and deltas, inf (may not be finite) for anything else."""
        known = self._constant_scales.get(id(node))
        if known is not None:
            return known
        for n in topological(node):  # children first, iteratively (constants nest deeply)
            if id(n) not in self._constant_scales:
                self._constant_scales[id(n)] = self._scale_from_children(n)
        return self._constant_scales[id(node)]

    def _scale_from_children(self, node: Expr) -> float:
        scales = [self._constant_scales[id(c)] for c in node.children]
        if node.order == 0 and all(c.order == 0 for c in node.children):
            with np.errstate(all="ignore"):
                value = self._scalar_value(node)
            if value is not None:
                return abs(value) if math.isfinite(value) else math.inf
        if node.op == "const":
            return _magnitude(node.arg[0])
        if node.op == "delta":
            return 1.0
        if node.op == "mul":
            return math.prod(scales)
        if node.op == "add":
            return sum(_magnitude(c) * b for b, c in zip(scales, node.arg))
        return math.inf

    def _scalar_value(self, node: Expr) -> float | None:
        """The value of an order-0 constant whose children are order-0 constants with
        known values (as evaluate computes it), else None."""
        values = self._constant_values
        kids = [values.get(id(c)) for c in node.children]
        value = None
        if node.op == "const":
            value = _as_float(node.arg[0])
        elif None in kids:
            return None
        elif node.op == "func":
            value = float(ELEMENTWISE[node.arg](np.float64(kids[0])))
        elif node.op == "pow":
            value = float(np.power(np.float64(kids[0]), np.float64(kids[1])))
        elif node.op == "add":
            value = float(sum(np.float64(_as_float(c)) * v for v, c in zip(kids, node.arg)))
        elif node.op == "mul":
            value = float(math.prod(np.float64(v) for v in kids))
        if value is not None:
            values[id(node)] = value
        return value

    def _fuses(self, user: Expr) -> bool:
        """Whether ``user`` expands its product operands into its own terms."""
        return _is_product(user) or id(user) in self.distributed

    def _data_children(self, node: Expr) -> list[Expr]:
        parts = _scale_parts(node)
        if parts is not None:
            return [parts[0]]
        return [c for c in node.children if id(c) not in self.constant_only]

    # -------------------------------------------------------------- emitting
    def build(self) -> Plan:
        self.decide()
        for node in self.nodes:
            if id(node) in self.materialize:
                self._emit(node)
            elif id(node) in self.root_ids and _is_product(node):
                # a root of constants only (2 delta(1), the Hessian of x.x): its
                # deltas become a diagonal write, as inside any other product
                self._add_step(node, "product", data=self._terms(node))
            elif id(node) in self.root_ids:  # a root made of constants only
                self._add_step(node, "constant", data=node)
        outputs = tuple(self.slot_of[id(r)] for r in self.roots)
        plan = Plan(self.steps, outputs, self.inputs)
        plan.release = _liveness(plan)
        return plan

    def _add_step(self, node: Expr, kind: str, args: tuple[int, ...] = (), data: object = None) -> int:
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
        if kind != "constant" or id(node) in self.root_ids:
            self.slot_of[id(node)] = index
        return index

    def _slot(self, child: Expr) -> int:
        """The slot holding ``child`` (a constant-only child gets a constant step)."""
        if id(child) in self.constant_only:
            return self._add_step(child, "constant", data=child)
        return self.slot_of[id(child)]

    def _emit(self, node: Expr) -> None:
        op = node.op
        if op == "var":
            slot = self._add_step(node, "input", data=node.arg[0])
            self.inputs[node.arg[0]] = slot
        elif _is_product(node):
            self._add_step(node, "product", data=self._terms(node))
        elif op == "add":
            self._add_step(node, "add", data=self._add_items(node))
        elif op == "func":
            self._add_step(node, "func", (self._slot(node.children[0]),), node.arg)
        elif op == "pow":
            base, exponent = node.children
            if exponent.op == "const":
                self._add_step(node, "pow", (self._slot(base),), exponent.arg[0])
            else:
                self._add_step(node, "pow", (self._slot(base), self._slot(exponent)), None)
        elif op == "inv":
            self._add_step(node, op, (self._slot(node.children[0]),))
        elif op == "slice":  # a view of the child
            self._add_step(node, op, (self._slot(node.children[0]),), node.arg)
        elif op == "embed":  # a strided write into zeros; the target's dimensions are part of the value
            self._add_step(node, op, (self._slot(node.children[0]),), node.arg)
        elif op == "det":
            self._add_step(node, op, (self.slot_of[id(node.children[0])],))
        else:  # pragma: no cover - every kind is listed above
            raise AssertionError(f"no plan rule for node kind {op!r}")

    def _add_items(self, node: Expr) -> tuple[AddItem, ...]:
        items = []
        for child, coef in zip(node.children, node.arg):
            if child.op == "const":
                items.append(AddItem("scalar", coef * child.arg[0]))
            elif child.op == "delta":
                items.append(AddItem("delta", coef, n=child.arg))
            elif id(child) in self.inline and child.op == "embed":
                items.append(AddItem("embed", coef, slot=self._slot(child.children[0]), items=child.arg[0]))
            else:
                items.append(AddItem("slot", coef, slot=self._slot(child)))
        return tuple(items)

    # -------------------------------------------------------------- fusion
    def _terms(self, node: Expr) -> tuple[Term, ...]:
        """Expand a product node into a sum of fused einsum terms."""
        letters = LetterClasses()
        self._opened = []
        factor, pairs, out = self._open(node, letters, None)
        # a state: (factor, letters, finished operands, constant operands, pending
        # operands, letters of absorbed constants: summed alone, they count lengths)
        states = [(factor, letters, [], [], list(pairs), [])]
        done_terms = []
        # with a constant that may not be finite, a delta's zeros times inf are nan (as
        # evaluate computes them): the delta stays an operand instead of renaming letters
        scale = self.term_scale.get(id(node))  # none for a root made of constants only
        keep_deltas = not math.isfinite(self._own_scale(node) if scale is None else scale)
        while states:
            factor, letters, finished, constants, pending, absorbed = states.pop()
            while pending:
                child, spec = pending.pop()
                key = id(child)
                if child.op == "delta" and keep_deltas:
                    constants.append((child, spec))
                    continue
                if child.op in ("const", "delta"):
                    absorbed.extend(spec)
                if child.op == "const":
                    factor *= child.arg[0]
                elif child.op == "delta":
                    unite_delta(child, spec, letters)
                elif key in self.distributed:
                    for term, coef in zip(child.children, child.arg):
                        states.append(
                            (
                                factor * coef,
                                letters.copy(),
                                list(finished),
                                list(constants),
                                pending + [(term, spec)],
                                list(absorbed),
                            )
                        )
                    break
                elif key in self.constant_only and (
                    not _is_product(child) or not math.isfinite(self._constant_scale(child))
                ):
                    constants.append((child, spec))  # delta(1) 2^2222 is nan off the diagonal
                elif key in self.constant_only or (
                    key in self.inline and (key not in self.materialize or _is_free(child))
                ):
                    f, inner_pairs, _ = self._open(child, letters, spec)
                    factor *= f
                    pending.extend(inner_pairs)
                else:
                    finished.append((self.slot_of[key], spec))
            else:
                done_terms.append(self._resolve(factor, letters, finished, constants, out, absorbed))
        return tuple(reversed(done_terms))

    def _open(self, node: Expr, letters: LetterClasses, spec: Spec | None):
        """The operands of product ``node`` with fresh letters, joined to ``spec``
        (the letters the user reads the node with; None for the node itself)."""
        parts = _scale_parts(node)
        if parts is not None:
            child, coef = parts
            own = tuple(next(self._fresh) for _ in range(node.order))
            if spec is not None:
                for a, b in zip(own, spec):
                    letters.union(a, b)
            return coef, [(child, own)], own
        ins, out = node.arg
        rename = {}
        for letter in sorted(set().union(*ins)):
            fresh = next(self._fresh)
            rename[letter] = fresh
            self._refs[fresh] = (node, letter)
            self._opened.append(fresh)
        own_out = tuple(rename[letter] for letter in out)
        if spec is not None:
            for a, b in zip(own_out, spec):
                letters.union(a, b)
        pairs = [(child, tuple(rename[x] for x in s)) for child, s in zip(node.children, ins)]
        return 1, pairs, own_out

    def _resolve(self, factor, letters: LetterClasses, finished, constants, out, absorbed) -> Term:
        canon: dict[int, int] = {}

        def name(letter: int) -> int:
            return canon.setdefault(letters.find(letter), len(canon))

        operands = tuple((slot, tuple(name(x) for x in spec)) for slot, spec in finished)
        consts = tuple((node, tuple(name(x) for x in spec)) for node, spec in constants)
        new_out = tuple(name(x) for x in out)
        for letter in absorbed:
            name(letter)
        refs: dict[int, LetterRef] = {}
        for fresh in self._opened:
            c = canon.get(letters.find(fresh))
            if c is not None:
                refs.setdefault(c, self._refs[fresh])
        return Term(factor, operands, new_out, tuple(sorted(refs.items(), key=lambda kv: kv[0])), consts)


def _step_key(kind: str, node: Expr, args: tuple[int, ...], data: object) -> tuple | None:
    """A key equal for steps that compute the same value (None: never merged)."""
    if kind == "input":
        return (kind, data)
    if kind == "constant":
        return None
    if kind == "product":
        return (kind, tuple(_term_key(term) for term in data))
    return (kind, args, data)


def _term_key(term: Term) -> tuple:
    order = sorted(range(len(term.operands)), key=lambda k: (term.operands[k][0], len(term.operands[k][1])))
    rename: dict[int, int] = {}
    operands = tuple(
        (term.operands[k][0], tuple(rename.setdefault(x, len(rename)) for x in term.operands[k][1])) for k in order
    )
    constants = tuple(
        (id(node), tuple(rename.setdefault(x, len(rename)) for x in spec)) for node, spec in term.constants
    )
    out = tuple(rename.setdefault(x, len(rename)) for x in term.out)
    # a letter no operand carries (summed alone, or an output written from a delta
    # or a constant) takes its length from its product: that is part of the value
    present = set().union(*(s for _, s in term.operands), *(s for _, s in term.constants))
    extra = tuple(
        sorted((rename.setdefault(x, len(rename)), id(ref[0]), ref[1]) for x, ref in term.refs if x not in present)
    )
    return (term.factor, operands, constants, out, extra)


def _liveness(plan: Plan) -> list[tuple[int, ...]]:
    """For every step, the slots whose last use it is (outputs are never released)."""
    last: dict[int, int] = {}
    for step in plan.steps:
        for slot in _reads(step):
            last[slot] = step.index
    keep = set(plan.outputs)
    release: list[list[int]] = [[] for _ in plan.steps]
    for slot, index in last.items():
        if slot not in keep:
            release[index].append(slot)
    return [tuple(r) for r in release]


def _reads(step: Step) -> list[int]:
    if step.kind == "product":
        return [slot for term in step.data for slot, _ in term.operands]
    if step.kind == "add":
        return [item.slot for item in step.data if item.kind in ("slot", "embed")]
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
