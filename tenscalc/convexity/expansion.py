"""Expansion: distribute products over sums, then the sum rule and the PSD templates.

When no rule reads a sum or product whole, :func:`expansion_rule` writes it as
a list of ``(coefficient, product)`` terms (:func:`expand_terms`), merges equal
terms and derives each: a sum of terms of one definiteness is semidefinite.
Failing that, sums inside a term become separate scalar nodes
(:func:`factor_scalar_sums`) and the terms are handed to the templates of
:mod:`.psd_templates` (Cauchy-Schwarz, combined diagonals).
"""

from __future__ import annotations

import itertools

from ..core import nodes as N
from ..core.letters import LetterClasses
from ..core.nodes import Expr
from ..errors import TensCalcError
from .algebra import opaque_bases
from .derivation import Derivation, FactSource
from .facts import Curvature, add_curvatures
from .psd_templates import cauchy_schwarz, merged_diagonal

MAX_EXPANDED_TERMS = 32


def _gather(result: list[tuple[float, Expr]], part: list[tuple[float, Expr]] | None) -> bool:
    """Add the terms of ``part`` to ``result``; False when ``part`` has no expansion
    or the terms exceed :data:`MAX_EXPANDED_TERMS`."""
    if part is None:
        return False
    result.extend(part)
    return len(result) <= MAX_EXPANDED_TERMS


def expand_terms(node: Expr, coef: float = 1.0, depth: int = 0) -> list[tuple[float, Expr]] | None:
    """``node`` as a list of (coefficient, product) terms, distributing products over
    the sums among their operands that carry an output letter."""
    from ..simplifier import simplify

    if depth > 4:
        return [(coef, node)]
    if node.op == "add":
        result: list[tuple[float, Expr]] = []
        for child, c in zip(node.children, node.arg):
            if not _gather(result, expand_terms(child, coef * c, depth + 1)):
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
            if not _gather(result, expand_terms(term, factor, depth + 1)):
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
    linked = LetterClasses()  # operands (by position) that share a letter
    owner: dict[int, int] = {}
    for j, spec in enumerate(ins):
        for letter in spec:
            if letter in owner:
                linked.union(j, owner[letter])
            else:
                owner[letter] = j
    groups: dict[int, list[int]] = {}
    for j in range(n):
        groups.setdefault(linked.find(j), []).append(j)
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


def expansion_rule(an: FactSource, node: Expr, perms) -> Derivation | None:
    terms = expand_terms(node)
    if terms is None or (len(terms) == 1 and terms[0][0] == 1 and terms[0][1] is node):
        return None
    merged: dict[Expr, list] = {}
    for c, t in terms:
        if t.op == "const" and t.arg[0] == 0:
            continue
        if t in merged:
            merged[t][0] += c
        else:
            merged[t] = [c, t]
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
