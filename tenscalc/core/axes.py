"""Binding axis lengths: which axes of a DAG must have equal lengths, and how long.

Every node carries its dimensions (``Expr.dims``, see ``tenscalc.core.nodes``), so
the length of every axis is already named: ``X.0`` is the length of X's axis 0.
What remains to check when arrays are bound are the equalities the expression
implies between *different* dimensions (``A *(ij,j->i) x`` says ``A.1 = x.0``,
``x + y`` says ``x.0 = y.0``, ``det`` needs a square matrix ...), and the length
of the few axes whose dimension is still unknown (a ones tensor no variable
fixes).  A union-find over the axis slots of the DAG answers both: each known
dimension is an anchor slot (listed in ``var_slots``, whether or not its
variable occurs in the DAG: a derivative can keep X's lengths without X), and
every node's axis slots are united with their dimension's anchor and with the
slots the node's kind equates.

Graphs are cached per root in a small bounded cache (evaluating the same
expression again does not rebuild it; memory stays bounded).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .nodes import FULL_AXIS, Dim, Expr, SliceDim, slice_item_text, topological

Source = tuple[str, int, int]  # (variable name, variable order, axis)

GRAPH_CACHE_SIZE = 32


@dataclass
class AxisGraph:
    """Union-find over the axis slots of one DAG."""

    nodes: list[Expr]
    first_slot: dict[Expr, int]  # node -> first slot of its axes
    parent: list[int]
    var_slots: list[tuple[str, int, int, int]]  # (name, order, axis, anchor slot) per known dimension
    # product node -> its letter -> slot
    letter_slots: dict[Expr, dict[int, int]] = field(default_factory=dict)
    # slices: (slot, base slot, (start, stop, step)): slot's length is that of range(base)[start:stop:step]
    derived: list[tuple[int, int, tuple]] = field(default_factory=list)
    # indices: (slot, index, node): the index must lie inside the axis
    indexed: list[tuple[int, int, Expr]] = field(default_factory=list)

    def find(self, slot: int) -> int:
        parent = self.parent
        root = slot
        while parent[root] != root:
            root = parent[root]
        while parent[slot] != root:
            parent[slot], slot = root, parent[slot]
        return root

    def union(self, a: int, b: int) -> None:
        """Join the classes of slots ``a`` and ``b`` (named by the smaller root)."""
        parent = self.parent
        ra = a if parent[a] == a else self.find(a)  # most slots are roots: skip the call
        rb = b if parent[b] == b else self.find(b)
        if ra != rb:
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb

    def new_slot(self) -> int:
        """A fresh slot in a class of its own."""
        slot = len(self.parent)
        self.parent.append(slot)
        return slot

    def slot(self, node: Expr, axis: int) -> int:
        return self.first_slot[node] + axis

    def classes(self, node: Expr) -> tuple[int, ...]:
        start = self.first_slot[node]
        return tuple(self.find(start + k) for k in range(node.order))

    def value_variables(self) -> dict[str, int]:
        """Variables whose values the DAG reads (name -> order)."""
        return {n.arg[0]: n.arg[1] for n in self.nodes if n.op == "var"}

    def all_variables(self) -> dict[str, int]:
        """Variables whose values or shapes the DAG needs (name -> order)."""
        found = {name: order for name, order, _axis, _slot in self.var_slots}
        found.update(self.value_variables())
        return found


_graphs: OrderedDict[Expr | tuple[Expr, ...], AxisGraph] = OrderedDict()
_graphs_lock = threading.Lock()


def axis_graph(root: Expr | Sequence[Expr]) -> AxisGraph:
    """The axis union-find of the DAG under ``root``, or under several roots at once
    (cached, bounded).

    One graph for several roots (a compiled list, the L gradients of a deep model)
    visits their shared nodes once: a graph per root would visit them once per
    root, quadratic in the depth when every root shares the forward pass.
    """
    key: Expr | tuple[Expr, ...] = root if isinstance(root, Expr) else tuple(root)
    with _graphs_lock:
        graph = _graphs.get(key)
        if graph is not None:
            _graphs.move_to_end(key)
            return graph
    graph = _build(key)
    with _graphs_lock:
        graph = _graphs.setdefault(key, graph)
        _graphs.move_to_end(key)
        while len(_graphs) > GRAPH_CACHE_SIZE:
            _graphs.popitem(last=False)
    return graph


def _build(roots: Expr | tuple[Expr, ...]) -> AxisGraph:
    nodes = topological(roots)
    first: dict[Expr, int] = {}
    count = 0
    for node in nodes:
        first[node] = count
        count += node.order
    graph = AxisGraph(nodes, first, list(range(count)), [])
    anchors: dict[Dim | SliceDim, int] = {}

    def anchor(d: Dim | SliceDim) -> int:
        slot = anchors.get(d)
        if slot is None:
            slot = anchors[d] = graph.new_slot()
            if type(d) is SliceDim:  # "x.0[1:]": derived from the axis it slices
                graph.derived.append((slot, anchor(d.base), (d.start, d.stop, d.step)))
            else:
                graph.var_slots.append((d.name, d.order, d.axis, slot))
        return slot

    for node in nodes:
        base = first[node]
        for k, d in enumerate(node.dims):
            if type(d) is Dim or type(d) is SliceDim:
                graph.union(base + k, anchor(d))
        AXIS_RULES[node.op](graph, node)
    return graph


# ---------------------------------------------------------------- the axis rules
# What each node kind says about the lengths of its axes and its children's: one
# rule per kind in NODE_KINDS, run on every node after its known dimensions are
# anchored.


def _no_equalities(graph: AxisGraph, node: Expr) -> None:
    """A variable's or constant's axes are tied only through their dimensions."""


def _axes_as_every_child(graph: AxisGraph, node: Expr) -> None:
    """A sum or an elementwise function: axis k of every child is axis k of the node."""
    base = graph.first_slot[node]
    for child in node.children:
        c = graph.first_slot[child]
        for k in range(node.order):
            graph.union(base + k, c + k)


def _axes_as_base(graph: AxisGraph, node: Expr) -> None:
    """A power has its base's axes (the exponent has none)."""
    base, c = graph.first_slot[node], graph.first_slot[node.children[0]]
    for k in range(node.order):
        graph.union(base + k, c + k)


def _axes_inv(graph: AxisGraph, node: Expr) -> None:
    """``inv(X)``: square, with X's axes."""
    base, c = graph.first_slot[node], graph.first_slot[node.children[0]]
    graph.union(base, base + 1)
    graph.union(base, c)
    graph.union(base + 1, c + 1)


def _axes_det(graph: AxisGraph, node: Expr) -> None:
    """``det(X)``: X is square."""
    c = graph.first_slot[node.children[0]]
    graph.union(c, c + 1)


def _axes_adj(graph: AxisGraph, node: Expr) -> None:
    """``adj(X, k)``: X is square and every axis of the adjugate has its length."""
    base, c = graph.first_slot[node], graph.first_slot[node.children[0]]
    graph.union(c, c + 1)
    for k in range(node.order):
        graph.union(base + k, c)


def _axes_delta(graph: AxisGraph, node: Expr) -> None:
    """``delta(n)``: axis k pairs with axis n + k."""
    base, n = graph.first_slot[node], node.arg
    for k in range(n):
        graph.union(base + k, base + n + k)


def _axes_slice(graph: AxisGraph, node: Expr) -> None:
    """A slice: the child's axes are the whole ones, the node's the parts."""
    _whole_and_part(graph, node, node.arg, whole=node.children[0], part=node)


def _axes_embed(graph: AxisGraph, node: Expr) -> None:
    """An embedding (a slice's transpose): the node's axes are the whole ones."""
    _whole_and_part(graph, node, node.arg[0], whole=node, part=node.children[0])


def _whole_and_part(graph: AxisGraph, node: Expr, items: tuple, whole: Expr, part: Expr) -> None:
    """A kept axis (``:``) has the whole axis's length, a sliced one a derived length;
    an index drops the axis and must lie inside it."""
    w, p = graph.first_slot[whole], graph.first_slot[part]
    k = 0
    for axis, item in enumerate(items):
        if isinstance(item, int):
            graph.indexed.append((w + axis, item, node))
            continue
        if item == FULL_AXIS:
            graph.union(p + k, w + axis)
        else:
            graph.derived.append((p + k, w + axis, item))
        k += 1


def _axes_mul(graph: AxisGraph, node: Expr) -> None:
    """A product: every axis labelled with one letter has that letter's length."""
    ins, out = node.arg
    parent, first, union = graph.parent, graph.first_slot, graph.union
    start = len(parent)
    letter_slot = {letter: start + k for k, letter in enumerate(sorted(set().union(*ins)))}
    parent.extend(range(start, start + len(letter_slot)))  # a fresh slot per letter
    for child, spec in zip(node.children, ins):
        c = first[child]
        for k, letter in enumerate(spec):
            union(letter_slot[letter], c + k)
    base = first[node]
    for k, letter in enumerate(out):
        union(base + k, letter_slot[letter])
    graph.letter_slots[node] = letter_slot


AXIS_RULES: dict[str, Callable[[AxisGraph, Expr], None]] = {
    "var": _no_equalities,
    "const": _no_equalities,
    "delta": _axes_delta,
    "add": _axes_as_every_child,
    "mul": _axes_mul,
    "func": _axes_as_every_child,
    "pow": _axes_as_base,
    "inv": _axes_inv,
    "det": _axes_det,
    "adj": _axes_adj,
    "slice": _axes_slice,
    "embed": _axes_embed,
}


def sliced_length(length: int, item: tuple) -> int:
    """The length of ``range(length)[start:stop:step]``."""
    return len(range(length)[slice(*item)])


def derive_lengths(graph: AxisGraph, lengths: dict[int, int], error: type[Exception]) -> dict[int, int]:
    """Complete ``lengths`` (axis class -> length) with the lengths of sliced axes,
    and check that indices lie inside their axes; ``error`` is raised on a conflict."""
    changed = True
    while changed:
        changed = False
        for slot, base, item in graph.derived:
            cb = graph.find(base)
            if cb not in lengths:
                continue
            length = sliced_length(lengths[cb], item)
            cls = graph.find(slot)
            if cls not in lengths:
                lengths[cls] = length
                changed = True
            elif lengths[cls] != length:
                text = slice_item_text(item)
                raise error(
                    f"a slice [{text}] of an axis of length {lengths[cb]} has length {length}, but the "
                    f"expression needs length {lengths[cls]} there"
                )
    for slot, index, _node in graph.indexed:
        cls = graph.find(slot)
        if cls in lengths and not -lengths[cls] <= index < lengths[cls]:
            raise error(f"index {index} is out of range for an axis of length {lengths[cls]}")
    return lengths


def axis_sources(root: Expr) -> tuple[tuple[str, int, int] | None, ...]:
    """For every axis of ``root``, a variable axis with the same length, if any."""
    graph = axis_graph(root)
    by_class: dict[int, tuple[str, int, int]] = {}
    for name, order, axis, slot in graph.var_slots:
        by_class.setdefault(graph.find(slot), (name, order, axis))
    return tuple(by_class.get(c) for c in graph.classes(root))
