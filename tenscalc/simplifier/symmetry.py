"""Symmetric matrices and a canonical form of products up to operand order.

Two products that differ only in the order of equal operands (``X *(ij,ki->jk) X``
and ``X *(ij,jk->ki) X`` are both ``(X²)ᵀ``), or in how a symmetric matrix is read
(``inv(AAᵀ)ᵀ A`` is ``inv(AAᵀ) A``), are the same tensor; :func:`canonical_operands`
picks one spelling so that the sum rules merge them (``X'*X' + 2*(X'*X')`` ->
``3*(X'*X')``).

:func:`is_symmetric` knows the matrices that are symmetric whatever the data:
``X Xᵀ``, ``Xᵀ X``, ``Xᵀ S X`` with ``S`` symmetric (any product equal to its own
transpose), the identity, sums, inverses and elementwise functions of symmetric
matrices, and the variables the caller declares symmetric (``declare A 2
symmetric``, or ``psd``/``pd``): with those, a rewrite holds wherever the
declared matrices are symmetric.

>>> import tenscalc as tc
>>> from tenscalc.simplifier.symmetry import is_symmetric
>>> is_symmetric(tc.parse("A *(ij,kj->ik) A", {"A": 2}), frozenset())
True
>>> is_symmetric(tc.parse("A *(ij,jk->ik) A", {"A": 2}), frozenset())
False
>>> is_symmetric(tc.parse("inv(A)", {"A": 2}), frozenset({"A"}))
True
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Sequence

from ..core import nodes as N
from ..core.nodes import Expr

Operand = tuple[Expr, tuple[int, ...]]

#: the most spellings tried for one product (equal operands permuted, symmetric ones turned)
MAX_SPELLINGS = 256
#: how deep :func:`is_symmetric` looks through sums and products (deeper: "not known")
MAX_DEPTH = 40

_known: dict[frozenset[str], weakref.WeakKeyDictionary[Expr, bool]] = {}


def is_symmetric(node: Expr, declared: frozenset[str], depth: int = 0) -> bool:
    """Whether the matrix ``node`` equals its transpose wherever the ``declared`` variables are symmetric."""
    if node.order != 2:
        return False
    memo = _known.setdefault(declared, weakref.WeakKeyDictionary())
    found = memo.get(node)
    if found is None:
        found = _symmetric(node, declared, depth)
        if depth < MAX_DEPTH:  # a "no" cut short by the depth bound is not remembered
            memo[node] = found
    return found


def _symmetric(node: Expr, declared: frozenset[str], depth: int) -> bool:
    if depth >= MAX_DEPTH:
        return False
    op = node.op
    if op == "var":
        return node.arg[0] in declared
    if op == "delta":
        return True
    if op == "const":
        return node.dims[0] == node.dims[1]  # equal entries on a square of one length
    if op in ("add", "inv", "func"):  # S + T, inv(S), f(S) entry by entry
        return all(is_symmetric(c, declared, depth + 1) for c in node.children)
    if op == "pow":
        return is_symmetric(node.children[0], declared, depth + 1)
    if op == "mul":
        return _product_is_symmetric(node, declared, depth)
    return False


def _product_is_symmetric(node: Expr, declared: frozenset[str], depth: int) -> bool:
    """A product is symmetric when its transpose has the same canonical spelling."""
    ins, out = node.arg
    if len(out) != 2 or out[0] == out[1]:
        return False
    pairs = list(zip(node.children, ins))
    flipped = (out[1], out[0])
    # equal spellings map each axis of out[0] to the same axis of an equal operand (or across a
    # symmetric one), so the two axes have one length: no separate check of dimensions
    one = canonical_operands(pairs, out, declared, depth + 1)
    other = canonical_operands(pairs, flipped, declared, depth + 1)
    return one is not None and other is not None and _spelling(*one) == _spelling(*other)


def _spelling(pairs: Sequence[Operand], out: tuple[int, ...]) -> tuple:
    """The product's identity: operand digests and letters renumbered by first appearance."""
    ins, new_out = N.canonical_specs([s for _, s in pairs], out)
    return tuple(c.digest for c, _ in pairs), ins, new_out


def _read_as_rows(pair: Operand, out: tuple[int, ...], declared: frozenset[str], depth: int) -> Operand:
    """A symmetric matrix with one letter kept in ``out`` is read with that letter first:
    ``S *(ij,j->i) x`` (``S x``) rather than ``x *(i,ij->j) S`` (``Sᵀ x``), as a reader writes it."""
    child, spec = pair
    if len(spec) == 2 and spec[1] in out and spec[0] not in out and is_symmetric(child, declared, depth):
        return child, (spec[1], spec[0])
    return pair


def _free(pair: Operand, out: tuple[int, ...], declared: frozenset[str], depth: int) -> bool:
    """Whether a symmetric matrix operand may be read either way (both letters kept, or neither)."""
    child, spec = pair
    return (
        len(spec) == 2
        and spec[0] != spec[1]
        and (spec[0] in out) == (spec[1] in out)
        and child.op != "delta"
        and is_symmetric(child, declared, depth)
    )


def canonical_operands(
    pairs: Sequence[Operand], out: tuple[int, ...], declared: frozenset[str], depth: int = 0
) -> tuple[list[Operand], tuple[int, ...]] | None:
    """The operands in a canonical order (by digest; equal operands in the order that
    gives the smallest letters, symmetric matrices read the way that does), or None
    when there are too many spellings to try."""
    # a symmetric operand with one letter kept is read with that letter first (forced); one
    # with both or neither kept may be read either way (free): both are tried.  Both depend on
    # the operand's own letters only, so every spelling of one product tries the same set.
    ordered = [_read_as_rows(p, out, declared, depth) for p in sorted(pairs, key=lambda p: p[0].digest)]
    groups = [list(g) for _, g in itertools.groupby(ordered, key=lambda p: p[0])]
    free = [_free(p, out, declared, depth) for p in ordered]
    if not any(free) and len(groups) == len(ordered):
        return ordered, out  # distinct operands, none to turn: the digest order is the only spelling
    count = 2 ** sum(free)
    for group in groups:
        for n in range(2, len(group) + 1):
            count *= n
    if count > MAX_SPELLINGS:
        return None
    best: tuple | None = None
    best_pairs: list[Operand] = ordered
    for arrangement in itertools.product(*(itertools.permutations(g) for g in groups)):
        arranged = [p for group in arrangement for p in group]
        turnable = [k for k, p in enumerate(arranged) if _free(p, out, declared, depth)]
        for turns in itertools.product((False, True), repeat=len(turnable)):
            candidate = list(arranged)
            for k, turn in zip(turnable, turns):
                if turn:
                    child, spec = candidate[k]
                    candidate[k] = (child, (spec[1], spec[0]))
            key = _spelling(candidate, out)
            if best is None or key < best:
                best, best_pairs = key, candidate
    return best_pairs, out
