"""The public derivative functions: derivative, gradient, jacobian, hessian, nth_derivative.

They resolve the variables to differentiate by (:func:`resolve_wrt`), run the
reverse sweep (:mod:`tenscalc.calculus.sweep`) and simplify the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

from ..core import nodes as N
from ..core.checks import count_nodes, require_distinct, require_expr
from ..core.face import OPERATIONS
from ..core.nodes import Expr
from ..errors import SemanticError
from ..progress import optionally_verbose, stage
from ..simplifier import simplify as run_simplifier
from ..simplifier import simplify_many
from .sweep import reverse_sweep, reverse_sweep_many


def resolve_wrt(expr: Expr, wrt: str | Expr) -> Expr:
    """The variable node ``wrt`` names in ``expr`` (a name, or a ``tc.var`` checked against it).

    A name only used for its shape gives its variable (the derivative by it is zero);
    an unknown name or a clashing order is a :class:`SemanticError`.
    """
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
    """:func:`resolve_wrt` for each of several variables, none empty or listed twice."""
    if not wrt:
        raise SemanticError("the list of variables to differentiate by is empty")
    return require_distinct([resolve_wrt(expr, w) for w in wrt])


@overload
def derivative(
    expr: Expr, wrt: str | Expr, *, simplify: bool = True, symmetric: Iterable[str] = (), verbose: bool = False
) -> Expr: ...
@overload
def derivative(
    expr: Expr, wrt: WrtList, *, simplify: bool = True, symmetric: Iterable[str] = (), verbose: bool = False
) -> dict[str, Expr]: ...
def derivative(
    expr: Expr,
    wrt: str | Expr | WrtList,
    *,
    simplify: bool = True,
    symmetric: Iterable[str] = (),
    verbose: bool = False,
) -> Expr | dict[str, Expr]:
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
    symmetric : list of str
        Matrix variables known to be symmetric (``declare A 2 symmetric``): the
        simplifier writes ``Aᵀ`` as ``A``, so ``x'*A*x`` gives ``2Ax``.  The result
        equals the derivative wherever those matrices are symmetric.
    verbose : bool
        Show what the work is doing (each stage with its sizes and time) on standard
        error while it runs (see ``tenscalc.progress``).

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> str(tc.derivative(tc.derivative(f, "x"), "x"))
    'A *(ij,->ji) 1 + A'
    >>> str(tc.derivative(f, "x", symmetric=["A"]))
    '2 *(,i->i) (x *(i,ji->j) A)'
    >>> d = tc.derivative(f, ["x", "A"])    # one sweep, a dict name -> derivative
    >>> {name: e.order for name, e in d.items()}
    {'x': 1, 'A': 2}
    """
    if not isinstance(expr, Expr):
        raise SemanticError(f"derivative needs a tenscalc expression, got {type(expr).__name__}")
    with optionally_verbose(verbose):
        if isinstance(wrt, (list, tuple)):
            xs = _resolve_wrt_list(expr, wrt)
            raws = _swept(expr, xs, many=True)  # one sweep for every variable
            results = simplify_many(raws, symmetric=symmetric) if simplify else raws
            return {x.arg[0]: r for x, r in zip(xs, results)}
        (raw,) = _swept(expr, [resolve_wrt(expr, wrt)], many=False)
        return run_simplifier(raw, symmetric=symmetric) if simplify else raw


def _swept(expr: Expr, xs: list[Expr], many: bool) -> list[Expr]:
    """The raw derivatives of ``expr`` by each of ``xs``, from one reverse sweep (logged as a stage);
    ``many``: the sweep for a list of variables (even of one), as the list forms of the API ask."""
    names = ", ".join(x.arg[0] for x in xs)
    with stage("differentiate", lambda: f"by {names}: {count_nodes(expr)} nodes") as logged:
        raws = reverse_sweep_many(expr, xs, expr.order) if many else [reverse_sweep(expr, xs[0], expr.order)]
        logged.done(lambda: f"{count_nodes(raws)} nodes")
    return raws


@overload
def gradient(expr: Expr, wrt: str | Expr, *, verbose: bool = False) -> Expr: ...
@overload
def gradient(expr: Expr, wrt: WrtList, *, verbose: bool = False) -> dict[str, Expr]: ...
def gradient(expr: Expr, wrt: str | Expr | WrtList, *, verbose: bool = False) -> Expr | dict[str, Expr]:
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
    return derivative(expr, wrt, verbose=verbose)


@overload
def jacobian(expr: Expr, wrt: str | Expr, *, mode: str = "reverse", shapes: dict | None = None) -> Expr: ...
@overload
def jacobian(expr: Expr, wrt: WrtList, *, mode: str = "reverse", shapes: dict | None = None) -> dict[str, Expr]: ...
def jacobian(
    expr: Expr, wrt: str | Expr | WrtList, *, mode: str = "reverse", shapes: dict | None = None
) -> Expr | dict[str, Expr]:
    """The Jacobian ``d expr / d wrt`` of any order (same as ``derivative``).

    ``mode`` picks how it is accumulated: ``"reverse"`` (the reverse sweep, the
    default), or through vertex elimination on the derivative DAG
    (``tenscalc.calculus.elimination``): ``"forward"``, ``"markowitz"``,
    ``"markowitz-cost"``, or ``"auto"`` (the cheapest of those and reverse order:
    by the product count, or by the compiled cost at ``shapes`` when given).
    For several outputs at once, see ``tc.jacobian_accumulation``.

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.jacobian(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}), "x"))
    'A'
    >>> str(tc.jacobian(tc.parse("sin(x *(,->) y)", {"x": 0, "y": 0}), "x", mode="forward"))
    'cos(x *(,->) y) *(,->) y'
    """
    if mode == "reverse":
        return derivative(expr, wrt)
    from .elimination import jacobian_accumulation

    require_expr(expr, "jacobian")
    names = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    if isinstance(wrt, (list, tuple)):
        _resolve_wrt_list(expr, wrt)  # the same errors as reverse mode: empty, listed twice, unknown
    else:
        resolve_wrt(expr, wrt)
    result = jacobian_accumulation(expr, names, order=mode, shapes=shapes)
    row = result.jacobians[0]
    if isinstance(wrt, (list, tuple)):
        return row
    return next(iter(row.values()))


@overload
def hessian(expr: Expr, wrt: str | Expr, wrt2: str | Expr | None = None, *, verbose: bool = False) -> Expr: ...
@overload
def hessian(
    expr: Expr, wrt: WrtList, wrt2: WrtList | None = None, *, verbose: bool = False
) -> dict[str, dict[str, Expr]]: ...
def hessian(
    expr: Expr, wrt: str | Expr | WrtList, wrt2: str | Expr | WrtList | None = None, *, verbose: bool = False
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

    ``verbose=True`` shows each stage of the work (differentiate, simplify) on
    standard error, with sizes and times.
    """
    with optionally_verbose(verbose):
        return _hessian(expr, wrt, wrt2)


def _hessian(
    expr: Expr, wrt: str | Expr | WrtList, wrt2: str | Expr | WrtList | None
) -> Expr | dict[str, dict[str, Expr]]:
    if isinstance(wrt, (list, tuple)):
        if wrt2 is not None and not isinstance(wrt2, (list, tuple)):
            raise SemanticError("with a list of variables, wrt2 must be a list too (or left out)")
        rows = _resolve_wrt_list(expr, wrt)
        columns = rows if wrt2 is None else _resolve_wrt_list(expr, wrt2)
        firsts = derivative(expr, rows)  # simplified first, as the one-variable path does
        raws = [_swept(firsts[x.arg[0]], columns, many=True) for x in rows]
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
    second_wrt = wrt2 if wrt2 is not None else resolve_wrt(expr, wrt)
    if isinstance(second_wrt, str):
        second_wrt = resolve_wrt(expr, second_wrt)
    return derivative(first, second_wrt)


def nth_derivative(expr: Expr, wrt: str | Expr, n: int, *, symmetric: Iterable[str] = ()) -> Expr:
    """The ``n``-th derivative by repeating ``derivative`` (``symmetric`` as there).

    Examples
    --------
    >>> import tenscalc as tc
    >>> str(tc.nth_derivative(tc.parse("c^3", {"c": 0}), "c", 3))
    '6'
    >>> str(tc.nth_derivative(tc.parse("x'*A*x"), "x", 2, symmetric=["A"]))
    '2 *(,ij->ij) A'
    """
    if not isinstance(n, int) or n < 0:
        raise SemanticError(f"the derivative order must be a natural number, got {n!r}")
    require_expr(expr, "nth_derivative")
    x = resolve_wrt(expr, wrt)
    names = tuple(symmetric)
    result = expr
    for _ in range(n):
        result = derivative(result, x, symmetric=names)
    return result


def _diff(expr: Expr, wrt: str | Expr, n: int = 1) -> Expr:
    """``expr.diff(wrt, n)``, SymPy's spelling (registered on the expression's face)."""
    return derivative(expr, wrt) if n == 1 else nth_derivative(expr, wrt, n)


OPERATIONS.update(diff=_diff, derivative=derivative)
