"""Curvature: semidefiniteness of a node read as a matrix, one rule per node kind.

``CURVATURE_RULES[kind](facts, node, perms) -> Derivation | None`` tells, for a
node of order ``2k`` read as a matrix over its first and last ``k`` axes (the
last ones permuted by one of ``perms``), whether it is PSD / NSD / PD / zero,
with the rule that showed it.  Order-0 nodes are 1x1 matrices: their sign is
their curvature.  Sums are PSD when their terms are (:func:`curvature_add`);
products go to the congruence rule (:mod:`.congruence`); both fall back on
distributing products over sums (:mod:`.expansion`).  The kinds whose matrices
no rule reads (``func``, ``pow``, ``det``, ``slice``, ``embed``) have the
explicit entry :func:`curvature_scalar_only`: the sign of a scalar, nothing
for a matrix.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.nodes import Expr
from .congruence import kernel_rule
from .derivation import Derivation, FactSource, identity_perm
from .expansion import expansion_rule
from .facts import INF, Curvature, Interval, Modulus, add_curvatures


def from_interval(iv: Interval) -> Curvature:
    """An order-0 node is a 1x1 matrix: its sign is its curvature."""
    if iv.is_indeterminate:
        return Curvature()
    lower = Modulus(iv.lo, True) if iv.lo > 0 and iv.lo < INF else None
    upper = Modulus(-iv.hi, True) if iv.hi < 0 and iv.hi > -INF else None
    return Curvature(iv.nonneg, iv.nonpos, iv.pos, iv.neg, True, lower, upper)


def curvature_var(an: FactSource, node: Expr, perms) -> Derivation | None:
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


def curvature_const(an: FactSource, node: Expr, perms) -> Derivation | None:
    c = node.arg[0]
    if node.order == 0:
        return Derivation(from_interval(Interval.point(c)), "constant")
    # c * ones: c times the rank-one matrix 1 1ᵀ
    if c == 0:
        return Derivation(Curvature.zero_matrix(), "zero constant")
    curv = Curvature(psd=c > 0, nsd=c < 0, symmetric=True)
    return Derivation(curv, "constant", f"{c} times the all-ones matrix 1 1ᵀ (rank one)")


def curvature_delta(an: FactSource, node: Expr, perms) -> Derivation | None:
    if perms != (identity_perm(node.arg),) and identity_perm(node.arg) not in perms:
        return None
    if node.arg == 0:
        return Derivation(from_interval(Interval.point(1)), "constant")
    return Derivation(
        Curvature(True, False, True, False, True, Modulus(1, True)), "identity", "delta is the identity matrix"
    )


def curvature_inv(an: FactSource, node: Expr, perms) -> Derivation | None:
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


def curvature_scalar_only(an: FactSource, node: Expr, perms) -> Derivation | None:
    """The entry of the kinds with no matrix rule: an order-0 node's sign, else no claim."""
    if node.order == 0:
        return Derivation(from_interval(an.interval(node)), "sign of a scalar", an.interval(node).describe())
    return None


def curvature_add(an: FactSource, node: Expr, perms) -> Derivation | None:
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


def curvature_mul(an: FactSource, node: Expr, perms) -> Derivation | None:
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


CURVATURE_RULES: dict[str, Callable[[FactSource, Expr, tuple], Derivation | None]] = {
    "var": curvature_var,
    "const": curvature_const,
    "delta": curvature_delta,
    "add": curvature_add,
    "mul": curvature_mul,
    "func": curvature_scalar_only,
    "pow": curvature_scalar_only,
    "inv": curvature_inv,
    "det": curvature_scalar_only,
    "adj": curvature_scalar_only,
    "slice": curvature_scalar_only,  # an order-0 slice is an entry: its sign; otherwise unknown
    "embed": curvature_scalar_only,
}
