"""Entry-wise rational algebra: signs that interval arithmetic cannot see.

Interval arithmetic forgets that two occurrences of a node are the same number:
the logistic loss gives the Hessian weight ``e (1+e)^-2 - (1+e)^-1`` with
``e = exp(.) > 0``, whose intervals ``(0, inf) - (0, 1)`` have either sign,
although the value is ``-(1+e)^-2 < 0``.  This module writes one *entry* of a
node as a sum of monomials ``c * prod atom^exponent`` (an atom is a node read at
given entry positions), clears denominators, expands the polynomial atoms that
remain (``1 + e`` above), cancels, and bounds the result by intervals of the
atoms.  Work is capped (a few dozen terms), so the cost per node is bounded.

Monomials are also what the Cauchy-Schwarz template compares
(``u[l]^2 / d[l]`` against a summand ``w[l]``; see :mod:`.rules`).

>>> import tenscalc as tc
>>> from tenscalc.convexity.algebra import expand
>>> e = tc.parse("x *(i,i->i) x^(-1)", {"x": 1})
>>> expand(e, (0,), lambda n: None) == {(): 1}  # x * x^-1 = x^0 (x != 0 on the domain)
True
"""

from __future__ import annotations

from collections.abc import Callable

from ..core import nodes as N
from ..core.nodes import Expr
from .facts import Interval, power

Atom = tuple[Expr, tuple[int, ...]]
Monomial = tuple[tuple[Atom, float], ...]
Poly = dict[Monomial, float]
IntervalOf = Callable[[Expr], "Interval | None"]

MAX_TERMS = 48
MAX_ATOMS = 16
"""A monomial with more factors than this is too big to expand: the algebra gives up
(the cancellations it looks for live in small rational functions; without the cap a
chain of d nested functions costs d³)."""
_TOL = 1e-12


def _key(atom: Atom) -> tuple:
    return (atom[0].serial, atom[1])


def _norm(exponent: float) -> float | int:
    # exponents such as -5/3 + 2/3 are computed in floating point: snap to integers
    if abs(exponent - round(exponent)) < 1e-9:
        return int(round(exponent))
    return exponent


def mono_mul(a: Monomial, b: Monomial) -> Monomial:
    if not b:  # the constant monomial: most products in a chain are of this kind
        return a
    if not a:
        return b
    merged: dict[Atom, float] = dict(a)
    for atom, e in b:
        merged[atom] = merged.get(atom, 0) + e
    return tuple(sorted(((atom, _norm(e)) for atom, e in merged.items() if abs(e) > 1e-9), key=lambda t: _key(t[0])))


def mono_pow(m: Monomial, e: float) -> Monomial:
    return tuple((atom, _norm(x * e)) for atom, x in m)


def poly_mul(p: Poly, q: Poly) -> Poly | None:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = mono_mul(m1, m2)
            if len(m) > MAX_ATOMS:
                return None
            out[m] = out.get(m, 0) + c1 * c2
            if len(out) > MAX_TERMS:
                return None
    return out


def poly_add(p: Poly, q: Poly, scale: float = 1) -> Poly | None:
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + scale * c
    return out if len(out) <= MAX_TERMS else None


def cancel(p: Poly) -> Poly:
    """Drop coefficients that cancelled (relative to the terms that produced them)."""
    scale = max((abs(c) for c in p.values()), default=0.0)
    return {m: c for m, c in p.items() if abs(c) > _TOL * max(scale, 1e-300)}


def _const_value(node: Expr) -> float | None:
    return node.arg[0] if node.op == "const" else None


def _exponent(node: Expr) -> float | None:
    if node.op == "pow" and node.children[1].op == "const":
        return node.children[1].arg[0]
    return None


def is_elementwise_mul(node: Expr) -> bool:
    """A product without summed letters or written diagonals: each output entry is
    the product of one entry of each operand."""
    if node.op != "mul":
        return False
    ins, out = node.arg
    if len(set(out)) != len(out):
        return False
    letters = set(out)
    return all(set(spec) <= letters for spec in ins)


def opaque_bases(roots) -> frozenset[Expr]:
    """The bases of non-integer powers under ``roots``: they stay atoms, so that
    ``b * b^(-3/2)`` and ``b^(-1/2)`` are recognised as equal."""
    from ..core.nodes import topological

    found = set()
    for node in topological(list(roots)):
        e = _exponent(node)
        if e is not None and not float(e).is_integer():
            found.add(node.children[0])
    return frozenset(found)


class ExpansionCache:
    """Expansions already made, by (node, positions, opaque set).

    Without it every node of a chain re-expands all the nodes below it, which made
    nested functions cost cubic time in their depth; with it each (node, positions)
    is expanded once per opaque set.
    The intervals read while expanding must not change while the cache lives (one
    :class:`~.analysis.Analyzer` labels each node once).
    """

    def __init__(self) -> None:
        self.table: dict[tuple[Expr, tuple[int, ...], frozenset[Expr]], Poly | None] = {}


def expand(
    node: Expr,
    positions: tuple[int, ...],
    interval_of: IntervalOf,
    depth: int = 0,
    opaque: frozenset[Expr] = frozenset(),
    cache: ExpansionCache | None = None,
) -> Poly | None:
    """One entry of ``node`` (its axes at ``positions`` of a common frame) as a sum of
    monomials over atoms, or None when that takes too many terms.

    ``interval_of`` gives known intervals of nodes; it decides whether a non-integer
    power may be distributed over a product (only over nonnegative factors).
    ``cache`` shares expansions between calls (the result must then not be mutated).
    """
    if cache is None:
        return _expand(node, positions, interval_of, depth, opaque, None)
    key = (node, positions, opaque)
    if key in cache.table:
        return cache.table[key]
    result = _expand(node, positions, interval_of, depth, opaque, cache)
    cache.table[key] = result
    return result


def _expand(
    node: Expr,
    positions: tuple[int, ...],
    interval_of: IntervalOf,
    depth: int,
    opaque: frozenset[Expr],
    cache: ExpansionCache | None,
) -> Poly | None:
    if depth > 40 or node in opaque:
        return {((((node, positions), 1),)): 1}
    value = _const_value(node)
    if value is not None:
        return {(): value} if value != 0 else {}
    if node.op == "add":
        total: Poly = {}
        for child, coef in zip(node.children, node.arg):
            part = expand(child, positions, interval_of, depth + 1, opaque, cache)
            if part is None:
                return None
            total = poly_add(total, part, coef)
            if total is None:
                return None
        return cancel(total)
    if node.op == "mul" and is_elementwise_mul(node):
        ins, out = node.arg
        result: Poly = {(): 1}
        for child, spec in zip(node.children, ins):
            child_positions = tuple(positions[out.index(letter)] for letter in spec)
            part = expand(child, child_positions, interval_of, depth + 1, opaque, cache)
            if part is None:
                return None
            result = poly_mul(result, part)
            if result is None:
                return None
        return cancel(result)
    e = _exponent(node)
    if e is not None:
        base = node.children[0]
        if e == 0:
            return {(): 1}
        inner = expand(base, positions, interval_of, depth + 1, opaque, cache)
        if inner is None:
            return {((((base, positions), e),)): 1}
        if not inner:  # 0^e: 0 for e > 0, undefined otherwise (outside the domain)
            return {} if e > 0 else {((((base, positions), e),)): 1}
        if float(e).is_integer() and 0 < e <= 4 and len(inner) > 1:
            result = {(): 1}
            for _ in range(int(e)):
                result = poly_mul(result, inner)
                if result is None:
                    return {((((base, positions), e),)): 1}
            return cancel(result)
        if base in opaque:
            return {((((base, positions), e),)): 1}
        if len(inner) == 1:
            ((m, c),) = inner.items()
            if float(e).is_integer():
                return {mono_pow(m, e): c**e}
            # a non-integer power distributes over nonnegative factors only
            if c > 0 and all(_nonneg(atom, interval_of) for atom, _ in m):
                return {mono_pow(m, e): c**e}
        return {((((base, positions), e),)): 1}
    return {((((node, positions), 1),)): 1}


def _nonneg(atom: Atom, interval_of: IntervalOf) -> bool:
    known = interval_of(atom[0])
    return known is not None and known.nonneg


def monomial_interval(m: Monomial, interval_of: IntervalOf) -> Interval:
    result = Interval.point(1.0)
    for (node, _), e in m:
        known = interval_of(node)
        if known is None:
            known = Interval.real()
        result = result * power(known, e)
    return result


def poly_interval(p: Poly, interval_of: IntervalOf) -> Interval:
    total = Interval.point(0.0)
    for m, c in p.items():
        total = total + monomial_interval(m, interval_of).scale(c)
    return total


def rational_interval(
    node: Expr, interval_of: IntervalOf, cache: ExpansionCache | None = None, opaque: frozenset[Expr] | None = None
) -> Interval | None:
    """Bound the entries of ``node`` by clearing denominators and cancelling.

    Returns None when the expansion is too large.  The denominators cleared are
    powers of atoms that appear with negative exponents, nonzero on the domain.
    """
    positions = tuple(range(node.order))
    if opaque is None:
        opaque = opaque_bases([node])
    poly = expand(node, positions, interval_of, opaque=opaque, cache=cache)
    if poly is None:
        return None
    return poly_rational_interval(poly, interval_of, opaque, cache)


def poly_rational_interval(
    poly: Poly, interval_of: IntervalOf, opaque: frozenset[Expr] = frozenset(), cache: ExpansionCache | None = None
) -> Interval | None:
    """Bound a sum of monomials after clearing denominators and cancelling."""
    factor: dict[Atom, float] = {}  # node value = poly_now * prod atom^(-factor)
    for _ in range(4):
        lowest: dict[Atom, float] = {}
        for m in poly:
            for atom, e in m:
                if e < 0:
                    lowest[atom] = min(lowest.get(atom, 0), e)
        if lowest:
            lift: Monomial = tuple(sorted(((a, _norm(-e)) for a, e in lowest.items()), key=lambda t: _key(t[0])))
            lifted: Poly = {}
            for m, c in poly.items():
                mm = mono_mul(m, lift)
                lifted[mm] = lifted.get(mm, 0) + c
            poly = cancel(lifted)
            for a, e in lowest.items():
                factor[a] = factor.get(a, 0) - e
        # expand atoms that are sums (or products of sums) raised to positive integer powers
        changed = False
        expanded: Poly = {}
        for m, c in poly.items():
            kept: list = []  # a sub-sequence of the canonical m stays canonical
            subs: list[Poly] = []
            for atom, e in m:
                sub = None
                if float(e).is_integer() and 0 < e <= 4 and _expandable(atom[0]):
                    inner = expand(atom[0], atom[1], interval_of, opaque=opaque - {atom[0]}, cache=cache)
                    if inner is not None and inner != {((atom, 1),): 1}:
                        sub = {(): 1}
                        for _ in range(int(e)):
                            sub = poly_mul(sub, inner)
                            if sub is None:
                                break
                if sub is None:
                    kept.append((atom, e))
                else:
                    changed = True
                    subs.append(sub)
            term: Poly | None = {tuple(kept): c}
            for sub in subs:
                term = poly_mul(term, sub)
                if term is None:
                    return None
            expanded = poly_add(expanded, term)
            if expanded is None:
                return None
        poly = cancel(expanded)
        if not changed:
            break
    value = poly_interval(poly, interval_of)
    common, rest = common_factor(poly)
    if common:  # e^x (2 + x) on x >= -2: the factored form can see a sign the sum hides
        rest_value = poly_interval(rest, interval_of)
        square = quadratic_sign(rest)
        if square is not None:  # 2 (1 - σ)²: a quadratic in one atom without real roots
            rest_value = rest_value.intersect(square) if not rest_value.intersect(square).empty else rest_value
        factored = monomial_interval(common, interval_of) * rest_value
        value = value.intersect(factored) if not value.intersect(factored).empty else value
    square = quadratic_sign(poly)
    if square is not None and not value.intersect(square).empty:
        value = value.intersect(square)
    for atom, amount in factor.items():
        known = interval_of(atom[0]) or Interval.real()
        value = value * power(known, -amount)
    return value


def quadratic_sign(poly: Poly) -> Interval | None:
    """``a + b u + c u²`` in one atom ``u`` with ``b² <= 4ac``: >= 0 when ``c > 0`` (<= 0
    when ``c < 0``) for every real ``u`` — a square the monomials hide; else None.

    >>> import tenscalc as tc
    >>> u = (tc.parse("sin(x)", {"x": 0}), ())
    >>> quadratic_sign({(): 2.0, ((u, 1),): -4.0, ((u, 2),): 2.0}).nonneg
    True
    """
    atoms = {atom for m in poly for atom, _ in m}
    if len(atoms) != 1 or len(poly) < 2:
        return None
    (atom,) = atoms
    coef = {0: 0.0, 1: 0.0, 2: 0.0}
    for m, c in poly.items():
        e = dict(m).get(atom, 0)
        if len(m) > 1 or e not in (0, 1, 2):
            return None
        coef[int(e)] += c
    a, b, c = coef[0], coef[1], coef[2]
    if c == 0 or b * b > 4 * a * c:
        return None
    return Interval.nonnegative() if c > 0 else Interval.nonpositive()


def common_factor(poly: Poly) -> tuple[Monomial, Poly]:
    """``poly = common * rest`` with ``common`` the atoms every monomial has (each to
    its smallest exponent); ``((), poly)`` when there is none.

    >>> import tenscalc as tc
    >>> x = tc.parse("x", {"x": 0}); e = tc.parse("exp(x)", {"x": 0})
    >>> common, rest = common_factor({(((e, ()), 1),): 2.0, (((x, ()), 1), ((e, ()), 1)): 1.0})
    >>> common == (((e, ()), 1),), sorted(rest.values())
    (True, [1.0, 2.0])
    """
    if len(poly) < 2:
        return (), poly
    monos = list(poly)
    shared: dict[Atom, float] = dict(monos[0])
    for m in monos[1:]:
        here = dict(m)
        shared = {a: min(e, here[a]) for a, e in shared.items() if a in here and (e > 0) == (here[a] > 0)}
        if not shared:
            return (), poly
    common: Monomial = tuple(sorted(((a, _norm(e)) for a, e in shared.items()), key=lambda t: _key(t[0])))
    inverse = mono_pow(common, -1)
    rest: Poly = {}
    for m, c in poly.items():
        reduced = mono_mul(m, inverse)
        rest[reduced] = rest.get(reduced, 0) + c
    return common, rest


def _expandable(node: Expr) -> bool:
    return node.op == "add" or (node.op == "mul" and is_elementwise_mul(node))


__all__ = ["expand", "rational_interval", "mono_mul", "mono_pow", "monomial_interval", "poly_interval", "N"]
