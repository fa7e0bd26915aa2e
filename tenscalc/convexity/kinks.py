"""Non-smooth points: kinks of ``abs``, ``relu`` and fractional powers, jumps of ``sign``.

The Hessian of ``-abs(x)`` is zero wherever it exists, yet ``-abs(x)`` is not
convex: the second derivative has a point mass at the kink.  Along a line
``φ(t) = f(x + t v)`` a kink node ``n`` (``abs(u)``, ``relu(u)`` or ``u^p`` with
``0 < p < 1``) is continuous, nonnegative and has a local minimum where it is
zero, so its one-sided derivatives jump *upwards* there.  If ``a = ∂f/∂n`` (the
adjoint of the node) is ``>= 0`` at the kink, ``f``'s derivative jumps upwards
too: the kink is convex (a point mass of sign ``+``); ``a <= 0`` makes it
concave.  Where the one-sided derivatives of ``n`` can be infinite
(``u^p``, ``p < 1``) the adjoint must be strictly signed.  With the Hessian PSD
between kinks and every kink convex, ``φ`` is convex.

Kinks on the boundary of the domain (``sqrt(x)`` at ``x = 0`` when ``x`` is a
variable) need nothing: ``f`` is continuous there and convexity on the interior
extends to the closure.  ``sign(u)`` makes ``f`` jump: convexity is not
certified where a ``sign`` of the variables occurs in ``f``.

The adjoint is computed symbolically (the node is replaced by a fresh variable,
``f`` differentiated by it, the node put back) and bounded by intervals, with the
node itself (for a scalar node) set to 0.  Kink nodes that *dominate* the node
(every path to the root passes through them) are assumed inactive: where they
are active, the inner kink does not affect ``f`` separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..calculus.api import derivative
from ..core import nodes as N
from ..core.nodes import Expr, topological
from ..core.products import is_power_zero
from ..core.text import short as _short
from .analysis import Analyzer
from .assumptions import constant_value
from .facts import Interval


def substitute(root: Expr, mapping: Mapping[Expr, Expr]) -> Expr:
    """``root`` with the nodes that are keys of ``mapping`` replaced."""
    built: dict[Expr, Expr] = {}
    for node in topological(root):
        if node in mapping:
            built[node] = mapping[node]
            continue
        children = tuple(built[c] for c in node.children)
        if all(a is b for a, b in zip(children, node.children)):
            built[node] = node
        else:
            built[node] = N.make(node.op, children, node.arg)
    return built[root]


def depends_on(node: Expr, names: set[str]) -> bool:
    return bool(set(node.variables) & names)


@dataclass
class Kink:
    """One non-smooth node of ``f`` and what is known at its kink."""

    node: Expr
    kind: str  # "abs", "relu", "power", "sign"
    adjoint: Expr | None = None
    interval: Interval | None = None
    convex_ok: bool = False
    concave_ok: bool = False
    note: str = ""

    def describe(self) -> str:
        what = {
            "abs": "kink of abs",
            "relu": "kink of relu",
            "power": "cusp of a fractional power",
            "sign": "jump of sign",
        }[self.kind]
        text = f"{what} at {_short(self.node.children[0])} = 0"
        if self.adjoint is not None and self.interval is not None:
            text += f": adjoint ∂f/∂({_short(self.node, 40)}) = {_short(self.adjoint, 60)}"
            text += f" is {self.interval.describe()} at the kink"
        if self.note:
            text += f" ({self.note})"
        return text


def _fractional_kink(node: Expr) -> bool:
    if node.op != "pow":
        return False
    e = constant_value(node.children[1])
    return e is not None and 0 < e < 1


def affine_in(node: Expr, wrt: set[str]) -> bool:
    """``node`` is an affine function of the variables ``wrt`` (its derivative is free of
    them, and it has no jump: ``sign(x)`` has derivative 0 almost everywhere, yet jumps)."""
    if not depends_on(node, wrt):
        return True
    for n in topological(node):
        if n.op == "func" and n.arg == "sign" and depends_on_values(n, wrt):
            return False
    for name in sorted(set(node.variables) & wrt):
        d = derivative(node, name)
        if depends_on_values(d, wrt):
            return False
    return True


def depends_on_values(node: Expr, names: set[str]) -> bool:
    """Whether the value of ``node`` depends on ``names`` (``x^0``, a ones tensor of
    ``x``'s shape, does not)."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "var" and n.arg[0] in names:
            return True
        if is_power_zero(n):
            continue
        stack.extend(n.children)
    return False


def find_kinks(f: Expr, wrt: set[str], an: Analyzer) -> list[Kink]:
    """The non-smooth nodes of ``f`` that depend on ``wrt`` and can be at their kink
    inside the domain."""
    found: list[Kink] = []
    for node in topological(f):
        if not depends_on(node, wrt):
            continue
        if node.op == "func" and node.arg in ("abs", "relu", "sign"):
            u = an.interval(node.children[0])
            if u.nonneg and (node.arg != "sign" or u.pos) or u.nonpos and (node.arg != "sign" or u.neg):
                continue  # one-signed argument: smooth on the domain
            found.append(Kink(node, node.arg if node.arg != "sign" else "sign"))
        elif _fractional_kink(node):
            base = node.children[0]
            if an.interval(base).pos:
                continue
            if affine_in(base, wrt):
                continue  # u = 0 is the boundary of {u >= 0}
            found.append(Kink(node, "power"))
    return found


def _dominators(f: Expr, target: Expr, candidates: list[Expr]) -> list[Expr]:
    """Those ``candidates`` through which every path from ``target`` to ``f`` passes."""
    result = []
    for k in candidates:
        if k is target:
            continue
        seen = {k}
        stack = [f] if f is not k else []
        reached = False
        while stack:
            node = stack.pop()
            if node is target:
                reached = True
                break
            if node in seen:
                continue
            seen.add(node)
            stack.extend(node.children)
        if not reached and any(target is n for n in topological(k)):
            result.append(k)
    return result


def _entrywise_in(root: Expr, node: Expr) -> bool:
    """Every node of ``root`` that depends on ``node`` reads it entry by entry (sums,
    elementwise functions and powers, products without summed or moved letters), so
    that entry ``i`` of ``root`` depends on entry ``i`` of ``node`` alone."""
    if root.order != node.order:
        return False
    from .algebra import is_elementwise_mul

    contains: dict[Expr, bool] = {}
    for m in topological(root):
        contains[m] = m is node or any(contains[c] for c in m.children)
        if not contains[m] or m is node:
            continue
        if m.order != node.order:
            return False
        if m.op in ("add", "func"):
            continue
        if m.op == "pow" and not contains[m.children[1]]:
            continue
        if m.op == "mul" and is_elementwise_mul(m):
            ins, out = m.arg
            if all(spec == out for c, spec in zip(m.children, ins) if contains[c]):
                continue
        return False
    return True


def _solve_for_term(u: Expr) -> tuple[Expr, float] | None:
    """``u = a c + b`` with constants ``b``: ``(c, -b/a)``, the value of ``c`` where ``u = 0``."""
    if u.op != "add":
        return None
    variable = [(c, k) for c, k in zip(u.children, u.arg) if c.op != "const"]
    if len(variable) != 1 or variable[0][1] == 0:
        return None
    child, a = variable[0]
    b = sum(k * c.arg[0] for c, k in zip(u.children, u.arg) if c.op == "const")
    return child, -b / a


def adjoint(f: Expr, node: Expr) -> Expr:
    """``∂f/∂node`` as an expression (total: through every path from the node)."""
    fresh = N.var("kink__node", node.order)
    cut = substitute(f, {node: fresh})
    d = derivative(cut, fresh)
    return substitute(d, {fresh: node})


def check_kinks(
    f: Expr,
    kinks: list[Kink],
    variables: Mapping[str, Interval],
    tags,
    refine: Mapping[Expr, Interval],
    wrt: set[str],
) -> None:
    """Fill in, for each kink, whether it is convex and/or concave."""
    power_kinks = [k.node for k in kinks if k.kind == "power" and k.node.children[0].order == 0]
    for kink in kinks:
        if kink.kind == "sign":
            kink.note = "f jumps here: not certified"
            continue
        node = kink.node
        a = adjoint(f, node)
        kink.adjoint = a
        overrides: dict[Expr, Interval] = {}
        extra: dict[Expr, Interval] = dict(refine)
        u = node.children[0]
        if node.order == 0 or (_entrywise_in(a, node) and _entrywise_in(a, u)):
            # at the kink the node and its argument are 0 (for a tensor node: entry by
            # entry, allowed when each entry of the adjoint reads only the same entry of
            # every node that is fixed)
            overrides[node] = Interval.point(0)
            overrides[u] = Interval.point(0)
            solved = _solve_for_term(u)
            if solved is not None and (node.order == 0 or _entrywise_in(a, solved[0])):
                overrides[solved[0]] = Interval.point(solved[1])  # |r| - 1 = 0: |r| = 1
        for k in _dominators(f, node, power_kinks):
            base = k.children[0]
            extra[base] = extra.get(base, Interval.real()).intersect(Interval.positive())
        an = Analyzer(variables, tags, extra, wrt, overrides, kink_mode=True)
        an.beside = Analyzer(variables, tags, extra, wrt)
        iv = an.interval(a)
        kink.interval = iv
        if kink.kind == "power":
            kink.convex_ok = iv.pos and not iv.empty or iv.empty
            kink.concave_ok = iv.neg and not iv.empty or iv.empty
            if not (kink.convex_ok or kink.concave_ok):
                kink.note = "a fractional power can have infinite slope here; a strictly signed adjoint is needed"
        else:
            kink.convex_ok = iv.nonneg
            kink.concave_ok = iv.nonpos


KINK_WEIGHT = {"abs": 2.0, "relu": 1.0}
"""The jump of the slope of ``abs(u)`` / ``relu(u)`` crossing ``u = 0``, per unit of ``|u'|``."""


def _kink_place(kink: Kink) -> tuple[Expr, float] | None:
    """(u, ±1): kinks at ``u = 0`` and at ``-u = 0`` are at the same place."""
    if kink.kind not in KINK_WEIGHT:
        return None
    u = kink.node.children[0]
    if u.op == "add" and len(u.children) == 1 and u.arg[0] == -1:
        return u.children[0], -1.0
    return u, 1.0


def combine_kinks(kinks: list[Kink]) -> None:
    """Kinks at the same place add their jumps: ``|x| - relu(x) - relu(-x)`` jumps by
    ``2·1 - 1 - 1 = 0``.  A group whose summed jump ``Σ weight · adjoint`` is >= 0 (<= 0)
    bends up (down) even where its members alone do not."""
    groups: dict[Expr, list[Kink]] = {}
    for k in kinks:
        place = _kink_place(k)
        if place is not None and k.interval is not None:
            groups.setdefault(place[0], []).append(k)
    for members in groups.values():
        if len(members) < 2 or all(k.convex_ok and k.concave_ok for k in members):
            continue
        total = Interval.point(0.0)
        for k in members:
            total = total + k.interval.scale(KINK_WEIGHT[k.kind])
        if total.empty:
            continue
        names = ", ".join(_short(k.node, 30) for k in members)
        for k in members:
            if total.nonneg and not k.convex_ok:
                k.convex_ok = True
                k.note = f"with the kinks of {names} at the same place the slope jumps by {total.describe()}"
            if total.nonpos and not k.concave_ok:
                k.concave_ok = True
                k.note = f"with the kinks of {names} at the same place the slope jumps by {total.describe()}"
