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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core import nodes as N
from ..core import products as P
from ..core.nodes import Expr, topological
from ..errors import TensCalcError

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


_operands = P.operands
_rebuild = P.rebuild


def mul_zero(node: Expr, ctx: Context) -> Expr | None:
    # a *(..) 0 -> 0
    if any(N.is_zero(c) for c in node.children):
        return N.const_like(0, node)
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
        parts = P.scale_parts(child)
        if parts is not None:
            factor *= parts[1]
            pairs.append((parts[0], spec))
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
    factor, keep = P.split_constants(pairs)
    if len(keep) == len(pairs) or not keep:
        return None
    inner = _rebuild(keep, node.arg[1])
    return inner if factor == 1 else N.scale(inner, factor)


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
    return N.const_like(value, node)


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
    return _rebuild(*P.inline(pairs, k, out))


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
                kept_pairs.append((spec[t], spec[n + t], child.dims[t]))
        if not rename:
            continue

        new_pairs = [(c, tuple(rename.get(x, x) for x in s)) for j, (c, s) in enumerate(pairs) if j != k]
        if kept_pairs:
            m = len(kept_pairs)
            rest = tuple(rename.get(a, a) for a, _, _ in kept_pairs) + tuple(rename.get(b, b) for _, b, _ in kept_pairs)
            new_pairs.append((N.delta(m, tuple(d for _, _, d in kept_pairs)), rest))
        return _rebuild(new_pairs, tuple(rename.get(x, x) for x in out))
    return None


def mul_drop_delta0(node: Expr, ctx: Context) -> Expr | None:
    # a *(ij,->ij) delta(0) -> a
    pairs = _operands(node)
    if len(pairs) > 1 and any(c.op == "delta" and c.arg == 0 for c, _ in pairs):
        rest = [(c, s) for c, s in pairs if not (c.op == "delta" and c.arg == 0)]
        return _rebuild(rest, node.arg[1]) if rest else N.const_like(1, node)
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


def mul_ones_on_diagonal(node: Expr, ctx: Context) -> Expr | None:
    # 1{X.1} *(i,->ii) 1 -> delta(1){X.1} : ones written on a diagonal are the identity
    ins, out = node.arg
    if not all(c.op == "const" for c in node.children) or not out:
        return None
    counts = {letter: out.count(letter) for letter in out}
    if any(k != 2 for k in counts.values()) or set().union(*ins) != set(counts):
        return None  # a letter summed or written other than twice: not an identity
    value = 1
    for c in node.children:
        value *= c.arg[0]
    if value == 0:
        return None  # mul_zero's job
    pairs = tuple(dict.fromkeys(out))
    n = len(pairs)
    identity = N.delta(n, tuple(node.dims[out.index(letter)] for letter in pairs))
    if out != pairs + pairs:  # the same identity with its axes in the order of `out`
        seen: set[int] = set()
        positions = []  # delta axis t for the first occurrence of pair t, n + t for the second
        for letter in out:
            t = pairs.index(letter)
            positions.append(n + t if letter in seen else t)
            seen.add(letter)
        identity = N.mul((identity,), (tuple(range(2 * n)),), tuple(positions))
    return identity if value == 1 else N.scale(identity, value)
def mul_distribute_power(node: Expr, ctx: Context) -> Expr | None:
    # q^-2 ⊙ p^2 ⊙ (p ⊙ q^-1)^-1 -> q^-2 ⊙ p^2 ⊙ p^-1 ⊙ q   (then powers merge: -p/q in KL)
    pairs = _operands(node)
    bases = {id(_power_parts(child)[0]) for child, _ in pairs}
    for k, (child, spec) in enumerate(pairs):
        power = _const_power(child)
        if power is None or power[1] != int(power[1]) or power[0].op != "mul":
            continue
        parts = _embedded(power[0])
        if parts is None or parts[1] != parts[2] or parts[3] != 1 or power[0].order != len(spec):
            continue
        factors = parts[0]
        if not any(id(_power_parts(f)[0]) in bases for f in factors):
            continue  # nothing to merge with: distributing would only add nodes
        exponent = N.const(power[1], 0)
        inner = [(N.power(f, exponent), spec) for f in factors]
        return _rebuild(pairs[:k] + inner + pairs[k + 1 :], node.arg[1])
    return None


def mul_sign_times_self(node: Expr, ctx: Context) -> Expr | None:
    # sign(a) ⊙ a -> |a|   (then |a| ⊙ |a|^-1 merges to 1: ln|det X|'s Hessian)
    pairs = _operands(node)
    for k, (child, spec) in enumerate(pairs):
        if child.op != "func" or child.arg != "sign":
            continue
        inner = child.children[0]
        for m, (other, other_spec) in enumerate(pairs):
            if m != k and other is inner and other_spec == spec:
                rest = [p for n, p in enumerate(pairs) if n not in (k, m)]
                rest.append((N.func("abs", inner), spec))
                return _rebuild(rest, node.arg[1])
    return None


def _carries_delta(node: Expr) -> bool:
    """``node`` is a delta, a product with a delta operand, or a scale of one (one level only)."""
    if node.op == "add" and len(node.children) == 1:
        node = node.children[0]
    return node.op == "delta" or (node.op == "mul" and _has_delta(node))


def mul_distribute_delta_sum(node: Expr, ctx: Context) -> Expr | None:
    # (δ ⊗ A - δ' ⊗ B) *(..) C -> δ ⊗ A *(..) C - δ' ⊗ B *(..) C, when every delta is then absorbed
    pairs = _operands(node)
    for k, (child, spec) in enumerate(pairs):
        if child.op != "add" or not ctx.single_use(child) or len(child.children) > 4:
            continue
        if not any(_carries_delta(t) for t in child.children):
            continue
        # each new product is rewritten on its own (fusion, delta absorption), nothing deeper
        local = {"mul": [r for r in MUL_RULES if r is not mul_distribute_delta_sum], "add": ADD_RULES}
        terms = [
            _rewrite_locally(_rebuild(pairs[:k] + [(t, spec)] + pairs[k + 1 :], node.arg[1]), local, ctx)
            for t in child.children
        ]
        carriers = {id(_unscaled(t)) for t in child.children if _carries_delta(t)}
        if any(_keeps_delta(t, carriers) for t in terms):
            # a delta between free axes stays: distributing would only grow the DAG, and
            # add_factor_common would factor the same operands back out (a rule loop)
            continue
        return N.add(terms, child.arg)
    return None


def _unscaled(node: Expr) -> Expr:
    """``X`` for a scale ``c X`` (a one-term sum), else ``node``."""
    parts = P.scale_parts(node)
    return node if parts is None else parts[0]


def _keeps_delta(term: Expr, carriers: set[int]) -> bool:
    """Whether a distributed term still holds a delta: as an operand, or inside one of
    the sum's delta-carrying terms that was not fused into it (fusion is bounded by
    MAX_FUSED_OPERANDS), or so in one of its summands."""
    if term.op == "add" and len(term.children) > 1:
        return any(_keeps_delta(t, carriers) for t in term.children)
    if _carries_delta(term):
        return True
    inner = _unscaled(term)
    return inner.op == "mul" and any(id(_unscaled(c)) in carriers for c in inner.children)


def mul_cancel_inverse(node: Expr, ctx: Context) -> Expr | None:
    # inv(A) *(ij,jk->ik) A -> delta(1) ; A *(ij,jk->ik) inv(A) -> delta(1)
    pairs = _operands(node)
    out = node.arg[1]
    uses: dict[int, int] = {}
    for _, spec in pairs:
        for letter in spec:
            uses[letter] = uses.get(letter, 0) + 1
    for k, (inverse, (i1, i2)) in ((k, p) for k, p in enumerate(pairs) if p[0].op == "inv"):
        if i1 == i2:
            continue
        for m, (matrix, spec) in enumerate(pairs):
            if m == k or matrix is not inverse.children[0] or len(spec) != 2 or spec[0] == spec[1]:
                continue
            a1, a2 = spec
            for summed, keep, axis in (((i2, a1), (i1, a2), 1), ((a2, i1), (a1, i2), 0)):
                letter = summed[0]
                if summed[0] == summed[1] and uses[letter] == 2 and letter not in out and keep[0] != keep[1]:
                    rest = [p for n, p in enumerate(pairs) if n not in (k, m)]
                    rest.append((N.delta(1, (matrix.dims[axis],)), keep))  # the identity on the matrix's axis
                    return _rebuild(rest, out)
    return None


MUL_RULES: list[Rule] = [
    mul_zero,
    mul_drop_delta0,
    mul_pull_scale,
    mul_fuse,
    mul_absorb_delta,
    mul_cancel_inverse,
    mul_distribute_delta_sum,
    mul_sign_times_self,
    mul_distribute_power,
    mul_merge_powers,
    mul_constants,
    mul_all_constant,
    mul_ones_on_diagonal,
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
    for child, coef in zip(node.children, node.arg):
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
        children.append(N.const_like(constant, node))
        coefs.append(1)
    if not children:
        return N.const_like(0, node)
    result = N.add(children, coefs)
    return None if result is node else result


def add_scale_constant(node: Expr, ctx: Context) -> Expr | None:
    # 3 (2) -> 6 : a scaled constant is a constant
    if len(node.children) == 1 and node.children[0].op == "const":
        return N.const_like(node.arg[0] * node.children[0].arg[0], node)
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


def _embedded(term: Expr) -> tuple[list[Expr], tuple[int, ...], tuple[int, ...], int | float] | None:
    """A term as ``scale * (f1 ⊙ f2 ...)`` laid out by one spec: ``(factors, s, out, scale)``.

    ``e ⊙ q`` is ``([e, q], s, s, 1)``; ``q *(i,->ii) 1`` (``diag(q)``) is
    ``([q], (i,), (i, i), 1)``; any other node is itself, laid out as it is.
    """
    if term.op != "mul":
        letters = tuple(range(term.order))
        return [term], letters, letters, 1
    ins, out = term.arg
    factors, specs, scale = [], set(), 1
    for child, spec in zip(term.children, ins):
        if child.op == "const" and not spec:
            scale *= child.arg[0]
            continue
        factors.append(child)
        specs.add(spec)
    if len(specs) != 1:
        return None
    (spec,) = specs
    if len(set(spec)) != len(spec):
        return None
    return factors, spec, out, scale


def _const_power(node: Expr) -> tuple[Expr, int | float] | None:
    """``b^c`` with a constant ``c`` as ``(b, c)``."""
    if node.op == "pow" and node.children[1].op == "const":
        return node.children[0], node.children[1].arg[0]
    return None


def add_cancel_over_square(node: Expr, ctx: Context) -> Expr | None:
    # c1 u ⊙ q^-2 + c2 q^-1 with q = a u + b k, c1 + a c2 = 0  ->  c2 b k q^-2   (σ(1-σ): e/(e+1)^2)
    terms = [(t, c, _embedded(t)) for t, c in zip(node.children, node.arg)]
    for i, (_, c1, parts_i) in enumerate(terms):
        if parts_i is None or len(parts_i[0]) != 2:
            continue
        factors, spec, out, scale1 = parts_i
        for slot in (0, 1):
            square, u = factors[slot], factors[1 - slot]
            power = _const_power(square)
            if power is None or power[1] != -2 or power[0].op != "add" or len(power[0].children) != 2:
                continue
            q = power[0]
            (x, a), (k, b) = sorted(zip(q.children, q.arg), key=lambda p: p[0].op == "const")
            if x is not u or k.op != "const" or k.arg[1] != q.order:
                continue
            for j, (_, c2, parts_j) in enumerate(terms):
                if j == i or parts_j is None or len(parts_j[0]) != 1 or parts_j[1:3] != (spec, out):
                    continue
                if _const_power(parts_j[0][0]) != (q, -1) or c1 * scale1 + a * c2 * parts_j[3] != 0:
                    continue
                if spec == out:
                    merged = square
                else:
                    merged = N.mul([square, N.const(1, 0)], [spec, ()], out)
                rest = [(t, c) for n, (t, c, _) in enumerate(terms) if n not in (i, j)]
                rest.append((merged, c2 * parts_j[3] * b * k.arg[0]))
                return N.add([t for t, _ in rest], [c for _, c in rest])
    return None


ADD_RULES: list[Rule] = [add_scale_constant, add_simplify_terms, add_factor_common, add_cancel_over_square]


# ----------------------------------------------------------- functions and powers

_NUMERIC = {
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "arcsin": math.asin,
    "arccos": math.acos,
    "arctan": math.atan,
    "tanh": math.tanh,
    "exp": math.exp,
    "log": math.log,
    "abs": abs,
    "sign": lambda v: float(np.sign(v)),
    "relu": lambda v: max(v, 0.0),
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
    return N.const_like(value, node)


def pow_simplify(node: Expr, ctx: Context) -> Expr | None:
    # x^1 -> x ; x^0 -> 1 ; 2^3 -> 8
    base, exponent = node.children
    if exponent.op != "const":
        return None
    e = exponent.arg[0]
    if e == 1:
        return base
    if e == 0:  # the node keeps base's dimensions, so nothing about its shape is lost
        return N.const_like(1, node)
    if base.op == "const":
        if not _power_fits(base.arg[0], e):
            return None  # 2^2824331246 would take seconds to compute and fit no float
        try:
            value = base.arg[0] ** e
        except (ZeroDivisionError, OverflowError):
            return None
        if isinstance(value, complex) or not math.isfinite(value):
            return None
        return N.const_like(value, node)
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
def pow_of_pow(node: Expr, ctx: Context) -> Expr | None:
    # (b^a)^c -> b^(a c) for an integer c ((b^2)^0.5 is |b|, so never for a fractional c)
    outer = _const_power(node)
    inner = None if outer is None else _const_power(outer[0])
    if inner is None or outer[1] != int(outer[1]):
        return None
    return N.power(inner[0], N.const(N.normalize_number(inner[1] * outer[1]), 0))


POW_RULES: list[Rule] = [pow_simplify, pow_of_pow]

def inv_of_inv(node: Expr, ctx: Context) -> Expr | None:
    # inv(inv(X)) -> X
    (child,) = node.children
    return child.children[0] if child.op == "inv" else None


INV_RULES: list[Rule] = [inv_of_inv]

# ------------------------------------------------------------------ slices


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


MUL_RULES.append(mul_pull_embed)  # the slice rules come last: they act on derivatives only
ADD_RULES.append(add_pull_embed)
SLICE_RULES: list[Rule] = [slice_simplify, slice_of_delta]
EMBED_RULES: list[Rule] = [embed_simplify, embed_of_embed]

RULES: dict[str, list[Rule]] = {
    "var": [],
    "const": [],
    "delta": [],
    "add": ADD_RULES,
    "mul": MUL_RULES,
    "func": FUNC_RULES,
    "pow": POW_RULES,
    "inv": INV_RULES,
    "det": [],
    "slice": SLICE_RULES,
    "embed": EMBED_RULES,
}


# --------------------------------------------------------------------------- driver


def simplify(root: Expr, rules: dict[str, list[Rule]] | None = None) -> Expr:
    """Rewrite ``root`` with the rule sets until nothing changes.

    Examples
    --------
    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> str(tc.simplify(x + x - 0))
    '2 *(,i->i) x'
    """
    from ..core.checks import require_expr

    require_expr(root, "simplify")
    return simplify_many([root], rules)[0]


def simplify_many(roots: Sequence[Expr], rules: dict[str, list[Rule]] | None = None) -> list[Expr]:
    """:func:`simplify` several roots together (the derivatives of one sweep).

    Use counts span all the roots, so a node they share counts as shared and
    stays one node instead of being inlined into each root.

    >>> import tenscalc as tc
    >>> x = tc.var("x", 1)
    >>> [str(r) for r in simplify_many([x + x, x + x + x])]
    ['2 *(,i->i) x', '3 *(,i->i) x']
    """
    table = RULES if rules is None else rules
    roots = list(roots)
    for _ in range(MAX_PASSES):
        new_roots = _one_pass_many(roots, table)
        if all(new is old for new, old in zip(new_roots, roots)):
            return roots
        roots = new_roots
    raise TensCalcError(f"simplification did not reach a fixed point within {MAX_PASSES} passes (a rule loop)")


def _one_pass(root: Expr, table: dict[str, list[Rule]]) -> Expr:
    return _one_pass_many([root], table)[0]


def _one_pass_many(roots: list[Expr], table: dict[str, list[Rule]]) -> list[Expr]:
    nodes = topological(roots)
    ctx = Context()
    for node in nodes:
        for child in node.children:
            ctx.uses[id(child)] = ctx.uses.get(id(child), 0) + 1
    mapped: dict[int, Expr] = {}
    for node in nodes:
        children = tuple(mapped[id(c)] for c in node.children)
        current = node
        if any(a is not b for a, b in zip(children, node.children)):
            current = N.rebuild(node, children)
            for old, new in zip(node.children, children):
                if old is not new:
                    ctx.uses[id(new)] = ctx.uses.get(id(new), 0) + ctx.uses.get(id(old), 0)
        current = _rewrite_locally(current, table, ctx)
        mapped[id(node)] = current
    return [mapped[id(root)] for root in roots]


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
