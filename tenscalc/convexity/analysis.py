"""The labelling pass: intervals for every node, matrix facts on demand.

:class:`Analyzer` walks a DAG children-first and gives every node an
:class:`~.facts.Interval` for its entries (one rule per node kind, from
:data:`.INTERVAL_RULES`), tightened by the domain (``log(u)`` ⇒ ``u > 0``)
and, where intervals cannot decide a sign, by the rational algebra of
:mod:`.algebra`.  Matrix facts (:class:`~.facts.Curvature`) are derived lazily,
from the root down, only for the nodes a proof needs, and memoised: each node is
labelled once, so the pass is linear in the size of the DAG (the per-node work
is capped).

Every fact records its rule and premises, so the proof can be printed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.nodes import Expr, topological
from .algebra import ExpansionCache, rational_interval
from .congruence import kernel_rule
from .curvature import CURVATURE_RULES
from .derivation import Derivation, identity_perm
from .facts import Curvature, Fact, Interval
from .intervals import INTERVAL_RULES


class Analyzer:
    """Facts about the nodes of DAGs, under given variable assumptions.

    Parameters
    ----------
    variables : mapping
        name -> Interval for the entries of each variable.
    tags : mapping
        name -> set of matrix tags (``symmetric``, ``psd``, ``pd``, ``diagonal``).
    refine : mapping
        node -> Interval known on the domain (from ``log``, fractional powers ...).
    wrt : iterable of names
        The variables the function is analysed in (a modulus must not depend on them).
    overrides : mapping
        node -> Interval replacing the computed one (a kink examined at ``u = 0``).
    kink_mode : bool
        Powers with negative exponents may be evaluated at an attained 0.
    """

    def __init__(
        self,
        variables: Mapping[str, Interval],
        tags: Mapping[str, set[str]] | None = None,
        refine: Mapping[Expr, Interval] | None = None,
        wrt: Iterable[str] = (),
        overrides: Mapping[Expr, Interval] | None = None,
        kink_mode: bool = False,
    ):
        self.variables = dict(variables)
        self.tags = {k: set(v) for k, v in (tags or {}).items()}
        self.refine = dict(refine or {})
        self.wrt_names = set(wrt)
        self.overrides = dict(overrides or {})
        self.kink_mode = kink_mode
        # at a kink: the same analysis without the kink's overrides, for the values beside it
        self.beside: Analyzer | None = None
        self.intervals: dict[Expr, Interval] = {}
        self.interval_rules: dict[Expr, str] = {}
        self.derivations: dict[tuple[Expr, tuple], Derivation | None] = {}
        self._active: set[tuple[Expr, tuple]] = set()
        self.expansions = ExpansionCache()  # shared by every node this analyzer labels
        self._opaque: dict[Expr, frozenset[Expr]] = {}  # bases of non-integer powers under a node

    # -- intervals ---------------------------------------------------------------------------
    def variable_interval(self, name: str) -> Interval:
        return self.variables.get(name, Interval.real())

    def matrix_tags(self, name: str) -> set[str]:
        return self.tags.get(name, set())

    def interval(self, node: Expr) -> Interval:
        known = self.intervals.get(node)
        if known is not None:
            return known
        for n in topological(node):
            if n not in self.intervals:
                self._label(n)
        return self.intervals[node]

    def _label(self, node: Expr) -> None:
        self._opaque_under(node)
        if node in self.overrides:
            self.intervals[node] = self.overrides[node]
            self.interval_rules[node] = "at the kink"
            return
        value = INTERVAL_RULES[node.op](self, node)
        how = f"{node.op} rule" if node.op != "func" else f"range of {node.arg}"
        refined = self.refine.get(node)
        if refined is not None:
            narrowed = value.intersect(refined)
            if narrowed != value:
                how += " and the domain"
            value = narrowed
        if not value.empty and not (value.nonneg or value.nonpos) and node.op == "mul" and node.order == 0:
            # a scalar quadratic form sum A(s) M(s,s') A(s') with a PSD middle is >= 0
            self.intervals[node] = value
            ins, out = node.arg
            d = kernel_rule(self, list(zip(node.children, ins)), out, 0, ())
            if d is not None and (d.curvature.psd or d.curvature.nsd):
                value = value.intersect(Interval.nonnegative() if d.curvature.psd else Interval.nonpositive())
                how = d.rule
        if not value.empty and not (value.nonneg or value.nonpos) and node.op in ("add", "mul"):
            self.intervals[node] = value  # children are labelled; the algebra reads them
            better = rational_interval(node, self._interval_or_none, self.expansions, self._opaque_under(node))
            if better is not None and not better.is_indeterminate:
                tighter = value.intersect(better)
                if tighter != value:
                    value = tighter
                    how = "cleared denominators and cancelled"
        self.intervals[node] = value
        self.interval_rules[node] = how

    def _opaque_under(self, node: Expr) -> frozenset[Expr]:
        """``algebra.opaque_bases([node])``, from the children's sets (labelled first)."""
        known = self._opaque.get(node)
        if known is not None:
            return known
        found: set[Expr] = set()
        for child in node.children:
            found |= self._opaque_under(child)
        if node.op == "pow" and node.children[1].op == "const" and not float(node.children[1].arg[0]).is_integer():
            found.add(node.children[0])
        result = frozenset(found) if found else frozenset()
        self._opaque[node] = result
        return result

    def _interval_or_none(self, node: Expr) -> Interval | None:
        try:
            return self.interval(node)
        except Exception:  # noqa: BLE001 - unknown node: no information
            return None

    # -- matrix facts --------------------------------------------------------------------------
    def derive(self, node: Expr, perms: tuple | None = None) -> Derivation | None:
        """How ``node`` (order 2k, read over its first and last k axes) is semidefinite.

        ``perms`` are the permutations of the last k axes allowed when reading it
        (more than the identity for symmetric matrix variables).
        """
        if node.order % 2:
            return None
        k = node.order // 2
        if perms is None:
            perms = (identity_perm(k),)
        key = (node, perms)
        if key in self.derivations:
            return self.derivations[key]
        if key in self._active:
            return None
        self._active.add(key)
        self.interval(node)
        try:
            result = CURVATURE_RULES[node.op](self, node, perms)
        finally:
            self._active.discard(key)
        self.derivations[key] = result
        return result

    def curvature(self, node: Expr, perms: tuple | None = None) -> Curvature | None:
        d = self.derive(node, perms)
        return None if d is None else d.curvature

    def fact(self, node: Expr, perms: tuple | None = None) -> Fact:
        d = self.derive(node, perms) if node.order % 2 == 0 else None
        return Fact(
            self.interval(node),
            None if d is None else d.curvature,
            (d.rule if d is not None else self.interval_rules.get(node, "")),
            d.detail if d is not None else "",
            tuple(d.premises) if d is not None else (),
        )
