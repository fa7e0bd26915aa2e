"""An exact oracle: expand a DAG entry by entry into SymPy scalars.

For small axis lengths every entry of every node becomes a SymPy expression in
the entries of the variables (object arrays), with no floating point anywhere.
Differentiating those in SymPy and comparing with tenscalc's symbolic derivative,
itself expanded the same way at rational points, checks the derivative rules
exactly, independently of tenscalc's rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from .core.functions import SpecTable
from .core.nodes import Expr
from .errors import TensCalcError
from .interpreter import resolve_sizes, run_interpreter

try:  # sympy is a test dependency, not a runtime one (85 MB with mpmath)
    import sympy
except ImportError:
    raise TensCalcError(
        "tenscalc.oracle needs SymPy, which tenscalc does not install by default: pip install sympy "
        '(or pip install "tenscalc[test]" for everything the test suite uses)'
    ) from None

_SYMPY_FUNCTIONS = SpecTable("sympy")  # spec.sympy(sympy, v): the function of the SymPy module


def symbol_arrays(shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """One real SymPy symbol per entry of each variable: ``X[0,1]`` is ``X_0_1``."""
    arrays = {}
    for name, shape in shapes.items():
        array = np.empty(shape, dtype=object)
        for index in itertools.product(*(range(n) for n in shape)):
            suffix = "_".join(map(str, index))
            array[index] = sympy.Symbol(f"{name}_{suffix}" if suffix else name, real=True)
        arrays[name] = array
    return arrays


def expand(expr: Expr, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Every entry of ``expr`` as a SymPy expression (an object array).

    ``arrays`` maps variable names to object arrays of SymPy expressions (symbols
    or exact numbers such as ``sympy.Rational``).
    """
    graph, checked, lengths = resolve_sizes(expr, arrays, convert=False)
    return run_interpreter(graph, checked, lengths, ORACLE_EXPANDERS)


def _filled(shape, value) -> np.ndarray:
    array = np.empty(shape, dtype=object)
    array[...] = value
    return array


def _entrywise(shape, fn) -> np.ndarray:
    array = np.empty(shape, dtype=object)
    for index in itertools.product(*(range(n) for n in shape)):
        array[index] = fn(index)
    return array


def _x_var(node, kids, shape, arrays):
    return np.asarray(arrays[node.arg[0]], dtype=object)


def _x_const(node, kids, shape, arrays):
    return _filled(shape, sympy.nsimplify(node.arg[0]))


def _x_delta(node, kids, shape, arrays):
    n = node.arg
    return _entrywise(shape, lambda ix: sympy.Integer(int(ix[:n] == ix[n:])))


def _x_add(node, kids, shape, arrays):
    return _entrywise(
        shape, lambda ix: sum((sympy.nsimplify(c) * k[ix] for k, c in zip(kids, node.arg)), sympy.Integer(0))
    )


def _x_mul(node, kids, shape, arrays):
    ins, out = node.arg
    length: dict[int, int] = {}
    for spec, value in zip(ins, kids):
        for letter, n in zip(spec, value.shape):
            length[letter] = n
    summed = sorted(set().union(*ins) - set(out))

    def entry(ix):
        bound = {}
        for letter, i in zip(out, ix):
            if bound.setdefault(letter, i) != i:
                return sympy.Integer(0)  # off the diagonal of a repeated output letter
        total = sympy.Integer(0)
        for values in itertools.product(*(range(length[s]) for s in summed)):
            bound.update(zip(summed, values))
            term = sympy.Integer(1)
            for spec, value in zip(ins, kids):
                term *= value[tuple(bound[letter] for letter in spec)]
            total += term
        return total

    return _entrywise(shape, entry)


def _x_func(node, kids, shape, arrays):
    fn = _SYMPY_FUNCTIONS[node.arg]
    return _entrywise(shape, lambda ix: fn(sympy, kids[0][ix]))


def _x_pow(node, kids, shape, arrays):
    exponent = kids[1][()]
    return _entrywise(shape, lambda ix: kids[0][ix] ** exponent)


def _x_inv(node, kids, shape, arrays):
    return np.array(sympy.Matrix(kids[0].tolist()).inv().tolist(), dtype=object).reshape(shape)


def _x_det(node, kids, shape, arrays):
    return _filled((), sympy.Matrix(kids[0].tolist()).det())


def _x_adj(node, kids, shape, arrays):
    # the k-th derivative of the symbolic det, its entries then replaced by the matrix's
    n, k = kids[0].shape[0], node.arg
    symbols = sympy.Matrix(n, n, lambda i, j: sympy.Dummy(f"x{i}_{j}"))
    polynomial = symbols.det()
    values = dict(zip(symbols, kids[0].ravel().tolist()))

    def entry(ix):
        term = polynomial
        for m in range(k):
            term = sympy.diff(term, symbols[ix[2 * m + 1], ix[2 * m]])  # axes in (j, i) pairs
        return sympy.expand(term.subs(values, simultaneous=True))

    return _entrywise(shape, entry)


def _x_slice(node, kids, shape, arrays):
    from .interpreter import slice_key

    part = np.asarray(kids[0], dtype=object)[slice_key(node.arg)]
    if isinstance(part, np.ndarray):
        return part.copy()
    return _filled((), part)  # an entry: a 0-d array, as every scalar here


def _x_embed(node, kids, shape, arrays):
    from .interpreter import slice_key

    out = _filled(shape, sympy.Integer(0))
    out[slice_key(node.arg[0])] = kids[0]
    return out


ORACLE_EXPANDERS = {
    "var": _x_var,
    "const": _x_const,
    "delta": _x_delta,
    "add": _x_add,
    "mul": _x_mul,
    "func": _x_func,
    "pow": _x_pow,
    "inv": _x_inv,
    "det": _x_det,
    "adj": _x_adj,
    "slice": _x_slice,
    "embed": _x_embed,
}


def sympy_derivative(expr: Expr, wrt: str, shapes: Mapping[str, tuple[int, ...]]) -> tuple[np.ndarray, dict]:
    """SymPy's derivative of every entry of ``expr`` by every entry of ``wrt``.

    Returns the object array (expression axes, then ``wrt``'s) and the symbol arrays.
    """
    symbols = symbol_arrays(shapes)
    entries = expand(expr, symbols)
    x = symbols[wrt]
    result = np.empty(entries.shape + x.shape, dtype=object)
    for out_index in itertools.product(*(range(n) for n in entries.shape)):
        for x_index in itertools.product(*(range(n) for n in x.shape)):
            result[out_index + x_index] = sympy.diff(entries[out_index], x[x_index])
    return result, symbols


def exact_mismatches(expr: Expr, wrt: str, point: Mapping[str, np.ndarray], derivative_expr: Expr) -> list:
    """Entries where tenscalc's derivative differs from SymPy's, exactly.

    ``point`` maps every variable to an array of exact numbers (``sympy.Rational``);
    both derivatives are evaluated there without rounding.  An empty list means
    exact agreement.
    """
    shapes = {k: np.shape(v) for k, v in point.items()}
    reference, symbols = sympy_derivative(expr, wrt, shapes)
    substitution = {}
    for name, sym in symbols.items():
        for index in itertools.product(*(range(n) for n in sym.shape)):
            substitution[sym[index]] = sympy.nsimplify(np.asarray(point[name], dtype=object)[index])
    ours = expand(derivative_expr, {k: np.asarray(v, dtype=object) for k, v in point.items()})
    mismatches = []
    for index in itertools.product(*(range(n) for n in reference.shape)):
        expected = reference[index].subs(substitution)
        got = sympy.nsimplify(ours[index]) if not isinstance(ours[index], sympy.Basic) else ours[index]
        difference = sympy.simplify(expected - got)
        if difference != 0:
            mismatches.append((index, expected, got))
    return mismatches
