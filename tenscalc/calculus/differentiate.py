"""Reverse-mode symbolic differentiation over the DAG.

For a root ``y`` of order ``q`` the *pullback* of a node ``v`` is the tensor
``P_v = d y / d v`` of order ``q + order(v)``, axes laid out as ``y``'s then
``v``'s.  The seed is ``P_y = delta(q)``; every node passes to each child, through
the rule for its kind, a contribution to the child's pullback, and the
contributions a child receives from several parents are summed (Laue,
Mitterreiter and Giesen's tensor calculus).  ``P_x`` for the variable ``x`` is
the derivative, laid out as in LANGUAGE.md §4 (jax.jacobian's layout).

A rule returns ``None`` for a zero contribution: zero tensors are never built.

The product rule for ``y[out] = sum prod_k A_k[s_k]`` gives operand ``k`` the
einsum of ``P`` with the other operands into ``R + s_k``.  Where a letter of
``s_k`` occurs in no other operand and not in the output (``A *(ij,j->) v`` by
``A``: the published proof breaks here) the einsum would have an output letter
without an input; the 2022 thesis added an explicit sum, here a ones tensor over
the missing letters.  Repeated letters in ``s_k`` (a diagonal read) become a
repeated output letter (the pullback lies on the diagonal); repeated letters in
``out`` read the diagonal of ``P``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import overload

from ..core import nodes as N
from ..core.checks import require_expr
from ..core.nodes import Expr, topological
from ..errors import SemanticError
from ..simplifier.driver import simplify as run_simplifier
from ..simplifier.driver import simplify_many

PullbackRule = Callable[[Expr, int, Expr, int], "Expr | None"]


def _resolve_wrt(expr: Expr, wrt: str | Expr) -> Expr:
    if isinstance(wrt, Expr):
        if wrt.op != "var":
            raise SemanticError(f"can only differentiate by a variable, not by `{wrt}`")
        name, order = wrt.arg
        known = expr.variables.get(name)
        if known is not None and known != order:
            raise SemanticError(f"'{name}' has order {known} in the expression but tc.var('{name}', {order}) was given")
        return wrt
    if not isinstance(wrt, str):
        raise SemanticError(f"wrt must be a variable name or tc.var(...), got {wrt!r}")
    variables = expr.variables
    if wrt not in variables:
        shape_only = expr.shape_variables
        if wrt in shape_only:  # only its shape is used: the derivative by it is zero
            return N.var(wrt, shape_only[wrt])
        names = ", ".join(variables) or "none"
        raise SemanticError(
            f"unknown variable '{wrt}': the expression's variables are {names} "
            f"(pass tc.var('{wrt}', order) to differentiate by a variable it does not contain)"
        )
    return N.var(wrt, variables[wrt])


#: several variables to differentiate by at once (a list or a tuple, not any sequence:
#: a str is a sequence too)
WrtList = list[str | Expr] | list[str] | list[Expr] | tuple[str | Expr, ...]


def _resolve_wrt_list(expr: Expr, wrt: WrtList) -> list[Expr]:
    if not wrt:
        raise SemanticError("the list of variables to differentiate by is empty")
    xs = [_resolve_wrt(expr, w) for w in wrt]
    names = [x.arg[0] for x in xs]
    for name in names:
        if names.count(name) > 1:
            raise SemanticError(f"variable '{name}' is listed twice in wrt")
    return xs


@overload
def derivative(expr: Expr, wrt: str | Expr, *, simplify: bool = True) -> Expr: ...
@overload
def derivative(expr: Expr, wrt: WrtList, *, simplify: bool = True) -> dict[str, Expr]: ...
def derivative(expr: Expr, wrt: str | Expr | WrtList, *, simplify: bool = True) -> Expr | dict[str, Expr]:
    """The derivative ``d expr / d wrt`` as a new expression.

    The result has order ``expr.order + wrt.order``: the expression's axes first,
    then the variable's.  A variable the expression does not contain gives the
    zero tensor.

    Parameters
    ----------
    expr : Expr
        What to differentiate.
    wrt : str or Expr, or a list of them
        A variable name of ``expr`` or a ``tc.var``.  With a list (or tuple),
        the result is a dict name -> derivative, all read from one reverse
        sweep and simplified together, so they share subexpressions (JAX's
        ``argnums``).
    simplify : bool
        Run the simplifier on the result (default).  ``False`` gives the raw
        reverse-mode DAG, useful to see what simplification does.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> str(tc.derivative(tc.derivative(f, "x"), "x"))
    'A *(ij,->ji) 1 + A'
    >>> d = tc.derivative(f, ["x", "A"])    # one sweep, a dict name -> derivative
    >>> {name: e.order for name, e in d.items()}
    {'x': 1, 'A': 2}
    """
    if not isinstance(expr, Expr):
        raise SemanticError(f"derivative needs a tenscalc expression, got {type(expr).__name__}")
    if isinstance(wrt, (list, tuple)):
        xs = _resolve_wrt_list(expr, wrt)
        raws = reverse_sweep_many(expr, xs, expr.order)  # one sweep for every variable
        results = simplify_many(raws) if simplify else raws
        return {x.arg[0]: r for x, r in zip(xs, results)}
    x = _resolve_wrt(expr, wrt)
    q = expr.order
    result = reverse_sweep(expr, x, q)
    return run_simplifier(result) if simplify else result


def reverse_sweep(expr: Expr, x: Expr, q: int, observe: Callable[[Expr, Expr], None] | None = None) -> Expr:
    """The raw (unsimplified) reverse-mode derivative of ``expr`` by ``x``.

    ``observe(new, node)`` is called for the seed (with the root), for each
    node's summed pullback and for each contribution a node's rule makes, so that
    tools (the pullback colouring of ``tenscalc.to_dot``) can tell which node
    of ``expr`` produced which part of the derivative.
    """
    return reverse_sweep_many(expr, [x], q, observe)[0]


def reverse_sweep_many(
    expr: Expr, xs: list[Expr], q: int, observe: Callable[[Expr, Expr], None] | None = None
) -> list[Expr]:
    """:func:`reverse_sweep` for several variables at once: one sweep, whose
    pullbacks of every node are shared, read at each variable of ``xs``."""
    nodes = topological(expr)
    targets = {id(x) for x in xs}
    depends: set[int] = set()
    for node in nodes:
        if id(node) in targets or any(id(c) in depends for c in node.children):
            depends.add(id(node))
    found: dict[int, Expr] = {}
    if id(expr) in depends:
        seed = N.delta(q, expr.dims) if q else N.const(1, 0)
        if observe:
            observe(seed, expr)
        contributions: dict[int, list[Expr]] = {id(expr): [seed]}
        for node in reversed(nodes):
            if id(node) not in depends:
                continue
            parts = contributions.pop(id(node), None)
            if not parts:
                continue
            pullback = parts[0] if len(parts) == 1 else N.add(parts)
            if observe:
                observe(pullback, node)
            if id(node) in targets:
                found[id(node)] = pullback
                if len(found) == len(targets):
                    break
                continue
            rule = PULLBACK_RULES[node.op]
            for k, child in enumerate(node.children):
                if id(child) in depends:
                    contribution = rule(node, k, pullback, q)
                    if contribution is not None:
                        if observe:
                            observe(contribution, node)
                        contributions.setdefault(id(child), []).append(contribution)
    # d expr / d x has expr's axes, then x's: a zero keeps their dimensions
    return [found.get(id(x), N.const(0, q + x.order, expr.dims + x.dims)) for x in xs]


@overload
def gradient(expr: Expr, wrt: str | Expr) -> Expr: ...
@overload
def gradient(expr: Expr, wrt: WrtList) -> dict[str, Expr]: ...
def gradient(expr: Expr, wrt: str | Expr | WrtList) -> Expr | dict[str, Expr]:
    """The gradient of a scalar expression (``wrt``'s shape).

    With a list of variables, a dict name -> gradient from one reverse sweep.

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.gradient(tc.parse("X *(ij,ij->) X", {"X": 2}), "X"))
    '2 *(,ij->ij) X'
    >>> g = tc.gradient(tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}), ["x", "A"])
    >>> sorted(g), g["A"].order
    (['A', 'x'], 2)
    """
    if not isinstance(expr, Expr) or expr.order != 0:
        order = getattr(expr, "order", "?")
        raise SemanticError(f"gradient needs a scalar (order 0) expression, this one has order {order}; use jacobian")
    return derivative(expr, wrt)


@overload
def jacobian(expr: Expr, wrt: str | Expr) -> Expr: ...
@overload
def jacobian(expr: Expr, wrt: WrtList) -> dict[str, Expr]: ...
def jacobian(expr: Expr, wrt: str | Expr | WrtList) -> Expr | dict[str, Expr]:
    """The Jacobian ``d expr / d wrt`` of any order (same as ``derivative``).

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.jacobian(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}), "x"))
    'A'
    """
    return derivative(expr, wrt)


@overload
def hessian(expr: Expr, wrt: str | Expr, wrt2: str | Expr | None = None) -> Expr: ...
@overload
def hessian(expr: Expr, wrt: WrtList, wrt2: WrtList | None = None) -> dict[str, dict[str, Expr]]: ...
def hessian(
    expr: Expr, wrt: str | Expr | WrtList, wrt2: str | Expr | WrtList | None = None
) -> Expr | dict[str, dict[str, Expr]]:
    """Second derivative; ``hessian(f, x, y)[a, b] = d^2 f / dx[a] dy[b]``.

    With a list of variables the result is the block Hessian as a nested dict,
    ``H[x][y] = d^2 f / dx dy`` (JAX's ``hessian`` with ``argnums`` gives nested
    tuples): one reverse sweep for all first derivatives, then one per variable
    for the second, all simplified together.  ``wrt2`` (a list too) picks other
    column variables; by default they are ``wrt``'s.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.hessian(tc.parse("U *(ij,ij->) U", {"U": 2}), "U").order
    4
    >>> H = tc.hessian(tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}), ["x", "A"])
    >>> H["x"]["A"].order, H["A"]["x"].order
    (3, 3)
    """
    if isinstance(wrt, (list, tuple)):
        if wrt2 is not None and not isinstance(wrt2, (list, tuple)):
            raise SemanticError("with a list of variables, wrt2 must be a list too (or left out)")
        rows = _resolve_wrt_list(expr, wrt)
        columns = rows if wrt2 is None else _resolve_wrt_list(expr, wrt2)
        firsts = derivative(expr, rows)  # simplified first, as the one-variable path does
        raws = [reverse_sweep_many(firsts[x.arg[0]], columns, firsts[x.arg[0]].order) for x in rows]
        flat = simplify_many([r for row in raws for r in row])
        result: dict[str, dict[str, Expr]] = {}
        for i, x in enumerate(rows):
            row = result.setdefault(x.arg[0], {})
            for j, y in enumerate(columns):
                row[y.arg[0]] = flat[i * len(columns) + j]
        return result
    if isinstance(wrt2, (list, tuple)):
        raise SemanticError("wrt2 is a list but wrt is one variable: pass both as lists")
    first = derivative(expr, wrt)
    second_wrt = wrt2 if wrt2 is not None else _resolve_wrt(expr, wrt)
    if isinstance(second_wrt, str):
        second_wrt = _resolve_wrt(expr, second_wrt)
    return derivative(first, second_wrt)


def nth_derivative(expr: Expr, wrt: str | Expr, n: int) -> Expr:
    """The ``n``-th derivative by repeating ``derivative``.

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.nth_derivative(tc.parse("c^3", {"c": 0}), "c", 3))
    '6'
    """
    if not isinstance(n, int) or n < 0:
        raise SemanticError(f"the derivative order must be a natural number, got {n!r}")
    require_expr(expr, "nth_derivative")
    x = _resolve_wrt(expr, wrt)
    result = expr
    for _ in range(n):
        result = derivative(result, x)
    return result


# ------------------------------------------------------------------ pullback rules


def _shift(spec: tuple[int, ...], q: int) -> tuple[int, ...]:
    return tuple(letter + q for letter in spec)


def pull_add(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d(sum c_k a_k) / d a_k = c_k
    coefficient = node.arg[k]
    return pullback if coefficient == 1 else N.scale(pullback, coefficient)


def pull_mul(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    ins, out = node.arg
    root = tuple(range(q))
    operands = [pullback]
    specs = [root + _shift(out, q)]
    for j, (child, spec) in enumerate(zip(node.children, ins)):
        if j == k:
            continue
        if N.is_zero(child):
            return None
        operands.append(child)
        specs.append(_shift(spec, q))
    target = root + _shift(ins[k], q)
    present = set().union(*specs)
    # letters of operand k found nowhere else: sum explicitly (the thesis' fix)
    missing = tuple(dict.fromkeys(letter for letter in target if letter not in present))
    if missing:
        # the ones tensor has the lengths of operand k's axes it stands for
        axes_of: dict[int, list] = {}
        for letter, d in zip(_shift(ins[k], q), node.children[k].dims):
            axes_of.setdefault(letter, []).append(d)  # a diagonal read labels two axes alike
        operands.append(N.const(1, len(missing), tuple(N.merge_dims(axes_of[letter]) for letter in missing)))
        specs.append(missing)
    return N.mul(operands, specs, target)


def elementwise_pullback(pullback: Expr, q: int, factor: Expr) -> Expr:
    """``P[R, s] * factor[s]``: the pullback through an elementwise map."""
    s = tuple(range(q, q + factor.order))
    return N.mul((pullback, factor), (tuple(range(q)) + s, s), tuple(range(q)) + s)


def pull_func(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    factor = FUNCTION_DERIVATIVES[node.arg](node.children[0], node)
    return None if factor is None else elementwise_pullback(pullback, q, factor)


def _minus_one(e: Expr) -> Expr:
    if e.op == "const":
        return N.const(e.arg[0] - 1, 0)
    return N.add((e, N.const(1, 0)), (1, -1))


def pull_pow(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    base, exponent = node.children
    s = tuple(range(base.order))
    if k == 0:
        # d(b^e)/db = e * b^(e-1)
        lowered = N.power(base, _minus_one(exponent))
        factor = N.mul((exponent, lowered), ((), s), s)
        return elementwise_pullback(pullback, q, factor)
    # d(b^e)/de = sum over entries of b^e * log(b), e being a scalar
    shifted = _shift(s, q)
    return N.mul((pullback, node, N.func("log", base)), (tuple(range(q)) + shifted, shifted, shifted), tuple(range(q)))


def pull_inv(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d inv(X)[a,b] / dX[c,d] = -inv[a,c] inv[d,b]
    r = tuple(range(q))
    a, b, c, d = q, q + 1, q + 2, q + 3
    return N.neg(N.mul((pullback, node, node), (r + (a, b), (a, c), (d, b)), r + (c, d)))


def pull_det(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # d det(X) / dX[c,d] = det(X) inv(X)[d,c]
    r = tuple(range(q))
    c, d = q, q + 1
    return N.mul((pullback, node, N.inv(node.children[0])), (r, (), (d, c)), r + (c, d))


def pull_slice(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # the pullback of a slice embeds into zeros of the sliced tensor's shape
    if N.is_zero(pullback):
        return None
    full = (N.FULL_AXIS,) * q
    return N.embed(pullback, full + node.arg, pullback.dims[:q] + node.children[0].dims)


def pull_embed(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    # the pullback of an embedding reads the embedded part back out
    return N.slice_(pullback, (N.FULL_AXIS,) * q + node.arg[0])


def _leaf(node: Expr, k: int, pullback: Expr, q: int) -> Expr | None:
    raise AssertionError("leaves have no children")


PULLBACK_RULES: dict[str, PullbackRule] = {
    "var": _leaf,
    "const": _leaf,
    "delta": _leaf,
    "add": pull_add,
    "mul": pull_mul,
    "func": pull_func,
    "pow": pull_pow,
    "inv": pull_inv,
    "det": pull_det,
    "slice": pull_slice,
    "embed": pull_embed,
}


# --------------------------------------------- derivatives of elementwise functions


def _one(x: Expr) -> Expr:
    return N.const_like(1, x)


def _square(e: Expr) -> Expr:
    return N.power(e, N.const(2, 0))


FunctionDerivative = Callable[[Expr, Expr], "Expr | None"]

# f'(x) as an expression, given x and the node f(x) (reused where it is cheaper)
FUNCTION_DERIVATIVES: dict[str, FunctionDerivative] = {
    "sin": lambda x, fx: N.func("cos", x),
    "cos": lambda x, fx: N.neg(N.func("sin", x)),
    "tan": lambda x, fx: N.add((_one(x), _square(fx))),
    "arcsin": lambda x, fx: N.power(N.add((_one(x), _square(x)), (1, -1)), N.const(-0.5, 0)),
    "arccos": lambda x, fx: N.neg(N.power(N.add((_one(x), _square(x)), (1, -1)), N.const(-0.5, 0))),
    "arctan": lambda x, fx: N.reciprocal(N.add((_one(x), _square(x)))),
    "tanh": lambda x, fx: N.add((_one(x), _square(fx)), (1, -1)),
    "exp": lambda x, fx: fx,
    "log": lambda x, fx: N.reciprocal(x),
    "abs": lambda x, fx: N.func("sign", x),
    "sign": lambda x, fx: None,  # zero almost everywhere; sign'(0) is taken as 0
    "relu": lambda x, fx: N.func("sign", fx),  # 1 where x > 0, else 0 (relu'(0) = 0)
}
