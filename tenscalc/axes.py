"""Axis-length inference: which axes of a DAG must have equal lengths.

Orders are declared, lengths are not: they come from the arrays given at
evaluation.  Every axis of every node is a slot; a union-find joins slots that
must be equal (equal letters in a product, the operands of a sum, the two axes of
a square matrix ...).  Variables anchor their slots.

Nodes without variables (constants, deltas and what is built of them only) are
interned once but used at different shapes (``1`` under ``log`` and ``1`` as a
ones vector), so they get no slots shared between their uses: their shape is
taken at each use, and only the equalities they impose themselves (the paired
axes of a delta, the two axes of ``inv``) are carried to the use.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from .letters import LetterClasses
from .nodes import Expr, topological

Source = tuple[str, int, int]  # (variable name, variable order, axis)


@dataclass
class AxisGraph:
    """Union-find over the axis slots of one DAG (built once per root, cached)."""

    nodes: list[Expr]
    first_slot: dict[int, int]  # id(node) -> first slot of its axes
    parent: list[int]
    var_slots: list[tuple[str, int, int, int]]  # (name, order, axis, slot)
    # Nodes without variables (constants, deltas and what is built of them only)
    # are interned once but used at different shapes, so they are not unified
    # with their parents: their shape is taken at each use (see use_shape).
    variable_free: set[int] = field(default_factory=set)
    letter_slots: dict[int, dict[int, int]] = field(default_factory=dict)  # id(mul) -> letter -> slot
    equal_axes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # variable-free node -> equal axes

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

    def use_classes(self, parent: Expr, k: int) -> tuple[int, ...] | None:
        """Axis classes child ``k`` of ``parent`` has at that use (None: not fixed there)."""
        op = parent.op
        if op in ("add", "func", "inv") or (op == "pow" and k == 0):
            return self.classes(parent)
        if op == "pow":
            return ()
        if op == "mul":
            letters = self.letter_slots[id(parent)]
            return tuple(self.find(letters[letter]) for letter in parent.arg[0][k])
        return None


# A graph holds its root (``nodes[-1]``), so a weak-key cache would never drop an
# entry: every expression ever evaluated stayed alive.  A small LRU bounds what is
# kept instead (compiled functions hold their own graphs).  The lock makes it safe
# to share between threads; a graph is built outside it (two threads may both
# build one, the first stored wins).
GRAPH_CACHE_SIZE = 32
_graphs: OrderedDict[Expr, AxisGraph] = OrderedDict()
_graphs_lock = threading.Lock()


def axis_graph(root: Expr) -> AxisGraph:
    """The (cached) axis union-find of the DAG under ``root``."""
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

    def union(a: int, b: int) -> None:
        ra, rb = graph.find(a), graph.find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    free = graph.variable_free
    equal_axes = graph.equal_axes
    for node in nodes:
        if node.op != "var" and all(id(c) in free for c in node.children):
            free.add(id(node))
            equal_axes[id(node)] = _intrinsic_equalities(node, equal_axes)

    def bound(child: Expr) -> bool:
        return id(child) not in free

    for node in nodes:
        base = first[id(node)]
        op = node.op
        if id(node) in free and node is not root:
            continue  # shaped at each use instead
        if op == "var":
            name, order = node.arg
            graph.var_slots.extend((name, order, k, base + k) for k in range(order))
        elif op in ("add", "func"):
            for child in node.children:
                if bound(child):
                    for k in range(node.order):
                        union(base + k, first[id(child)] + k)
                else:
                    for a, b in equal_axes[id(child)]:
                        union(base + a, base + b)
        elif op == "pow":
            child = node.children[0]
            for k in range(node.order if bound(child) else 0):
                union(base + k, first[id(child)] + k)
        elif op == "inv":
            union(base, base + 1)
            if bound(node.children[0]):
                c = first[id(node.children[0])]
                union(base, c)
                union(base + 1, c + 1)
        elif op == "det":
            c = first[id(node.children[0])]
            union(c, c + 1)
        elif op == "delta":
            n = node.arg
            for k in range(n):
                union(base + k, base + n + k)
        elif op == "mul":
            ins, out = node.arg
            letter_slot: dict[int, int] = {}
            for letter in sorted(set().union(*ins)):
                letter_slot[letter] = len(parent)
                parent.append(len(parent))
            for child, spec in zip(node.children, ins):
                if bound(child):
                    c = first[id(child)]
                    for k, letter in enumerate(spec):
                        union(letter_slot[letter], c + k)
                else:
                    for a, b in equal_axes[id(child)]:
                        union(letter_slot[spec[a]], letter_slot[spec[b]])
            for k, letter in enumerate(out):
                union(base + k, letter_slot[letter])
            graph.letter_slots[id(node)] = letter_slot
    return graph


def _intrinsic_equalities(node: Expr, known: dict[int, list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """Pairs of axes of a variable-free node that have equal lengths at every use."""
    op = node.op
    if op == "delta":
        return [(t, node.arg + t) for t in range(node.arg)]
    if op in ("add", "func"):
        return sorted({pair for c in node.children for pair in known[id(c)]})
    if op == "pow":
        return known[id(node.children[0])]
    if op == "inv":
        return [(0, 1)]
    if op == "mul":
        ins, out = node.arg
        classes = LetterClasses()
        for child, spec in zip(node.children, ins):
            for a, b in known[id(child)]:
                classes.union(spec[a], spec[b])
        find = classes.find
        return [(a, b) for a in range(len(out)) for b in range(a + 1, len(out)) if find(out[a]) == find(out[b])]
    return []


def axis_sources(root: Expr) -> tuple[tuple[str, int, int] | None, ...]:
    """For every axis of ``root``, a variable axis with the same length, if any."""
    graph = axis_graph(root)
    by_class: dict[int, tuple[str, int, int]] = {}
    for name, order, axis, slot in graph.var_slots:
        by_class.setdefault(graph.find(slot), (name, order, axis))
    return tuple(by_class.get(c) for c in graph.classes(root))
