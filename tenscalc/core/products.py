"""The product algebra: the manipulations of n-ary einsum products that the
simplifier, the compiler's plan, the printers and the convexity rules share.

A product is ``factor * einsum(operands -> out)`` where every operand is a pair
``(node, letters)``.  The operations here are exact rewrites of that form:

* ``scale_parts`` recognises ``c X`` (a one-term sum),
  ``constant_value`` a tensor of equal entries (a constant) and
  ``is_power_zero`` a tensor of ones written ``x^0``;
* ``inline`` puts a product operand's own operands in its place, renaming
  the inner letters apart and uniting the inner output letters with the outer
  ones (``(A *(ij,j->i) x) *(i,i->) y`` -> ``A *(ij,j,i->) x y``);
* ``flatten`` inlines a whole tree of products and scalings at once;
* ``unite_delta_letters`` drops ``delta`` operands by uniting the letters
  they pair, and ``split_constants`` folds constant operands into the factor
  where another operand still carries their letters.

Letters are anything hashable and comparable (ints in the DAG, strings in the
printers); ``LetterClasses`` keeps which are equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from . import nodes as N
from .letters import LetterClasses
from .nodes import Expr

Letter = Any
Operand = tuple[Expr, tuple[Letter, ...]]


def operands(node: Expr) -> list[Operand]:
    """The operands of product ``node`` with their letters.

    >>> import tenscalc as tc
    >>> [(str(c), s) for c, s in operands(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}))]
    [('A', (0, 1)), ('x', (1,))]
    """
    return list(zip(node.children, node.arg[0]))


def rebuild(pairs: Sequence[Operand], out: Sequence[Letter]) -> Expr:
    """The product of ``pairs`` into ``out`` (letters renumbered by the factory)."""
    return N.mul([p[0] for p in pairs], [p[1] for p in pairs], tuple(out))


def scale_parts(node: Expr) -> tuple[Expr, int | float] | None:
    """``c X`` (a sum with one term) as ``(X, c)``; None for anything else."""
    if node.op == "add" and len(node.children) == 1:
        return node.children[0], node.arg[0]
    return None


def constant_value(node: Expr) -> int | float | None:
    """The value of every entry of a constant tensor; None when ``node`` is not one."""
    return node.arg[0] if node.op == "const" else None


def is_power_zero(node: Expr) -> bool:
    """``x^0``: a tensor of ones of ``x``'s shape (as a user may write it; derivatives
    carry axis lengths this way), whose value does not depend on ``x``.

    >>> import tenscalc as tc
    >>> is_power_zero(tc.parse("x^0", {"x": 1})), is_power_zero(tc.parse("x^2", {"x": 1}))
    (True, False)
    """
    return node.op == "pow" and constant_value(node.children[1]) == 0


def equal_entries_value(node: Expr) -> int | float | None:
    """The value of every entry of a tensor of equal entries: a constant, or ``x^0``
    (ones); None for anything else."""
    if is_power_zero(node):
        return 1.0
    return constant_value(node)


def inline(pairs: Sequence[Operand], k: int, out: Sequence[int]) -> tuple[list[Operand], tuple[int, ...]]:
    """Replace product operand ``k`` by its own operands (int letters).

    The outer letters keep their numbers, the inner ones get fresh numbers, and
    the inner output letters are united with the letters the outer product reads
    operand ``k`` with (a repeated inner output letter unites two outer letters).
    """
    child, spec = pairs[k]
    child_ins, child_out = child.arg
    used = set(out).union(*(s for _, s in pairs))
    fresh = max(used, default=-1) + 1
    classes = LetterClasses()
    child_map = {letter: fresh + letter for letter in set().union(*child_ins)}
    for position, letter in enumerate(child_out):
        classes.union(child_map[letter], spec[position])
    new_pairs: list[Operand] = []
    for j, (c, s) in enumerate(pairs):
        if j == k:
            for cc, cs in zip(child.children, child_ins):
                new_pairs.append((cc, tuple(classes.find(child_map[x]) for x in cs)))
        else:
            new_pairs.append((c, tuple(classes.find(x) for x in s)))
    return new_pairs, tuple(classes.find(x) for x in out)


def flatten(
    node: Expr,
    letters: Sequence[Hashable],
    should_inline: Callable[[Expr], bool] = lambda child: True,
    fresh: Iterator[int] | None = None,
) -> tuple[list[Operand], list[tuple[Hashable, Hashable]], int | float]:
    """The operands of a tree of products and scalings with the inner ones inlined.

    ``node`` is read with ``letters`` (one per axis).  Nested products for which
    ``should_inline`` holds and scalings ``c X`` are opened; their summed letters
    get fresh ints.  Returns ``(operands, equal, coefficient)``: ``equal`` lists
    pairs of letters that a repeated output letter of an inner product makes
    equal (a diagonal), ``coefficient`` the product of the scalings opened.

    >>> import tenscalc as tc
    >>> f = tc.parse("(A *(ij,j->i) x) *(i,i->i) y", {"A": 2, "x": 1, "y": 1})
    >>> [(str(c), s) for c, s in flatten(f, ("a",))[0]]
    [('A', ('a', 0)), ('x', (0,)), ('y', ('a',))]
    """
    counter = fresh if fresh is not None else itertools.count()
    factors: list[Operand] = []
    equal: list[tuple[Hashable, Hashable]] = []
    coefficient: int | float = 1
    stack: list[tuple[Expr, tuple]] = [(node, tuple(letters))]
    while stack:
        current, names = stack.pop()
        parts = scale_parts(current)
        if parts is not None and current is not node:
            coefficient *= parts[1]
            stack.append((parts[0], names))
            continue
        if current.op != "mul" or (current is not node and not should_inline(current)):
            factors.append((current, names))
            continue
        ins, out = current.arg
        mapping: dict[int, Hashable] = {}
        for position, letter in enumerate(out):
            if letter in mapping:
                if mapping[letter] != names[position]:
                    equal.append((mapping[letter], names[position]))
            else:
                mapping[letter] = names[position]
        for spec in ins:
            for letter in spec:
                if letter not in mapping:
                    mapping[letter] = next(counter)
        for child, spec in reversed(list(zip(current.children, ins))):
            stack.append((child, tuple(mapping[x] for x in spec)))
    return factors, equal, coefficient


def unite_delta(delta: Expr, spec: Sequence[Letter], classes: LetterClasses) -> None:
    """Absorb one ``delta(n)`` operand read with ``spec``: unite the letters it pairs."""
    n = delta.arg
    for t in range(n):
        classes.union(spec[t], spec[n + t])


def unite_delta_letters(pairs: Sequence[Operand], classes: LetterClasses) -> list[Operand]:
    """Drop the ``delta`` operands, uniting in ``classes`` the letters each pairs."""
    kept = []
    for child, spec in pairs:
        if child.op == "delta":
            unite_delta(child, spec, classes)
        else:
            kept.append((child, spec))
    return kept


def split_constants(pairs: Sequence[Operand]) -> tuple[int | float, list[Operand]]:
    """Fold constant operands whose letters another kept operand carries into a factor.

    A constant that alone gives the result an axis (``x *(i,j->ij) 1``) or a summed
    axis its length stays an operand.
    """
    factor: int | float = 1
    keep: list[Operand] = []
    for k, (child, spec) in enumerate(pairs):
        value = constant_value(child)
        if value is not None:
            elsewhere = set().union(*(s for _, s in keep), *(s for _, s in pairs[k + 1 :]))
            if set(spec) <= elsewhere and (keep or k + 1 < len(pairs)):
                factor *= value
                continue
        keep.append((child, spec))
    return factor, keep
