"""Simplification as data: rewrite rules per node kind, run to a fixed point.

Each rule is a function ``rule(node, ctx) -> Expr | None`` with a one-line
comment showing the rewrite.  Rule sets are lists (combine them with ``+``); the
driver rewrites bottom-up, memoised per node, and repeats whole passes until the
root no longer changes, raising if that does not happen within a bound (a rewrite
loop is a bug, never silently accepted).

What keeps derivatives small: deltas are absorbed into neighbouring products by
renaming letters, nested products are fused (when that cannot duplicate work),
factors 0 and 1 and terms 0 disappear, constants fold, identical summands merge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import nodes as N
from .axes import axis_graph, axis_sources
from .errors import TensCalcError
from .letters import LetterClasses
from .nodes import Expr, topological

Rule = Callable[[Expr, "Context"], "Expr | None"]

MAX_PASSES = 60
MAX_LOCAL_REWRITES = 200
# Fusing products (and flattening sums) without a bound turns a chain of n
# single-use products into products of n, n-1, ... operands: O(n^2) work.  Bounded
# fusion keeps simplification linear; 8 operands is also about where opt_einsum
# stops searching contraction paths exhaustively.
MAX_FUSED_OPERANDS = 8
MAX_FLATTENED_TERMS = 64


@dataclass
class Context:
    """What rules may know beyond the node: how many parents each node has."""

    uses: dict[int, int] = field(default_factory=dict)

    def single_use(self, node: Expr) -> bool:
        return self.uses.get(id(node), 0) <= 1


# ------------------------------------------------------------------------ products


def _operands(node: Expr) -> list[tuple[Expr, tuple[int, ...]]]:
    return list(zip(node.children, node.arg[0]))


def _rebuild(pairs: list[tuple[Expr, tuple[int, ...]]], out: tuple[int, ...]) -> Expr:
    return N.mul([p[0] for p in pairs], [p[1] for p in pairs], out)


def mul_zero(node: Expr, ctx: Context) -> Expr | None:
    # a *(..) 0 -> 0
    if any(N.is_zero(c) for c in node.children):
        return N.const(0, node.order)
    return None


def mul_identity(node: Expr, ctx: Context) -> Expr | None:
    # a *(ij,->ij) -> a ; delta(n) with its pairs permuted -> delta(n)
    if len(node.children) != 1:
        return None
    (child,), ((spec,), out) = node.children, node.arg
    if spec == out and len(set(spec)) == len(spec):
        return child
    if child.op == "delta" and len(set(spec)) == len(spec) and sorted(spec) == sorted(out):
        n = child.arg
        pairs = {frozenset((spec[t], spec[n + t])) for t in range(n)}
        if all(frozenset((out[t], out[n + t])) in pairs for t in range(n)):
            return child
    return None


def mul_pull_scale(node: Expr, ctx: Context) -> Expr | None:
    # a *(..) (c b) -> c (a *(..) b)
    factor = 1
    pairs = []
    changed = False
    for child, spec in _operands(node):
        if child.op == "add" and len(child.children) == 1:
            factor *= child.arg[0]
            pairs.append((child.children[0], spec))
            changed = True
        else:
            pairs.append((child, spec))
    if not changed:
        return None
    return N.scale(_rebuild(pairs, node.arg[1]), factor)


def mul_constants(node: Expr, ctx: Context) -> Expr | None:
    # a *(ij,->ij) 2 -> 2 a ; ones over letters found elsewhere -> dropped
    pairs = _operands(node)
    if len(pairs) < 2:
        return None
    factor = 1
    keep: list[tuple[Expr, tuple[int, ...]]] = []
    for k, (child, spec) in enumerate(pairs):
        if child.op == "const":
            # its letters stay bound (and summed) by the operands that remain
            elsewhere = set().union(*(s for _, s in keep), *(s for _, s in pairs[k + 1 :]))
            if set(spec) <= elsewhere and (keep or k + 1 < len(pairs)):
                factor *= child.arg[0]
                continue
        elif _is_ones_with_shape(child):
            # x^0 only binds axis lengths: redundant when other operands' variables bind them
            bound_letters = {
                s[p] for j, (c, s) in enumerate(pairs) if j != k and not _is_ones_with_shape(c) for p in _bound_axes(c)
            }
            if set(spec) <= bound_letters:
                continue
        keep.append((child, spec))
    if len(keep) == len(pairs) or not keep:
        return None
    inner = _rebuild(keep, node.arg[1])
    return inner if factor == 1 else N.scale(inner, factor)


def _bound_axes(node: Expr) -> set[int]:
    """Axes of ``node`` whose length a variable inside it fixes."""
    if not node.varset or node.order == 0:
        return set()
    graph = axis_graph(node)
    bound = {graph.find(slot) for *_, slot in graph.var_slots}
    return {p for p, cls in enumerate(graph.classes(node)) if cls in bound}


def _is_ones_with_shape(node: Expr) -> bool:
    """``b^0`` for a ``b`` with variables: a ones tensor that fixes axis lengths."""
    return node.op == "pow" and N.is_const(node.children[1], 0) and bool(node.children[0].variables)


def mul_all_constant(node: Expr, ctx: Context) -> Expr | None:
    # 2 *(,->) 3 -> 6 (only when no letter is summed and no diagonal is written)
    if not all(c.op == "const" for c in node.children):
        return None
    ins, out = node.arg
    letters = set().union(*ins)
    if letters != set(out) or len(set(out)) != len(out):
        return None
    value = 1
    for c in node.children:
        value *= c.arg[0]
    return N.const(value, node.order)


def mul_fuse(node: Expr, ctx: Context) -> Expr | None:
    # (a *(..) b) *(..) c -> a *(...) b *(...) c  (one n-ary product)
    pairs = _operands(node)
    for k, (child, _) in enumerate(pairs):
        if child.op != "mul":
            continue
        if _is_cheap(child):
            return _inline(pairs, k, node.arg[1])
        if not (ctx.single_use(child) or _has_delta(child)):
            continue
        if len(pairs) - 1 + len(child.children) > MAX_FUSED_OPERANDS:
            continue
        return _inline(pairs, k, node.arg[1])
    return None


def _has_delta(node: Expr) -> bool:
    return any(c.op == "delta" for c in node.children)


def _is_cheap(node: Expr) -> bool:
    # a product with at most one non-constant operand is a relabelling or scaling
    return sum(c.op != "const" for c in node.children) <= 1


def _inline(pairs, k: int, out: tuple[int, ...]) -> Expr:
    child, spec = pairs[k]
    child_ins, child_out = child.arg
    # letters of the parent keep their ids; the child's get fresh ones
    used = set(out).union(*(s for _, s in pairs))
    fresh = max(used, default=-1) + 1
    classes = LetterClasses()
    child_map = {letter: fresh + letter for letter in set().union(*child_ins)}
    for position, letter in enumerate(child_out):
        classes.union(child_map[letter], spec[position])
    new_pairs = []
    for j, (c, s) in enumerate(pairs):
        if j == k:
            for cc, cs in zip(child.children, child_ins):
                new_pairs.append((cc, tuple(classes.find(child_map[x]) for x in cs)))
        else:
            new_pairs.append((c, tuple(classes.find(x) for x in s)))
    return _rebuild(new_pairs, tuple(classes.find(x) for x in out))


def mul_absorb_delta(node: Expr, ctx: Context) -> Expr | None:
    # A *(ij,jk->ik) delta(1) -> A   (rename k to j and drop the delta)
    pairs = _operands(node)
    if len(pairs) < 2:
        return None
    ins, out = node.arg
    for k, (child, spec) in enumerate(pairs):
        if child.op != "delta":
            continue
        n = child.arg
        others = set().union(*(s for j, (c, s) in enumerate(pairs) if j != k))
        rename: dict[int, int] = {}
        kept_pairs = []
        for t in range(n):
            a, b = spec[t], spec[n + t]
            a, b = rename.get(a, a), rename.get(b, b)
            if a == b and a in others:
                rename.setdefault(a, a)  # delta_aa is 1 where another operand binds a
                continue
            if a != b and (a in others or b in others):
                keep, drop = (a, b) if a in others else (b, a)
                rename = {x: (keep if y == drop else y) for x, y in rename.items()}
                rename[drop] = keep
            else:
                kept_pairs.append((spec[t], spec[n + t]))
        if not rename:
            continue

        new_pairs = [(c, tuple(rename.get(x, x) for x in s)) for j, (c, s) in enumerate(pairs) if j != k]
        if kept_pairs:
            m = len(kept_pairs)
            rest = tuple(rename.get(a, a) for a, _ in kept_pairs) + tuple(rename.get(b, b) for _, b in kept_pairs)
            new_pairs.append((N.delta(m), rest))
        return _rebuild(new_pairs, tuple(rename.get(x, x) for x in out))
    return None


def mul_drop_delta0(node: Expr, ctx: Context) -> Expr | None:
    # a *(ij,->ij) delta(0) -> a
    pairs = _operands(node)
    if len(pairs) > 1 and any(c.op == "delta" and c.arg == 0 for c, _ in pairs):
        rest = [(c, s) for c, s in pairs if not (c.op == "delta" and c.arg == 0)]
        return _rebuild(rest, node.arg[1]) if rest else N.const(1, node.order)
    return None


def mul_sort_operands(node: Expr, ctx: Context) -> Expr | None:
    # b *(j,ij->i) A -> A *(ij,j->i) b  (a canonical operand order lets equal products merge)
    pairs = _operands(node)
    ordered = sorted(pairs, key=lambda p: p[0].digest)
    if [id(p[0]) for p in ordered] == [id(p[0]) for p in pairs]:
        return None
    return _rebuild(ordered, node.arg[1])


def _power_parts(node: Expr) -> tuple[Expr, int | float]:
    """``b^c`` with a constant ``c`` as ``(b, c)``, anything else as ``(node, 1)``."""
    if node.op == "pow" and node.children[1].op == "const":
        return node.children[0], node.children[1].arg[0]
    return node, 1


def mul_merge_powers(node: Expr, ctx: Context) -> Expr | None:
    # det(X)^(-1) *(,->) det(X) -> det(X)^0 -> 1 ;  x *(i,i->i) x^2 -> x^3
    pairs = _operands(node)
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for k, (child, spec) in enumerate(pairs):
        if len(set(spec)) != len(spec):
            continue
        base, _ = _power_parts(child)
        if base.op == "const":
            continue
        groups.setdefault((id(base), spec), []).append(k)
    for members in groups.values():
        if len(members) < 2:
            continue
        base = _power_parts(pairs[members[0]][0])[0]
        exponent = sum(_power_parts(pairs[k][0])[1] for k in members)
        merged = N.power(base, N.const(exponent, 0))
        rest = [p for k, p in enumerate(pairs) if k not in members[1:]]
        rest[members[0]] = (merged, pairs[members[0]][1])
        return _rebuild(rest, node.arg[1])
    return None


MUL_RULES: list[Rule] = [
    mul_zero,
    mul_drop_delta0,
    mul_pull_scale,
    mul_fuse,
    mul_absorb_delta,
    mul_merge_powers,
    mul_constants,
    mul_all_constant,
    mul_identity,
    mul_sort_operands,
]


# ---------------------------------------------------------------------------- sums


def add_simplify_terms(node: Expr, ctx: Context) -> Expr | None:
    # x + 0 -> x ; x + x -> 2 x ; 2 + 3 -> 5 ; (a + b) + c -> a + b + c (single use)
    merged: dict[int, list] = {}
    order: list[int] = []
    constant = 0
    constant_terms = 0
    changed = False
    has_variables = any(map(_is_ones_with_shape, node.children)) and any(
        len(_bound_axes(c)) == node.order and not _is_ones_with_shape(c) for c in node.children
    )
    for child, coef in zip(node.children, node.arg):
        if has_variables and _is_ones_with_shape(child):
            child = N.const(1, node.order)  # a sibling with variables fixes the shape
            changed = True
        terms = [(child, coef)]
        if (
            child.op == "add"
            and ctx.single_use(child)
            and len(node.children) + len(child.children) <= MAX_FLATTENED_TERMS
        ):
            terms = [(c, coef * k) for c, k in zip(child.children, child.arg)]
            changed = True
        for c, k in terms:
            if c.op == "const":
                constant += k * c.arg[0]
                constant_terms += 1
                changed = changed or c.arg[0] == 0 or constant_terms > 1  # a zero, or constants to fold
                continue
            if id(c) in merged:
                merged[id(c)][1] += k
                changed = True
            else:
                merged[id(c)] = [c, k]
                order.append(id(c))
    has_constant_child = any(c.op == "const" and c.arg[0] != 0 for c in node.children)
    if not changed and not any(merged[i][1] == 0 for i in order):
        return None
    children = [merged[i][0] for i in order if merged[i][1] != 0]
    coefs = [merged[i][1] for i in order if merged[i][1] != 0]
    if constant != 0 or (has_constant_child and not children):
        children.append(N.const(constant, node.order))
        coefs.append(1)
    if not children:
        return N.const(0, node.order)
    result = N.add(children, coefs)
    return None if result is node else result


def add_scale_constant(node: Expr, ctx: Context) -> Expr | None:
    # 3 (2) -> 6 : a scaled constant is a constant
    if len(node.children) == 1 and node.children[0].op == "const":
        return N.const(node.arg[0] * node.children[0].arg[0], node.order)
    return None


def _positional_operands(term: Expr) -> dict[tuple[int, tuple[int, ...]], int] | None:
    """Operands of a product whose letters are all distinct output letters, keyed
    by (node id, output positions); None when the output writes a diagonal."""
    ins, out = term.arg
    if len(set(out)) != len(out):
        return None
    found = {}
    for k, (child, spec) in enumerate(zip(term.children, ins)):
        if child.op == "const" or len(set(spec)) != len(spec) or not set(spec) <= set(out):
            continue
        found.setdefault((id(child), tuple(out.index(letter) for letter in spec)), k)
    return found


def add_factor_common(node: Expr, ctx: Context) -> Expr | None:
    # a *(i,ij->ij) X - b *(i,ij->ij) X -> (a - b) *(i,ij->ij) X   (distributive law)
    terms = node.children
    if len(terms) < 2 or any(t.op != "mul" for t in terms):
        return None
    keyed = [_positional_operands(t) for t in terms]
    if any(k is None for k in keyed):
        return None
    common = set(keyed[0]).intersection(*keyed[1:])
    # ties broken by the factor's digest, never by id(): the result must not depend
    # on what the process built before
    digests = {id(c): c.digest for c in terms[0].children}
    for key in sorted(common, key=lambda key: (-len(key[1]), key[1], digests[key[0]])):
        rests, rest_positions = [], None
        for term, keys in zip(terms, keyed):
            ins, out = term.arg
            skip = keys[key]
            remaining = [(c, s) for j, (c, s) in enumerate(zip(term.children, ins)) if j != skip]
            if not remaining:
                break
            letters = set().union(*(s for _, s in remaining))
            positions = tuple(p for p, letter in enumerate(out) if letter in letters)
            if rest_positions is None:
                rest_positions = positions
            elif positions != rest_positions:
                break
            rests.append(_rebuild(remaining, tuple(out[p] for p in positions)))
        else:
            shared = next(c for c in terms[0].children if id(c) == key[0])
            total = N.add(rests, node.arg)
            return N.mul((shared, total), (key[1], rest_positions), tuple(range(node.order)))
    return None


ADD_RULES: list[Rule] = [add_scale_constant, add_simplify_terms, add_factor_common]


# ----------------------------------------------------------- functions and powers

_NUMERIC = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "arcsin": math.asin, "arccos": math.acos,
    "arctan": math.atan, "tanh": math.tanh, "exp": math.exp, "log": math.log, "abs": abs,
    "sign": lambda v: float(np.sign(v)), "relu": lambda v: max(v, 0.0),
}


_EXACT_FUNCTIONS = ("abs", "sign", "relu")


def func_constant(node: Expr, ctx: Context) -> Expr | None:
    # exp(0) -> 1 ; abs(-2) -> 2 : functions of constants fold when the result is exact
    # (log(2) stays log(2): a rounded float would make derivatives inexact)
    child = node.children[0]
    if child.op != "const":
        return None
    try:
        value = _NUMERIC[node.arg](child.arg[0])
    except (ValueError, OverflowError):
        return None
    if not math.isfinite(value):
        return None
    if node.arg not in _EXACT_FUNCTIONS and not float(value).is_integer():
        return None
    if float(value).is_integer() and isinstance(child.arg[0], int):
        value = int(value)
    return N.const(value, node.order)


def pow_simplify(node: Expr, ctx: Context) -> Expr | None:
    # x^1 -> x ; x^0 -> 1 ; 2^3 -> 8
    base, exponent = node.children
    if exponent.op != "const":
        return None
    e = exponent.arg[0]
    if e == 1:
        return base
    if e == 0 and not base.variables:
        return N.const(1, node.order)
    if base.op == "const":
        if not _power_fits(base.arg[0], e):
            return None  # 2^2824331246 would take seconds to compute and fit no float
        try:
            value = base.arg[0] ** e
        except (ZeroDivisionError, OverflowError):
            return None
        if isinstance(value, complex) or not math.isfinite(value):
            return None
        return N.const(value, node.order)
    return None


def _power_fits(base: float, exponent: float) -> bool:
    """Whether ``base ** exponent`` is within float64's range (checked before computing it)."""
    if base in (0, 1, -1) or exponent <= 0:
        return base != 0 or exponent >= 0
    try:
        return exponent * math.log2(abs(base)) < 1020
    except (OverflowError, ValueError):
        return False


FUNC_RULES: list[Rule] = [func_constant]
POW_RULES: list[Rule] = [pow_simplify]

RULES: dict[str, list[Rule]] = {
    "var": [],
    "const": [],
    "delta": [],
    "add": ADD_RULES,
    "mul": MUL_RULES,
    "func": FUNC_RULES,
    "pow": POW_RULES,
    "inv": [],
    "det": [],
}


# --------------------------------------------------------------------------- driver


def simplify(root: Expr, rules: dict[str, list[Rule]] | None = None) -> Expr:
    """Rewrite ``root`` with the rule sets until nothing changes.

    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> str(tc.simplify(x + x - 0))
    '2 *(,i->i) x'
    """
    from .checks import require_expr

    require_expr(root, "simplify")
    table = RULES if rules is None else rules
    sources = axis_sources(root)  # rules may drop what fixed a length: bind it again
    for _ in range(MAX_PASSES):
        new_root = _one_pass(root, table)
        if new_root is root:
            bound = bind_free_axes(root, sources)
            if bound is root or root.op == "const":  # a bound constant is as simple as it gets
                return bound
            new_root = bound  # simplify the bound form too, so simplify is idempotent
        root = new_root
    raise TensCalcError(f"simplification did not reach a fixed point within {MAX_PASSES} passes (a rule loop)")


def _one_pass(root: Expr, table: dict[str, list[Rule]]) -> Expr:
    nodes = topological(root)
    ctx = Context()
    for node in nodes:
        for child in node.children:
            ctx.uses[id(child)] = ctx.uses.get(id(child), 0) + 1
    mapped: dict[int, Expr] = {}
    for node in nodes:
        children = tuple(mapped[id(c)] for c in node.children)
        current = node
        if any(a is not b for a, b in zip(children, node.children)):
            current = N.make(node.op, children, node.arg)
            for old, new in zip(node.children, children):
                if old is not new:
                    ctx.uses[id(new)] = ctx.uses.get(id(new), 0) + ctx.uses.get(id(old), 0)
        current = _rewrite_locally(current, table, ctx)
        mapped[id(node)] = current
    return mapped[id(root)]


def _overflowed(node: Expr) -> bool:
    """Whether ``node`` or a direct child is a constant (or coefficient) that is not finite."""
    if node.op == "const":
        return not math.isfinite(node.arg[0])
    if node.op == "add" and not all(math.isfinite(c) for c in node.arg):
        return True
    return any(c.op == "const" and not math.isfinite(c.arg[0]) for c in node.children)


def _rewrite_locally(node: Expr, table: dict[str, list[Rule]], ctx: Context) -> Expr:
    for _ in range(MAX_LOCAL_REWRITES):
        for rule in table.get(node.op, ()):
            replacement = rule(node, ctx)
            if replacement is not None and replacement is not node:
                if _overflowed(replacement) and not _overflowed(node):
                    continue  # folding overflowed to inf, which has no spelling: keep the unfolded form
                if replacement.order != node.order:
                    raise AssertionError(f"rule {rule.__name__} changed the order of a node")
                node = replacement
                break
        else:
            return node
    raise TensCalcError("simplification of one node did not terminate (a rule loop)")


def bind_free_axes(result: Expr, sources: tuple) -> Expr:
    """Make every axis length of ``result`` follow from a variable it contains.

    A derivative can lose every mention of the variables that fix its shape (the
    Hessian of ``x *(i,i->) x`` is ``2 delta(1)``).  For each axis whose length no
    variable fixes, multiply by a ones tensor written with the variable that has
    that length: ``x^0``, or ``(v *(ijk,->j) 1)^0`` for one axis of ``v``.  It
    costs O(size of the variable), keeps the result an ordinary expression that
    prints, re-parses and evaluates on its own, and the simplifier keeps it.
    """
    graph = axis_graph(result)
    bound = {graph.find(slot) for *_, slot in graph.var_slots}
    classes = graph.classes(result)
    wanted: dict[tuple[str, int], list[tuple[int, int]]] = {}  # variable -> (its axis, result axis)
    seen: set[int] = set()
    for position, (cls, source) in enumerate(zip(classes, sources)):
        if cls in bound or cls in seen or source is None:
            continue
        seen.add(cls)
        name, order, axis = source
        wanted.setdefault((name, order), []).append((axis, position))
    if not wanted:
        return result
    factors: list[tuple[Expr, tuple[int, ...]]] = []
    for (name, order), pairs in wanted.items():
        variable = N.var(name, order)
        axes = [axis for axis, _ in pairs]
        if sorted(axes) == list(range(order)):  # all of v's axes: one v^0
            by_axis = dict(pairs)
            factors.append((N.power(variable, N.const(0, 0)), tuple(by_axis[a] for a in range(order))))
            continue
        for axis, position in pairs:  # one axis of v: (v summed over the others)^0
            picked = variable if order == 1 else N.mul((variable,), (tuple(range(order)),), (axis,))
            factors.append((N.power(picked, N.const(0, 0)), (position,)))
    operands = [f for f, _ in factors]
    specs = [spec for _, spec in factors]
    if result.op == "const" and set().union(*specs) == set(range(result.order)):
        if len(operands) == 1 and specs[0] == tuple(range(result.order)):
            ones = operands[0]
        else:
            ones = N.mul(operands, specs, tuple(range(result.order)))
        return ones if result.arg[0] == 1 else N.scale(ones, result.arg[0])
    operands.insert(0, result)
    specs.insert(0, tuple(range(result.order)))
    return N.mul(operands, specs, tuple(range(result.order)))
