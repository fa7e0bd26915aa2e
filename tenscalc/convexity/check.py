"""``check_convexity``: certificates from the Hessian, counterexamples from numbers.

The steps, for ``f`` and the variables ``wrt``:

1. read the assumptions and the domain the expression implies (``log(u)`` ⇒
   ``u > 0`` ...) and check that the domain is convex;
2. build the Hessian DAG (the blocks ``hessian(f, x, y)`` for several variables)
   and label it (:mod:`.analysis`): a PSD fact at the root proves convexity where
   ``f`` is twice differentiable, NSD concavity;
3. examine the non-smooth points (:mod:`.kinks`): kinks must bend the right way,
   jumps are not allowed;
4. unless both were proven, search numerically for counterexamples
   (:mod:`.falsify`);
5. combine into a verdict.  ``unknown`` means nothing was proven or refuted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..calculus.api import derivative
from ..core import nodes as N
from ..core.checks import count_nodes
from ..core.nodes import Expr, topological
from ..errors import SemanticError
from ..simplifier import MUL_RULES, RULES, mul_distribute_cancelling_sum, mul_distribute_power, simplify
from .analysis import Analyzer
from .assumptions import (
    Constraint,
    implied_constraints,
    normalize_assumptions,
    refinements,
    simplified_constraints,
    variable_intervals,
    variable_tags,
)
from .compose import MAX_COMPOSITION_DEPTH, composed_certificate, perspective, precomposed, scalar_composition
from .constraint_kinds import CONSTRAINT_KINDS
from .derivation import Derivation, identity_perm
from .errors import InternalError
from .facts import Curvature, Interval, Modulus
from .falsify import Falsifier
from .joint import gram_rule
from .kinks import Kink, affine_in, check_kinks, combine_kinks, depends_on, find_kinks, substitute
from .picture import node_facts
from .report import Certificate, ConvexityResult, ProofStep, safe_text

CROSS_CHECK_POINTS = 4
"""Points of the cheap cross-check of a proof when ``falsify=False``."""


def _resolve(expr: Any, wrt: Any, assumptions: Mapping[str, Any] | None):
    from ..frontend.typecheck import Problem, build_problem

    declared: Mapping[str, Any] = {}
    problem_wrt = None
    if isinstance(expr, str):
        expr = build_problem(expr)
    if isinstance(expr, Problem):
        declared = getattr(expr, "assumptions", None) or {}
        problem_wrt = expr.wrt
        expr = expr.expr
    if not isinstance(expr, Expr):
        raise SemanticError(f"check_convexity needs an expression, a problem or its text, not {type(expr).__name__}")
    if expr.order != 0:
        raise SemanticError(
            f"convexity is a property of scalar functions; this expression has order {expr.order} "
            "(sum its entries, e.g. `... *(i,->) 1`, to check the sum)"
        )
    variables = expr.variables
    if wrt is None:
        wrt = problem_wrt
    if wrt is None:
        if len(variables) == 1:
            wrt = next(iter(variables))
        else:
            raise SemanticError(
                "say which variables the function is convex in: wrt='x' or wrt=['x', 'y'] "
                f"(the expression has {', '.join(variables) or 'no variables'})"
            )
    names = [wrt] if isinstance(wrt, str) else [getattr(w, "arg", (w,))[0] if isinstance(w, Expr) else w for w in wrt]
    if not names:
        raise SemanticError("wrt names no variable")
    for name in names:
        if name not in variables:
            raise SemanticError(
                f"'{name}' is not a variable of the expression (its variables are {', '.join(variables) or 'none'})"
            )
    if len(set(names)) != len(names):
        raise SemanticError("wrt names a variable twice")
    merged: dict[str, Any] = {}
    for source in (declared, assumptions or {}):
        for name, value in source.items():
            items = [value] if isinstance(value, str) or _pair(value) else list(value)
            merged.setdefault(name, [])
            merged[name].extend(items)
    return expr, names, merged


def _pair(value: Any) -> bool:
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value)
    )


def check_convexity(
    expr: Expr | str | Any,
    wrt: str | Sequence[str] | None = None,
    assumptions: Mapping[str, Any] | None = None,
    *,
    falsify: bool = True,
    seed: int = 0,
    values: Mapping[str, Any] | None = None,
    points: int = 12,
    verify: bool = False,
    _depth: int = 0,
) -> ConvexityResult:
    """Decide whether a scalar expression is convex or concave in ``wrt``.

    Parameters
    ----------
    expr : Expr, str or Problem
        The function (order 0).  A text may carry a ``declare`` block with
        assumptions (``declare x 1 positive``) and ``derivative wrt x``.
    wrt : str or list of str
        The variable(s); several means joint convexity.  Other variables are
        parameters: the verdict holds for all their values allowed by the
        assumptions.
    assumptions : mapping, optional
        name -> ``"positive"``, ``("symmetric", "pd")``, ``(0, None)`` ... (see
        :mod:`tenscalc.convexity.assumptions`).
    falsify : bool
        Search numerically for counterexamples (default).  Without it the
        verdict is convex, concave, affine or unknown.
    seed : int
        Seed of the numeric search.
    values : mapping, optional
        Arrays fixing variables (parameters, or the shapes) for the numeric search.
    points : int
        How many points of the domain the numeric search samples.
    verify : bool
        Cross-check what was proven at twice as many points.  Every proven side
        is cross-checked by the numeric search anyway (at ``points`` points, or
        ``CROSS_CHECK_POINTS`` without ``falsify``); a counterexample to a proof
        raises :class:`~tenscalc.convexity.errors.InternalError`.

    Returns
    -------
    ConvexityResult
        ``.verdict`` is one of ``"convex"``, ``"concave"``, ``"affine"``,
        ``"not convex"``, ``"not concave"``, ``"neither"``, ``"unknown"``.

    >>> import tenscalc as tc
    >>> r = tc.check_convexity("declare x 1 A 2 expression (A *(ij,j->i) x) *(i,i->) (A *(ij,j->i) x)", "x")
    >>> r.verdict
    'convex'
    >>> tc.check_convexity(tc.parse("sin(x)", {"x": 0}), "x").verdict
    'neither'
    """
    setting = _setting(expr, wrt, assumptions)
    smooth = _prove_smooth(setting)
    sides = smooth.sides
    if not sides.proven and _depth < MAX_COMPOSITION_DEPTH:
        _prove_by_composition(setting, sides, smooth.domain_ok, values, _depth)
    notes = list(smooth.notes)
    numbers = _search_numbers(
        setting, sides, notes, falsify=falsify, points=points, verify=verify, seed=seed, values=values
    )
    verdict = _verdict(sides.convex, sides.concave, numbers.convex is not None, numbers.concave is not None)
    strength = _strength(verdict, smooth.curvature, smooth.kinks)
    notes.extend(_unknown_notes(verdict, sides, numbers, smooth, falsify))
    return ConvexityResult(
        verdict=verdict,
        expression=setting.f,
        wrt=tuple(setting.names),
        strict=strength.strict,
        strong=strength.strong,
        modulus=strength.modulus,
        modulus_value=strength.modulus_value,
        convex_certificate=sides.convex_certificate,
        concave_certificate=sides.concave_certificate,
        convex_counterexample=numbers.convex,
        concave_counterexample=numbers.concave,
        assumptions={name: tuple(a.given) for name, a in setting.assumed.items()},
        implied_domain=smooth.domain_text,
        hessian=smooth.hessian,
        kinks=[k.describe() for k in smooth.kinks],
        notes=notes,
        search=numbers.search,
        method=sides.method,
        graph=sides.graph,
        graph_facts=sides.graph_facts,
    )


# ------------------------------------------------------------------------------------------
# the phases of check_convexity, in the order it runs them
# ------------------------------------------------------------------------------------------


@dataclass
class _Setting:
    """What every phase reads: the function, the variables, the assumptions and the domain."""

    f: Expr
    names: list[str]
    given: dict[str, Any]
    assumed: dict[str, Any]
    constraints: list[Constraint]
    intervals: Any
    tags: Any
    refine: Any
    an: Analyzer

    @property
    def orders(self) -> Mapping[str, int]:
        return self.f.variables

    @property
    def wrt(self) -> set[str]:
        return set(self.names)


@dataclass
class _Sides:
    """What is proven of the two sides, with its certificates, method and picture."""

    convex: bool = False
    concave: bool = False
    convex_certificate: Certificate | None = None
    concave_certificate: Certificate | None = None
    method: str = ""
    graph: list = field(default_factory=list)
    graph_facts: dict = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        return self.convex or self.concave

    def adopt(self, claim: str, certificate: Certificate) -> None:
        """Record a proof of ``claim`` (``convex``, ``concave`` or ``affine``: both sides)."""
        if claim in ("convex", "affine"):
            self.convex, self.convex_certificate = True, certificate
        if claim in ("concave", "affine"):
            self.concave, self.concave_certificate = True, certificate
        self.method = certificate.method


@dataclass
class _Smooth:
    """The outcome of the Hessian phase: the proven sides and what the notes need."""

    sides: _Sides
    hessian: Any
    proof: Derivation | None
    curvature: Curvature
    kinks: list[Kink]
    kinks_convex: bool
    kinks_concave: bool
    domain_ok: bool
    domain_text: list[str]
    notes: list[str]


@dataclass
class _Numbers:
    """The outcome of the numeric search: counterexamples to each side (None: none found)."""

    search: Any = None
    convex: Any = None
    concave: Any = None


@dataclass
class _Strength:
    strict: bool = False
    strong: bool = False
    modulus: str | None = None
    modulus_value: float | None = None


def _setting(expr: Any, wrt: Any, assumptions: Mapping[str, Any] | None) -> _Setting:
    """Phase 1: read the function, the variables, the assumptions and the implied domain."""
    f, names, given = _resolve(expr, wrt, assumptions)
    assumed = normalize_assumptions(given, f.variables)
    constraints = implied_constraints(f)
    refine = refinements(constraints + simplified_constraints(constraints))
    intervals = variable_intervals(assumed, f.variables)
    tags = variable_tags(assumed)
    an = Analyzer(intervals, tags, refine, names)
    return _Setting(f, names, given, assumed, constraints, intervals, tags, refine, an)


def _prove_smooth(s: _Setting) -> _Smooth:
    """Phase 2: the domain must be convex, the Hessian PSD (NSD) and the kinks bend the right way."""
    domain_ok, notes = _domain_convex(s.f, s.constraints, s.intervals, s.tags, s.wrt)
    hess, proof, method, an_h = _certify_smooth(s.f, s.names, s.an, s.assumed, s.orders, s.constraints)
    curvature = proof.curvature if proof is not None else Curvature()
    kinks = find_kinks(s.f, s.wrt, s.an)
    # u^p (0 < p < 1) with u concave: u = 0 is the boundary of the convex set {u >= 0},
    # where f is continuous, so convexity inside extends to it (as for affine u)
    kinks = [
        k
        for k in kinks
        if not (k.kind == "power" and _entrywise_concave(k.node.children[0], s.wrt, s.intervals, s.tags))
    ]
    check_kinks(s.f, kinks, s.intervals, s.tags, s.refine, s.wrt)
    combine_kinks(kinks)
    kinks_convex = all(k.convex_ok for k in kinks)
    kinks_concave = all(k.concave_ok for k in kinks)
    domain_text = [c.describe() for c in s.constraints if depends_on(c.node, set(s.orders))]
    sides = _Sides(method=method)
    if curvature.psd and kinks_convex and domain_ok:
        sides.convex = True
        sides.convex_certificate = _certificate("convex", hess, proof, an_h, kinks, domain_text, method)
    if curvature.nsd and kinks_concave and domain_ok:
        sides.concave = True
        sides.concave_certificate = _certificate("concave", hess, proof, an_h, kinks, domain_text, method)
    # the picture: the DAG the proof read, coloured by its facts
    if method == "second directional derivative" and proof is not None:
        sides.graph = list(proof.premises)
    else:
        sides.graph = list(hess.values()) if isinstance(hess, dict) else [hess]
    sides.graph_facts = node_facts(an_h, sides.graph)
    return _Smooth(sides, hess, proof, curvature, kinks, kinks_convex, kinks_concave, domain_ok, domain_text, notes)


def _prove_by_composition(s: _Setting, sides: _Sides, domain_ok: bool, values: Any, depth: int) -> None:
    """Phase 3, when the Hessian proved nothing: the rules of convex analysis, tried in turn
    until one proves a side (each checks the inner function with ``check_convexity``)."""
    # f = g(affine maps): g's verdict carries over (its domain and kinks included)
    inner = precomposed(s.f, s.wrt, s.given, values, depth, s.an, check=check_convexity)
    if inner is not None:
        result_g, cut = inner
        if result_g.verdict in ("convex", "affine"):
            sides.adopt("convex", composed_certificate(result_g.convex_certificate, cut))
        if result_g.verdict in ("concave", "affine"):
            sides.adopt("concave", composed_certificate(result_g.concave_certificate, cut))
        if result_g.certified:
            sides.graph, sides.graph_facts = result_g.graph, result_g.graph_facts
    if sides.proven:
        return
    # f = t g(x / t): the perspective of g
    persp = perspective(s.f, s.wrt, s.given, s.an, depth, check=check_convexity)
    if persp is not None:
        claim, certificate, result_g = persp
        sides.adopt(claim, certificate)
        sides.graph, sides.graph_facts = result_g.graph, result_g.graph_facts
    if sides.proven or not domain_ok:
        return
    # f = h(g(x)) with g scalar: the composition rules of convex analysis
    composed = scalar_composition(s.f, s.wrt, s.given, values, depth, check=check_convexity)
    if composed is not None:
        claim, certificate, result_h = composed
        sides.adopt("convex" if claim == "convex" else "concave", certificate)
        sides.graph, sides.graph_facts = result_h.graph, result_h.graph_facts


def _search_numbers(
    s: _Setting, sides: _Sides, notes: list[str], *, falsify: bool, points: int, verify: bool, seed: int, values: Any
) -> _Numbers:
    """Phase 4: counterexamples to the open sides, and a cross-check of the proven ones
    (a proof contradicted by numbers is a bug of the rules, never a verdict)."""
    numbers = _Numbers()
    want_convex = sides.convex or falsify
    want_concave = sides.concave or falsify
    if not (want_convex or want_concave):
        return numbers
    falsifier = Falsifier(s.f, s.names, s.assumed, list(s.constraints), seed=seed, values=values)
    budget = points * 2 if verify else points if falsify else min(points, CROSS_CHECK_POINTS)
    search = falsifier.run(convex=want_convex, concave=want_concave, points=budget)
    numbers.search, numbers.convex, numbers.concave = search, search.convex, search.concave
    for proven, claim, certificate in (
        (sides.convex, "convex", sides.convex_certificate),
        (sides.concave, "concave", sides.concave_certificate),
    ):
        cex = numbers.convex if claim == "convex" else numbers.concave
        if not proven or cex is None:
            continue
        reason = _explained_violation(s, cex)
        if reason is None:
            raise InternalError(
                f"internal error in the convexity checker: {safe_text(s.f, 200)} was proven {claim} in "
                f"{', '.join(s.names)} ({certificate.method if certificate else sides.method}) but the numeric "
                f"cross-check found a counterexample:\n{cex.describe()}\n"
                "Please report this expression: a rule certified something false.",
                claim,
                certificate,
                cex,
            )
        notes.append(f"cross-check: a violation of the proven {claim}ity {reason}")
        if claim == "convex":
            numbers.convex = None
        else:
            numbers.concave = None
    checked = [claim for proven, claim in ((sides.convex, "convexity"), (sides.concave, "concavity")) if proven]
    if checked and not any(n.startswith("cross-check: a violation") for n in notes):
        notes.append(
            f"cross-check: no counterexample to the proven {' and '.join(checked)} at "
            f"{search.points_in_domain} sampled points of the domain"
        )
    return numbers


def _explained_violation(s: _Setting, cex: Any) -> str | None:
    """Why a counterexample to a proof is floating point, not a false proof (None: it is not)."""
    if rounding_level(cex):
        # cancellation inside f makes its error relative to intermediate values, not to f
        return f"at rounding level was ignored (relative size {_relative_violation(cex):.1e})"
    if _evaluation_contradicts_facts(s.f, s.an, cex):
        # the numbers broke a proven fact about a node (exp(-206) underflowing to 0
        # under a proven 1 + e > 1): the evaluation, not the proof, is wrong there
        return (
            "was ignored: at its points the floating-point evaluation contradicts a proven bound "
            "of a node (underflow or rounding)"
        )
    return None


def _strength(verdict: str, curvature: Curvature, kinks: list[Kink]) -> _Strength:
    """Phase 5: strict and strong convexity (concavity), with the modulus where proven."""
    if verdict not in ("convex", "concave"):
        return _Strength()
    convex = verdict == "convex"
    bound = curvature.lower if convex else curvature.upper
    if bound is not None and bound.strong:
        return _Strength(True, True, bound.text, bound.value)
    return _Strength(strict=(curvature.pd if convex else curvature.nd) and not kinks)


def _unknown_notes(verdict: str, sides: _Sides, numbers: _Numbers, smooth: _Smooth, falsify: bool) -> list[str]:
    """Phase 6: for each side neither proven nor refuted, the reasons (one note when both are open)."""
    notes = []
    for side, proven, cex, kinks_ok, bends in (
        ("convexity", sides.convex, numbers.convex, smooth.kinks_convex, "up"),
        ("concavity", sides.concave, numbers.concave, smooth.kinks_concave, "down"),
    ):
        if proven or cex is not None:
            continue
        reasons = []
        if not smooth.domain_ok:
            reasons.append("the domain was not shown to be convex")
        curvature = smooth.curvature
        if smooth.proof is None or not (curvature.psd if side == "convexity" else curvature.nsd):
            reasons.append("no rule showed the Hessian " + ("PSD" if side == "convexity" else "NSD"))
        if any(k.kind == "sign" for k in smooth.kinks):
            reasons.append("sign(...) of the variables makes the function jump")
        elif not kinks_ok:
            bad = [k for k in smooth.kinks if not (k.convex_ok if side == "convexity" else k.concave_ok)]
            reasons.append(
                f"{len(bad)} kink{'s' if len(bad) > 1 else ''} not shown to bend {bends}: "
                + "; ".join(k.describe() for k in bad[:3])
            )
        if falsify:
            reasons.append(
                f"no counterexample at {numbers.search.points_in_domain if numbers.search else 0} sampled points"
            )
        head = "unknown" if verdict == "unknown" else f"{side} unknown"
        notes.append(f"{head}: " + "; ".join(reasons) + " (this is not a claim that the function is not convex)")
        if verdict == "unknown":
            break  # one note: the reasons of the two sides are the same words
    return notes


ROUNDING_LEVEL = 1e-6
"""A counterexample to a proof whose violation is below this fraction of the function
values involved is taken for rounding (a false proof shows violations of order one)."""


def _relative_violation(cex) -> float:
    if cex.values is None:
        return float("inf")
    fa, fm, fb = cex.values
    size = abs(fa) + abs(fb) + 2 * abs(fm) + 1e-300
    amount = abs(cex.second_difference) if cex.second_difference is not None else abs(cex.gap or 0.0)
    return amount / size


def rounding_level(cex) -> bool:
    """Whether a counterexample's violation is small enough to be rounding (not a false proof)."""
    return cex.kind != "domain not convex" and _relative_violation(cex) < ROUNDING_LEVEL


MAX_FACT_CHECK_NODES = 300


def _evaluation_contradicts_facts(f: Expr, an: Analyzer, cex) -> bool:
    """Whether, at the points of ``cex``, some node of ``f`` evaluates outside the interval
    proven for it (an open end attained counts): then floating point, not the proof,
    made the counterexample."""
    from ..interpreter import evaluate

    nodes = topological(f)
    if len(nodes) > MAX_FACT_CHECK_NODES:
        return False
    an.interval(f)
    points = [cex.point]
    if cex.a is not None and cex.b is not None:
        a = {**cex.point, **cex.a}
        b = {**cex.point, **cex.b}
        mid = {**cex.point, **{k: (np.asarray(cex.a[k]) + np.asarray(cex.b[k])) / 2 for k in cex.a}}
        points = [a, b, mid]
    for values in points:
        for node in nodes:
            iv = an.intervals.get(node)
            if iv is None or iv.empty or node.op in ("var", "const", "delta"):
                continue
            try:
                with np.errstate(all="ignore"):
                    value = np.asarray(evaluate(node, values), dtype=float)
            except Exception:  # noqa: BLE001 - a part that cannot be evaluated alone
                continue
            finite = value[np.isfinite(value)]
            if finite.size == 0:
                continue
            low, high = float(finite.min()), float(finite.max())
            # only a marginal breach is floating point (an open end attained by underflow);
            # a clear one would be a wrong fact, and must not hide the counterexample
            margin_lo = 1e-9 * max(1.0, abs(iv.lo)) if np.isfinite(iv.lo) else 0.0
            margin_hi = 1e-9 * max(1.0, abs(iv.hi)) if np.isfinite(iv.hi) else 0.0
            marginal_lo = iv.lo - margin_lo <= low < iv.lo or (low == iv.lo and not iv.lo_closed)
            marginal_hi = iv.hi < high <= iv.hi + margin_hi or (high == iv.hi and not iv.hi_closed)
            if marginal_lo or marginal_hi:
                return True
    return False


def _verdict(convex: bool, concave: bool, not_convex: bool, not_concave: bool) -> str:
    if convex and concave:
        return "affine"
    if convex:
        return "convex"
    if concave:
        return "concave"
    if not_convex and not_concave:
        return "neither"
    if not_convex:
        return "not convex"
    if not_concave:
        return "not concave"
    return "unknown"


# ------------------------------------------------------------------------------------------
# the domain
# ------------------------------------------------------------------------------------------


def _domain_convex(f: Expr, constraints: list[Constraint], intervals, tags, wrt: set[str]) -> tuple[bool, list[str]]:
    """Whether the constraints that involve ``wrt`` cut out a convex set.

    A constraint is fine when the assumptions (and the constraints already shown
    to cut out convex sets) imply it, or when it is a sublevel set of the right
    kind: ``u > 0`` or ``u >= 0`` for ``u`` affine or concave, ``|u| <= 1`` for
    affine ``u``.  The intersection of convex sets is convex.
    """
    relevant = [c for c in constraints if depends_on(c.node, wrt)]
    convex_sets: list[Constraint] = []
    pending: list[Constraint] = []
    plain = Analyzer(intervals, tags, {}, wrt)
    for c in relevant:
        if _covered(plain, c):
            continue
        kind = CONSTRAINT_KINDS[c.kind]
        if kind.sublevel_of_affine and affine_in(c.node, wrt):
            convex_sets.append(c)
            continue
        if kind.superlevel_of_concave and _entrywise_concave(c.node, wrt, intervals, tags):
            convex_sets.append(c)
            continue
        pending.append(c)
    notes = []
    if pending:
        within = Analyzer(intervals, tags, refinements(convex_sets + simplified_constraints(convex_sets)), wrt)
        for c in pending:
            if not _covered(within, c):
                notes.append(f"the domain constraint {c.describe()} was not shown to cut out a convex set")
    return not notes, notes


def _entrywise_concave(node: Expr, wrt: set[str], intervals, tags) -> bool:
    """Every entry of ``node`` is concave in ``wrt`` (then ``{node > 0}`` is convex).

    For a tensor ``u`` this checks ``Σ w ⊙ u`` with a weight ``w >= 0`` of the same
    shape as a parameter: concave for every such ``w`` exactly when every entry is
    (take ``w`` a unit tensor).  ``1 - x²`` (from ``log(1 - x²)``) passes.
    """
    given = _as_given(intervals, tags, node)
    target = node
    if node.order > 0:
        spec = tuple(range(node.order))
        weight = N.var("dom__w", node.order)
        target = N.mul((node, weight), (spec, spec), ())
        given["dom__w"] = ("nonnegative",)
    try:
        inner = check_convexity(target, sorted(wrt & set(node.variables)), given, falsify=False)
    except SemanticError:
        return False
    return inner.verdict in ("concave", "affine")


def _as_given(intervals, tags, node: Expr) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for name in node.variables:
        iv = intervals.get(name, Interval.real())
        items: list[Any] = []
        if iv.lo > -float("inf") or iv.hi < float("inf"):
            items.append((None if iv.lo == -float("inf") else iv.lo, None if iv.hi == float("inf") else iv.hi))
            if iv.lo == 0 and not iv.lo_closed:
                items.append("positive")
            if iv.hi == 0 and not iv.hi_closed:
                items.append("negative")
        items.extend(sorted(tags.get(name, ())))
        if items:
            given[name] = tuple(items)
    return given


def _covered(an: Analyzer, c: Constraint) -> bool:
    return CONSTRAINT_KINDS[c.kind].covered(an, c.node)


# ------------------------------------------------------------------------------------------
# the smooth part
# ------------------------------------------------------------------------------------------


def _perms_for(name: str, order: int, tags) -> tuple:
    k = order
    ident = identity_perm(k)
    if order == 2 and "symmetric" in tags.get(name, set()):
        return (ident, (1, 0))
    return (ident,)


# The rules read quotients as they are written (a log of a quotient, p ⊙ q⁻¹);
# distributing a power over a quotient ((p/q)⁻¹ -> p⁻¹ q), which makes printed
# derivatives shorter, would hide that structure from them; so would distributing a
# product over a sum to cancel such powers (the softmax cross-entropy as a log of a quotient).
_HIDING = (mul_distribute_power, mul_distribute_cancelling_sum)
ANALYSIS_RULES = {**RULES, "mul": [r for r in MUL_RULES if r not in _HIDING]}


def hessian(f: Expr, wrt: str, wrt2: str | None = None) -> Expr:
    """The Hessian block the rules read: simplified with ``ANALYSIS_RULES``."""
    first = simplify(derivative(f, wrt, simplify=False), ANALYSIS_RULES)
    second = N.var(wrt2, f.variables[wrt2]) if wrt2 is not None else N.var(wrt, f.variables[wrt])
    return simplify(derivative(first, second, simplify=False), ANALYSIS_RULES)


def _hessian_analyzer(an: Analyzer, constraints: list[Constraint], roots: list[Expr], names) -> Analyzer:
    """An analyzer for the Hessian that also knows where the Hessian itself is defined.

    The PSD claim is needed only where ``f`` is twice differentiable: where the
    Hessian's expression is undefined (``x^-0.5`` at ``x = 0``) ``f`` is either not
    twice differentiable — a kink or the boundary, examined separately from ``f``
    with the plain analyzer — or the Hessian extends by continuity.  So the
    constraints the Hessian implies (``x > 0``) may tighten its own analysis
    (``Σ √x > 0`` becomes a valid denominator)."""
    extra: list[Constraint] = []
    for root in roots:
        extra.extend(implied_constraints(root))
    if not extra:
        return an
    refine = refinements(constraints + simplified_constraints(constraints) + extra)
    return Analyzer(an.variables, an.tags, refine, names)


def _certify_smooth(f: Expr, names: list[str], an: Analyzer, assumed, orders, constraints=()):
    """The Hessian (or its blocks), a derivation of its definiteness, the method, and
    the analyzer that labelled it."""
    proof, method, hess, an = _certify_smooth_with(f, names, an, assumed, orders, list(constraints))
    return hess, proof, method, an


def _certify_smooth_with(f: Expr, names: list[str], an: Analyzer, assumed, orders, constraints):
    tags = {n: a.tags for n, a in assumed.items()}
    if len(names) == 1:
        name = names[0]
        h = hessian(f, name)
        an = _hessian_analyzer(an, constraints, [h], names)
        target = h
        perms = _perms_for(name, orders[name], tags)
        if orders[name] == 2 and "diagonal" in tags.get(name, set()):
            target = simplify(N.mul((h,), ((0, 0, 1, 1),), (0, 1)))
            perms = (identity_perm(1),)
        proof = an.derive(target, perms)
        method = "Hessian DAG" if target is h else "Hessian DAG on diagonal directions"
        if len(perms) > 1:
            method += " on symmetric directions"
        if proof is None or not (proof.curvature.psd or proof.curvature.nsd):
            if target is h and "symmetric" not in tags.get(name, set()):
                gram = gram_rule(an, {(name, name): h}, names, orders, f)
                if gram is not None and (gram.curvature.psd or gram.curvature.nsd):
                    return gram, "Hessian as a Gram form", h, an
            second = _directional(f, names, an, tags, orders)
            if second is not None:
                return second, "second directional derivative", h, an
        return proof, method, h, an
    blocks = {(a, b): hessian(f, a, b) for a in names for b in names}
    an = _hessian_analyzer(an, constraints, list(blocks.values()), names)
    off_zero = all(_is_zero(an, blocks[(a, b)]) for a in names for b in names if a != b)
    if off_zero:
        parts = []
        for a in names:
            d = an.derive(blocks[(a, a)], _perms_for(a, orders[a], tags))
            if d is None:
                parts = None
                break
            parts.append(d)
        if parts is not None:
            curv = _block_diagonal([p.curvature for p in parts])
            if curv.psd or curv.nsd:
                proof = Derivation(
                    curv,
                    "block diagonal",
                    "the mixed blocks are zero; each diagonal block is " + ("PSD" if curv.psd else "NSD"),
                    [blocks[(a, a)] for a in names],
                )
                return proof, "Hessian blocks", blocks, an
    for promote in (False, True):
        gram = gram_rule(an, blocks, names, orders, f, promote=promote)
        if gram is not None and (gram.curvature.psd or gram.curvature.nsd):
            return gram, "Hessian blocks as a Gram form", blocks, an
    second = _directional(f, names, an, tags, orders)
    return second, "second directional derivative", blocks, an


def _is_zero(an: Analyzer, node: Expr) -> bool:
    if node.op == "const" and node.arg[0] == 0:
        return True
    if node.op == "add" and len(node.children) == 1 and node.arg[0] == 0:
        return True
    return an.interval(node).is_zero


def _block_diagonal(parts: list[Curvature]) -> Curvature:
    psd = all(p.psd for p in parts)
    nsd = all(p.nsd for p in parts)
    lower = None
    if psd and all(p.lower is not None and p.lower.strong for p in parts):
        values = [p.lower for p in parts]
        lower = Modulus(min(v.value for v in values), True, "min(" + ", ".join(v.text for v in values) + ")")
    upper = None
    if nsd and all(p.upper is not None and p.upper.strong for p in parts):
        values = [p.upper for p in parts]
        upper = Modulus(min(v.value for v in values), True, "min(" + ", ".join(v.text for v in values) + ")")
    return Curvature(
        psd,
        nsd,
        psd and all(p.pd for p in parts),
        nsd and all(p.nd for p in parts),
        all(p.symmetric for p in parts),
        lower,
        upper,
    )


def _directional(f: Expr, names: list[str], an: Analyzer, tags, orders) -> Derivation | None:
    """``q(v) = d²/dt² f(x + t v)`` at ``t = 0``, shown >= 0 (or <= 0) for every ``v``."""
    t = N.var("line__s", 0)  # not dir__t: that is the direction of a variable named t
    mapping = {}
    directions = []
    for name in names:
        order = orders[name]
        if order == 2 and "diagonal" in tags.get(name, set()):
            v = N.var(f"dir__{name}", 1)
            d = N.mul((v,), ((0,),), (0, 0))
        elif order == 2 and "symmetric" in tags.get(name, set()):
            # a symmetric direction: a variable the rules know to be symmetric (so that
            # pairings through a transposition, V[j,k] with V[l,m] read as V[m,l], are found)
            v = N.var(f"dir__{name}", 2)
            d = v
            an.tags.setdefault(f"dir__{name}", set()).add("symmetric")
        else:
            v = N.var(f"dir__{name}", order)
            d = v
        directions.append(v)
        x = N.var(name, order)
        spec = tuple(range(order))
        mapping[x] = N.add((x, N.mul((t, d), ((), spec), spec)))
    try:
        moved = substitute(f, mapping)
        q = derivative(derivative(moved, t), t)
        q = simplify(substitute(q, {t: N.const(0, 0)}))
    except Exception:  # noqa: BLE001 - a failed construction proves nothing
        return None
    if count_nodes(q) > 5000:
        return None
    d = an.derive(q)
    if d is None or not (d.curvature.psd or d.curvature.nsd):
        return None
    curv = Curvature(psd=d.curvature.psd, nsd=d.curvature.nsd, symmetric=True)
    return Derivation(
        curv,
        "second directional derivative",
        f"q(v) = d²/dt² f(x + t v) at t = 0 is {'>= 0' if curv.psd else '<= 0'} for every v: {q}",
        [q],
    )


# ------------------------------------------------------------------------------------------
# certificates
# ------------------------------------------------------------------------------------------


def _certificate(
    claim: str, hess, proof: Derivation, an: Analyzer, kinks: list[Kink], domain: list[str], method: str
) -> Certificate:
    steps = _proof_steps(proof, an)
    if isinstance(hess, dict):
        text = "\n".join(f"H[{a},{b}] = {safe_text(h)}" for (a, b), h in hess.items())
    else:
        text = safe_text(hess)
    return Certificate(
        claim=claim,
        hessian_text=text,
        steps=steps,
        kinks=[k.describe() for k in kinks],
        domain=domain,
        method=method,
    )


def _proof_steps(root: Derivation, an: Analyzer, limit: int = 40) -> list[ProofStep]:
    steps: list[ProofStep] = []
    steps.append(ProofStep("the Hessian", root.curvature.describe(), root.rule, root.detail))
    queue = list(root.premises)
    seen: set[Expr] = set()
    while queue and len(steps) < limit:
        node = queue.pop(0)
        if node in seen:
            continue
        seen.add(node)
        derivation = None
        for (derived, _perms), d in an.derivations.items():
            if derived is node and d is not None and (d.curvature.psd or d.curvature.nsd):
                derivation = d
                break
        interval = an.intervals.get(node)
        fact_parts = []
        if interval is not None:
            fact_parts.append(f"entries {interval.describe()}")
        if derivation is not None and node.order > 0:
            fact_parts.append(f"as a matrix {derivation.curvature.describe()}")
        rule = derivation.rule if derivation is not None and node.order > 0 else an.interval_rules.get(node, "")
        detail = derivation.detail if derivation is not None and node.order > 0 else ""
        steps.append(ProofStep(safe_text(node, 120), "; ".join(fact_parts), rule, detail))
        if derivation is not None and node.order > 0:
            queue.extend(derivation.premises)
        elif node.op not in ("var", "const", "delta"):
            queue.extend(c for c in node.children if c.op not in ("const",))
    return steps
