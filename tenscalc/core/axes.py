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
from dataclasses import dataclass, field

from .nodes import Dim, Expr, SliceDim, topological

Source = tuple[str, int, int]  # (variable name, variable order, axis)

GRAPH_CACHE_SIZE = 32


@dataclass
class AxisGraph:
    """Union-find over the axis slots of one DAG."""

    nodes: list[Expr]
    first_slot: dict[int, int]  # id(node) -> first slot of its axes
    parent: list[int]
    var_slots: list[tuple[str, int, int, int]]  # (name, order, axis, anchor slot) per known dimension
    letter_slots: dict[int, dict[int, int]] = field(default_factory=dict)  # id(mul) -> letter -> slot
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

    def slot(self, node: Expr, axis: int) -> int:
        return self.first_slot[id(node)] + axis

    def classes(self, node: Expr) -> tuple[int, ...]:
        start = self.first_slot[id(node)]
        return tuple(self.find(start + k) for k in range(node.order))

    def value_variables(self) -> dict[str, int]:
        """Variables whose values the DAG reads (name -> order)."""
        return {n.arg[0]: n.arg[1] for n in self.nodes if n.op == "var"}

    def all_variables(self) -> dict[str, int]:
        """Variables whose values or shapes the DAG needs (name -> order)."""
        found = {name: order for name, order, _axis, _slot in self.var_slots}
        found.update(self.value_variables())
        return found


_graphs: OrderedDict[Expr, AxisGraph] = OrderedDict()
_graphs_lock = threading.Lock()


def axis_graph(root: Expr) -> AxisGraph:
    """The axis union-find of the DAG under ``root`` (cached, bounded)."""
    with _graphs_lock:
        graph = _graphs.get(root)
        if graph is not None:
            _graphs.move_to_end(root)
            return graph
    graph = _build(root)
    with _graphs_lock:
        graph = _graphs.setdefault(root, graph)
        _graphs.move_to_end(root)
        while len(_graphs) > GRAPH_CACHE_SIZE:
            _graphs.popitem(last=False)
    return graph


def _build(root: Expr) -> AxisGraph:
    nodes = topological(root)
    first: dict[int, int] = {}
    count = 0
    for node in nodes:
        first[id(node)] = count
        count += node.order
    parent = list(range(count))
    graph = AxisGraph(nodes, first, parent, [])
    anchors: dict[Dim, int] = {}

    def union(a: int, b: int) -> None:
        ra, rb = graph.find(a), graph.find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    def anchor(d: Dim | SliceDim) -> int:
        slot = anchors.get(d)
        if slot is None:
            slot = anchors[d] = len(parent)
            parent.append(slot)
            if type(d) is SliceDim:  # "x.0[1:]": derived from the axis it slices
                graph.derived.append((slot, anchor(d.base), (d.start, d.stop, d.step)))
            else:
                graph.var_slots.append((d.name, d.order, d.axis, slot))
        return slot

    for node in nodes:
        base = first[id(node)]
        for k, d in enumerate(node.dims):
            if type(d) is Dim or type(d) is SliceDim:
                union(base + k, anchor(d))
        op = node.op
        if op in ("add", "func"):
            for child in node.children:
                for k in range(node.order):
                    union(base + k, first[id(child)] + k)
        elif op == "pow":
            child = node.children[0]
            for k in range(node.order):
                union(base + k, first[id(child)] + k)
        elif op == "inv":
            c = first[id(node.children[0])]
            union(base, base + 1)
            union(base, c)
            union(base + 1, c + 1)
        elif op == "det":
            c = first[id(node.children[0])]
            union(c, c + 1)
        elif op == "delta":
            n = node.arg
            for k in range(n):
                union(base + k, base + n + k)
        elif op in ("slice", "embed"):
            # slice: the child's axes are the whole ones; embed: its own axes are
            items = node.arg if op == "slice" else node.arg[0]
            whole, part = (node.children[0], node) if op == "slice" else (node, node.children[0])
            w, p = first[id(whole)], first[id(part)]
            k = 0
            for axis, item in enumerate(items):
                if isinstance(item, int):
                    graph.indexed.append((w + axis, item, node))
                    continue
                if item == (0, None, 1):
                    union(p + k, w + axis)
                else:
                    graph.derived.append((p + k, w + axis, item))
                k += 1
        elif op == "mul":
            ins, out = node.arg
            letter_slot: dict[int, int] = {}
            for letter in sorted(set().union(*ins)):
                letter_slot[letter] = len(parent)
                parent.append(len(parent))
            for child, spec in zip(node.children, ins):
                c = first[id(child)]
                for k, letter in enumerate(spec):
                    union(letter_slot[letter], c + k)
            for k, letter in enumerate(out):
                union(base + k, letter_slot[letter])
            graph.letter_slots[id(node)] = letter_slot
    return graph


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
                start, stop, step = item
                text = f"{start}:{'' if stop is None else stop}" + ("" if step == 1 else f":{step}")
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
