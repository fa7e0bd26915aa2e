"""Rules for slices and embeddings: ``x[1:]`` and its pullback ``embed(p)[1:]``.

The two rules for products and sums here (:func:`mul_pull_embed`,
:func:`add_pull_embed`) come last in their kinds' lists: they act on
derivatives only.
"""

from __future__ import annotations

from ..core import nodes as N
from ..core.nodes import Expr
from .context import Context, Rule


def slice_simplify(node: Expr, ctx: Context) -> Expr | None:
    # x[:, :] -> x;  c[1:] -> c (a constant of the slice's shape);  embed(p, s)[s] -> p
    child = node.children[0]
    if all(item == N.FULL_AXIS for item in node.arg):
        return child
    if child.op == "const":
        return N.const(child.arg[0], node.order, node.dims)
    if child.op == "embed" and child.arg[0] == node.arg:
        return child.children[0]
    return None


def embed_simplify(node: Expr, ctx: Context) -> Expr | None:
    # embed(p, [:, :]) -> p;  embed(0, s) -> 0
    items, _ = node.arg
    child = node.children[0]
    if all(item == N.FULL_AXIS for item in items):
        return child
    if N.is_zero(child):
        return N.const(0, node.order, node.dims)
    return None


def slice_of_delta(node: Expr, ctx: Context) -> Expr | None:
    # delta(1)[:, 1:] -> embed(delta(1){x.0[1:]})[1:, :] : a shifted identity stays a delta
    child = node.children[0]
    if child.op != "delta" or child.arg != 1 or any(isinstance(i, int) for i in node.arg):
        return None
    full = [k for k, item in enumerate(node.arg) if item == N.FULL_AXIS]
    if len(full) != 1 or not N.is_known(child.dims[0]):
        return None
    cut = 1 - full[0]
    item = node.arg[cut]
    part = N.SliceDim(child.dims[0], *item)
    items = [N.FULL_AXIS, N.FULL_AXIS]
    items[full[0]] = item  # the identity's rows (or columns) sit at the sliced positions
    return N.embed(N.delta(1, (part,)), items, node.dims)


def _plain_embed(node: Expr) -> bool:
    return node.op == "embed" and not any(isinstance(i, int) for i in node.arg[0])


def mul_pull_embed(node: Expr, ctx: Context) -> Expr | None:
    # embed(p)[1:] *(i,i->i) v -> embed(p *(i,i->i) v[1:])[1:] : compute only the part
    ins, out = node.arg
    for k, (child, spec) in enumerate(zip(node.children, ins)):
        if not _plain_embed(child):
            continue
        items = child.arg[0]
        cut = {spec[a]: item for a, item in enumerate(items) if item != N.FULL_AXIS}
        if any(out.count(letter) != 1 or spec.count(letter) != 1 for letter in cut):
            continue
        others = [(c, s) for j, (c, s) in enumerate(zip(node.children, ins)) if j != k]
        if any(c.op == "delta" and set(s) & set(cut) for c, s in others):
            continue
        operands, specs = [], []
        for j, (c, s) in enumerate(zip(node.children, ins)):
            if j == k:
                operands.append(child.children[0])
            elif set(s) & set(cut) and c.order:
                if any(s.count(letter) != 1 for letter in cut if letter in s):
                    break
                operands.append(N.slice_(c, [cut.get(letter, N.FULL_AXIS) for letter in s]))
            else:
                operands.append(c)
            specs.append(s)
        else:
            inner = N.mul(operands, specs, out)
            return N.embed(inner, [cut.get(letter, N.FULL_AXIS) for letter in out], node.dims)
    return None


def add_pull_embed(node: Expr, ctx: Context) -> Expr | None:
    # c embed(p)[s] + d embed(q)[s] + r -> embed(c p + d q)[s] + r
    groups: dict[tuple, list[tuple[Expr, float]]] = {}
    rest: list[tuple[Expr, float]] = []
    for child, coef in zip(node.children, node.arg):
        if _plain_embed(child):
            groups.setdefault((child.arg, child.dims), []).append((child, coef))
        else:
            rest.append((child, coef))
    if not groups or (rest and all(len(g) == 1 for g in groups.values())):
        return None
    if not rest and len(groups) > 1 and all(len(g) == 1 for g in groups.values()):
        return None
    terms = list(rest)
    for members in groups.values():
        first = members[0][0]
        inner = N.add([m.children[0] for m, _ in members], [c for _, c in members])
        terms.append((N.embed(inner, first.arg[0], first.dims), 1))
    if len(terms) == 1:
        return terms[0][0]
    return N.add([t for t, _ in terms], [c for _, c in terms])


def embed_of_embed(node: Expr, ctx: Context) -> Expr | None:
    # embed(embed(p)[1:, :])[:, 1:] -> embed(p)[1:, 1:] when each axis is cut once
    child = node.children[0]
    if not _plain_embed(node) or not _plain_embed(child):
        return None
    outer, inner = node.arg[0], child.arg[0]
    if any(a != N.FULL_AXIS and b != N.FULL_AXIS for a, b in zip(outer, inner)):
        return None
    merged = [a if a != N.FULL_AXIS else b for a, b in zip(outer, inner)]
    return N.embed(child.children[0], merged, node.dims)


def _merged_items(outer: tuple, inner: tuple) -> list | None:
    """The items of ``embed(embed(p)[inner])[outer]`` as one embedding, or None when an axis is cut twice."""
    if any(a != N.FULL_AXIS and b != N.FULL_AXIS for a, b in zip(outer, inner)):
        return None
    return [a if a != N.FULL_AXIS else b for a, b in zip(outer, inner)]


def embed_of_embedded_sum(node: Expr, ctx: Context) -> Expr | None:
    # embed(c1 embed(p)[1:, :] + c2 embed(q)[:-1, :])[:, 1:] -> c1 embed(p)[1:, 1:] + c2 embed(q)[:-1, 1:]
    # (a sum of shifted blocks placed again: the blocks placed once, so a banded Hessian reads as its bands)
    if not _plain_embed(node):
        return None
    inner, scale = node.children[0], 1
    if inner.op == "add" and len(inner.children) == 1:
        inner, scale = inner.children[0], inner.arg[0]
    if inner.op != "add" or len(inner.children) < 2 or not all(_plain_embed(t) for t in inner.children):
        return None
    terms = []
    for term, c in zip(inner.children, inner.arg):
        items = _merged_items(node.arg[0], term.arg[0])
        if items is None:
            return None
        terms.append((N.embed(term.children[0], items, node.dims), c * scale))
    return N.add([t for t, _ in terms], [c for _, c in terms])


SLICE_RULES: list[Rule] = [slice_simplify, slice_of_delta]
EMBED_RULES: list[Rule] = [embed_simplify, embed_of_embed, embed_of_embedded_sum]
