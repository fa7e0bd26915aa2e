"""Congruence: an einsum that pairs up as ``A M Aᵀ`` around a PSD middle is PSD.

:func:`kernel_rule` reads a product of order ``2k`` as a matrix: after
absorbing the deltas that pair mirrored output letters (:func:`normalize_term`),
it looks for an involution of the letters that swaps the left and right output
letters and maps the operands onto each other (``A[l, s] ... A[r, s']``); the
operands it fixes form the middle, which must be a product of nonnegative
scalars and PSD kernels.  This covers ``Xᵀ X``, ``v vᵀ``, ``diag(d)`` with
``d >= 0``, Kronecker and Hadamard products of PSD matrices (Klaus et al.,
NeurIPS 2022, phrased for n-ary einsum nodes).  Symmetric operands may be read
transposed; the certificate says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from ..core import nodes as N
from ..core.letters import LetterClasses
from ..core.nodes import Expr
from ..core.products import constant_value
from .derivation import Derivation, FactSource, Perm, short_text
from .facts import Curvature, Interval, Modulus, number_text, power


def ones_value(node: Expr) -> float | None:
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
    (the letter becomes a diagonal letter: equal on both sides).  A delta pairing two
    output letters that are not mirrored stays; every other delta joins its letters
    into one class, named by :class:`~tenscalc.core.letters.LetterClasses`."""
    uf = LetterClasses()
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
                output_classes = {uf.find(x) for x in outputs}
                if mirrored or a not in output_classes or b not in output_classes:
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
        v = ones_value(c)
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


def kernel_rule(an: FactSource, operands, out, k: int, perm: Perm, coef: float = 1.0) -> Derivation | None:
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
            return Derivation(curv, "scaled identity", f"{number_text(c)} times the identity")
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
                    note = "read " + ", ".join(f"{short_text(n, 30)} as its transpose (symmetric)" for n in transposed)
                    result.detail = f"{result.detail}; {note}" if result.detail else note
                return result
    return None


MAX_SYMMETRIC_VARIANTS = 4


def is_symmetric_matrix(an: FactSource, node: Expr) -> bool:
    """Order-2 nodes known to equal their transpose: symmetric-tagged variables,
    deltas, constants, and inverses of those (:data:`SYMMETRIC_MATRIX_RULES`)."""
    return node.order == 2 and SYMMETRIC_MATRIX_RULES[node.op](an, node)


def _never_known_symmetric(an: FactSource, node: Expr) -> bool:
    """Not applicable: no rule shows a matrix of this kind symmetric."""
    return False


SYMMETRIC_MATRIX_RULES: dict[str, Callable[[FactSource, Expr], bool]] = {
    "var": lambda an, node: bool(an.matrix_tags(node.arg[0]) & SYMMETRIC_TAGS),
    "const": lambda an, node: True,
    "delta": lambda an, node: True,
    "add": _never_known_symmetric,
    "mul": _never_known_symmetric,
    "func": _never_known_symmetric,
    "pow": _never_known_symmetric,
    "inv": lambda an, node: is_symmetric_matrix(an, node.children[0]),
    "det": _never_known_symmetric,
    "adj": lambda an, node: node.arg == 1 and is_symmetric_matrix(an, node.children[0]),  # adj(X)ᵀ = adj(Xᵀ)
    "slice": _never_known_symmetric,
    "embed": _never_known_symmetric,
}
"""Whether an order-2 node of each kind equals its transpose (read transposed by :func:`kernel_rule`)."""


def _symmetric_variants(an: FactSource, norm: Normalized):
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


def square_key(an: FactSource, node: Expr, spec: tuple[int, ...]) -> tuple[tuple, str]:
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
            return (node, canonical), f"{name}[ji] = {name}[ij] ({name} symmetric)"
    return (node, spec), ""


def _check_shape(an: FactSource, norm: Normalized, sigma, partner) -> Derivation | None:
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
            return Derivation(Curvature.zero_matrix(), "zero factor", f"the factor {short_text(node)} is zero", [node])
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


def _modulus_text(an: FactSource, norm: Normalized, merged) -> str | None:
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
        parts.insert(0, number_text(c))
    return " ".join(parts)


def _rule_name(oriented, kernels, norm) -> str:
    if oriented:
        return "congruence A M Aᵀ"
    if kernels:
        return "product of semidefinite kernels"
    if all(a == b for a, b in zip(norm.left, norm.right)):
        return "diagonal"
    return "scaled constant"


def _shape_text(an, norm: Normalized, oriented, merged, kernels, scalar: Interval) -> str:
    ops = norm.operands
    parts = []
    if oriented:
        parts.append("A = " + " ⊙ ".join(short_text(ops[j][0], 50) for j, _ in oriented))
    mids = [short_text(e[0], 50) for e in merged.values()]
    mids += [e[2] for e in merged.values() if e[2]]
    if mids or norm.coef != 1:
        parts.append(f"scalar middle {' · '.join(mids) or number_text(norm.coef)} {scalar.describe()}")
    if kernels:
        parts.append("kernels " + ", ".join(short_text(ops[j][0], 50) for j in kernels))
    return "; ".join(parts)
