"""Interpreted evaluation of a DAG on NumPy arrays.

Walks the nodes in topological order, computes every shared node once, hands
products to opt_einsum (contraction expressions cached per spec and shapes, in a
bounded cache) and frees intermediates after their last use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import opt_einsum

from .adjugate import adjugate
from .compiler.generated import numbers_of
from .core.axes import AxisGraph, axis_graph, derive_lengths
from .core.functions import SpecTable
from .core.nodes import Expr, topological
from .core.text import einsum_letters as _letters
from .dtypes import cast_numpy, promoted_dtype
from .errors import EvaluationError
from .limits import check_entries, check_shape, memory_limit
from .linalg import matrix_error, matrix_label, numpy_det, numpy_inv
from .printing.text import text_length, to_text


def evaluate(expr: Expr, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> np.ndarray:
    """Evaluate ``expr`` on arrays.

    Parameters
    ----------
    expr : Expr
        The expression (parsed, built or differentiated).  Positional only.
    values : mapping
        Variable name -> array (anything ``np.asarray`` takes; a Python float for
        order 0).  Positional only, so that every keyword argument names a
        variable (``values=`` and ``expr=`` included) and is merged in.

    Returns
    -------
    numpy.ndarray
        The value, with one axis per order (0-d for order 0).

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> tc.evaluate(f, {"A": np.eye(2), "x": [1.0, 2.0]})
    array([1., 2.])
    >>> tc.evaluate(tc.var("values", 1) * 2, values=[1.0, 2.0])
    array([2., 4.])
    """
    if not isinstance(expr, Expr):
        raise EvaluationError(f"evaluate needs a tenscalc expression, got {type(expr).__name__}")
    merged = dict(values or {})
    merged.update(kwargs)
    graph, arrays, lengths = resolve_sizes(expr, merged)
    result = run_interpreter(graph, arrays, lengths)
    if (
        not isinstance(result, np.ndarray)
        or not result.flags.writeable
        # `x`, a transpose or a diagonal can come back as a view of the caller's
        # array: writing into the result must not change the input
        or any(np.may_share_memory(result, array) for array in arrays.values())
    ):
        result = np.array(result)
    # float32 in, float32 out: the float64 constants and identities of a derivative do not promote
    dtype = promoted_dtype([merged[name] for name in arrays] if arrays else merged.values())
    return cast_numpy(result, dtype)


def resolve_sizes(
    expr: Expr, values: Mapping[str, Any], convert: bool = True
) -> tuple[AxisGraph, dict[str, np.ndarray], dict[int, int]]:
    """The axis graph, the checked arrays and the length of every axis class."""
    graph = axis_graph(expr)
    arrays = prepare_arrays(graph, values, convert)
    lengths = bind_lengths(graph, arrays)
    return graph, arrays, lengths


def prepare_arrays(graph: AxisGraph, values: Mapping[str, Any], convert: bool = True) -> dict[str, np.ndarray]:
    """Check that every variable is given with the declared order; convert to arrays
    (``convert=False`` keeps other array types, e.g. object arrays of SymPy numbers)."""
    arrays: dict[str, np.ndarray] = {}
    readers = graph.value_variables()
    for name, order, _axis, _slot in graph.var_slots:
        if name in arrays:
            continue
        # a variable known only through its dimensions: its shape is what counts
        arrays[name] = as_array(name, order, values, convert, shape_only=name not in readers)
    for node in graph.nodes:  # order-0 variables have no slots
        if node.op == "var" and node.arg[0] not in arrays:
            arrays[node.arg[0]] = as_array(node.arg[0], node.arg[1], values, convert)
    return arrays


def as_array(
    name: str, order: int, values: Mapping[str, Any], convert: bool = True, shape_only: bool = False
) -> np.ndarray:
    if name not in values:
        if shape_only:
            raise EvaluationError(
                f"no value given for variable '{name}' (order {order}): the expression does not read its "
                f"entries but has axes of its lengths, so an array of the shape of '{name}' is needed"
            )
        raise EvaluationError(f"no value given for variable '{name}' (order {order})")
    if not convert:
        array = np.asarray(values[name], dtype=object)
        if array.ndim != order:
            raise EvaluationError(f"variable '{name}' has order {order} but the array has {array.ndim} axes")
        return array
    if getattr(values[name], "requires_grad", False) is True:  # torch's own advice would be .detach().numpy()
        raise EvaluationError(
            f"the value of '{name}' is a torch tensor that requires grad; tc.evaluate computes with NumPy: "
            "tc.compile(expr)(...) keeps torch tensors (tenscalc's derivatives need no autograd)"
        )
    array = numbers_of(values[name], name)  # the text every runner runs (generated.NUMBERS_HELPER)
    if array.ndim != order:
        raise EvaluationError(
            f"variable '{name}' is declared with order {order} but the array given has {array.ndim} "
            f"axes (shape {array.shape})"
        )
    return array


def bind_lengths(graph: AxisGraph, arrays: Mapping[str, np.ndarray]) -> dict[int, int]:
    """Axis class -> length, from the variables' shapes; conflicts are errors."""
    lengths: dict[int, int] = {}
    source: dict[int, tuple[str, int]] = {}
    for name, _order, axis, slot in graph.var_slots:
        cls = graph.find(slot)
        length = arrays[name].shape[axis]
        if cls in lengths and lengths[cls] != length:
            other, other_axis = source[cls]
            raise EvaluationError(
                f"axis {axis} of variable '{name}' has length {length}, but it must equal axis "
                f"{other_axis} of variable '{other}', which has length {lengths[cls]}"
            )
        lengths.setdefault(cls, length)
        source.setdefault(cls, (name, axis))
    if graph.derived or graph.indexed:  # sliced axes: "n - 1" from n
        derive_lengths(graph, lengths, EvaluationError)
    return lengths


def node_shape(graph: AxisGraph, lengths: Mapping[int, int], node: Expr) -> tuple[int, ...]:
    shape = []
    for k, cls in enumerate(graph.classes(node)):
        if cls not in lengths:
            text = to_text(node) if text_length(node) < 200 else f"a node of kind {node.op}"
            raise EvaluationError(
                f"cannot tell the length of axis {k} of `{text}`: no variable fixes it "
                "(a constant or delta that is not combined with any variable axis; "
                "write its length as a dimension, e.g. 1{x.0})"
            )
        shape.append(lengths[cls])
    return tuple(shape)


def run_interpreter(
    graph: AxisGraph,
    arrays: Mapping[str, Any],
    lengths: Mapping[int, int],
    evaluators: Mapping[str, Any] | None = None,
    root: Expr | None = None,
) -> Any:
    """Compute every node once, children first, freeing values after their last use.

    Every node has one shape (its dimensions are part of it), so a constant is
    computed once, at that shape.  ``root`` evaluates only the DAG below one node
    of the graph (default: the graph's own root).
    """
    rules = EVALUATORS if evaluators is None else evaluators
    nodes = graph.nodes if root is None else topological(root)
    root = nodes[-1]
    uses: dict[Expr, int] = {}  # parents not yet computed, per node
    for node in nodes:
        for child in node.children:
            uses[child] = uses.get(child, 0) + 1
    values: dict[Expr, Any] = {}
    for node in nodes:
        shape = node_shape(graph, lengths, node)
        if node.op != "var":  # before allocating it (a variable is the caller's array)
            check_shape(shape, what=f"the value of a {node.op} node")
        kids = [values[child] for child in node.children]
        values[node] = rules[node.op](node, kids, shape, arrays)
        for child in node.children:  # release intermediates after their last use
            uses[child] -= 1
            if uses[child] == 0:
                values.pop(child, None)
    return values[root]


# ---------------------------------------------------------------- per-kind rules


def _eval_var(node, kids, shape, arrays):
    return arrays[node.arg[0]]


def _eval_const(node, kids, shape, arrays):
    return np.broadcast_to(np.float64(node.arg[0]), shape)


def _eval_delta(node, kids, shape, arrays):
    n = node.arg
    size = int(np.prod(shape[:n], dtype=np.int64))
    return np.eye(size).reshape(shape)


def _eval_add(node, kids, shape, arrays):
    total = None
    for value, coef in zip(kids, node.arg):
        term = value if coef == 1 else (-value if coef == -1 else coef * value)
        total = term if total is None else total + term
    return np.broadcast_to(total, shape) if total.shape != shape else total


ELEMENTWISE = SpecTable("numpy")
"""Each elementwise function on NumPy arrays (from its spec, :mod:`tenscalc.core.functions`)."""


def _eval_func(node, kids, shape, arrays):
    return ELEMENTWISE[node.arg](kids[0])


def _eval_pow(node, kids, shape, arrays):
    base, exponent = kids
    exponent = exponent[()] if exponent.ndim == 0 else exponent
    if node.children[1].op == "const":
        e = node.children[1].arg[0]
        if e == 2:
            return base * base
        if e == -1:
            return 1.0 / base
        if e == 1:
            return base
    return np.power(base, exponent)


def _finite(x, what: str, node: Expr):
    """``x``, the value of ``node``'s matrix, refused where an entry is not finite (as every
    runner of tc.compile and tc.to_python refuses it, in the same words): LAPACK would return NaN."""
    if not np.isfinite(x).all():  # n^2 reads, against the factorisation's n^3
        raise matrix_error(what, matrix_label(node.children[0]), "finite")
    return x


def _eval_inv(node, kids, shape, arrays):
    try:
        return numpy_inv(_finite(kids[0], "inv", node))
    except np.linalg.LinAlgError:
        raise matrix_error("inv", matrix_label(node.children[0]), "singular") from None


def _eval_det(node, kids, shape, arrays):
    return numpy_det(_finite(kids[0], "det", node))


def _eval_adj(node, kids, shape, arrays):
    try:
        return adjugate(_finite(kids[0], "adj", node), node.arg)  # through an SVD, exact at any rank: no inverse
    except np.linalg.LinAlgError:
        raise matrix_error("adj", matrix_label(node.children[0]), "svd") from None


def _eval_mul(node, kids, shape, arrays):
    ins, out = node.arg
    letters = len(set().union(*ins, out))  # specs are canonical: letters are 0 .. letters-1
    if letters > 52:
        raise EvaluationError(
            f"a product with {letters} distinct indices: NumPy's einsum, which evaluate uses, takes at most 52 "
            "(tc.compile evaluates it)"
        )
    return contract_spec(ins, out, node.children, kids, shape)


def contract_spec(ins, out, children, kids, shape) -> np.ndarray:
    """Contract ``kids`` labelled by int specs into ``out`` (repeated letters allowed).

    Scalar constants become a factor, applied to the contraction of the other
    operands (an order-0 constant such as ``2^2222`` or ``exp(1000)`` too: with an
    inf, multiplying it in before summing could turn a 0 entry into nan, so every
    evaluator applies it after); repeated letters inside an operand read its
    diagonal (a view); repeated output letters write the result onto a diagonal.
    """
    factor = 1.0
    operands: list[np.ndarray] = []
    specs: list[tuple[int, ...]] = []
    # Letters carried by the operands that are kept.  A constant whose letters all
    # occur in a kept operand is just a scalar factor; otherwise it must stay, since
    # it alone gives the result an output axis (`x *(i,j->ij) 1`) or a summed axis
    # its length (`x *(i,j->i) 1` is x times the length of j).
    kept: set[int] = set()
    for child, spec in zip(children, ins):
        if child.op != "const" and not is_constant_scalar(child):
            kept.update(spec)
    for child, spec, value in zip(children, ins, kids):
        if child.op == "const":
            if child.arg[0] == 0:
                return np.zeros(shape)
            if set(spec) <= kept:
                factor *= child.arg[0]
                continue
            kept.update(spec)
        elif is_constant_scalar(child):
            factor *= np.asarray(value)[()]
            continue
        unique = tuple(dict.fromkeys(spec))
        if len(unique) != len(spec):
            value = np.einsum(_letters(spec) + "->" + _letters(unique), value)
            spec = unique
        operands.append(value)
        specs.append(spec)
    unique_out = tuple(dict.fromkeys(out))
    unique_shape = tuple(shape[out.index(letter)] for letter in unique_out)
    if not operands:
        result = np.full(unique_shape, factor)
        factor = 1.0
    else:
        spec_text = ",".join(_letters(s) for s in specs) + "->" + _letters(unique_out)
        shapes = tuple(op.shape for op in operands)
        if _sums_an_empty_axis(specs, shapes, unique_out):  # a sum of nothing is 0, whatever it holds:
            result = np.zeros(unique_shape, dtype=np.result_type(*operands))  # not as a path pairs it (0 * inf)
        else:
            _check_intermediates(spec_text, specs, shapes)
            expression = _contraction(spec_text, shapes)
            result = expression(*operands)
    if factor != 1.0:
        result = factor * result
    if len(unique_out) != len(out):
        full = np.zeros(shape, dtype=np.result_type(result))
        np.einsum(_letters(out) + "->" + _letters(unique_out), full)[...] = result
        return full
    return result


def _sums_an_empty_axis(specs, shapes, out) -> bool:
    """Whether the product sums a letter of length 0 (read from the shapes: no cost otherwise)."""
    if all(0 not in shape for shape in shapes):
        return False
    return any(n == 0 and letter not in out for spec, shape in zip(specs, shapes) for letter, n in zip(spec, shape))


def is_constant_scalar(node: Expr) -> bool:
    """Whether ``node`` is one number made of constants only (order 0, no variable):
    a product takes it as a factor of its result."""
    return node.order == 0 and not node.varset


def _check_intermediates(spec_text: str, specs, shapes) -> None:
    """Refuse a contraction whose path needs an intermediate over the memory limit."""
    length = {letter: n for spec, shape in zip(specs, shapes) for letter, n in zip(spec, shape)}
    bound = 1
    for n in length.values():
        bound *= n
    if bound * 8 > memory_limit():  # only then can an intermediate be too large: ask for the path
        check_entries(_largest_intermediate(spec_text, shapes), what="an intermediate of a product")


@functools.lru_cache(maxsize=256)
def _largest_intermediate(spec: str, shapes: tuple[tuple[int, ...], ...]) -> int:
    _, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize="auto")
    return int(info.largest_intermediate)


@functools.lru_cache(maxsize=2048)
def _contraction(spec: str, shapes: tuple[tuple[int, ...], ...]):
    return opt_einsum.contract_expression(spec, *shapes, optimize="auto")


def slice_key(items) -> tuple:
    """NumPy's basic index for slice items (a view, never a copy)."""
    return tuple(i if isinstance(i, int) else slice(*i) for i in items)


def _eval_slice(node, kids, shape, arrays):
    return kids[0][slice_key(node.arg)]


def _eval_embed(node, kids, shape, arrays):
    part = np.asarray(kids[0])
    out = np.zeros(shape, dtype=np.result_type(part, np.float64))
    out[slice_key(node.arg[0])] = part
    return out


EVALUATORS = {
    "var": _eval_var,
    "const": _eval_const,
    "delta": _eval_delta,
    "add": _eval_add,
    "mul": _eval_mul,
    "func": _eval_func,
    "pow": _eval_pow,
    "inv": _eval_inv,
    "det": _eval_det,
    "adj": _eval_adj,
    "slice": _eval_slice,
    "embed": _eval_embed,
}
