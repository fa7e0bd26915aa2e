"""Axis-length inference: which axes of a DAG must have equal lengths.

Orders are declared, lengths are not: they come from the arrays given at
evaluation.  Every axis of every node is a slot; a union-find joins slots that
must be equal (equal letters in a product, the operands of a sum, the two axes of
a square matrix, paired axes of a delta ...).  Variables anchor their slots.

A derivative ``D = d y / d x`` may lose every mention of ``x`` (the Hessian of
``x *(i,i->) x`` is ``2 delta(1)``), yet its trailing axes have ``x``'s shape.
:func:`anchor_axes` records such facts for a root in a side table so that
evaluation still knows the lengths; the nodes themselves stay immutable.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from .nodes import Expr, topological

# root -> per axis, the (variable name, variable order, axis) whose length it has
_anchors: weakref.WeakKeyDictionary[Expr, tuple[tuple[str, int, int] | None, ...]] = weakref.WeakKeyDictionary()


def anchor_axes(root: Expr, sources: tuple[tuple[str, int, int] | None, ...]) -> None:
    """Record that axis ``k`` of ``root`` has the length of ``sources[k]``."""
    if len(sources) != root.order:
        raise ValueError("one source per axis")
    old = _anchors.get(root)
    if old is not None:  # keep what was known, fill the gaps
        sources = tuple(o if o is not None else s for o, s in zip(old, sources))
    _anchors[root] = sources
    _graphs.pop(root, None)  # the cached union-find no longer knows everything


def anchors_of(root: Expr) -> tuple[tuple[str, int, int] | None, ...] | None:
    return _anchors.get(root)


@dataclass
class AxisGraph:
    """Union-find over the axis slots of one DAG (built once per root, cached)."""

    nodes: list[Expr]
    first_slot: dict[int, int]  # id(node) -> first slot of its axes
    parent: list[int]
    var_slots: list[tuple[str, int, int, int]]  # (name, order, axis, slot)

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


_graphs: weakref.WeakKeyDictionary[Expr, AxisGraph] = weakref.WeakKeyDictionary()


def axis_graph(root: Expr) -> AxisGraph:
    """The (cached) axis union-find of the DAG under ``root``, anchors included."""
    graph = _graphs.get(root)
    if graph is None:
        graph = _build(root)
        _graphs[root] = graph
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

    for node in nodes:
        base = first[id(node)]
        op = node.op
        if op == "var":
            name, order = node.arg
            graph.var_slots.extend((name, order, k, base + k) for k in range(order))
        elif op in ("add", "func"):
            for child in node.children:
                for k in range(node.order):
                    union(base + k, first[id(child)] + k)
        elif op == "pow":
            child = node.children[0]
            for k in range(node.order):
                union(base + k, first[id(child)] + k)
        elif op == "inv":
            c = first[id(node.children[0])]
            union(base, c)
            union(base + 1, c + 1)
            union(c, c + 1)
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
            for child, spec in zip(node.children, ins):
                c = first[id(child)]
                for k, letter in enumerate(spec):
                    if letter in letter_slot:
                        union(letter_slot[letter], c + k)
                    else:
                        letter_slot[letter] = c + k
            for k, letter in enumerate(out):
                union(base + k, letter_slot[letter])
    anchors = _anchors.get(root)
    if anchors:
        # anchored axes behave like an extra occurrence of the variable's axis
        for k, source in enumerate(anchors):
            if source is None:
                continue
            name, order, axis = source
            parent.append(len(parent))
            graph.var_slots.append((name, order, axis, len(parent) - 1))
            union(first[id(root)] + k, len(parent) - 1)
    return graph


def axis_sources(root: Expr) -> tuple[tuple[str, int, int] | None, ...]:
    """For every axis of ``root``, a variable axis with the same length, if any."""
    graph = axis_graph(root)
    by_class: dict[int, tuple[str, int, int]] = {}
    for name, order, axis, slot in graph.var_slots:
        by_class.setdefault(graph.find(slot), (name, order, axis))
    return tuple(by_class.get(c) for c in graph.classes(root))
