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
from collections.abc import Iterable
from dataclasses import dataclass

from .nodes import Expr, topological

Source = tuple[str, int, int]  # (variable name, variable order, axis)

# root -> candidate anchorings, newest first.  Interned nodes can be the derivative
# of several expressions (the Hessians of x.x and y.y are both 2 delta(1)), so a
# root may carry several; evaluation uses the newest whose variables are given.
_anchors: weakref.WeakKeyDictionary[Expr, list[tuple[Source | None, ...]]] = weakref.WeakKeyDictionary()
MAX_ANCHORINGS = 8


def anchor_axes(root: Expr, sources: tuple[Source | None, ...]) -> None:
    """Record that axis ``k`` of ``root`` has the length of ``sources[k]``."""
    if len(sources) != root.order:
        raise ValueError("one source per axis")
    if all(s is None for s in sources):
        return
    candidates = [c for c in _anchors.get(root, []) if c != sources]
    _anchors[root] = [sources] + candidates[: MAX_ANCHORINGS - 1]


def anchors_of(root: Expr) -> list[tuple[Source | None, ...]]:
    return list(_anchors.get(root, []))


def _choose_anchoring(root: Expr, available: Iterable[str] | None) -> tuple[Source | None, ...] | None:
    candidates = _anchors.get(root)
    if not candidates:
        return None
    if available is None:
        return candidates[0]
    names = set(available)
    for candidate in candidates:
        if all(s is None or s[0] in names for s in candidate):
            return candidate
    return None


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


_graphs: weakref.WeakKeyDictionary[Expr, dict] = weakref.WeakKeyDictionary()


def axis_graph(root: Expr, available: Iterable[str] | None = None) -> AxisGraph:
    """The (cached) axis union-find of the DAG under ``root``.

    It includes the newest anchoring of ``root`` whose variables are all among
    ``available`` (all anchorings qualify when ``available`` is None).
    """
    anchoring = _choose_anchoring(root, available)
    per_root = _graphs.get(root)
    if per_root is None:
        per_root = {}
        _graphs[root] = per_root
    graph = per_root.get(anchoring)
    if graph is None:
        graph = _build(root, anchoring)
        per_root[anchoring] = graph
    return graph


def _build(root: Expr, anchors: tuple[Source | None, ...] | None) -> AxisGraph:
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
