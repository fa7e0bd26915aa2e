"""Rules for products: deltas absorbed by renaming letters, nested products fused,
factors 0 and 1 dropped, constants pulled out, powers of one base merged, operands
put in a canonical order.  The order of :data:`MUL_RULES` is the order they are tried.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core import nodes as N
from ..core import products as P
from ..core.checks import count_nodes
from ..core.exact import exact_product, exact_sum
from ..core.nodes import Expr
from .context import Context, Rule, rewrite_locally
from .rules_functions import POW_RULES, rank_one_update
from .rules_slices import mul_pull_embed
from .rules_sums import ADD_RULES, const_power, embedded_parts
from .symmetry import canonical_operands

# Fusing products (and flattening sums) without a bound turns a chain of n
# single-use products into products of n, n-1, ... operands: O(n^2) work.  Bounded
# fusion keeps simplification linear; 8 operands is also about where opt_einsum
# stops searching contraction paths exhaustively.
MAX_FUSED_OPERANDS = 8


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
            factor = exact_product([factor, parts[1]])
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
    value = exact_product([c.arg[0] for c in node.children])
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
    # X *(ij,ki->jk) X -> X *(ij,jk->ki) X  (equal operands: the order giving the smallest letters)
    # S *(ji,jk->ik) B -> S *(ij,jk->ik) B  (S symmetric: S Xᵀ, inv(AAᵀ), a declared symmetric A)
    pairs = _operands(node)
    out = node.arg[1]
    found = canonical_operands(pairs, out, ctx.symmetric)
    ordered = sorted(pairs, key=lambda p: p[0].digest) if found is None else found[0]
    if all(a[0] is b[0] and a[1] == b[1] for a, b in zip(ordered, pairs)):
        return None
    result = _rebuild(ordered, out)
    return None if result is node else result


def _power_parts(node: Expr) -> tuple[Expr, int | float]:
    """``b^c`` with a constant ``c`` as ``(b, c)``, anything else as ``(node, 1)``."""
    if node.op == "pow" and node.children[1].op == "const":
        return node.children[0], node.children[1].arg[0]
    return node, 1


def mul_merge_powers(node: Expr, ctx: Context) -> Expr | None:
    # det(X)^(-1) *(,->) det(X) -> det(X)^0 -> 1 ;  x *(i,i->i) x^2 -> x^3
    pairs = _operands(node)
    groups: dict[tuple[Expr, tuple[int, ...]], list[int]] = {}
    for k, (child, spec) in enumerate(pairs):
        if len(set(spec)) != len(spec):
            continue
        base, _ = _power_parts(child)
        if base.op == "const":
            continue
        groups.setdefault((base, spec), []).append(k)
    for members in groups.values():
        if len(members) < 2:
            continue
        base = _power_parts(pairs[members[0]][0])[0]
        exponent = exact_sum([_power_parts(pairs[k][0])[1] for k in members])  # -2/3 + 1 -> 1/3, no drift
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


def mul_deltas_into_one(node: Expr, ctx: Context) -> Expr | None:
    # delta(1) *(ij,kl->ikjl) delta(1) -> delta(2) *(ikjl,->ikjl) 1 ; 1{x.0} *(i,jk->iijk) delta(1) -> delta(2)
    # (an outer product of identities, ones on a diagonal among them, is one identity read in some order)
    pairs = _operands(node)
    out = node.arg[1]
    if len(pairs) < 2 or not any(c.op == "delta" and c.arg > 0 for c, _ in pairs):
        return None
    if not all(c.op == "delta" or (c.op == "const" and c.order == 1 and c.arg[0] == 1) for c, _ in pairs):
        return None
    letters = [letter for _, s in pairs for letter in s]
    if len(set(letters)) != len(letters):
        return None  # a letter summed or read twice: mul_absorb_delta's case
    new_out = list(out)
    fresh = max(letters + list(out)) + 1
    identity_pairs = []  # (letter, paired letter, dimension) for each pair of the identity
    for child, spec in pairs:
        if child.op == "delta":
            if any(out.count(letter) != 1 for letter in spec):
                return None
            n = child.arg
            identity_pairs += [(spec[t], spec[n + t], child.dims[t]) for t in range(n)]
            continue
        (letter,) = spec
        if out.count(letter) != 2:
            return None
        new_out[len(out) - 1 - out[::-1].index(letter)] = fresh  # its second place reads the pair's other letter
        identity_pairs.append((letter, fresh, child.dims[0]))
        fresh += 1
    return _identity_read(identity_pairs, tuple(new_out))


def _identity_read(identity_pairs: list[tuple[int, int, object]], out: tuple[int, ...]) -> Expr:
    """``delta(n)`` read into ``out``, its pairs listed in a canonical order (by the output
    positions they join), so that two spellings of one pairing are one node."""
    where = {letter: k for k, letter in enumerate(out)}
    oriented = [(a, b, d) if where[a] < where[b] else (b, a, d) for a, b, d in identity_pairs]
    oriented.sort(key=lambda p: where[p[0]])
    spec = tuple(a for a, _, _ in oriented) + tuple(b for _, b, _ in oriented)
    identity = N.delta(len(oriented), tuple(d for _, _, d in oriented))
    return N.mul((identity,), (spec,), out)


def mul_canonical_identity(node: Expr, ctx: Context) -> Expr | None:
    # delta(2) *(ijkl,->kjil) 1 -> delta(2) *(ijkl,->ijkl)... : the identity's pairs in output order
    # (delta_ik delta_jl = delta_jl delta_ik: sums of such terms then merge)
    if len(node.children) != 1 or node.children[0].op != "delta":
        return None
    (child,), ((spec,), out) = node.children, node.arg
    if len(set(spec)) != len(spec) or sorted(spec) != sorted(out):
        return None
    n = child.arg
    result = _identity_read([(spec[t], spec[n + t], child.dims[t]) for t in range(n)], out)
    return None if result is node else result


def mul_distribute_power(node: Expr, ctx: Context) -> Expr | None:
    # q^-2 ⊙ p^2 ⊙ (p ⊙ q^-1)^-1 -> q^-2 ⊙ p^2 ⊙ p^-1 ⊙ q   (then powers merge: -p/q in KL)
    pairs = _operands(node)
    bases = {_power_parts(child)[0] for child, _ in pairs}
    for k, (child, spec) in enumerate(pairs):
        power = const_power(child)
        if power is None or power[1] != int(power[1]) or power[0].op != "mul":
            continue
        parts = embedded_parts(power[0])
        if parts is None or parts[1] != parts[2] or parts[3] != 1 or power[0].order != len(spec):
            continue
        factors = parts[0]
        if not any(_power_parts(f)[0] in bases for f in factors):
            continue  # nothing to merge with: distributing would only add nodes
        exponent = N.const(power[1], 0)
        inner = [(N.power(f, exponent), spec) for f in factors]
        return _rebuild(pairs[:k] + inner + pairs[k + 1 :], node.arg[1])
    return None


def _sign_partners(pairs: list) -> Iterator[tuple[int, int, Expr]]:
    """``(k, m, a)`` for every operand ``k`` that is ``sign(a)`` and every other operand ``m``
    on the same axes (the partners the sign rules below look for)."""
    for k, (child, spec) in enumerate(pairs):
        if child.op != "func" or child.arg != "sign":
            continue
        for m, (_other, other_spec) in enumerate(pairs):
            if m != k and other_spec == spec:
                yield k, m, child.children[0]


def mul_sign_times_self(node: Expr, ctx: Context) -> Expr | None:
    # sign(a) ⊙ a -> |a|   (then |a| ⊙ |a|^-1 merges to 1: ln|det X|'s Hessian)
    pairs = _operands(node)
    for k, m, inner in _sign_partners(pairs):
        if pairs[m][0] is inner:
            rest = [p for n, p in enumerate(pairs) if n not in (k, m)]
            rest.append((N.func("abs", inner), pairs[k][1]))
            return _rebuild(rest, node.arg[1])
    return None


def mul_inverse_of_rank_one(node: Expr, ctx: Context) -> Expr | None:
    # inv(I + c u vᵀ) *(ij,j->i) u -> u / (1 + c vᵀu) ; v *(i,ij->j) inv(I + c u vᵀ) -> v / (1 + c vᵀu)
    # (I + c u vᵀ) u = u (1 + c vᵀu), and vᵀ (I + c u vᵀ) = (1 + c vᵀu) vᵀ: Sherman-Morrison on its vector
    pairs = _operands(node)
    out = node.arg[1]
    for k, (inverse, spec) in enumerate(pairs):
        if inverse.op != "inv" or spec[0] == spec[1]:
            continue
        found = rank_one_update(inverse.children[0])
        if found is None:
            continue
        u, v, c = found
        for m, (vector, vspec) in enumerate(pairs):
            if m == k or len(vspec) != 1 or vspec[0] in out:
                continue
            if sum(s.count(vspec[0]) for _, s in pairs) != 2:
                continue  # the letter must join just these two operands
            if vector is u and vspec[0] == spec[1]:
                kept = spec[0]
            elif vector is v and vspec[0] == spec[0]:
                kept = spec[1]
            else:
                continue
            scale = N.power(N.add([N.const(1, 0), N.mul((u, v), ((0,), (0,)), ())], [1, c]), N.const(-1, 0))
            rest = [p for n, p in enumerate(pairs) if n not in (k, m)] + [(vector, (kept,)), (scale, ())]
            return _rebuild(rest, out)
    return None


def mul_sign_over_abs(node: Expr, ctx: Context) -> Expr | None:
    # sign(a) ⊙ |a|^n -> a^n for an odd integer n   (sign(x)/abs(x) -> 1/x: d log|x| / dx; both
    # sides agree wherever a != 0, and neither is finite where a = 0 and n < 0)
    pairs = _operands(node)
    for k, m, inner in _sign_partners(pairs):
        other = pairs[m][0]
        power = const_power(other)
        if power is None or power[0] is not N.func("abs", inner):
            continue
        exponent = power[1]
        if exponent != int(exponent) or int(exponent) % 2 != 1:
            continue
        rest = [p for n, p in enumerate(pairs) if n not in (k, m)]
        rest.append((N.power(inner, other.children[1]), pairs[k][1]))
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
            rewrite_locally(_rebuild(pairs[:k] + [(t, spec)] + pairs[k + 1 :], node.arg[1]), local, ctx)
            for t in child.children
        ]
        carriers = {_unscaled(t) for t in child.children if _carries_delta(t)}
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


def _keeps_delta(term: Expr, carriers: set[Expr]) -> bool:
    """Whether a distributed term still holds a delta: as an operand, or inside one of
    the sum's delta-carrying terms that was not fused into it (fusion is bounded by
    MAX_FUSED_OPERANDS), or so in one of its summands."""
    if term.op == "add" and len(term.children) > 1:
        return any(_keeps_delta(t, carriers) for t in term.children)
    if _carries_delta(term):
        return True
    inner = _unscaled(term)
    return inner.op == "mul" and any(_unscaled(c) in carriers for c in inner.children)


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


def _power_mass(node: Expr) -> int | float:
    """The sum of |exponent| over the operands of ``node`` (nested products and scalings
    opened, constants and deltas left out): it drops when ``q ⊙ q^-2`` merges to ``q^-1``,
    not when ``e ⊙ e`` merges to ``e^2``.  ``(q^-1)^-1`` counts as ``q``, as ``pow_of_pow``
    will write it."""
    if node.op == "mul" or P.scale_parts(node) is not None:
        factors = [c for c, _ in P.flatten(node, tuple(range(node.order)))[0]]
    else:
        factors = [node]
    mass: int | float = 0
    for factor in factors:
        if factor.op in ("const", "delta"):
            continue
        base, exponent = _power_parts(factor)
        while base.op == "pow" and exponent == int(exponent) and _power_parts(base)[0] is not base:
            base, inner = _power_parts(base)
            exponent *= inner
        mass += abs(exponent)
    return mass


def _bases(node: Expr) -> set[Expr]:
    """The bases of the powers among ``node``'s factors, and inside a power of a product
    (``(e ⊙ q^-1)^-1`` has bases e and q), which a power elsewhere may cancel."""
    if node.op == "mul" or P.scale_parts(node) is not None:
        factors = [c for c, _ in P.flatten(node, tuple(range(node.order)))[0]]
    else:
        factors = [node]
    found = set()
    for factor in factors:
        base = _power_parts(factor)[0]
        found.add(base)
        if base.op == "mul":
            found.update(_power_parts(c)[0] for c in base.children)
    return found


def _cancelling_operands(pairs: list[P.Operand], k: int) -> tuple[list[P.Operand], list[P.Operand]]:
    """The operands other than ``k`` that may cancel a power inside operand ``k`` (all
    their letters are ``k``'s, and their base is one of its terms' bases), and the others."""
    letters = set(pairs[k][1])
    bases = set().union(*(_bases(t) for t in pairs[k][0].children))
    inside: list[P.Operand] = []
    outside: list[P.Operand] = []
    for j, (child, spec) in enumerate(pairs):
        if j != k:
            wanted = set(spec) <= letters and _power_parts(child)[0] in bases
            (inside if wanted else outside).append((child, spec))
    return inside, outside


def mul_distribute_cancelling_sum(node: Expr, ctx: Context) -> Expr | None:
    # A *(ij,i->j) ((a ⊙ q - b) ⊙ q^-2) -> A *(ij,i->j) (a ⊙ q^-1 - b ⊙ q^-2)   (each non-constant term cancels a power)
    pairs = _operands(node)
    for k, (child, spec) in enumerate(pairs):
        if child.op != "add" or not 2 <= len(child.children) <= 4 or not ctx.single_use(child):
            continue
        if len(set(spec)) != len(spec) or any(_carries_delta(t) for t in child.children):
            continue  # a diagonal, or mul_distribute_delta_sum's case
        inside, outside = _cancelling_operands(pairs, k)
        if not inside:
            continue
        terms = []
        for t in child.children:
            product = _rebuild(inside + [(t, spec)], spec)
            rewritten = _rewrite_term(product, ctx)
            if t.op != "const" and not _power_mass(rewritten) < _power_mass(product):
                break  # this term would only be copied
            terms.append(rewritten)
        else:
            result = _rebuild(outside + [(N.add(terms, child.arg), spec)], node.arg[1])
            if count_nodes(result) < count_nodes(node):  # cancelling powers may still add nodes
                return result
    return None


def _rewrite_term(product: Expr, ctx: Context) -> Expr:
    """One distributed term rewritten on its own (fusion, powers merged), and the powers
    that merging leaves (``e^0``, ``(q^-1)^-1``) tidied as the next pass would."""
    local = {"mul": [r for r in MUL_RULES if r not in _DISTRIBUTING], "add": ADD_RULES}
    rewritten = rewrite_locally(product, local, ctx)
    parts = P.scale_parts(rewritten)
    inner, scale = parts if parts is not None else (rewritten, 1)
    if inner.op != "mul":
        return rewritten
    children = [rewrite_locally(c, {"pow": POW_RULES}, ctx) if c.op == "pow" else c for c in inner.children]
    if all(a is b for a, b in zip(children, inner.children)):
        return rewritten
    return N.scale(rewrite_locally(N.rebuild(inner, children), local, ctx), scale)


def _elementwise_factors(term: Expr) -> tuple[list[Expr], int | float] | None:
    """A summand of an elementwise sum as ``(factors, scale)``: ``3 y ⊙ e`` is ``([y, e], 3)``,
    the constant 2 is ``([], 2)``; None for a product that is not elementwise."""
    if term.op == "const":
        return [], term.arg[0]
    if term.op != "mul":
        return [term], 1
    parts = embedded_parts(term)
    if parts is None or parts[1] != parts[2]:
        return None
    return parts[0], parts[3]


def _key(factors: list[Expr]) -> tuple[bytes, ...]:
    return tuple(sorted(f.digest for f in factors))


def _divide(terms: list[tuple[list[Expr], int | float]], q: Expr) -> tuple[list[Expr], int | float, set[int]] | None:
    """``(v, c, used)`` such that the summands ``used`` of ``terms`` add up to ``c v ⊙ q``."""
    q_parts: list[
        tuple[tuple[bytes, ...], int | float]
    ] = []  # (factor key, coefficient) per summand; () for a constant
    for u, a in zip(q.children, q.arg):
        if u.op == "const":
            q_parts.append(((), a * u.arg[0]))
        elif u.op == "mul":
            return None  # a product inside q: not worth matching
        else:
            q_parts.append(((u.digest,), a))
    first = next(((key, a) for key, a in q_parts if key), None)
    if first is None:
        return None
    by_key: dict[tuple[bytes, ...], list[int]] = {}
    for n, (factors, _) in enumerate(terms):
        by_key.setdefault(_key(factors), []).append(n)
    for n, (factors, scale) in enumerate(terms):
        if first[0][0] not in [f.digest for f in factors]:
            continue
        v = list(factors)
        v.pop([f.digest for f in v].index(first[0][0]))
        used = {n}
        for key, a in q_parts:
            if key == first[0]:
                continue
            wanted = tuple(sorted(_key(v) + key))
            match = [m for m in by_key.get(wanted, []) if m not in used and terms[m][1] * first[1] == scale * a]
            if not match:
                break
            used.add(match[0])
        else:
            return v, scale * first[1] if first[1] in (1, -1) else scale / first[1], used
    return None


def mul_divide_sum(node: Expr, ctx: Context) -> Expr | None:
    # q^-1 ⊙ (c v ⊙ u + c b v + r) with q = u + b  ->  c v + q^-1 ⊙ r   ((1 - y - y ⊙ e) / (1 + e) = σ - y)
    pairs = _operands(node)
    for kq, (q_power, q_spec) in enumerate(pairs):
        power = const_power(q_power)
        if power is None or power[1] >= 0 or power[1] != int(power[1]) or power[0].op != "add":
            continue
        if len(set(q_spec)) != len(q_spec):
            continue
        q = power[0]
        for ks, (s, s_spec) in enumerate(pairs):
            if ks == kq or s.op != "add" or s_spec != q_spec or not ctx.single_use(s):
                continue
            terms = [_elementwise_factors(t) for t in s.children]
            if any(t is None for t in terms):
                continue
            scaled = [(f, scale * c) for (f, scale), c in zip(terms, s.arg)]  # type: ignore[misc]
            found = _divide(scaled, q)
            if found is None:
                continue
            v_factors, coefficient, used = found
            letters = tuple(range(s.order))
            if not v_factors:
                v = N.const_like(1, s)
            elif len(v_factors) == 1:
                v = v_factors[0]
            else:
                v = N.mul(v_factors, [letters] * len(v_factors), letters)
            if power[1] != -1:
                v = _rewrite_term(N.mul([v, N.power(q, N.const(power[1] + 1, 0))], [letters] * 2, letters), ctx)
            quotient = [(v, coefficient)]
            rest = [(t, c) for n, (t, c) in enumerate(zip(s.children, s.arg)) if n not in used]
            if rest:
                remainder = N.add([t for t, _ in rest], [c for _, c in rest])
                quotient.append((_rewrite_term(N.mul([remainder, q_power], [letters] * 2, letters), ctx), 1))
            new_sum = N.add([t for t, _ in quotient], [c for _, c in quotient])
            others = [p for n, p in enumerate(pairs) if n not in (kq, ks)]
            result = _rebuild(others + [(new_sum, q_spec)], node.arg[1])
            if count_nodes(result) < count_nodes(node):  # a long remainder times q^-1 may add nodes
                return result
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
    mul_sign_over_abs,
    mul_inverse_of_rank_one,
    mul_distribute_power,
    mul_merge_powers,
    mul_distribute_cancelling_sum,
    mul_divide_sum,
    mul_constants,
    mul_all_constant,
    mul_ones_on_diagonal,
    mul_deltas_into_one,
    mul_identity,
    mul_canonical_identity,
    mul_sort_operands,
    mul_pull_embed,  # the slice rule comes last: it acts on derivatives only
]
_DISTRIBUTING = (mul_distribute_delta_sum, mul_distribute_cancelling_sum, mul_divide_sum)
