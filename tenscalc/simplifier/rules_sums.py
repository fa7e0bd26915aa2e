"""Rules for sums: zero terms, equal terms merged, constants folded, common factors.

Also the two pattern readers the power rules share: ``const_power`` (``b^c``
with a constant ``c``) and ``embedded_parts`` (a term as a scaled elementwise product).
"""

from __future__ import annotations

from ..core import nodes as N
from ..core.exact import exact_product, exact_sum
from ..core.nodes import Expr
from ..core.products import rebuild as _rebuild
from .context import Context, Rule
from .rules_slices import add_pull_embed

# flattening sums is bounded like fusing products (see MAX_FUSED_OPERANDS in rules_products)
MAX_FLATTENED_TERMS = 64


def add_simplify_terms(node: Expr, ctx: Context) -> Expr | None:
    # x + 0 -> x ; x + x -> 2 x ; 2 + 3 -> 5 ; (a + b) + c -> a + b + c (single use)
    merged: dict[Expr, list] = {}
    order: list[Expr] = []
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
                constant = exact_sum([constant, exact_product([k, c.arg[0]])])  # 1/3 - 1 -> -2/3 exactly
                constant_terms += 1
                changed = changed or c.arg[0] == 0 or constant_terms > 1  # a zero, or constants to fold
                continue
            if c in merged:
                merged[c][1] = exact_sum([merged[c][1], k])
                changed = True
            else:
                merged[c] = [c, k]
                order.append(c)
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


def _positional_operands(term: Expr) -> dict[tuple[Expr, tuple[int, ...]], int] | None:
    """Operands of a product whose letters are all distinct output letters, keyed
    by (node, output positions); None when the output writes a diagonal."""
    ins, out = term.arg
    if len(set(out)) != len(out):
        return None
    found = {}
    for k, (child, spec) in enumerate(zip(term.children, ins)):
        if child.op == "const" or len(set(spec)) != len(spec) or not set(spec) <= set(out):
            continue
        found.setdefault((child, tuple(out.index(letter) for letter in spec)), k)
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
    # ties broken by the factor's digest, never by identity: the result must not
    # depend on what the process built before
    for key in sorted(common, key=lambda key: (-len(key[1]), key[1], key[0].digest)):
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
            shared = key[0]
            total = N.add(rests, node.arg)
            return N.mul((shared, total), (key[1], rest_positions), tuple(range(node.order)))
    return None


def embedded_parts(term: Expr) -> tuple[list[Expr], tuple[int, ...], tuple[int, ...], int | float] | None:
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


def const_power(node: Expr) -> tuple[Expr, int | float] | None:
    """``b^c`` with a constant ``c`` as ``(b, c)``."""
    if node.op == "pow" and node.children[1].op == "const":
        return node.children[0], node.children[1].arg[0]
    return None


def add_cancel_over_square(node: Expr, ctx: Context) -> Expr | None:
    # c1 u ⊙ q^-2 + c2 q^-1 with q = a u + b k, c1 + a c2 = 0  ->  c2 b k q^-2   (σ(1-σ): e/(e+1)^2)
    terms = [(t, c, embedded_parts(t)) for t, c in zip(node.children, node.arg)]
    for i, (_, c1, parts_i) in enumerate(terms):
        if parts_i is None or len(parts_i[0]) != 2:
            continue
        factors, spec, out, scale1 = parts_i
        for slot in (0, 1):
            square, u = factors[slot], factors[1 - slot]
            power = const_power(square)
            if power is None or power[1] != -2 or power[0].op != "add" or len(power[0].children) != 2:
                continue
            q = power[0]
            (x, a), (k, b) = sorted(zip(q.children, q.arg), key=lambda p: p[0].op == "const")
            if x is not u or k.op != "const" or k.arg[1] != q.order:
                continue
            for j, (_, c2, parts_j) in enumerate(terms):
                if j == i or parts_j is None or len(parts_j[0]) != 1 or parts_j[1:3] != (spec, out):
                    continue
                if const_power(parts_j[0][0]) != (q, -1) or c1 * scale1 + a * c2 * parts_j[3] != 0:
                    continue
                if spec == out:
                    merged = square
                else:
                    merged = N.mul([square, N.const(1, 0)], [spec, ()], out)
                rest = [(t, c) for n, (t, c, _) in enumerate(terms) if n not in (i, j)]
                rest.append((merged, c2 * parts_j[3] * b * k.arg[0]))
                return N.add([t for t, _ in rest], [c for _, c in rest])
    return None


def _shifted_base(u: Expr) -> tuple[Expr, int | float, int | float] | None:
    """``u = a v + b k`` (one constant ``k`` of u's order) as ``(v, a, b k)``."""
    if u.op != "add" or len(u.children) != 2:
        return None
    (v, a), (k, b) = sorted(zip(u.children, u.arg), key=lambda p: p[0].op == "const")
    if v.op == "const" or k.op != "const" or k.arg[1] != u.order:
        return None
    return v, a, exact_product([b, k.arg[0]])


def add_cancel_power(node: Expr, ctx: Context) -> Expr | None:
    # c1 u^p + c2 u^(p-1) ⊙ v with u = a v + m (m constant), c1 a + c2 = 0  ->  c1 m u^(p-1)
    # (u^p = u^(p-1) ⊙ (a v + m): the TV Hessian's (d²+ε)^-1/2 - (d²+ε)^-3/2 ⊙ d² is ε (d²+ε)^-3/2)
    terms = [(t, c, embedded_parts(t)) for t, c in zip(node.children, node.arg)]
    for i, (_, c1, parts_i) in enumerate(terms):
        if parts_i is None or len(parts_i[0]) != 1:
            continue
        (whole,), spec, out, scale1 = parts_i
        power = const_power(whole)
        shifted = None if power is None else _shifted_base(power[0])
        if shifted is None:
            continue
        u, p = power
        v, a, m = shifted
        lowered = N.power(u, N.const(exact_sum([p, -1]), 0))
        for j, (_, c2, parts_j) in enumerate(terms):
            if j == i or parts_j is None or len(parts_j[0]) != 2 or parts_j[1:3] != (spec, out):
                continue
            if {f for f in parts_j[0]} != {lowered, v} or lowered is v:
                continue
            if exact_sum([exact_product([c1, scale1, a]), exact_product([c2, parts_j[3]])]) != 0:
                continue
            merged = lowered if spec == out else N.mul([lowered, N.const(1, 0)], [spec, ()], out)
            rest = [(t, c) for n, (t, c, _) in enumerate(terms) if n not in (i, j)]
            rest.append((merged, exact_product([c1, scale1, m])))
            return N.add([t for t, _ in rest], [c for _, c in rest])
    return None


def _over_two_term_sum(term: Expr) -> tuple[Expr, list[Expr], int | float] | None:
    """``s n ⊙ q^-1`` (elementwise, q a sum of two terms) as ``(q^-1, [n...], s)``."""
    parts = embedded_parts(term)
    if parts is None or parts[1] != parts[2]:
        return None
    factors, _, _, scale = parts
    for k, factor in enumerate(factors):
        power = const_power(factor)
        if power is not None and power[1] == -1 and power[0].op == "add" and len(power[0].children) == 2:
            return factor, factors[:k] + factors[k + 1 :], scale
    return None


def add_complement_of_reciprocal(node: Expr, ctx: Context) -> Expr | None:
    # with q = a u + b m (m, k constants): c k - c' q^-1 -> c k a u ⊙ q^-1 when c k b m = c'   (1 - 1/(1+e) = e/(1+e))
    #                                     c k - c' u ⊙ q^-1 -> c k b m q^-1 when c k a = c'    (1 - e/(1+e) = 1/(1+e))
    constants = [(n, t, c) for n, (t, c) in enumerate(zip(node.children, node.arg)) if t.op == "const"]
    if len(constants) != 1:
        return None
    n_k, k, c = constants[0]
    whole = c * k.arg[0]
    letters = tuple(range(node.order))
    for n_q, (term, c2) in enumerate(zip(node.children, node.arg)):
        found = _over_two_term_sum(term)
        if found is None:
            continue
        reciprocal, numerator, scale = found
        q = reciprocal.children[0]
        (u, a), (m, b) = sorted(zip(q.children, q.arg), key=lambda p: p[0].op == "const")
        if u.op == "const" or m.op != "const":
            continue
        if not numerator and whole * b * m.arg[0] == -c2 * scale:
            merged, coefficient = N.mul([u, reciprocal], [letters] * 2, letters), whole * a
        elif numerator == [u] and whole * a == -c2 * scale:
            merged, coefficient = reciprocal, whole * b * m.arg[0]
        else:
            continue
        rest = [(t, w) for j, (t, w) in enumerate(zip(node.children, node.arg)) if j not in (n_k, n_q)]
        rest.append((merged, coefficient))
        return N.add([t for t, _ in rest], [w for _, w in rest])
    return None


# the slice rule comes last: it acts on derivatives only
ADD_RULES: list[Rule] = [
    add_scale_constant,
    add_simplify_terms,
    add_factor_common,
    add_cancel_over_square,
    add_cancel_power,
    add_complement_of_reciprocal,
    add_pull_embed,
]
