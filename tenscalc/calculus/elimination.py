"""Jacobians of several outputs by several variables, by vertex elimination.

Reverse mode (``tenscalc.calculus.sweep``) accumulates a Jacobian from the
outputs down; forward mode from the variables up.  Both are special orders of
*vertex elimination* on the linearised computational graph (Griewank and
Walther, "Evaluating Derivatives", ch. 9-10): every node that depends on a
variable is a vertex, every edge ``child -> node`` carries the local Jacobian
``d node / d child`` (its *partial*), and eliminating a vertex ``j`` replaces
each path ``i -> j -> k`` by the edge ``i -> k`` with partial ``c_kj c_ji``
(added to an edge already there).  When only the variables and the outputs are
left, the edges are the Jacobian.  Eliminating in topological order is forward
mode, in reverse topological order reverse mode; any other order is
*cross-country*.  The number of products depends on the order; this module
offers forward, reverse and Markowitz order (always the vertex with the fewest
in-edges times out-edges), a Markowitz order by the products eliminating each vertex
would cost now (``"markowitz-cost"``: pairs through a ±1 partial are free), and
``"auto"``, which tries them all and keeps the
cheapest (by the number of products, or by the compiled cost model when
``shapes`` are given).

A partial is kept *diagonal* where the node is elementwise in that child
(``sin(x)``, ``x .* y``, ``a x + b y``): it is the vector of the diagonal's
entries, and products of diagonal partials stay elementwise products, so a
diagonal local Jacobian is never built dense.  Products with a partial of
exactly ±1 (a sum's) are free and not counted.  On a graph of scalars the
product count is the multiplication count of the accumulation (the function's
own values and the local partials not included), the figure the vertex
elimination literature reports.

>>> import tenscalc as tc
>>> x, y = tc.var("x", 0), tc.var("y", 0)
>>> z = x * y
>>> acc = tc.jacobian_accumulation([tc.log(tc.sin(z)), z + tc.sin(z)], ["x", "y"])
>>> acc.counts
{'forward': 4, 'reverse': 5, 'markowitz': 5, 'markowitz-cost': 5}
>>> acc.order, str(acc.jacobians[1]["y"])
('forward', 'x + cos(x *(,->) y) *(,->) x')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import nodes as N
from ..core.checks import require_distinct
from ..core.nodes import Expr, topological
from ..errors import SemanticError
from .pullbacks import FUNCTION_DERIVATIVES, PULLBACK_RULES

#: the elimination orders :func:`jacobian_accumulation` knows (``"auto"`` tries them all)
ORDERS = ("forward", "reverse", "markowitz", "markowitz-cost")


@dataclass(frozen=True)
class Partial:
    """The local Jacobian on one edge ``tail -> head`` of the linearised graph.

    ``diagonal``: the Jacobian is ``diag(value)``; head, tail and ``value`` have
    the same shape.  Otherwise ``value`` is dense, of order ``head.order +
    tail.order``, the head's axes first (the layout of ``tc.derivative``).
    """

    value: Expr
    diagonal: bool

    @property
    def unit(self) -> bool:
        """Exactly ±1 times the identity: a product with it costs nothing."""
        return self.diagonal and self.value.op == "const" and self.value.arg[0] in (1, -1)

    def dense(self) -> Expr:
        """The partial in ``tc.derivative``'s layout (a diagonal one written on its diagonal)."""
        if not self.diagonal or self.value.order == 0:
            return self.value
        s = tuple(range(self.value.order))
        return N.mul((self.value,), (s,), s + s)


# ------------------------------------------------------------------ local partials

#: ``rule(node, k)``: the partial of ``node`` by its child ``k`` (``None``: zero)
PartialRule = Callable[[Expr, int], "Partial | None"]


COST_MODELS: dict[str, Callable[[list[Expr], Mapping[str, Any]], float]] = {}
"""The compiler's cost model, ``COST_MODELS["flops"](exprs, shapes)``: the flops of the compiled
expressions, by which
``order="auto"`` with ``shapes`` compares the accumulation orders.  The compiler puts it
here when it is imported (``import tenscalc`` does), so the calculus never imports the
compiler."""


def _dense_by_pullback(node: Expr, k: int) -> Partial | None:
    """The dense partial ``d node / d child_k``: the node's pullback rule applied to the identity."""
    q = node.order
    seed = N.delta(q, node.dims) if q else N.const(1, 0)
    value = PULLBACK_RULES[node.op](node, k, seed, q)
    return None if value is None else Partial(value, False)


def _partial_add(node: Expr, k: int) -> Partial | None:
    # a sum's terms have one shape (their dims may name different variables' axes,
    # which the axis graph then requires to be equally long)
    return Partial(N.const(node.arg[k], node.order, node.dims), True)


def _partial_mul(node: Expr, k: int) -> Partial | None:
    ins, out = node.arg
    # elementwise in operand k: it carries the output's letters in order, each once,
    # and every other operand only output letters (no sum, no diagonal)
    if ins[k] == out and len(set(out)) == len(out) and all(set(s) <= set(out) for s in ins):
        others = [(c, s) for j, (c, s) in enumerate(zip(node.children, ins)) if j != k]
        if not others:
            return Partial(N.const(1, node.order, node.dims), True)
        if any(N.is_zero(c) for c, _ in others):
            return None
        operands, specs = [c for c, _ in others], [s for _, s in others]
        if set().union(*specs) != set(out):  # `2 *(,i->i) x`: the factor broadcast to x's shape
            operands.append(N.const(1, node.order, node.dims))
            specs.append(out)
        return Partial(N.mul(operands, specs, out), True)
    return _dense_by_pullback(node, k)


def _partial_func(node: Expr, k: int) -> Partial | None:
    factor = FUNCTION_DERIVATIVES[node.arg](node.children[0], node)
    return None if factor is None else Partial(factor, True)


def _partial_pow(node: Expr, k: int) -> Partial | None:
    base, exponent = node.children
    if k == 0:  # d(b^e)/db = e b^(e-1), entry by entry (the exponent is a scalar)
        s = tuple(range(base.order))
        if exponent.op == "const":
            lowered = N.power(base, N.const(exponent.arg[0] - 1, 0))
        else:
            lowered = N.power(base, N.add((exponent, N.const(1, 0)), (1, -1)))
        return Partial(N.mul((exponent, lowered), ((), s), s), True)
    return _dense_by_pullback(node, k)


def _leaf(node: Expr, k: int) -> Partial | None:
    raise AssertionError("leaves have no children")


PARTIAL_RULES: dict[str, PartialRule] = {
    "var": _leaf,
    "const": _leaf,
    "delta": _leaf,
    "add": _partial_add,
    "mul": _partial_mul,
    "func": _partial_func,
    "pow": _partial_pow,
    "inv": _dense_by_pullback,
    "det": _dense_by_pullback,
    "adj": _dense_by_pullback,
    "slice": _dense_by_pullback,
    "embed": _dense_by_pullback,
}


# ------------------------------------------------------------------ products and sums of partials


def compose(outer: Partial, inner: Partial, head_order: int, middle_order: int) -> Partial:
    """The partial of the path ``i -> j -> k``: ``outer`` (k by j) after ``inner`` (j by i)."""
    if outer.unit:
        return inner if outer.value.arg[0] == 1 else Partial(N.neg(inner.value), inner.diagonal)
    if inner.unit:
        return outer if inner.value.arg[0] == 1 else Partial(N.neg(outer.value), outer.diagonal)
    a, b = outer.value, inner.value
    if outer.diagonal and inner.diagonal:
        return Partial(N.elementwise_product(a, b), True)
    if outer.diagonal:  # diag(a) B: scale B's rows (k's axes are j's)
        j = tuple(range(middle_order))
        rest = tuple(range(middle_order, b.order))
        return Partial(N.mul((a, b), (j, j + rest), j + rest), False)
    k = tuple(range(head_order))
    j = tuple(range(head_order, head_order + middle_order))
    if inner.diagonal:  # A diag(b): scale A's columns
        return Partial(N.mul((a, b), (k + j, j), k + j), False)
    i = tuple(range(head_order + middle_order, head_order + middle_order + b.order - middle_order))
    return Partial(N.mul((a, b), (k + j, j + i), k + i), False)


def accumulate(old: Partial | None, new: Partial) -> Partial:
    """``old + new`` (dense unless both are diagonal)."""
    if old is None:
        return new
    if old.diagonal and new.diagonal:
        return Partial(N.add((old.value, new.value)), True)
    return Partial(N.add((old.dense(), new.dense())), False)


# ------------------------------------------------------------------ the graph


@dataclass
class _Graph:
    """The linearised graph: vertex ids are positions in ``nodes`` (sinks after them)."""

    nodes: list[Expr]
    orders: list[int]
    succ: dict[int, dict[int, Partial]] = field(default_factory=dict)
    pred: dict[int, dict[int, Partial]] = field(default_factory=dict)

    def add_edge(self, tail: int, head: int, partial: Partial) -> None:
        merged = accumulate(self.succ.setdefault(tail, {}).get(head), partial)
        self.succ[tail][head] = merged
        self.pred.setdefault(head, {})[tail] = merged

    def copy(self) -> _Graph:
        return _Graph(
            self.nodes,
            self.orders,
            {v: dict(e) for v, e in self.succ.items()},
            {v: dict(e) for v, e in self.pred.items()},
        )

    def degree(self, j: int) -> int:
        """Markowitz degree: in-edges times out-edges."""
        return len(self.pred.get(j, {})) * len(self.succ.get(j, {}))

    def price(self, j: int) -> int:
        """The products eliminating ``j`` now would cost (pairs with a ±1 partial are free)."""
        ins = self.pred.get(j, {}).values()
        outs = [p for p in self.succ.get(j, {}).values() if not p.unit]
        return sum(len(outs) for p in ins if not p.unit)

    def eliminate(self, j: int) -> int:
        """Vertex elimination of ``j``; the number of products that were not free."""
        count = 0
        ins = self.pred.pop(j, {})
        outs = self.succ.pop(j, {})
        for i, inner in ins.items():
            del self.succ[i][j]
            for k, outer in outs.items():
                count += not (inner.unit or outer.unit)
                self.add_edge(i, k, compose(outer, inner, self.orders[k], self.orders[j]))
        for k in outs:
            del self.pred[k][j]
        return count


def _linearise(outputs: Sequence[Expr], xs: Sequence[Expr]) -> tuple[_Graph, list[int], list[int], list[int]]:
    """The graph of the nodes between the variables and the outputs; the ids of the
    variables, of the intermediates (topological order) and of one sink per output."""
    nodes = topological(list(outputs))
    targets = set(xs)
    depends: set[Expr] = set()
    for node in nodes:
        if node in targets or any(c in depends for c in node.children):
            depends.add(node)
    # the nodes some output needs that depend on a variable
    kept = [n for n in nodes if n in depends]
    index = {n: i for i, n in enumerate(kept)}
    sinks = list(range(len(kept), len(kept) + len(outputs)))
    graph = _Graph(kept + list(outputs), [n.order for n in kept] + [o.order for o in outputs])
    for node in kept:
        if node in targets:
            continue
        rule = PARTIAL_RULES[node.op]
        for k, child in enumerate(node.children):
            if child in depends:
                partial = rule(node, k)
                if partial is not None:
                    graph.add_edge(index[child], index[node], partial)
    for sink, out in zip(sinks, outputs):
        if out in depends:  # the output as a sink of its own: outputs can feed other outputs
            graph.add_edge(index[out], sink, Partial(N.const(1, out.order, out.dims), True))
    variables = [index[x] for x in xs if x in index]
    intermediates = [i for i, n in enumerate(kept) if n not in targets]
    return graph, variables, intermediates, sinks


def _sequence(graph: _Graph, intermediates: list[int], order: str) -> tuple[_Graph, int]:
    """Eliminate every intermediate in ``order``; the graph left and the product count."""
    g = graph.copy()
    if order == "forward":
        return g, sum(g.eliminate(j) for j in intermediates)
    if order == "reverse":
        return g, sum(g.eliminate(j) for j in reversed(intermediates))
    left = set(intermediates)
    total = 0
    measure = g.degree if order == "markowitz" else g.price
    while left:
        j = min(left, key=lambda v: (measure(v), v))  # ties: the earlier vertex
        total += g.eliminate(j)
        left.remove(j)
    return g, total


# ------------------------------------------------------------------ the public function


@dataclass(frozen=True)
class JacobianAccumulation:
    """What :func:`jacobian_accumulation` returns.

    Attributes
    ----------
    jacobians : list of dict
        One dict per output: variable name -> ``d output / d variable`` in
        ``tc.derivative``'s layout (output axes first).
    partials : list of dict
        The same as ``Partial`` objects: a diagonal one holds only the
        diagonal (an elementwise function's Jacobian, without its zeros).
    order : str
        The elimination order used.
    products : int
        Products of partials that order performs (multiplications on a scalar graph).
    counts : dict
        The product count of every order that was tried.
    """

    jacobians: list[dict[str, Expr]]
    partials: list[dict[str, Partial]]
    order: str
    products: int
    counts: dict[str, int]


def jacobian_accumulation(
    outputs: Expr | Sequence[Expr],
    wrt: str | Expr | Sequence[str | Expr],
    order: str = "auto",
    *,
    shapes: Mapping[str, Any] | None = None,
    simplify: bool = True,
) -> JacobianAccumulation:
    """All Jacobians ``d output / d variable`` by vertex elimination in a chosen order.

    Parameters
    ----------
    outputs : Expr or list of Expr
        The functions (of any orders), e.g. the outputs of a flux as scalars.
    wrt : str or Expr, or a list of them
        The variables.
    order : str
        ``"forward"``, ``"reverse"``, ``"markowitz"`` (cross-country: always the
        vertex with the fewest in-edges times out-edges next), ``"markowitz-cost"``
        (the vertex whose elimination costs the fewest products next), or
        ``"auto"``: all four, keeping the one with the fewest products, or with ``shapes`` the
        fewest flops of the compiled Jacobians (``tc.compile(...).cost(shapes)``).
    shapes : dict, optional
        Variable name -> shape, for ``"auto"`` to compare compiled costs.
    simplify : bool
        Simplify the Jacobians together (default).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("sin(x *(,->) y)", {"x": 0, "y": 0})
    >>> acc = tc.jacobian_accumulation([f], ["x", "y"])
    >>> float(tc.evaluate(acc.jacobians[0]["x"], x=0.0, y=2.0))
    2.0
    """
    outs: list[Expr] = [outputs] if isinstance(outputs, Expr) else list(outputs)
    if not outs or not all(isinstance(o, Expr) for o in outs):
        raise SemanticError("jacobian_accumulation needs a tenscalc expression or a non-empty list of them")
    names = [wrt] if isinstance(wrt, (str, Expr)) else list(wrt)
    if not names:
        raise SemanticError("the list of variables to differentiate by is empty")
    xs = require_distinct([_resolve(outs, w) for w in names])
    labels = [x.arg[0] for x in xs]
    candidates = ORDERS if order == "auto" else (order,)
    if order != "auto" and order not in ORDERS:
        raise SemanticError(f"unknown elimination order {order!r}: use one of {', '.join(ORDERS)} or 'auto'")
    graph, variables, intermediates, sinks = _linearise(outs, xs)
    results = {name: _sequence(graph, intermediates, name) for name in candidates}
    counts = {name: count for name, (_, count) in results.items()}
    built = {name: _read(g, outs, xs, sinks, variables, graph) for name, (g, _) in results.items()}
    if len(candidates) > 1 and shapes is None:  # by the product count: only the best is simplified
        candidates = (min(candidates, key=lambda name: counts[name]),)
    if simplify:
        for name in candidates:
            built[name] = _simplified(*built[name], len(outs), labels)
    if len(candidates) == 1:
        best = candidates[0]
    else:
        flops_of = COST_MODELS["flops"]

        def flops(name: str) -> float:
            return flops_of([e for row in built[name][0] for e in row.values()], shapes or {})

        best = min(candidates, key=lambda name: (flops(name), counts[name]))
    jacobians, partials = built[best]
    return JacobianAccumulation(jacobians, partials, best, counts[best], counts)


def _resolve(outs: list[Expr], wrt: str | Expr) -> Expr:
    """The variable ``wrt`` names, looked up in all outputs (as ``resolve_wrt`` does in one)."""
    if isinstance(wrt, Expr):
        if wrt.op != "var":
            raise SemanticError(f"can only differentiate by a variable, not by `{wrt}`")
        name, order = wrt.arg
        for out in outs:
            known = out.variables.get(name)
            if known is not None and known != order:
                raise SemanticError(
                    f"'{name}' has order {known} in the outputs but tc.var('{name}', {order}) was given"
                )
        return wrt
    if not isinstance(wrt, str):
        raise SemanticError(f"wrt must be a variable name or tc.var(...), got {wrt!r}")
    for out in outs:
        if wrt in out.variables:
            return N.var(wrt, out.variables[wrt])
    for out in outs:
        if wrt in out.shape_variables:  # only its shape is used: the derivative by it is zero
            return N.var(wrt, out.shape_variables[wrt])
    names = sorted({v for out in outs for v in out.variables})
    raise SemanticError(
        f"unknown variable '{wrt}': the outputs' variables are {', '.join(names) or 'none'} "
        f"(pass tc.var('{wrt}', order) to differentiate by a variable they do not contain)"
    )


def _simplified(
    jacobians: list[dict[str, Expr]], partials: list[dict[str, Partial]], n_outs: int, labels: list[str]
) -> tuple[list[dict[str, Expr]], list[dict[str, Partial]]]:
    """Both forms of every Jacobian, simplified together (they share their subexpressions)."""
    from ..simplifier import simplify_many

    pairs = [(o, x) for o in range(n_outs) for x in labels]
    flat = simplify_many([jacobians[o][x] for o, x in pairs] + [partials[o][x].value for o, x in pairs])
    new_jacobians: list[dict[str, Expr]] = [{} for _ in range(n_outs)]
    new_partials: list[dict[str, Partial]] = [{} for _ in range(n_outs)]
    for n, (o, x) in enumerate(pairs):
        new_jacobians[o][x] = flat[n]
        new_partials[o][x] = Partial(flat[len(pairs) + n], partials[o][x].diagonal)
    return new_jacobians, new_partials


def _read(
    g: _Graph, outs: list[Expr], xs: list[Expr], sinks: list[int], variables: list[int], graph: _Graph
) -> tuple[list[dict[str, Expr]], list[dict[str, Partial]]]:
    """The Jacobians on the edges variable -> sink of the eliminated graph."""
    index = {graph.nodes[v]: v for v in variables}
    jacobians: list[dict[str, Expr]] = []
    partials: list[dict[str, Partial]] = []
    for out, sink in zip(outs, sinks):
        row: dict[str, Expr] = {}
        parts: dict[str, Partial] = {}
        for x in xs:
            edge = g.pred.get(sink, {}).get(index[x]) if x in index else None
            if edge is None:
                zero = N.const(0, out.order + x.order, out.dims + x.dims)
                edge = Partial(zero, False)
            parts[x.arg[0]] = edge
            row[x.arg[0]] = edge.dense()
        jacobians.append(row)
        partials.append(parts)
    return jacobians, partials
