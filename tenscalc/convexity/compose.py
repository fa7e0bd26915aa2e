"""Compositions: affine precomposition, perspectives, scalar compositions.

Each cuts ``f`` into an outer function checked by :func:`check_convexity` again
and inner pieces whose curvature (or affinity) is known, and combines the
verdicts by the rules of convex analysis.

**Affine precomposition**: ``f(x) = g(A x + b)`` is convex when ``g`` is.

The Hessian of ``‖A x − b‖₂`` or ``log Σ exp(A x + b)`` is ``Aᵀ H_g A`` with the
inner Hessian evaluated at ``A x + b``: the rules that recognise ``H_g`` (the
norm and log-sum-exp templates) do not see it through the congruence.  Instead
of a rule per template, this module cuts ``f`` at its *maximal affine
subexpressions*: every node that is affine in the variables (``A x − b``,
``X w + c 1 − y``) and is not itself inside a larger affine node is replaced by
a fresh variable ``aff__k``; bare variables stay.  ``f = g ∘ (affine map)``, so
``g`` jointly convex in the fresh variables (and the bare ones) proves ``f``
convex, and the same for concavity.  The domain of ``f`` is the preimage of the
domain of ``g`` under the affine map, intersected with the (convex) assumptions
of the variables that disappeared: convex when ``g``'s is.

>>> import tenscalc as tc
>>> f = tc.parse("log(exp(A *(ij,j->i) x + b) *(i,->) 1)", {"A": 2, "x": 1, "b": 1})
>>> g, fresh, parts = cut_affine(f, {"x"})
>>> fresh, str(g)
(['aff__0'], 'log(exp(aff__0) *(i,->) 1)')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..calculus.api import derivative
from ..core import nodes as N
from ..core.nodes import Expr, topological
from ..errors import SemanticError
from ..simplifier import simplify
from .analysis import Analyzer
from .assumptions import (
    implied_constraints,
    normalize_assumptions,
    refinements,
    simplified_constraints,
    variable_intervals,
    variable_tags,
)
from .facts import Interval
from .kinks import affine_in, depends_on_values, substitute
from .report import Certificate, ConvexityResult, ProofStep, safe_text

Checker = Callable[..., ConvexityResult]
"""``check_convexity`` itself, passed in by :mod:`.check` (which calls this module, not
the reverse): the outer and inner functions of a composition are checked by it."""


def maximal_affine(f: Expr, wrt: set[str]) -> list[Expr]:
    """The maximal subexpressions of ``f`` affine in ``wrt`` that depend on them, in
    the order first met from the root (bare variables included)."""
    found: list[Expr] = []
    seen: set[Expr] = set()
    stack = [f]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        # x^0 is a ones tensor: its value does not depend on x
        if not depends_on_values(node, wrt):
            continue
        if node.op == "var" or affine_in(node, wrt):
            found.append(node)
            continue
        stack.extend(reversed(node.children))
    return found


def cut_affine(f: Expr, wrt: set[str]) -> tuple[Expr, list[str], list[tuple[str, Expr]]] | None:
    """``(g, fresh names, [(fresh name, affine node)])`` with ``f = g(affine nodes)``,
    or None when every maximal affine node is a bare variable (nothing to cut)."""
    parts = maximal_affine(f, wrt)
    inner = [p for p in parts if p.op != "var"]
    if not inner:
        return None
    mapping: dict[Expr, Expr] = {}
    named: list[tuple[str, Expr]] = []
    for k, node in enumerate(inner):
        name = f"aff__{k}"
        mapping[node] = N.var(name, node.order)
        named.append((name, node))
    g = substitute(f, mapping)
    return g, [name for name, _ in named], named


MAX_COMPOSITION_DEPTH = 2
"""How many affine cuts may be nested (``g`` is checked by ``check_convexity`` again)."""


def precomposed(f: Expr, wrt: set[str], given, values, depth: int, an: Analyzer | None = None, *, check: Checker):
    """The verdict on ``g`` where ``f = g(affine nodes)`` (:mod:`.compose`), or None.

    Each fresh variable gets the interval its affine node has on the domain (``Σ y > 0``
    for ``y > 0``): ``g`` is then checked on a box, a convex superset of the image of
    ``f``'s domain, which is all the composition needs."""
    cut = cut_affine(f, wrt)
    if cut is None:
        return None
    g, fresh, parts = cut
    inner_wrt = fresh + sorted(n for n in wrt if n in g.variables)
    inner_given = {k: v for k, v in given.items() if k in g.variables and k not in fresh}
    if an is not None:
        for name, node in parts:
            bound = _interval_given(an.interval(node))
            if bound:
                inner_given[name] = bound
    inner_values = {k: v for k, v in (values or {}).items() if k in g.variables}
    try:
        result = check(g, inner_wrt, inner_given, falsify=False, values=inner_values or None, _depth=depth + 1)
    except SemanticError:  # g is not a function this checker reads: no claim
        return None
    return result, (g, parts)


MAX_COMPOSITION_CANDIDATES = 6


def scalar_composition(f: Expr, wrt: set[str], given, values, depth: int, *, check: Checker):
    """``f = h(g(x))`` with ``g`` a scalar node: convex when ``h`` is convex and
    nondecreasing on its domain and ``g`` convex, or ``h`` convex nonincreasing and
    ``g`` concave (concave likewise).  ``h``'s domain is an interval (its convexity
    was checked), and ``f``'s domain was shown convex by the caller, so along a
    segment ``h(g(x_λ)) <= h(λ g(x₁) + (1-λ) g(x₂)) <= λ f(x₁) + (1-λ) f(x₂)``.

    Returns (claim, certificate, result for h) or None."""
    z = N.var("comp__z", 0)
    tried = 0
    for g in _scalar_candidates(f, wrt):
        if tried >= MAX_COMPOSITION_CANDIDATES:
            break
        h = substitute(f, {g: z})
        if depends_on_values(h, wrt):
            continue
        tried += 1
        h_given = {k: v for k, v in given.items() if k in h.variables}
        try:
            result_h = check(h, ["comp__z"], h_given, falsify=False, values=None, _depth=depth + 1)
        except SemanticError:
            continue
        if not result_h.certified:
            continue
        slope = _slope_sign(h, z, h_given)
        if slope == 0:
            continue
        g_given = {k: v for k, v in given.items() if k in g.variables}
        g_values = {k: v for k, v in (values or {}).items() if k in g.variables} or None
        try:
            result_g = check(
                g, sorted(wrt & set(g.variables)), g_given, falsify=False, values=g_values, _depth=depth + 1
            )
        except SemanticError:
            continue
        h_convex = result_h.verdict in ("convex", "affine")
        h_concave = result_h.verdict in ("concave", "affine")
        g_convex = result_g.verdict in ("convex", "affine")
        g_concave = result_g.verdict in ("concave", "affine")
        claim = None
        if h_convex and (slope > 0 and g_convex or slope < 0 and g_concave):
            claim = "convex"
        elif h_concave and (slope > 0 and g_concave or slope < 0 and g_convex):
            claim = "concave"
        if claim is None:
            continue
        inner = result_h.convex_certificate if claim == "convex" else result_h.concave_certificate
        step = ProofStep(
            "f = h(g)",
            f"composition: h {'convex' if claim == 'convex' else 'concave'} and "
            f"{'nondecreasing' if slope > 0 else 'nonincreasing'} on its domain, g {result_g.verdict}",
            "composition rule",
            f"g = {safe_text(g, 120)} ({result_g.certificate.method if result_g.certificate else ''}); "
            f"h = {safe_text(h, 120)}",
        )
        certificate = Certificate(
            claim=claim,
            hessian_text=inner.hessian_text,
            steps=[step] + inner.steps,
            kinks=inner.kinks,
            domain=inner.domain,
            method="composition h(g(x)), h by " + inner.method,
        )
        return claim, certificate, result_h
    return None


def perspective(f: Expr, wrt: set[str], given, an: Analyzer, depth: int, *, check: Checker):
    """``f = t · g(x₁/t, x₂/t, ...)`` with ``t > 0`` a scalar variable: the perspective
    of ``g`` has ``g``'s curvature (jointly in ``(x, t)``), and its domain
    ``{t > 0, x/t ∈ dom g}`` is convex when ``g``'s is.  ``t·LSE(x/t)``.

    Returns (verdict of g, certificate, result for g) or None."""
    if f.op != "mul" or f.order != 0:
        return None
    ins, out = f.arg
    t_positions = [
        j
        for j, c in enumerate(f.children)
        if c.op == "var" and c.arg[1] == 0 and c.arg[0] in wrt and ins[j] == () and an.interval(c).pos
    ]
    if len(t_positions) != 1:
        return None
    j_t = t_positions[0]
    t = f.children[j_t]
    rest = [(c, spec) for j, (c, spec) in enumerate(zip(f.children, ins)) if j != j_t]
    if len(rest) == 1 and rest[0][1] == ():
        inner = rest[0][0]
    else:
        inner = N.mul([c for c, _ in rest], [spec for _, spec in rest], out)
    mapping: dict[Expr, Expr] = {}
    parts: list[tuple[str, Expr]] = []
    for node in topological(inner):
        y = _divided_by(node, t)
        if y is not None and y.arg[0] in wrt:
            name = f"persp__{y.arg[0]}"
            mapping[node] = N.var(name, y.order)
            parts.append((name, node))
    if not parts:
        return None
    g = substitute(inner, mapping)
    if depends_on_values(g, wrt):
        return None
    g_given = {k: v for k, v in given.items() if k in g.variables}
    try:
        result = check(g, [name for name, _ in parts], g_given, falsify=False, _depth=depth + 1)
    except SemanticError:
        return None
    if not result.certified:
        return None
    inner_certificate = result.certificate
    step = ProofStep(
        f"f = {t.arg[0]} · g({', '.join(name for name, _ in parts)})",
        f"perspective of a {result.verdict} function",
        "perspective",
        "; ".join(f"{name} = {safe_text(node, 60)}" for name, node in parts)
        + f"; {t.arg[0]} > 0; g = {safe_text(g, 160)}",
    )
    certificate = Certificate(
        claim=result.verdict if result.verdict != "affine" else "convex",
        hessian_text=inner_certificate.hessian_text,
        steps=[step] + inner_certificate.steps,
        kinks=inner_certificate.kinks,
        domain=inner_certificate.domain,
        method="perspective, g by " + inner_certificate.method,
    )
    return result.verdict, certificate, result


def _divided_by(node: Expr, t: Expr) -> Expr | None:
    """The variable ``y`` when ``node`` is ``y * t^-1`` (``y / t``, ``y *(i,->i) t^(-1)``)."""
    if node.op != "mul" or len(node.children) != 2:
        return None
    ins, out = node.arg
    y = inv = None
    for c, spec in zip(node.children, ins):
        if c.op == "var" and c is not t and tuple(spec) == tuple(out) and len(set(spec)) == len(spec):
            y = c
        elif (
            c.op == "pow"
            and c.children[0] is t
            and c.children[1].op == "const"
            and c.children[1].arg[0] == -1
            and spec == ()
        ):
            inv = c
    return y if y is not None and inv is not None else None


def _scalar_candidates(f: Expr, wrt: set[str]):
    """Order-0 nodes below the root that depend on ``wrt``, nearest the root first."""
    seen = {f}
    queue = list(f.children)
    while queue:
        node = queue.pop(0)
        if node in seen:
            continue
        seen.add(node)
        if not depends_on_values(node, wrt):
            continue
        if node.order == 0 and node.op != "var" and not affine_in(node, wrt):
            yield node
        queue.extend(node.children)


def _slope_sign(h: Expr, z: Expr, given) -> int:
    """+1 when dh/dz >= 0 on h's domain, -1 when <= 0, 0 when unknown."""
    slope = simplify(derivative(h, z))
    orders = h.variables
    assumed = normalize_assumptions(given, orders)
    constraints = implied_constraints(h)
    an = Analyzer(
        variable_intervals(assumed, orders),
        variable_tags(assumed),
        refinements(constraints + simplified_constraints(constraints)),
        [z.arg[0]],
    )
    try:
        iv = an.interval(slope)
    except Exception:  # noqa: BLE001 - a slope the rules cannot read: no claim
        return 0
    if iv.empty:
        return 0
    return 1 if iv.nonneg else -1 if iv.nonpos else 0


def _interval_given(iv: Interval) -> tuple:
    """An interval as assumption words (``positive`` keeps an open end at 0)."""
    if iv.empty or iv.is_indeterminate or (iv.lo == -float("inf") and iv.hi == float("inf")):
        return ()
    items: list[Any] = []
    if iv.lo == 0 and not iv.lo_closed and iv.hi == float("inf"):
        return ("positive",)
    if iv.hi == 0 and not iv.hi_closed and iv.lo == -float("inf"):
        return ("negative",)
    items.append((None if iv.lo == -float("inf") else iv.lo, None if iv.hi == float("inf") else iv.hi))
    return tuple(items)


def composed_certificate(inner: Certificate | None, cut) -> Certificate | None:
    if inner is None:
        return None
    g, parts = cut
    step = ProofStep(
        f"f = g({', '.join(name for name, _ in parts)})",
        "affine precomposition",
        "g∘(affine) has the curvature of g",
        "; ".join(f"{name} = {safe_text(node, 100)} is affine in the variables" for name, node in parts)
        + f"; g = {safe_text(g, 200)}",
    )
    return Certificate(
        claim=inner.claim,
        hessian_text=inner.hessian_text,
        steps=[step] + inner.steps,
        kinks=inner.kinks,
        domain=inner.domain,
        method="affine precomposition, then " + inner.method,
    )
