"""Checking derivatives: finite differences and random data with distinct axis lengths.

>>> import tenscalc as tc
>>> from tenscalc.testing import check_derivative
>>> report = check_derivative(tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2}), "x", order=2)
>>> report.ok
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .calculus.api import derivative, resolve_wrt
from .core import nodes as N
from .core.axes import axis_graph
from .core.nodes import Expr, topological
from .errors import TensCalcError
from .interpreter import evaluate
from .limits import check_shape

FIRST_LENGTH = 2
#: random draws tried per assignment of axis lengths before giving up (see defined_values)
DRAWS = 4
#: a matrix whose condition number exceeds this counts as singular for inv and det
MAX_CONDITION = 1e8


class RandomDataError(TensCalcError):
    """No random data was found where the expression is defined: a check cannot be made.

    The message starts "could not evaluate at random data: " and says why (a singular
    argument of ``inv``/``det``, a value that is not finite...).
    """


def combine(exprs: Expr | Sequence[Expr]) -> Expr:
    """One node holding all ``exprs`` (an outer product) so their axes share one graph."""
    if isinstance(exprs, Expr):
        return exprs
    exprs = list(exprs)
    specs, start = [], 0
    for e in exprs:
        specs.append(tuple(range(start, start + e.order)))
        start += e.order
    return N.mul(exprs, specs, tuple(range(start)))


def axis_lengths(exprs: Expr | Sequence[Expr], first: int = FIRST_LENGTH) -> dict[str, tuple[int, ...]]:
    """Shapes for every variable, giving each independent axis its own length 2, 3, 4...

    Axes that must be equal (same letter in a product, a square matrix) share a
    length; all others differ, so that a transposed axis cannot pass a check.
    """
    graph = axis_graph(combine(exprs))
    length_of: dict[int, int] = {}
    shapes: dict[str, list[int]] = {}
    derived = {graph.find(slot) for slot, _base, _item in graph.derived}
    if graph.derived or graph.indexed:  # slices: long enough that every slice and index has entries
        bounds = [abs(v) for _s, _b, item in graph.derived for v in item if v is not None]
        bounds += [abs(index) + 1 for _s, index, _n in graph.indexed]
        first = max(first, max(bounds, default=0) + 2)
    # two slices "n - k" of equal length come from equally long axes (x[1:] .* y[:-1])
    same: dict[int, int] = {}
    by_target: dict[tuple, int] = {}
    for slot, base, (start, stop, step) in graph.derived:
        if step == 1 and start >= 0 and (stop is None or stop < 0):
            key = (graph.find(slot), start - (stop or 0))
            same.setdefault(graph.find(base), by_target.setdefault(key, graph.find(base)))
    for _name, _order, _axis, slot in graph.var_slots:  # independent axes first ...
        cls = graph.find(slot)
        if cls not in length_of and cls not in derived:
            twin = same.get(cls, cls)
            if twin not in length_of:
                length_of[twin] = first + len(length_of)
            length_of[cls] = length_of[twin]
    if graph.derived:  # ... then the axes a slice fixes ("n - 1")
        from .core.axes import derive_lengths
        from .errors import EvaluationError

        derive_lengths(graph, length_of, EvaluationError)
    for name, order, axis, slot in graph.var_slots:
        cls = graph.find(slot)
        if cls not in length_of:
            length_of[cls] = first + len(length_of)
        shapes.setdefault(name, [0] * order)[axis] = length_of[cls]
    for node in graph.nodes:
        if node.op == "var" and node.arg[1] == 0:
            shapes.setdefault(node.arg[0], [])
    return {name: tuple(shape) for name, shape in shapes.items()}


def _function_needs_positive(node: Expr) -> bool:
    """``log``, ``arcsin`` and ``arccos`` are real only on part of the line."""
    return node.arg in ("log", "arcsin", "arccos")


def _power_needs_positive(node: Expr) -> bool:
    """A power other than a constant integer is real only for a positive base."""
    e = node.children[1]
    return e.op != "const" or not float(e.arg[0]).is_integer()


#: node kind -> whether such a node needs positive data (kinds not listed never do)
_NEEDS_POSITIVE: dict[str, Callable[[Expr], bool]] = {"func": _function_needs_positive, "pow": _power_needs_positive}


def _needs_positive(exprs: Expr | Sequence[Expr]) -> bool:
    """Whether random data for ``exprs`` should be drawn from positive numbers."""
    for node in topological([combine(exprs)]):
        check = _NEEDS_POSITIVE.get(node.op)
        if check is not None and check(node):
            return True
    return False


def random_values(
    exprs: Expr | Sequence[Expr],
    seed: int = 0,
    low: float | None = None,
    high: float | None = None,
    first_length: int = FIRST_LENGTH,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> dict[str, np.ndarray | float]:
    """Random arrays for every variable, with distinct axis lengths.

    Entries are uniform in ``[low, high]``; by default ``[-1.5, 1.5]``, or
    ``[0.1, 0.9]`` when the expression has ``log``, ``arcsin``/``arccos`` or
    non-integer powers.  Square matrices get ``n * I`` added so that ``inv`` and
    ``det`` are well conditioned.  ``shapes`` replaces the lengths of
    ``axis_lengths``.

    Examples
    --------
    >>> import tenscalc as tc
    >>> from tenscalc.testing import random_values
    >>> values = random_values(tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}))
    >>> values["A"].shape, values["x"].shape
    ((2, 3), (3,))
    """
    rng = np.random.default_rng(seed)
    if low is None or high is None:
        low, high = (0.1, 0.9) if _needs_positive(exprs) else (-1.5, 1.5)
    values: dict[str, np.ndarray | float] = {}
    for name, shape in (shapes or axis_lengths(exprs, first_length)).items():
        check_shape(shape, what=f"random values for '{name}'")  # order 33: lengths 2 .. 34
        array = rng.uniform(low, high, size=shape)
        if len(shape) == 2 and shape[0] == shape[1]:
            array = array + shape[0] * np.eye(shape[0])
        values[name] = array if shape else float(array)
    return values


def length_assignments(exprs: Expr | Sequence[Expr], first: int = FIRST_LENGTH) -> list[dict[str, tuple[int, ...]]]:
    """Shapes to try, best first: ``axis_lengths``, then its distinct lengths handed out in
    reverse (``X`` 2x3 becomes 3x2, so that ``XᵀWX`` has full rank), then every length equal
    (square matrices: the last resort, where no distinct assignment is defined).

    >>> import tenscalc as tc
    >>> [s["X"] for s in length_assignments(tc.parse("X", {"X": 2}))]
    [(2, 3), (3, 2), (3, 3)]
    """
    shapes = axis_lengths(exprs, first)
    graph = axis_graph(combine(exprs))
    tried = [shapes]
    lengths = sorted({n for shape in shapes.values() for n in shape})
    if not graph.derived and not graph.indexed and len(lengths) > 1:  # slices fix lengths of their own
        reverse = dict(zip(lengths, reversed(lengths)))
        tried.append({name: tuple(reverse[n] for n in shape) for name, shape in shapes.items()})
        tried.append({name: tuple(lengths[-1] for _ in shape) for name, shape in shapes.items()})
    return tried


def undefined_because(exprs: Expr | Sequence[Expr], values: Mapping[str, np.ndarray | float]) -> str | None:
    """Why ``exprs`` are not defined (or not safely so) at ``values``, or None when they are.

    An argument of ``inv`` or ``det`` that is singular or ill-conditioned (a finite
    difference through it would be noise), an evaluation error, or a value that is not
    finite (``log`` of a negative number, a division by zero) each make a reason.
    """
    roots = [exprs] if isinstance(exprs, Expr) else list(exprs)
    with np.errstate(all="ignore"):
        try:
            for node in topological(roots):
                if node.op in ("inv", "det"):
                    matrix = evaluate(node.children[0], values)
                    condition = np.linalg.cond(matrix) if np.all(np.isfinite(matrix)) else np.inf
                    if not condition <= MAX_CONDITION:
                        return (
                            f"the argument of {node.op}, `{_short(node.children[0])}`, is singular or "
                            f"ill-conditioned there (condition number {condition:.3g})"
                        )
            for root in roots:
                value = evaluate(root, values)
                if not np.all(np.isfinite(value)):
                    return f"`{_short(root)}` is not finite there"
        except (TensCalcError, np.linalg.LinAlgError, ArithmeticError) as exc:
            return str(exc).splitlines()[0]
    return None


def _short(expr: Expr) -> str:
    from .core.text import short

    return short(expr, 60)


def defined_values(exprs: Expr | Sequence[Expr], seed: int = 0) -> dict[str, np.ndarray | float]:
    """Random values (distinct axis lengths where possible) at which every one of ``exprs`` is defined.

    Tries ``DRAWS`` draws for each assignment of ``length_assignments``;
    raises :class:`RandomDataError` ("could not evaluate at random data: <why>") when
    none is defined.

    Examples
    --------
    >>> import tenscalc as tc
    >>> from tenscalc.testing import defined_values
    >>> f = tc.parse("log(det(X *(ji,jk->ik) W *(ik,kl->il) X))", {"X": 2, "W": 2})
    >>> values = defined_values(f)       # X 2x3 makes XᵀWX singular: X is drawn 3x2
    >>> values["X"].shape, values["W"].shape
    ((3, 2), (3, 3))
    """
    first_reason = None
    for k, shapes in enumerate(length_assignments(exprs)):
        for draw in range(DRAWS):
            values = random_values(exprs, seed=seed + 1000 * k + draw, shapes=shapes)
            reason = undefined_because(exprs, values)
            if reason is None:
                return values
            first_reason = first_reason or reason
    raise RandomDataError(f"could not evaluate at random data: {first_reason}")


@dataclass
class DerivativeCheck:
    """Outcome of ``check_derivative``: ``ok``, the largest relative error and where.

    Examples
    --------
    >>> import tenscalc as tc
    >>> from tenscalc.testing import check_derivative
    >>> report = check_derivative(tc.parse("x *(i,i->) x", {"x": 1}), "x")
    >>> report.ok, report.max_error < 1e-8
    (True, True)
    """

    ok: bool
    max_error: float
    worst_index: tuple[int, ...] | None
    symbolic: float
    numeric: float
    method: str
    message: str
    #: False when no random data was found where the expression is defined (nothing compared)
    evaluated: bool = True

    def __str__(self) -> str:
        return self.message


def _central_differences(f, x: np.ndarray, h: float) -> np.ndarray:
    """Full Jacobian of ``f`` at ``x`` by central differences (f's axes, then x's)."""
    columns = []
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = h
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * h))
    fx = np.asarray(f(x))
    stacked = np.stack(columns, axis=-1) if columns else np.zeros(fx.shape + (0,))
    return stacked.reshape(fx.shape + x.shape)


def check_derivative(
    expr: Expr,
    wrt: str | Expr,
    order: int = 1,
    values: Mapping[str, np.ndarray | float] | None = None,
    seed: int = 0,
    h: float = 1e-6,
    tolerance: float = 1e-5,
    full_jacobian_max: int = 60,
    directions: int = 6,
) -> DerivativeCheck:
    """Compare the symbolic derivative of ``expr`` with central finite differences.

    ``order=2`` checks the second derivative against differences of the
    (symbolic, already checked) first derivative.  For variables with at most
    ``full_jacobian_max`` entries the full Jacobian is compared; for larger ones,
    ``directions`` random directional derivatives.  The error is relative:
    ``max |symbolic - numeric| / max(1, max |numeric|)``.

    Without ``values`` the data are drawn where the function and its derivative are
    defined (see ``defined_values``: well-conditioned ``inv``/``det`` arguments,
    finite values, distinct axis lengths where possible); when no draw is, the report
    has ``ok`` and ``evaluated`` False and says "could not evaluate at random data: <why>".

    Examples
    --------
    >>> import tenscalc as tc
    >>> from tenscalc.testing import check_derivative
    >>> f = tc.parse("log(det(X))", {"X": 2})
    >>> check_derivative(f, "X").ok, check_derivative(f, "X", order=2).ok
    (True, True)
    """
    x = resolve_wrt(expr, wrt)
    name = x.arg[0]
    target = expr
    for _ in range(order - 1):
        target = derivative(target, x)
    symbolic_expr = derivative(target, x)
    if values is None:
        try:
            values = defined_values([expr, symbolic_expr], seed)
        except RandomDataError as exc:
            return DerivativeCheck(False, np.nan, None, np.nan, np.nan, "none", str(exc), evaluated=False)
    given = dict(values)
    values = given
    if name not in given:
        given.update({k: v for k, v in random_values([expr, x], seed).items() if k == name})
    point = np.asarray(values[name], dtype=float)

    def f(at: np.ndarray) -> np.ndarray:
        return evaluate(target, {**values, name: at})

    symbolic = evaluate(symbolic_expr, values)
    if point.size <= full_jacobian_max:
        numeric = _central_differences(f, point, h)
        method = "full Jacobian by central differences"
        compare_sym, compare_num = symbolic, numeric
    else:
        rng = np.random.default_rng(seed + 1)
        sym_cols, num_cols = [], []
        axes = tuple(range(target.order, target.order + x.order))
        for _ in range(directions):
            v = rng.standard_normal(point.shape)
            sym_cols.append(np.tensordot(symbolic, v, axes=(axes, tuple(range(x.order)))))
            num_cols.append((np.asarray(f(point + h * v)) - np.asarray(f(point - h * v))) / (2 * h))
        compare_sym, compare_num = np.stack(sym_cols), np.stack(num_cols)
        method = f"{directions} random directional derivatives"
    if compare_sym.shape != compare_num.shape:
        return DerivativeCheck(
            False,
            np.inf,
            None,
            np.nan,
            np.nan,
            method,
            f"shape mismatch: symbolic {compare_sym.shape} vs numeric {compare_num.shape}",
        )
    difference = np.abs(compare_sym - compare_num)
    scale = max(1.0, float(np.max(np.abs(compare_num))) if compare_num.size else 1.0)
    if difference.size == 0:
        return DerivativeCheck(True, 0.0, None, 0.0, 0.0, method, "empty derivative: nothing to compare")
    worst = np.unravel_index(int(np.nanargmax(np.where(np.isnan(difference), np.inf, difference))), difference.shape)
    error = float(difference[worst]) / scale if np.isfinite(difference[worst]) else float("inf")
    ok = bool(error <= tolerance)
    message = (
        f"{'ok' if ok else 'MISMATCH'}: order-{order} derivative by '{name}' ({method}); "
        f"max relative error {error:.3g} at entry {tuple(int(i) for i in worst)}: "
        f"symbolic {compare_sym[worst]:.10g}, numeric {compare_num[worst]:.10g}"
    )
    return DerivativeCheck(
        ok, error, tuple(int(i) for i in worst), float(compare_sym[worst]), float(compare_num[worst]), method, message
    )


def assert_derivative(expr: Expr, wrt: str | Expr, order: int = 1, **kwargs) -> DerivativeCheck:
    """Like ``check_derivative`` but raise ``AssertionError`` (with the worst entry) on a mismatch."""
    report = check_derivative(expr, wrt, order=order, **kwargs)
    if not report.ok:
        raise AssertionError(report.message)
    return report
