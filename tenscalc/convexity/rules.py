"""Certification rules, as tables keyed by node kind (and function name).

Two tables drive the pass of :mod:`.analysis`:

``INTERVAL_RULES[kind](analyzer, node) -> Interval``
    a set containing every entry of the node, from its children's intervals
    (``FUNCTION_RANGES[name]`` for the elementwise functions);
``CURVATURE_RULES[kind](analyzer, node, perms) -> Derivation | None``
    for a node of order ``2k`` read as a matrix over its first and last ``k``
    axes: PSD / NSD / PD / zero, with the rule that showed it.

The matrix rules are the ones of Klaus et al. (NeurIPS 2022), phrased for n-ary
einsum nodes:

* **scaling and sums** -- a coefficient of known sign, a sum of PSD terms;
* **congruence** (:func:`kernel_rule`) -- an einsum whose operands pair up as
  ``A[l, s] ... A[r, s']`` around a middle of nonnegative scalars and PSD
  kernels is ``A M Aᵀ``: this covers ``Xᵀ X``, ``v vᵀ``, ``diag(d)`` with
  ``d >= 0``, Kronecker and Hadamard products of PSD matrices;
* **the PSD template** (:func:`cauchy_schwarz`) --
  ``diag(y⊙z⊙y) - (y⊙z)(y⊙z)ᵀ / (a (b + sum z))`` with ``z >= 0``, ``a >= 1``,
  ``b >= 0``, checked on monomials: a diagonal term ``D`` and a rank-one term
  ``-u uᵀ / t`` combine to a PSD matrix when ``sum_l u_l^2 / D_l <= t``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core import nodes as N
from ..core.nodes import Expr
from ..core.products import constant_value
from ..errors import TensCalcError
from .algebra import expand, mono_mul, mono_pow, opaque_bases, poly_rational_interval
from .facts import INF, Curvature, Interval, Modulus, abs_interval, add_curvatures, monotone, power, sum_over_axis

if TYPE_CHECKING:
    from .analysis import Analyzer

Perm = tuple[int, ...]

# -----------------------------------------------------------------------------------------
# intervals of the elementwise functions
# -----------------------------------------------------------------------------------------


def _sin_cos(x: Interval) -> Interval:
    return Interval.closed(-1, 1) if not x.empty else x


def _tan(x: Interval) -> Interval:
    if not x.empty and x.lo > -math.pi / 2 and x.hi < math.pi / 2:
        return monotone(x, math.tan, -INF, INF)
    return Interval.real() if not x.empty else x


def _log(x: Interval) -> Interval:
    return monotone(x.intersect(Interval.positive()), lambda v: math.log(v) if v > 0 else -INF, -INF, INF)


def _sign(x: Interval) -> Interval:
    if x.empty:
        return x
    if x.pos:
        return Interval.point(1)
    if x.neg:
        return Interval.point(-1)
    if x.is_zero:
        return Interval.point(0)
    lo = 0 if x.nonneg else -1
    hi = 0 if x.nonpos else 1
    return Interval.closed(lo, hi)


def _relu(x: Interval) -> Interval:
    if x.empty:
        return x
    if x.nonneg:
        return x
    if x.hi < 0 or (x.hi == 0):
        return Interval.point(0)
    return Interval(0.0, x.hi, True, x.hi_closed)


FUNCTION_RANGES: dict[str, Callable[[Interval], Interval]] = {
    "sin": _sin_cos,
    "cos": _sin_cos,
    "tan": _tan,
    "arcsin": lambda x: monotone(x.intersect(Interval.closed(-1, 1)), math.asin, -math.pi / 2, math.pi / 2),
    "arccos": lambda x: monotone(x.intersect(Interval.closed(-1, 1)), math.acos, math.pi, 0.0, increasing=False),
    "arctan": lambda x: monotone(x, math.atan, -math.pi / 2, math.pi / 2),
    "tanh": lambda x: monotone(x, math.tanh, -1.0, 1.0),
    "exp": lambda x: monotone(x, lambda v: math.exp(v) if v < 709 else INF, 0.0, INF),
    "log": _log,
    "abs": abs_interval,
    "sign": _sign,
    "relu": _relu,
}
"""Range of each elementwise function on an interval of arguments."""


# -----------------------------------------------------------------------------------------
# interval rules per node kind
# -----------------------------------------------------------------------------------------


def interval_var(an: Analyzer, node: Expr) -> Interval:
    return an.variable_interval(node.arg[0])


def interval_const(an: Analyzer, node: Expr) -> Interval:
    return Interval.point(node.arg[0])


def interval_delta(an: Analyzer, node: Expr) -> Interval:
    return Interval.point(1) if node.arg == 0 else Interval.closed(0, 1)


def interval_add(an: Analyzer, node: Expr) -> Interval:
    total = Interval.point(0)
    for child, coef in zip(node.children, node.arg):
        total = total + an.interval(child).scale(coef)
    return total


def interval_func(an: Analyzer, node: Expr) -> Interval:
    u = an.interval(node.children[0])
    if an.kink_mode and node.arg == "sign" and u.is_zero and not zero_nearby(an, node.children[0]):
        # at a kink, sign(u) of an argument that is 0 only at the point (|x| at x = 0)
        # takes its values beside the point: sign(|x|) is 1 there, not 0
        beside = an.beside.interval(node.children[0]) if an.beside is not None else Interval.real()
        return _sign(beside).hull(Interval.point(0)) if not beside.empty else Interval.closed(-1, 1)
    return FUNCTION_RANGES[node.arg](u)


def zero_nearby(an: Analyzer, node: Expr) -> bool:
    """``node`` is 0 on a neighbourhood of the point examined, not only at it: a zero
    constant, or ``relu(v)`` with ``v < 0`` (``relu(|x| - 1)`` at ``x = 0``)."""
    if node.op == "const":
        return node.arg[0] == 0
    if node.op == "func" and node.arg == "relu":
        return an.interval(node.children[0]).hi < 0
    return False


def interval_pow(an: Analyzer, node: Expr) -> Interval:
    base, exponent = node.children
    b = an.interval(base)
    if exponent.op == "const":
        return power(b, exponent.arg[0], kink=an.kink_mode)
    e = an.interval(exponent)
    if e.lo == e.hi and not e.empty and not e.is_indeterminate:
        return power(b, e.lo, kink=an.kink_mode)
    if e.is_zero:
        return Interval.point(1)
    if b.pos:  # b^e = exp(e log b) > 0
        return Interval.positive()
    return Interval.real()


def interval_mul(an: Analyzer, node: Expr) -> Interval:
    ins, out = node.arg
    groups: dict[tuple[int, tuple[int, ...]], list] = {}
    for child, spec in zip(node.children, ins):
        key = (id(child), spec)
        if key in groups:
            groups[key][1] += 1
        else:
            groups[key] = [child, 1]
    value = Interval.point(1)
    for child, count in groups.values():
        value = value * power(an.interval(child), count, kink=an.kink_mode)
    summed = set().union(*ins) - set(out)
    if summed:
        value = sum_over_axis(value)
    if len(set(out)) != len(out):
        value = value.hull(Interval.point(0))
    return value


def interval_inv(an: Analyzer, node: Expr) -> Interval:
    return Interval.real()


def interval_det(an: Analyzer, node: Expr) -> Interval:
    curv = an.curvature(node.children[0])
    if curv is not None and curv.pd and curv.symmetric:
        return Interval.positive()
    return Interval.real()


def interval_slice(an: Analyzer, node: Expr) -> Interval:
    return an.interval(node.children[0])  # some of the child's entries


def interval_embed(an: Analyzer, node: Expr) -> Interval:
    return an.interval(node.children[0]).hull(Interval.point(0))  # the child's entries and zeros


INTERVAL_RULES: dict[str, Callable[[Analyzer, Expr], Interval]] = {
    "var": interval_var,
    "const": interval_const,
    "delta": interval_delta,
    "add": interval_add,
    "mul": interval_mul,
    "func": interval_func,
    "pow": interval_pow,
    "inv": interval_inv,
    "det": interval_det,
    "slice": interval_slice,
    "embed": interval_embed,
}


# -----------------------------------------------------------------------------------------
# curvature
# -----------------------------------------------------------------------------------------


@dataclass
class Derivation:
    """A matrix fact and how it was shown."""

    curvature: Curvature
    rule: str
    detail: str = ""
    premises: list[Expr] = field(default_factory=list)
    terms: list[tuple[float, Expr]] = field(default_factory=list)  # for expansions


def identity_perm(k: int) -> Perm:
    return tuple(range(k))


def from_interval(iv: Interval) -> Curvature:
    """An order-0 node is a 1x1 matrix: its sign is its curvature."""
    if iv.is_indeterminate:
        return Curvature()
    lower = Modulus(iv.lo, True) if iv.lo > 0 and iv.lo < INF else None
    upper = Modulus(-iv.hi, True) if iv.hi < 0 and iv.hi > -INF else None
    return Curvature(iv.nonneg, iv.nonpos, iv.pos, iv.neg, True, lower, upper)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.6g}"


def curvature_var(an: Analyzer, node: Expr, perms) -> Derivation | None:
    name, order = node.arg
    if order == 0:
        return Derivation(from_interval(an.interval(node)), "sign of a scalar")
    tags = an.matrix_tags(name)
    if order == 2 and perms == (identity_perm(1),):
        if "pd" in tags:
            return Derivation(Curvature(True, False, True, False, True), "assumption", f"{name} is positive definite")
        if "psd" in tags:
            return Derivation(Curvature(True, False, False, False, True), "assumption", f"{name} is PSD")
        if "symmetric" in tags:
            return Derivation(Curvature(symmetric=True), "assumption", f"{name} is symmetric")
    return None


def curvature_const(an: Analyzer, node: Expr, perms) -> Derivation | None:
    c = node.arg[0]
    if node.order == 0:
        return Derivation(from_interval(Interval.point(c)), "constant")
    # c * ones: c times the rank-one matrix 1 1ᵀ
    if c == 0:
        return Derivation(Curvature.zero_matrix(), "zero constant")
    curv = Curvature(psd=c > 0, nsd=c < 0, symmetric=True)
    return Derivation(curv, "constant", f"{c} times the all-ones matrix 1 1ᵀ (rank one)")


def curvature_delta(an: Analyzer, node: Expr, perms) -> Derivation | None:
    if perms != (identity_perm(node.arg),) and identity_perm(node.arg) not in perms:
        return None
    if node.arg == 0:
        return Derivation(from_interval(Interval.point(1)), "constant")
    return Derivation(
        Curvature(True, False, True, False, True, Modulus(1, True)), "identity", "delta is the identity matrix"
    )


def curvature_inv(an: Analyzer, node: Expr, perms) -> Derivation | None:
    if identity_perm(1) not in perms:
        return None
    inner = an.curvature(node.children[0])
    if inner is None:
        return None
    if inner.symmetric and inner.psd:  # invertible and PSD, hence PD; its inverse is PD
        return Derivation(
            Curvature(True, False, True, False, True),
            "inverse",
            "inverse of a positive definite matrix",
            [node.children[0]],
        )
    if inner.symmetric and inner.nsd:
        return Derivation(
            Curvature(False, True, False, True, True),
            "inverse",
            "inverse of a negative definite matrix",
            [node.children[0]],
        )
    return None


def curvature_scalar_only(an: Analyzer, node: Expr, perms) -> Derivation | None:
    if node.order == 0:
        return Derivation(from_interval(an.interval(node)), "sign of a scalar", an.interval(node).describe())
    return None


def curvature_add(an: Analyzer, node: Expr, perms) -> Derivation | None:
    if node.order == 0 and (an.interval(node).nonneg or an.interval(node).nonpos):
        return Derivation(from_interval(an.interval(node)), "sign of a scalar", an.interval(node).describe())
    parts = []
    for child, coef in zip(node.children, node.arg):
        d = an.derive(child, perms)
        if d is None:
            parts = None
            break
        parts.append(d.curvature.scaled(coef))
    if parts is not None:
        total = add_curvatures(parts)
        if total.psd or total.nsd:
            return Derivation(total, "sum", "sum of terms of the same definiteness", list(node.children))
    return expansion_rule(an, node, perms)


def curvature_mul(an: Analyzer, node: Expr, perms) -> Derivation | None:
    ins, out = node.arg
    k = node.order // 2
    best = None
    for perm in perms:
        result = kernel_rule(an, list(zip(node.children, ins)), out, k, perm)
        if result is not None and (result.curvature.psd or result.curvature.nsd):
            if (
                best is None
                or (result.curvature.pd or result.curvature.nd)
                and not (best.curvature.pd or best.curvature.nd)
            ):
                best = result
    if best is not None:
        return best
    if node.order == 0:
        return Derivation(from_interval(an.interval(node)), "sign of a scalar", an.interval(node).describe())
    return expansion_rule(an, node, perms)


CURVATURE_RULES: dict[str, Callable[[Analyzer, Expr, tuple], Derivation | None]] = {
    "var": curvature_var,
    "const": curvature_const,
    "delta": curvature_delta,
    "add": curvature_add,
    "mul": curvature_mul,
    "func": curvature_scalar_only,
    "pow": curvature_scalar_only,
    "inv": curvature_inv,
    "det": curvature_scalar_only,
    "slice": curvature_scalar_only,  # an order-0 slice is an entry: its sign; otherwise unknown
    "embed": curvature_scalar_only,
}


# -----------------------------------------------------------------------------------------
# the congruence / kernel rule
# -----------------------------------------------------------------------------------------


class _UnionFind:
    def __init__(self):
        self.parent: dict[int, int] = {}

    def find(self, a: int) -> int:
        while self.parent.get(a, a) != a:
            a = self.parent[a]
        return a

    def union(self, keep: int, drop: int) -> None:
        keep, drop = self.find(keep), self.find(drop)
        if keep != drop:
            self.parent[drop] = keep


def _ones_value(node: Expr) -> float | None:
    """Value of a tensor of equal entries: a constant, or ``x^0`` (a ones tensor of x's
    shape, as a user may write it; the simplifier turns it into ``1{x.0}``)."""
    value = constant_value(node)
    if value is not None:
        return value
    if node.op == "pow" and constant_value(node.children[1]) == 0:
        return 1.0
    return None


@dataclass
class Normalized:
    """An einsum term after absorbing deltas that pair mirrored output letters."""

    operands: list[tuple[Expr, tuple[int, ...]]]
    left: tuple[int, ...]
    right: tuple[int, ...]  # right[t] is the letter paired with left[t]
    coef: float
    count_factor: bool  # a positive integer factor of unknown size (a sum over a letter of ones)


def normalize_term(operands, out, k: int, perm: Perm, coef: float = 1.0) -> Normalized | None:
    """Rename letters so that deltas pairing ``left[t]`` with ``right[t]`` disappear
    (the letter becomes a diagonal letter: equal on both sides)."""
    uf = _UnionFind()
    out = tuple(out)
    left = out[:k]
    right = tuple(out[k + perm[t]] for t in range(k))
    outputs = set(out)
    pending = list(operands)
    kept: list[tuple[Expr, tuple[int, ...]]] = []
    for child, spec in pending:
        if child.op == "delta" and child.arg > 0:
            n = child.arg
            rest = []
            for t in range(n):
                a, b = uf.find(spec[t]), uf.find(spec[n + t])
                if a == b:
                    continue
                mirrored = any({uf.find(left[s]), uf.find(right[s])} == {a, b} for s in range(k))
                if mirrored:
                    uf.union(a, b)
                elif a not in outputs:
                    uf.union(b, a)
                elif b not in outputs:
                    uf.union(a, b)
                else:
                    rest.append((spec[t], spec[n + t]))
            if rest:
                m = len(rest)
                kept.append((N.delta(m), tuple(p[0] for p in rest) + tuple(p[1] for p in rest)))
            continue
        kept.append((child, spec))
    kept = [(c, tuple(uf.find(x) for x in s)) for c, s in kept]
    left = tuple(uf.find(x) for x in left)
    right = tuple(uf.find(x) for x in right)
    out_letters = set(left) | set(right)
    # constant tensors and x^0 (a ones tensor) only scale
    factor = coef
    count = False
    real: list[tuple[Expr, tuple[int, ...]]] = []
    ones: list[tuple[Expr, tuple[int, ...], float]] = []
    for c, s in kept:
        v = _ones_value(c)
        if v is not None:
            ones.append((c, s, v))
        else:
            real.append((c, s))
    covered = set(out_letters).union(*(set(s) for _, s in real)) if real else set(out_letters)
    for c, s, v in ones:
        factor *= v
        if not set(s) <= covered:
            extra = set(s) - covered
            if extra & out_letters:
                real.append((c, s))  # a broadcast axis: keep it
                factor /= v if v != 0 else 1
                continue
            count = True
            covered |= extra
    if len(set(left)) != len(left):
        return None
    return Normalized(real, left, right, factor, count)


def _find_sigma(norm: Normalized, budget: int = 4000):
    """Yield involutions σ of the letters mapping left[t] to right[t] under which the
    multiset of (operand, spec) is invariant, with the operand matching."""
    ops = norm.operands
    sigma: dict[int, int] = {}
    for a, b in zip(norm.left, norm.right):
        if sigma.get(a, b) != b or sigma.get(b, a) != a:
            return
        sigma[a] = b
        sigma[b] = a
    outputs = set(norm.left) | set(norm.right)
    partner: list[int | None] = [None] * len(ops)
    steps = [0]

    def unify(j: int, jj: int, trail: list[int]) -> bool:
        spec_a, spec_b = ops[j][1], ops[jj][1]
        if j == jj:
            letters = set(spec_a)
            for a in spec_a:
                if a not in sigma:
                    if a in outputs:
                        return False
                    sigma[a] = a
                    trail.append(a)
            return {sigma[a] for a in letters} == letters
        for a, b in zip(spec_a, spec_b):
            if a in sigma:
                if sigma[a] != b:
                    return False
            elif b in sigma:
                if sigma[b] != a:
                    return False
            else:
                if a in outputs or b in outputs:
                    return False
                sigma[a] = b
                sigma[b] = a
                trail.extend({a, b})
        return True

    def search(remaining: list[int]):
        steps[0] += 1
        if steps[0] > budget:
            return
        if not remaining:
            yield list(partner)
            return
        # prefer an operand whose letters are already mapped
        remaining = sorted(remaining, key=lambda j: -sum(a in sigma for a in ops[j][1]))
        j = remaining[0]
        rest = remaining[1:]
        candidates = [j] + [jj for jj in rest if ops[jj][0] is ops[j][0]]
        for jj in candidates:
            trail: list[int] = []
            if unify(j, jj, trail):
                partner[j] = jj
                partner[jj] = j
                yield from search([x for x in rest if x != jj])
                partner[j] = None
                partner[jj] = None
            for a in trail:
                sigma.pop(a, None)

    for assignment in search(list(range(len(ops)))):
        yield dict(sigma), assignment


def _sides(norm: Normalized, sigma: dict[int, int], pairs: list[tuple[int, int]]) -> dict[int, int] | None:
    """Assign every swapped letter a side (0 left, 1 right) so that each paired
    operand lies on one side; None on a conflict."""
    side: dict[int, int] = {}
    for a in norm.left:
        if sigma[a] != a:
            side[a] = 0
    for b in norm.right:
        if sigma[b] != b:
            side[b] = 1
    # constraints: a ~ sigma(a) differ; letters of one paired operand agree
    same: dict[int, set[int]] = {}
    for j, _ in pairs:
        letters = [a for a in norm.operands[j][1] if sigma[a] != a]
        for a in letters:
            same.setdefault(a, set()).update(letters)
    swapped = [a for a in sigma if sigma[a] != a]
    changed = True
    while changed:
        changed = False
        for a in swapped:
            if a in side:
                b = sigma[a]
                if b in side and side[b] == side[a]:
                    return None
                if b not in side:
                    side[b] = 1 - side[a]
                    changed = True
                for c in same.get(a, ()):
                    if c in side and side[c] != side[a]:
                        return None
                    if c not in side:
                        side[c] = side[a]
                        changed = True
        if not changed:
            free = [a for a in swapped if a not in side]
            if free:
                side[free[0]] = 0
                changed = True
    return side


def kernel_rule(an: Analyzer, operands, out, k: int, perm: Perm, coef: float = 1.0) -> Derivation | None:
    """Congruence: PSD when the einsum is ``sum A(l,s) M(s,s') A(r,s')`` with a PSD middle."""
    norm = normalize_term(operands, out, k, perm, coef)
    if norm is None:
        return None
    if not norm.operands:
        # only constants: coef * (identity over diagonal letters) * ones
        diag = all(a == b for a, b in zip(norm.left, norm.right))
        if norm.coef == 0:
            return Derivation(Curvature.zero_matrix(), "zero")
        if diag:
            c = norm.coef
            mod = Modulus(abs(c), True) if not norm.count_factor else None
            curv = Curvature(c > 0, c < 0, c > 0, c < 0, True, mod if c > 0 else None, mod if c < 0 else None)
            return Derivation(curv, "scaled identity", f"{_num(c)} times the identity")
        return None
    tried = 0
    for variant, transposed in _symmetric_variants(an, norm):
        for sigma, partner in _find_sigma(variant):
            tried += 1
            if tried > 200:
                return None
            result = _check_shape(an, variant, sigma, partner)
            if result is not None:
                if transposed:
                    # the certificate states the permutation it used
                    note = "read " + ", ".join(f"{_short(n, 30)} as its transpose (symmetric)" for n in transposed)
                    result.detail = f"{result.detail}; {note}" if result.detail else note
                return result
    return None


MAX_SYMMETRIC_VARIANTS = 4


def is_symmetric_matrix(an: Analyzer, node: Expr) -> bool:
    """Order-2 nodes known to equal their transpose: symmetric-tagged variables,
    deltas, constants, and inverses of those."""
    if node.order != 2:
        return False
    if node.op == "var":
        return bool(an.matrix_tags(node.arg[0]) & SYMMETRIC_TAGS)
    if node.op in ("delta", "const"):
        return True
    if node.op == "inv":
        return is_symmetric_matrix(an, node.children[0])
    return False


def _symmetric_variants(an: Analyzer, norm: Normalized):
    """``norm`` itself, then copies with the index strings of symmetric operands reversed
    (``Y⁻¹[i,j] = Y⁻¹[j,i]``), so that pairings that need a transposition are found;
    each with the list of operands read transposed."""
    yield norm, []
    positions = [
        j for j, (node, spec) in enumerate(norm.operands) if is_symmetric_matrix(an, node) and spec[0] != spec[1]
    ]
    positions = positions[:MAX_SYMMETRIC_VARIANTS]
    for r in range(1, len(positions) + 1):
        for chosen in itertools.combinations(positions, r):
            ops = [(node, spec[::-1] if j in chosen else spec) for j, (node, spec) in enumerate(norm.operands)]
            yield (
                Normalized(ops, norm.left, norm.right, norm.coef, norm.count_factor),
                [norm.operands[j][0] for j in chosen],
            )


SYMMETRIC_TAGS = frozenset({"symmetric", "pd", "psd", "nd", "nsd", "diagonal"})


def square_key(an: Analyzer, node: Expr, spec: tuple[int, ...]) -> tuple[tuple, str]:
    """What makes two scalar factors ``node[spec]`` the same number: the node and its
    index string, up to a transposition only where the node is a symmetric matrix
    variable (the returned note states that permutation for the certificate).

    ``X[i,j] X[j,i]`` has the keys ``(X, ij)`` and ``(X, ji)``: no square, unless
    ``X`` is assumed symmetric.
    """
    if node.op == "var" and node.arg[1] == 2 and an.matrix_tags(node.arg[0]) & SYMMETRIC_TAGS:
        canonical = min(spec, spec[::-1])
        if canonical != spec or spec[::-1] != spec:
            name = node.arg[0]
            return (id(node), canonical), f"{name}[ji] = {name}[ij] ({name} symmetric)"
    return (id(node), spec), ""


def _check_shape(an: Analyzer, norm: Normalized, sigma, partner) -> Derivation | None:
    ops = norm.operands
    pairs, singles = [], []
    for j, jj in enumerate(partner):
        if jj == j:
            singles.append(j)
        elif j < jj:
            pairs.append((j, jj))
    fixed = {a for a, b in sigma.items() if a == b}
    # pairs with no swapped letters are squares of scalars
    scalar_groups: list[tuple[Expr, tuple[int, ...], int]] = []
    true_pairs = []
    for j, jj in pairs:
        if all(a in fixed for a in ops[j][1]):
            # unify() mapped every letter of ops[j] to the letter at the same place of
            # ops[jj], all fixed: the two specs are equal, so this really is a square
            if ops[j][1] != ops[jj][1]:
                return None
            scalar_groups.append((ops[j][0], ops[j][1], 2))
        else:
            true_pairs.append((j, jj))
    side = _sides(norm, sigma, true_pairs)
    if side is None:
        return None
    oriented = []
    for j, jj in true_pairs:
        letters = [a for a in ops[j][1] if sigma[a] != a]
        oriented.append((j, jj) if side[letters[0]] == 0 else (jj, j))
    kernels = []
    for j in singles:
        spec = ops[j][1]
        if all(a in fixed for a in spec):
            scalar_groups.append((ops[j][0], spec, 1))
            continue
        if any(a in fixed for a in spec) or len(set(spec)) != len(spec):
            return None
        kernels.append(j)
    # sign of the scalar middle (squares counted once, with exponent 2)
    merged: dict[tuple, list] = {}
    for node, spec, count in scalar_groups:
        # two factors are one square only when they read the same entries: the same
        # node with the same index string (X[i,j] X[j,i] is no square: tr(X X))
        key, spec_note = square_key(an, node, spec)
        entry = merged.setdefault(key, [node, 0, spec_note])
        entry[1] += count
    scalar = Interval.point(1.0)
    for node, count, _note in merged.values():
        scalar = scalar * power(an.interval(node), count, kink=an.kink_mode)
    scalar = scalar.scale(norm.coef)
    if scalar.is_indeterminate:
        return None
    sign = 1
    kernel_curvs = []
    for j in kernels:
        node, spec = ops[j]
        h = node.order // 2
        if node.order % 2:
            return None
        left_pos = [t for t, a in enumerate(spec) if side[a] == 0]
        partner_pos = {t: spec.index(sigma[spec[t]]) for t in left_pos}
        if left_pos == list(range(h)) and all(partner_pos[t] == t + h for t in left_pos):
            pass
        elif left_pos == list(range(h, 2 * h)) and all(partner_pos[t] == t - h for t in left_pos):
            pass
        else:
            return None
        curv = an.curvature(node)
        if curv is None:
            return None
        if curv.zero:
            return Derivation(Curvature.zero_matrix(), "zero factor", f"the factor {_short(node)} is zero", [node])
        if curv.psd:
            kernel_curvs.append(curv)
        elif curv.nsd:
            sign = -sign
            kernel_curvs.append(curv.negated())
        else:
            return None
    if len(kernel_curvs) > 1 and not all(c.symmetric for c in kernel_curvs):
        return None
    if scalar.is_zero:
        return Derivation(Curvature.zero_matrix(), "zero", "a factor is zero")
    if scalar.nonneg:
        psd_sign = sign
    elif scalar.nonpos:
        psd_sign = -sign
    else:
        return None
    strict = scalar.pos or scalar.neg
    # definiteness: no A factors, no summed swapped letters, every position covered
    swapped_summed = [a for a in sigma if sigma[a] != a and a not in set(norm.left) | set(norm.right)]
    covered = {t for t in range(len(norm.left)) if norm.left[t] == norm.right[t]}
    for j in kernels:
        for a in ops[j][1]:
            if a in norm.left:
                covered.add(norm.left.index(a))
    definite = (
        strict
        and not oriented
        and not swapped_summed
        and len(covered) == len(norm.left)
        and all(c.pd for c in kernel_curvs)
        and not norm.count_factor
    )
    lower = None
    if definite:
        # diag(d) ⊗ K1 ⊗ K2 ...: the smallest eigenvalue is min d times theirs
        magnitude = scalar if psd_sign > 0 else -scalar
        text = _modulus_text(an, norm, merged)
        if text is not None:
            lower = Modulus(magnitude.lo, magnitude.pos, text)
        elif magnitude.lo > 0:
            lower = Modulus(magnitude.lo, True)
        for c in kernel_curvs:
            if lower is None:
                break
            lower = lower * c.lower if c.lower is not None and c.lower.strong else None
        if lower is not None and not lower.strong:
            lower = None
    curv = Curvature(
        psd=psd_sign > 0,
        nsd=psd_sign < 0,
        pd=definite and psd_sign > 0,
        nd=definite and psd_sign < 0,
        symmetric=all(c.symmetric for c in kernel_curvs),
        lower=lower if psd_sign > 0 else None,
        upper=lower if psd_sign < 0 else None,
    )
    premises = [ops[j][0] for j, _ in oriented] + [e[0] for e in merged.values()] + [ops[j][0] for j in kernels]
    return Derivation(
        curv, _rule_name(oriented, kernels, norm), _shape_text(an, norm, oriented, merged, kernels, scalar), premises
    )


def _modulus_text(an: Analyzer, norm: Normalized, merged) -> str | None:
    """The eigenvalue bound as an expression, when it is a constant of parameters."""
    nodes = [e[0] for e in merged.values()]
    if not nodes or any(n.order != 0 for n in nodes):
        return None
    if any(set(n.variables) & an.wrt_names for n in nodes):
        return None
    c = abs(norm.coef)
    factors = [str(n) if n.op in ("var", "const") else f"({n})" for n in nodes]
    counts = [e[1] for e in merged.values()]
    parts = [f if cnt == 1 else f"{f}^{cnt}" for f, cnt in zip(factors, counts)]
    if c != 1 or not parts:
        parts.insert(0, _num(c))
    return " ".join(parts)


def _rule_name(oriented, kernels, norm) -> str:
    if oriented:
        return "congruence A M Aᵀ"
    if kernels:
        return "product of semidefinite kernels"
    if all(a == b for a, b in zip(norm.left, norm.right)):
        return "diagonal"
    return "scaled constant"


def _short(node: Expr, limit: int = 70) -> str:
    try:
        text = str(node)
    except Exception:  # noqa: BLE001 - printing a huge node
        return f"<{node.op} node>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape_text(an, norm: Normalized, oriented, merged, kernels, scalar: Interval) -> str:
    ops = norm.operands
    parts = []
    if oriented:
        parts.append("A = " + " ⊙ ".join(_short(ops[j][0], 50) for j, _ in oriented))
    mids = [_short(e[0], 50) for e in merged.values()]
    mids += [e[2] for e in merged.values() if e[2]]
    if mids or norm.coef != 1:
        parts.append(f"scalar middle {' · '.join(mids) or _num(norm.coef)} {scalar.describe()}")
    if kernels:
        parts.append("kernels " + ", ".join(_short(ops[j][0], 50) for j in kernels))
    return "; ".join(parts)


# -----------------------------------------------------------------------------------------
# expansion: distribute products over sums, then sum rule and the PSD template
# -----------------------------------------------------------------------------------------

MAX_EXPANDED_TERMS = 32


def expand_terms(node: Expr, coef: float = 1.0, depth: int = 0) -> list[tuple[float, Expr]] | None:
    """``node`` as a list of (coefficient, product) terms, distributing products over
    the sums among their operands that carry an output letter."""
    from ..simplifier import simplify

    if depth > 4:
        return [(coef, node)]
    if node.op == "add":
        result: list[tuple[float, Expr]] = []
        for child, c in zip(node.children, node.arg):
            part = expand_terms(child, coef * c, depth + 1)
            if part is None:
                return None
            result.extend(part)
            if len(result) > MAX_EXPANDED_TERMS:
                return None
        return result
    if node.op == "mul":
        ins, out = node.arg
        outs = set(out)
        choices = []
        distributed = False
        for child, spec in zip(node.children, ins):
            if child.op == "add" and child.order > 0 and set(spec) & outs:
                choices.append(list(zip(child.children, child.arg)))
                distributed = True
            else:
                choices.append([(child, 1)])
        if not distributed:
            return [(coef, node)]
        total = 1
        for c in choices:
            total *= len(c)
        if total > MAX_EXPANDED_TERMS:
            return None
        result = []
        for combo in itertools.product(*choices):
            factor = coef
            for _, c in combo:
                factor *= c
            try:
                term = simplify(N.mul([c for c, _ in combo], ins, out))
            except TensCalcError:  # a simplifier failure proves nothing: no expansion
                return None
            part = expand_terms(term, factor, depth + 1)
            if part is None:
                return None
            result.extend(part)
            if len(result) > MAX_EXPANDED_TERMS:
                return None
        return result
    return [(coef, node)]


def factor_scalar_sums(term: Expr) -> Expr:
    """A product whose operands fall into groups sharing no letter, one of which touches
    no output letter, written with that group as a separate scalar sum node:
    ``x^0.5 *(i,j->jj) x^-1.5`` becomes ``(x^0.5 *(i,->) ) *(,j->jj) x^-1.5`` — the sum is
    then an atom the PSD template can use as a denominator (``(Σ√x)²``).

    >>> import tenscalc as tc
    >>> t = tc.parse("x *(i,j->j) y", {"x": 1, "y": 1})
    >>> [c.order for c in factor_scalar_sums(t).children]
    [1, 0]
    """
    if term.op != "mul":
        return term
    ins, out = term.arg
    n = len(ins)
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    owner: dict[int, int] = {}
    for j, spec in enumerate(ins):
        for letter in spec:
            if letter in owner:
                parent[find(j)] = find(owner[letter])
            else:
                owner[letter] = j
    groups: dict[int, list[int]] = {}
    for j in range(n):
        groups.setdefault(find(j), []).append(j)
    outs = set(out)
    scalar_groups = [
        g for g in groups.values() if not (set().union(*(set(ins[j]) for j in g)) & outs) and any(ins[j] for j in g)
    ]
    if not scalar_groups or len(scalar_groups) == len(groups):
        return term
    in_scalar = {j for g in scalar_groups for j in g}
    operands = [term.children[j] for j in range(n) if j not in in_scalar]
    specs = [ins[j] for j in range(n) if j not in in_scalar]
    for g in scalar_groups:
        operands.append(N.mul([term.children[j] for j in g], [ins[j] for j in g], ()))
        specs.append(())
    return N.mul(operands, specs, out)


def expansion_rule(an: Analyzer, node: Expr, perms) -> Derivation | None:
    terms = expand_terms(node)
    if terms is None or (len(terms) == 1 and terms[0][0] == 1 and terms[0][1] is node):
        return None
    merged: dict[int, list] = {}
    for c, t in terms:
        if t.op == "const" and t.arg[0] == 0:
            continue
        if id(t) in merged:
            merged[id(t)][0] += c
        else:
            merged[id(t)] = [c, t]
    terms = [(c, t) for c, t in merged.values() if c != 0]
    if not terms:
        return Derivation(Curvature.zero_matrix(), "expansion", "the terms cancel")
    derived = []
    for _c, t in terms:
        if t is node:
            derived.append(None)
            continue
        derived.append(an.derive(t, perms))
    parts = [d.curvature.scaled(c) if d is not None else Curvature() for d, (c, _) in zip(derived, terms)]
    total = add_curvatures(parts)
    detail = f"distributed into {len(terms)} terms"
    if total.psd or total.nsd:
        return Derivation(total, "sum (after distributing)", detail, [t for _, t in terms], terms)
    # sums inside a term become separate scalar nodes (denominators for the template)
    terms = [(c, factor_scalar_sums(t)) for c, t in terms]
    opaque = opaque_bases([t for _, t in terms])
    for sign in (1, -1):
        result = cauchy_schwarz(an, terms, parts, perms, sign, opaque)
        if result is not None:
            curv, text = result
            return Derivation(curv, "PSD template (Cauchy-Schwarz)", detail + "; " + text, [t for _, t in terms], terms)
    for sign in (1, -1):
        result = merged_diagonal(an, terms, parts, perms, sign, opaque)
        if result is not None:
            curv, text = result
            return Derivation(curv, "diagonal terms combined", detail + "; " + text, [t for _, t in terms], terms)
    return None


# -----------------------------------------------------------------------------------------
# the PSD template
# -----------------------------------------------------------------------------------------


def _interval_of(an: Analyzer):
    def get(node: Expr) -> Interval | None:
        return an.interval(node)

    return get


def _product_monomial(an, pairs, position_of, opaque=frozenset()) -> tuple[float, tuple] | None:
    """Monomial (with its constant) of a product of operands whose letters map to positions."""
    value = 1.0
    mono: tuple = ()
    for child, spec in pairs:
        try:
            positions = tuple(position_of[a] for a in spec)
        except KeyError:
            return None
        poly = expand(child, positions, _interval_of(an), opaque=opaque)
        if poly is None or len(poly) != 1:
            return None
        ((m, c),) = poly.items()
        value *= c
        mono = mono_mul(mono, m)
    return value, mono


def _mono_interval(an, mono) -> Interval:
    from .algebra import monomial_interval

    return monomial_interval(mono, _interval_of(an))


def _canonical(mono) -> tuple:
    return tuple(sorted((a[0].serial, a[1], round(float(e), 9)) for a, e in mono))


@dataclass
class _Frame:
    """How a term's letters map to monomial positions: output axes 0..k-1 (a right
    letter to its partner's position), summed "batch" letters k, k+1, ..."""

    norm: Normalized
    position_of: dict[int, int]
    batch: list[int]
    node: Expr


def _frame(an, t: Expr, coef: float, k: int, perm: Perm, graph) -> _Frame | None:
    if t.op != "mul":
        return None
    ins, out = t.arg
    norm = normalize_term(list(zip(t.children, ins)), out, k, perm, coef)
    if norm is None or norm.count_factor:
        return None
    position_of: dict[int, int] = {}
    for s_, a in enumerate(norm.left):
        position_of[a] = s_
    for s_, b in enumerate(norm.right):
        if position_of.get(b, s_) != s_:
            return None
        position_of[b] = s_
    summed = sorted({a for _, spec in norm.operands for a in spec} - set(position_of))
    slots = graph.letter_slots.get(id(t)) if graph is not None else None
    if summed:
        # order the batch letters by their axis class, so that two terms agree
        if slots is None or any(a not in slots for a in summed):
            return None
        classes = [graph.find(slots[a]) for a in summed]
        if len(set(classes)) != len(classes):
            return None
        summed = [a for _, a in sorted(zip(classes, summed))]
    for j, a in enumerate(summed):
        position_of[a] = k + j
    return _Frame(norm, position_of, summed, t)


def _batch_classes(graph, frame: _Frame) -> tuple:
    slots = graph.letter_slots.get(id(frame.node)) if graph is not None else None
    if not frame.batch:
        return ()
    return tuple(graph.find(slots[a]) for a in frame.batch)


def split_sides(operands, left_letters: set, right_letters: set):
    """The operands of a product read as a matrix: those with left letters, those
    with right letters and those with neither; None when one has both (then the
    product does not factor into a left and a right part)."""
    left, right, neither = [], [], []
    for child, spec in operands:
        letters = set(spec)
        if letters & left_letters and letters & right_letters:
            return None
        group = left if letters & left_letters else right if letters & right_letters else neither
        group.append((child, spec))
    return left, right, neither


def _diag_form(an, frame: _Frame, opaque):
    """``D(l, r) = sum_B A(l_c, B) A(r_c, B) [l_t = r_t] d(l_t, B)``: (value, pc, A monomial,
    d monomial), where pc are the positions of the congruence factor A."""
    norm = frame.norm
    k = len(norm.left)
    pt = [t for t in range(k) if norm.left[t] == norm.right[t]]
    if not pt:
        return None
    pc = [t for t in range(k) if t not in pt]
    lc = {norm.left[t] for t in pc}
    rc = {norm.right[t] for t in pc}
    diag_letters = {norm.left[t] for t in pt}
    sides = split_sides(norm.operands, lc, rc)
    if sides is None:
        return None
    a_left, a_right, rest = sides
    if any(set(spec) & diag_letters for _, spec in a_left + a_right):
        return None
    gl = _product_monomial(an, a_left, frame.position_of, opaque)
    gr = _product_monomial(an, a_right, frame.position_of, opaque)
    gd = _product_monomial(an, rest, frame.position_of, opaque)
    if gl is None or gr is None or gd is None or _canonical(gl[1]) != _canonical(gr[1]):
        return None
    return norm.coef * gl[0] * gr[0] * gd[0], tuple(pc), gl[1], gd[1]


def _rank_form(an, frame: _Frame, pc: tuple, opaque):
    """``R(l, r) = sum_B A(l_c, B) A(r_c, B) h(B) u(l_t, B) u(r_t, B)``: (value, A, u, h)."""
    norm = frame.norm
    k = len(norm.left)
    if len(set(norm.left) | set(norm.right)) != 2 * k:
        return None
    lset, rset = set(norm.left), set(norm.right)
    sides = split_sides(norm.operands, lset, rset)
    if sides is None:
        return None
    lefts, rights, scalars = sides
    gl = _product_monomial(an, lefts, frame.position_of, opaque)
    gr = _product_monomial(an, rights, frame.position_of, opaque)
    gs = _product_monomial(an, scalars, frame.position_of, opaque)
    if gl is None or gr is None or gs is None or _canonical(gl[1]) != _canonical(gr[1]):
        return None
    pcs, pts = set(pc), set(range(k)) - set(pc)
    a_part, u_part, h_part = [], [], list(gs[1])
    for atom, e in gl[1]:
        positions = {p for p in atom[1] if p < k}
        if positions & pcs and positions & pts:
            return None
        if positions & pcs:
            a_part.append((atom, e))
        elif positions & pts:
            u_part.append((atom, e))
        else:  # depends on batch letters only: appears on both sides, a square
            h_part.append((atom, 2 * e))
    h = ()
    for atom, e in h_part:
        h = mono_mul(h, ((atom, e),))
    return norm.coef * gl[0] * gr[0] * gs[0], tuple(a_part), tuple(u_part), h


def cauchy_schwarz(an: Analyzer, terms, parts, perms, sign: int, opaque=frozenset()):
    """Pair each non-PSD term ``-sum_B (a aᵀ) ⊗ h u uᵀ`` with a term ``sum_B (a aᵀ) ⊗ diag(d)``
    such that, for every batch index B, ``h sum_l u_l^2 / d_l <= 1`` (Cauchy-Schwarz):
    then ``(a aᵀ) ⊗ (diag(d) - h u uᵀ)`` is PSD for each B.  The other terms must be PSD.
    ``sign=-1`` checks NSD instead (all coefficients negated)."""
    from ..core.axes import axis_graph

    k = terms[0][1].order // 2
    members = [t for _, t in terms]
    specs, start = [], 0
    for node in members:
        specs.append(tuple(range(start, start + node.order)))
        start += node.order
    try:
        graph = axis_graph(N.mul(members, specs, tuple(range(start))))
    except Exception:  # noqa: BLE001 - no axis information: no claim
        return None
    for perm in perms:
        frames = [_frame(an, t, c * sign, k, perm, graph) for c, t in terms]
        used: set[int] = set()
        ok = True
        notes = []
        for i, part in enumerate(parts):
            signed = part if sign > 0 else part.negated()
            if signed.psd:
                continue
            if frames[i] is None:
                ok = False
                break
            found = None
            for j, frame_d in enumerate(frames):
                if j == i or j in used or frame_d is None:
                    continue
                if _batch_classes(graph, frame_d) != _batch_classes(graph, frames[i]):
                    continue
                diag = _diag_form(an, frame_d, opaque)
                if diag is None or diag[0] <= 0:
                    continue
                rank = _rank_form(an, frames[i], diag[1], opaque)
                if rank is None or rank[0] >= 0:
                    continue
                check = _cs_condition(an, graph, diag, rank, frames[i], opaque)
                if check is not None:
                    found = (j, check)
                    break
            if found is None:
                ok = False
                break
            used.add(found[0])
            notes.append(found[1])
        if ok and notes:
            remaining = [(p if sign > 0 else p.negated()) for i, p in enumerate(parts) if i not in used]
            remaining = [p for p in remaining if p.psd]
            curv = Curvature(psd=True, symmetric=all(p.symmetric for p in remaining))
            return (curv if sign > 0 else curv.negated()), "; ".join(notes)
    return None


def _cs_condition(an, graph, diag, rank, frame: _Frame, opaque) -> str | None:
    """Whether ``D + R`` is PSD: ``sum_l |c_R| h u_l^2 / (c_D d_l) <= 1`` for every batch index."""
    d_value, pc, a_diag, d_mono = diag
    r_value, a_rank, u_mono, h_mono = rank
    if _canonical(a_diag) != _canonical(a_rank):
        return None
    iv = _interval_of(an)
    if not _mono_interval(an, d_mono).scale(d_value).nonneg or not _mono_interval(an, h_mono).nonneg:
        return None
    k = len(frame.norm.left)
    ratio_value = -r_value / d_value
    ratio = mono_mul(mono_mul(h_mono, mono_pow(u_mono, 2)), mono_pow(d_mono, -1))
    # division by d is only allowed where d = 0 forces u = 0
    u2 = dict(mono_pow(u_mono, 2))
    for atom, e in d_mono:
        if e > 0 and not (iv(atom[0]) or Interval.real()).nonzero and u2.get(atom, 0) < e:
            return None
    pt = [t for t in range(k) if t not in pc]
    for atom, e in ratio:
        if abs(e + 1) > 1e-9 or any(p < k for p in atom[1]):
            continue
        rest = tuple((a, x) for a, x in ratio if a != atom)
        if any(all(p >= k for p in a[1]) for a, _ in rest):
            continue
        bound = _sum_bound(an, graph, atom, rest, ratio_value, frame, pt, opaque)
        if bound is not None:
            return bound
    return None


def _linear_parts(node: Expr, coef: float = 1.0, depth: int = 0) -> list[tuple[float, Expr]]:
    if node.op == "add" and depth < 6:
        out = []
        for child, c in zip(node.children, node.arg):
            out.extend(_linear_parts(child, coef * c, depth + 1))
        return out
    return [(coef, node)]


def _sum_bound(an, graph, atom, rest, C: float, frame: _Frame, pt: list[int], opaque) -> str | None:
    """``sum_l C rest(l, B) <= denominator(B)`` where ``rest`` is the summand of a sum node
    ``s(B) = sum_l w(l, B)`` and the denominator is ``alpha s + (terms >= 0)`` with ``alpha >= C``."""
    denominator, atom_positions = atom
    parts = _linear_parts(denominator)
    for _alpha, s in parts:
        if s.op != "mul" or s.order != len(atom_positions):
            continue
        others = [(c, n) for c, n in parts if n is not s]
        alpha_total = sum(c for c, n in parts if n is s)
        if alpha_total <= 0 or not all(an.interval(n).scale(c).nonneg for c, n in others):
            continue
        ins, out = s.arg
        if len(set(out)) != len(out):
            continue
        summed = sorted(set().union(*ins) - set(out))
        if len(summed) != len(pt):
            continue
        for order in itertools.permutations(pt):
            position_of = {a: order[i] for i, a in enumerate(summed)}
            position_of.update({a: atom_positions[j] for j, a in enumerate(out)})
            got = _product_monomial(an, list(zip(s.children, ins)), position_of, opaque)
            if got is None:
                continue
            value, mono = got
            if value <= 0 or _canonical(mono) != _canonical(rest):
                continue
            if C / value > alpha_total * (1 + 1e-12):
                continue
            if not _mono_interval(an, mono).scale(value).nonneg:
                continue
            if not _same_lengths(graph, frame, s, summed, order, out, atom_positions):
                continue
            extra = " + nonnegative terms" if others else ""
            batch = " for each batch index" if frame.batch else ""
            return (
                f"diag(D) - h u uᵀ with sum_l h u_l²/D_l = {_num(C / value)} · sum / ({_num(alpha_total)} · "
                f"sum{extra}) <= 1{batch}, where sum = {_short(s, 60)}"
            )
    return None


def _same_lengths(graph, frame: _Frame, s: Expr, summed, order, out, atom_positions) -> bool:
    """The letters of ``s`` run over the same axes as the positions they are matched to."""
    slots = graph.letter_slots.get(id(s))
    term_slots = graph.letter_slots.get(id(frame.node))
    if slots is None or term_slots is None:
        return False
    classes = graph.classes(frame.node)
    k = len(frame.norm.left)
    for a, p in list(zip(summed, order)) + list(zip(out, atom_positions)):
        if p < k:
            target = classes[p]
        else:
            target = graph.find(term_slots[frame.batch[p - k]])
        if graph.find(slots[a]) != target:
            return False
    return True


def merged_diagonal(an: Analyzer, terms, parts, perms, sign: int, opaque=frozenset()):
    """The diagonal terms together form ``diag(sum_t c_t d_t)``: PSD when that entry is
    >= 0 (decided after clearing denominators and cancelling); the rest must be PSD."""
    k = terms[0][1].order // 2
    for perm in perms:
        total: dict = {}
        used = []
        for i, (c, t) in enumerate(terms):
            frame = _frame(an, t, c * sign, k, perm, None)
            if frame is None or frame.batch:
                continue
            diag = _diag_form(an, frame, opaque)
            if diag is None or diag[1]:
                continue
            value, _pc, _a, mono = diag
            total[mono] = total.get(mono, 0) + value
            used.append(i)
        if len(used) < 2:
            continue
        rest = [(p if sign > 0 else p.negated()) for i, p in enumerate(parts) if i not in used]
        entry = poly_rational_interval({m: v for m, v in total.items() if v != 0}, _interval_of(an), opaque)
        if entry is None:
            continue
        psd = entry.nonneg and all(p.psd for p in rest)
        nsd = entry.nonpos and all(p.nsd for p in rest)
        if not (psd or nsd):
            continue
        curv = Curvature(psd=psd, nsd=nsd, symmetric=all(p.symmetric for p in rest))
        note = f"the {len(used)} diagonal terms sum to a diagonal with entries {entry.describe()}"
        return (curv if sign > 0 else curv.negated()), note
    return None
