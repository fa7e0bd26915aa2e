"""The function API: ``tc.grad(fun)``, ``tc.value_and_grad``, ``tc.hvp(fun)`` as in JAX.

JAX users write a Python function of arrays and ask for its gradient function.
tenscalc does the same symbolically: on the first call with given argument
*orders* (numbers of axes) the function is called once with symbolic variables
in place of the arrays (so it must be written with tenscalc's operations: ``@``,
``.T``, ``.sum()``, ``tc.exp``, ``tc.log`` ...), the derivative is derived and
compiled, and every later call with arguments of the same orders runs the
compiled function.  Arguments may be nested dicts, lists and tuples of arrays
("pytrees", as JAX calls them): each array is one variable, and gradients come
back in the same structure.

The variables are named after the function's parameters (``x``, ``params_W``
for ``params["W"]``), so messages name them as the user wrote them.

>>> import numpy as np, tenscalc as tc
>>> def loss(w, X, y):
...     return ((X @ w - y) ** 2).sum()
>>> X, y = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([1.0, -1.0, 2.0])
>>> tc.grad(loss)(np.zeros(2), X, y)              # by the first argument, as jax.grad
array([-16., -20.])
>>> value, g = tc.value_and_grad(loss, argnums=(0, 2))(np.zeros(2), X, y)
>>> float(value), g[1]
(6.0, array([ 2., -2.,  4.]))
"""

from __future__ import annotations

import inspect
import keyword
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .calculus.api import gradient
from .compiler import CompiledFunction, compile
from .core import nodes as N
from .core.nodes import Expr
from .core.vocabulary import is_reserved
from .errors import EvaluationError, SemanticError

__all__ = ["grad_function", "hvp_function", "lambdify", "value_and_grad_function"]

Argnums = int | Sequence[int]


# ---------------------------------------------------------------------- pytrees


def _flatten(tree: Any, name: str) -> tuple[Any, list[tuple[str, Any]]]:
    """``(structure, [(variable name, leaf), ...])`` of a nested dict/list/tuple of arrays.

    The structure is hashable (a cache key): containers with their keys, and for
    each leaf its order (``("leaf", k)``) or, for a value that is not numeric
    (a string, ``None``, a bool), the value itself (``("static", v)``).
    """
    leaves: list[tuple[str, Any]] = []

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, Mapping):
            keys = list(node)
            return ("dict", tuple(keys), tuple(walk(node[k], f"{path}_{_part(k)}") for k in keys))
        if isinstance(node, (list, tuple)) and not hasattr(node, "_fields"):
            return (type(node).__name__, tuple(walk(v, f"{path}_{i}") for i, v in enumerate(node)))
        if node is None or isinstance(node, (str, bool)):
            return ("static", node)
        leaves.append((path, node))
        return ("leaf", _order(path, node))

    return walk(tree, name), leaves


def _part(key: Any) -> str:
    """A key as a piece of a variable name (``W1``, ``0``, ``layer_1``)."""
    return re.sub(r"\W", "_", str(key)) or "_"


def _order(path: str, value: Any) -> int:
    ndim = getattr(value, "ndim", None)
    if isinstance(ndim, int):
        return ndim
    if isinstance(value, (int, float, complex)):
        return 0
    import numpy as np

    try:
        return int(np.ndim(value))
    except Exception:  # noqa: BLE001 - anything np.ndim rejects
        raise EvaluationError(f"the value of '{path}' is not an array or a number ({type(value).__name__})") from None


def _unflatten(structure: Any, leaves: list[Any]) -> Any:
    """The structure with its leaves (in flattening order) put back."""
    it = iter(leaves)

    def build(node: Any) -> Any:
        kind = node[0]
        if kind == "leaf":
            return next(it)
        if kind == "static":
            return node[1]
        if kind == "dict":
            return {k: build(v) for k, v in zip(node[1], node[2])}
        items = [build(v) for v in node[1]]
        return items if kind == "list" else tuple(items)

    return build(structure)


def _variable_names(paths: list[str]) -> list[str]:
    """Valid, distinct variable names for the leaves' paths (``sum`` -> ``sum_``)."""
    names: list[str] = []
    for path in paths:
        name = path if path.isidentifier() else "v_" + re.sub(r"\W", "_", path)
        if is_reserved(name) or keyword.iskeyword(name):
            name += "_"
        while name in names:
            name += "_"
        names.append(name)
    return names


# ---------------------------------------------------------------------- tracing


class _Traced:
    """One symbolic run of ``fun`` for one structure of arguments: the variables of its
    leaves, the expression it returned and the compiled function of what was asked."""

    def __init__(self, fun: Callable[..., Any], structure: Any, paths: list[str], argnums: tuple[int, ...]):
        self.names = _variable_names(paths)
        args_structure, kwargs_structure = structure
        whole = ("tuple", (args_structure, kwargs_structure))
        self.orders = [_leaf_order(leaf) for leaf in _leaf_kinds(whole)]
        symbols = [N.var(name, order) for name, order in zip(self.names, self.orders)]
        arguments = _unflatten(whole, symbols)
        result = fun(*arguments[0], **arguments[1])
        self.expr = _scalar_result(fun, result)
        # the variables of the differentiated arguments, argument by argument
        self.wrt = [_argument_leaves(args_structure, i, self.names) for i in argnums]
        self.wrt_structures = [args_structure[1][i] for i in argnums]

    def leaf_values(self, leaves: list[Any]) -> dict[str, Any]:
        return dict(zip(self.names, leaves))


def _leaf_kinds(structure: Any) -> list[Any]:
    out: list[Any] = []
    stack = [structure]
    while stack:
        node = stack.pop()
        if node[0] == "leaf":
            out.append(node)
        elif node[0] == "dict":
            stack.extend(reversed(node[2]))
        elif node[0] != "static":
            stack.extend(reversed(node[1]))
    return out


def _leaf_order(leaf: Any) -> int:
    return int(leaf[1])


def _argument_leaves(args_structure: Any, index: int, names: list[str]) -> list[str]:
    """The variable names of the leaves of positional argument ``index``."""
    before = sum(len(_leaf_kinds(s)) for s in args_structure[1][:index])
    count = len(_leaf_kinds(args_structure[1][index]))
    return names[before : before + count]


def _scalar_result(fun: Callable[..., Any], result: Any) -> Expr:
    if isinstance(result, (int, float)):
        return N.const(float(result), 0)
    if not isinstance(result, Expr):
        raise SemanticError(
            f"{_name(fun)} returned {type(result).__name__}, not a tenscalc expression: write it with "
            "tenscalc's operations (@, .T, .sum(), tc.exp, tc.log, tc.sum ...), which the function API "
            "calls with symbolic variables once per argument orders"
        )
    if result.order != 0:
        raise SemanticError(
            f"the gradient needs a scalar function, but {_name(fun)} returns an order-{result.order} "
            "expression; reduce it (.sum(), tc.norm) or use tc.jacobian on the expression"
        )
    return result


def _name(fun: Callable[..., Any]) -> str:
    return f"{getattr(fun, '__name__', 'the function')}()"


def _argnums(argnums: Argnums, count: int, fun: Callable[..., Any]) -> tuple[tuple[int, ...], bool]:
    """The argument indices (normalised, checked) and whether one int was given."""
    single = isinstance(argnums, int)
    indices = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in indices:
        if not isinstance(i, int) or not -count <= i < count:
            raise SemanticError(
                f"argnums={argnums!r} does not fit the {count} positional argument(s) {_name(fun)} was called with"
            )
    return tuple(i % count for i in indices), single


# ---------------------------------------------------------------------- transformations


class _Transform:
    """``grad``, ``value_and_grad`` or ``hvp`` of a Python function, traced and compiled
    once per structure of arguments (orders, containers), reused after."""

    def __init__(self, fun: Callable[..., Any], argnums: Argnums, kind: str, backend: str | None):
        if not callable(fun):
            raise SemanticError(f"expected a function or an expression, got {type(fun).__name__}")
        self.fun = fun
        self.argnums = argnums
        self.kind = kind
        self.backend = backend
        self._cache: dict[Any, tuple[_Traced, CompiledFunction]] = {}
        self._lock = threading.Lock()
        self.__name__ = f"{kind}({getattr(fun, '__name__', 'fun')})"
        self.__doc__ = getattr(fun, "__doc__", None)
        try:
            self.__signature__ = inspect.signature(fun)
        except (TypeError, ValueError):
            self.__signature__ = None

    def _parameter_names(self, count: int) -> list[str]:
        names = []
        params = list(self.__signature__.parameters.values()) if self.__signature__ is not None else []
        for i in range(count):
            ok = i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD)
            names.append(params[i].name if ok else f"arg{i}")
        return names

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        direction = None
        if self.kind == "hvp":
            if not args:
                raise SemanticError("an hvp function takes the function's arguments, then the direction v")
            *args_list, direction = args
            args = tuple(args_list)
        indices, single = _argnums(self.argnums, len(args), self.fun)
        names = self._parameter_names(len(args))
        structures, leaves = [], []
        for name, arg in zip(names, args):
            s, found = _flatten(arg, name)
            structures.append(s)
            leaves += found
        kw_structure, kw_leaves = _flatten(dict(kwargs), "kw")
        leaves += [(path[3:], leaf) for path, leaf in kw_leaves]
        structure = (("tuple", tuple(structures)), kw_structure)
        traced, run = self._compiled(structure, [path for path, _ in leaves], indices)
        values = traced.leaf_values([leaf for _, leaf in leaves])
        if direction is not None:
            v_structure, v_leaves = _flatten(direction, "v")
            if v_structure != traced.wrt_structures[0]:
                raise EvaluationError("the direction v must have the structure and orders of the argument")
            values.update(zip(_directions(traced), [leaf for _, leaf in v_leaves]))
        results = run(values)
        return self._shape(traced, list(results), single)

    def _compiled(self, structure: Any, paths: list[str], indices: tuple[int, ...]) -> tuple[_Traced, Any]:
        key = (structure, indices)
        with self._lock:
            hit = self._cache.get(key)
            if hit is None:
                traced = _Traced(self.fun, structure, paths, indices)
                hit = (traced, compile(self._roots(traced), self.backend))
                self._cache[key] = hit
            return hit

    def _roots(self, traced: _Traced) -> list[Expr]:
        every = [name for names in traced.wrt for name in names]
        if not every:
            raise SemanticError(f"the argument(s) {self.argnums!r} of {_name(self.fun)} hold no array to differentiate")
        variables = traced.expr.variables
        if self.kind == "hvp":
            return _hvp_roots(traced, variables)
        grads = _gradients(traced.expr, every, traced, variables)
        return ([traced.expr] if self.kind == "value_and_grad" else []) + grads

    def _shape(self, traced: _Traced, results: list[Any], single: bool) -> Any:
        value = results.pop(0) if self.kind == "value_and_grad" else None
        grouped, at = [], 0
        for names, s in zip(traced.wrt, traced.wrt_structures):
            grouped.append(_unflatten(s, results[at : at + len(names)]))
            at += len(names)
        out = grouped[0] if single else tuple(grouped)
        return (value, out) if self.kind == "value_and_grad" else out


def _gradients(expr: Expr, names: list[str], traced: _Traced, variables: Mapping[str, int]) -> list[Expr]:
    """The gradient by each name, zeros (of the variable's shape) where it does not occur."""
    present = [n for n in names if n in variables]
    found = gradient(expr, present) if present else {}
    order = dict(zip(traced.names, traced.orders))
    return [found[n] if n in found else _zeros(n, order[n]) for n in names]


def _zeros(name: str, order: int) -> Expr:
    return N.const(0.0, order, tuple(N.Dim(name, order, k) for k in range(order)))


def _directions(traced: _Traced) -> list[str]:
    taken = set(traced.names)
    out = []
    for name in traced.wrt[0]:
        d = f"v_{name}"
        while d in taken:
            d = "v_" + d
        taken.add(d)
        out.append(d)
    return out


def _hvp_roots(traced: _Traced, variables: Mapping[str, int]) -> list[Expr]:
    """``H v`` as the gradient of ``<grad f, v>`` (the Hessian is never formed)."""
    names = traced.wrt[0]
    order = dict(zip(traced.names, traced.orders))
    grads = _gradients(traced.expr, names, traced, variables)
    inner: Expr = N.const(0.0, 0)
    for g, d, name in zip(grads, _directions(traced), names):
        spec = tuple(range(order[name]))
        inner = N.add((inner, N.mul((g, N.var(d, order[name])), (spec, spec), ())), (1, 1))
    return _gradients(inner, names, traced, inner.variables)


# ---------------------------------------------------------------------- public entry points


def grad_function(fun: Callable[..., Any], argnums: Argnums = 0, backend: str | None = None) -> _Transform:
    """``tc.grad`` of a Python function: a function of the same arguments returning the
    gradient by argument ``argnums`` (a tuple of them for a tuple), in its structure."""
    return _Transform(fun, argnums, "grad", backend)


def value_and_grad_function(fun: Callable[..., Any], argnums: Argnums = 0, backend: str | None = None) -> _Transform:
    """``tc.value_and_grad`` of a Python function: returns ``(value, gradient)``."""
    return _Transform(fun, argnums, "value_and_grad", backend)


def hvp_function(fun: Callable[..., Any], argnums: int = 0, backend: str | None = None) -> _Transform:
    """``tc.hvp`` of a Python function: called with the function's arguments and then a
    direction ``v`` (shaped as argument ``argnums``), returns ``H v``."""
    if not isinstance(argnums, int):
        raise SemanticError("tc.hvp of a function differentiates by one argument: argnums must be an int")
    return _Transform(fun, argnums, "hvp", backend)


def lambdify(args: str | Expr | Sequence[str | Expr], expr: Expr | Sequence[Expr], backend: str | None = None) -> Any:
    """A compiled function of positional arrays in the order of ``args`` (SymPy's
    ``lambdify(args, expr)``; the arguments are variables or their names).

    ``tc.compile`` is the same without the argument order (it takes names);
    ``tc.to_python`` writes the function as Python source instead.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> x, A = tc.var("x", 1), tc.var("A", 2)
    >>> f = tc.lambdify([x, A], x @ A @ x)
    >>> float(f(np.array([1.0, 2.0]), np.eye(2)))
    5.0
    """
    items = [args] if isinstance(args, (str, Expr)) else list(args)
    names = []
    for item in items:
        if isinstance(item, Expr):
            if item.op != "var":
                raise SemanticError("lambdify's arguments are variables (tc.var) or their names")
            names.append(item.arg[0])
        elif isinstance(item, str):
            names.append(item)
        else:
            raise SemanticError(f"lambdify's arguments are variables or names, not {type(item).__name__}")
    run = compile(expr if isinstance(expr, Expr) else list(expr), backend)
    missing = [n for n in run.inputs if n not in names]
    if missing:
        raise SemanticError(f"the expression also depends on {', '.join(missing)}: list every variable in args")

    def function(*values: Any) -> Any:
        if len(values) != len(names):
            raise EvaluationError(f"expected {len(names)} arrays ({', '.join(names)}), got {len(values)}")
        return run({n: v for n, v in zip(names, values) if n in run.inputs})

    function.__name__ = "lambdified"
    return function
