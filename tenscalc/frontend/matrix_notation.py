"""Matrix notation: what matrixcalculus.org's users type, as ordinary DAG nodes.

The text language accepts, mixed freely with the einsum language, the notation of
matrixcalculus.org::

    x'*A*x          norm2(A*x - b)^2          tr(A*X'*B*X*C)          x .* y

* ``'`` transposes; ``*`` is the matrix product, where an order-1 expression is a
  *column* and ``x'`` a row (``x'*y`` inner, ``x*y'`` outer, ``A*x``, ``X*Y``; a
  scalar on either side scales);
* ``.*``, ``./``, ``.^`` work entry by entry (a scalar operand broadcasts);
  ``/`` by a scalar scales; ``^`` keeps the language's meaning (entry by entry);
* functions: ``sum`` (of all entries), ``norm1`` (sum of absolute values),
  ``norm2`` (Euclidean / Frobenius), ``tr``, ``det``, ``logdet``, ``inv``,
  ``diag`` (vector -> diagonal matrix, matrix -> its diagonal), ``sqrt``, and
  the constants ``vector(c)`` and ``matrix(c)`` (filled with ``c``) and ``eye``
  (the identity matrix, unless ``eye`` is declared as a variable);
* when nothing is declared, names take matrixcalculus.org's types by their first
  letter: ``a``-``g`` scalars, ``h``-``z`` vectors, ``A``-``Z`` matrices.

Nothing here is a new node kind: every form is built from ``mul``, ``add``,
``func``, ``pow``, ``inv``, ``det`` nodes.  A row vector is the same order-1
node as the column; only the parser's typing pass tracks the orientation.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("x'*A*x")                      # x a vector, A a matrix by default
>>> f is tc.parse("x *(i,ij->j) A *(i,i->) x", {"x": 1, "A": 2})
True
>>> print(tc.to_matrix_notation(tc.derivative(f, "x")))
A'*x + A*x
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from ..core import nodes as N
from ..core.nodes import Expr
from ..core.text import quoted
from ..core.vocabulary import LANGUAGE_FUNCTIONS, NOTATION_FUNCTIONS
from ..errors import SemanticError


def known_functions() -> tuple[str, ...]:
    """Every function name the text language knows."""
    return LANGUAGE_FUNCTIONS + ("embed",) + NOTATION_FUNCTIONS


def unknown_function_message(name: str) -> str:
    """``unknown function 'norm3'; did you mean norm2? (known: ...)``."""
    known = known_functions()
    match = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {match[0]}?" if match else ""
    return f"unknown function '{name}'{hint} (known functions: {', '.join(sorted(known))})"


# ----------------------------------------------------------------------- default types


def default_order(name: str) -> int | None:
    """matrixcalculus.org's type of an undeclared name by its first letter:
    ``a``-``g`` scalars (0), ``h``-``z`` vectors (1), ``A``-``Z`` matrices (2).

    Examples
    --------
    >>> default_order("b"), default_order("x"), default_order("X"), default_order("_t")
    (0, 1, 2, None)
    """
    first = name[:1]
    if "a" <= first <= "g":
        return 0
    if "h" <= first <= "z":
        return 1
    if "A" <= first <= "Z":
        return 2
    return None


# ------------------------------------------------------------------------------ shapes


def shape_name(order: int | None, row: bool = False) -> str:
    """How an operand is described in messages: scalar, column vector, row vector,
    matrix, order-k tensor."""
    if order is None or order == 0:
        return "a scalar"
    if order == 1:
        return "a row vector" if row else "a column vector"
    if order == 2:
        return "a matrix"
    return f"an order-{order} tensor"


def _axes(order: int, row: bool) -> tuple[bool, bool] | None:
    """(has a row index, has a column index) of a matrix-notation operand."""
    return {1: (not row, row), 2: (True, True)}.get(order)


def matmul_type(a: int, a_row: bool, b: int, b_row: bool) -> tuple[int, bool] | None:
    """Order and orientation (row?) of ``a * b`` in matrix notation, ``None`` if undefined.

    Examples
    --------
    >>> matmul_type(1, True, 1, False), matmul_type(1, False, 1, True), matmul_type(2, False, 1, False)
    ((0, False), (2, False), (1, False))
    """
    if a == 0:
        return b, b_row
    if b == 0:
        return a, a_row
    left, right = _axes(a, a_row), _axes(b, b_row)
    if left is None or right is None or left[1] != right[0]:
        return None
    rows, cols = left[0], right[1]
    return rows + cols, cols and not rows


def matmul(a: Expr, a_row: bool, b: Expr, b_row: bool) -> Expr:
    """The DAG of ``a * b`` (orientations as in :func:`matmul_type`, which must allow it)."""
    if a.order == 0 or b.order == 0:
        return scale(a, b)
    (a_rows, a_cols), (b_rows, b_cols) = _axes(a.order, a_row), _axes(b.order, b_row)
    # letters: 0 the rows of a, 1 the contracted (or absent) middle, 2 the columns of b
    sa = (0,) * a_rows + (1,) * a_cols
    sb = (1,) * b_rows + (2,) * b_cols
    return N.mul((a, b), (sa, sb), (0,) * a_rows + (2,) * b_cols)


def scale(a: Expr, b: Expr) -> Expr:
    """``a * b`` where at least one side has order 0."""
    sa, sb = tuple(range(a.order)), tuple(range(b.order))
    return N.mul((a, b), (sa, sb), sa if a.order else sb)


def transpose(a: Expr) -> Expr:
    """``a'``: the axes of a matrix swapped; scalars and vectors are their own node
    (the orientation of a vector is tracked by the typing pass)."""
    if a.order == 2:
        return N.mul((a,), ((0, 1),), (1, 0))
    if a.order > 2:
        raise SemanticError(f"transpose needs an order ≤ 2 operand, but {quoted(a)} has order {a.order}")
    return a


def elementwise(a: Expr, b: Expr, divide: bool = False) -> Expr:
    """``a .* b`` or ``a ./ b`` (equal orders, or a scalar side broadcast)."""
    if divide:
        b = N.reciprocal(b)
    if a.order == b.order:
        return N.elementwise_product(a, b)
    return scale(a, b)


def sum_all(a: Expr) -> Expr:
    """The sum of every entry (a scalar stays itself)."""
    if a.order == 0:
        return a
    return N.mul((a,), (tuple(range(a.order)),), ())


def call(name: str, a: Expr) -> Expr:
    """A function of matrix notation applied to a built argument."""
    if name == "sum":
        return sum_all(a)
    if name == "norm1":
        return sum_all(N.func("abs", a))
    if name == "norm2":
        spec = tuple(range(a.order))
        return N.power(N.mul((a, a), (spec, spec), ()), N.const(0.5, 0))
    if name == "sqrt":
        return N.power(a, N.const(0.5, 0))
    if name == "tr":
        _square(name, a)
        return N.mul((a,), ((0, 0),), ())
    if name == "logdet":
        _square(name, a)
        return N.func("log", N.det(a))
    if name == "diag":
        if a.order == 1:
            return N.mul((a,), ((0,),), (0, 0))
        if a.order == 2:
            return N.mul((a,), ((0, 0),), (0,))
        raise SemanticError(f"diag needs a vector or a matrix, but {quoted(a)} has order {a.order}")
    raise AssertionError(name)


def _square(name: str, a: Expr) -> None:
    if a.order != 2:
        raise SemanticError(f"{name} needs a square matrix (order 2), but {quoted(a)} has order {a.order}")


# ----------------------------------------------------------------------------- printing

# An entry of the printer: (text, precedence, kind, alternative).  ``kind`` says
# what the text is: "s" scalar, "c" column vector, "r" row vector (the same
# order-1 value, written transposed), "m" matrix, "t" a tensor of order 3 or more
# (einsum language); ``alternative`` is the same vector written the other way
# round (``A'*x`` for ``x'*A``) where the printer found one, else None.
_Entry = tuple


def to_matrix_notation(root: Expr) -> str:
    """The expression in matrix notation where one exists (orders up to 2),
    falling back to the einsum language for the parts where it does not.  The
    text parses back (with the same orders) to an expression of the same value.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("x'*A*x")
    >>> print(tc.to_matrix_notation(tc.derivative(f, "A")))
    x*x'
    >>> print(tc.to_matrix_notation(tc.parse("T *(ijk,k->ij) x", {"T": 3, "x": 1})))
    T *(ijk,k->ij) x
    """
    from ..printing.text import MAX_TEXT, text_length, to_text

    if text_length(root) > MAX_TEXT:
        return to_text(root)  # raises its clear "too large to print" error
    texts: dict[Expr, _Entry] = {}
    for node in N.topological(root):
        texts[node] = _print_node(node, texts, root)
    entry = texts[root]
    return _oriented(entry, "c")[0] if entry[2] == "r" else entry[0]


def _default_kind(order: int) -> str:
    return {0: "s", 1: "c", 2: "m"}.get(order, "t")


def _wrap(entry: _Entry, minimum: int) -> str:
    return entry[0] if entry[1] >= minimum else f"({entry[0]})"


def _oriented(entry: _Entry, want: str) -> _Entry:
    """The entry written as ``want``: "c"/"r" for a vector, "m" (as is) / "mt"
    (transposed) for a matrix; a ``'`` is added where needed."""
    from ..printing.text import POWER

    kind = entry[2]
    if kind in "cr" and want in "cr" and kind != want:
        if entry[3] is not None:
            return entry[3]
        return _wrap(entry, POWER) + "'", POWER, want, None
    if want == "mt":
        return _wrap(entry, POWER) + "'", POWER, kind, None
    return entry


def _print_node(node: Expr, texts: dict[Expr, _Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    entry = _print_matrix(node, texts, root)
    if entry is not None:
        return entry
    simple = {c: texts[c][:2] for c in node.children}
    text, prec = P._PRINTERS[node.op](node, simple)
    return text, prec, _default_kind(node.order), None


def _print_matrix(node: Expr, texts: dict[Expr, _Entry], root: Expr) -> _Entry | None:
    """The node in matrix notation, or None where the einsum language is needed."""
    return _MATRIX_PRINTERS[node.op](node, [texts[c] for c in node.children], root)


def _m_var(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    return node.arg[0], P.ATOM, _default_kind(node.order), None


def _m_const(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    number = P.format_number(node.arg[0])
    if node.order:
        number += P.dimensions_text(node)  # states the order and the lengths
    return number, (P.FACTOR if number.startswith("-") else P.ATOM), _default_kind(node.order), None


def _m_delta(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    if node.arg == 1 and not any(map(N.is_known, node.dims)) and "eye" not in root.variables:
        return "eye", P.ATOM, "m", None
    dims = P.dimensions_text(node) if any(map(N.is_known, node.dims)) else ""
    return f"delta({node.arg}){dims}", P.ATOM, _default_kind(node.order), None


def _m_add(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    return _print_sum(node, kids)


def _m_func(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    return f"{node.arg}({kids[0][0]})", P.ATOM, kids[0][2], None


def _m_pow(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    base, exponent = kids
    exp_text = exponent[0] if exponent[1] >= P.ATOM else f"({exponent[0]})"
    return f"{_wrap(base, P.ATOM)}^{exp_text}", P.POWER, base[2], None


def _m_matrix_function(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    return f"{node.op}({kids[0][0]})", P.ATOM, _default_kind(node.order), None


def _m_slice(node: Expr, kids: list[_Entry], root: Expr) -> _Entry:
    from ..printing import text as P

    text = f"{_wrap(kids[0], P.ATOM)}[{P.slice_text(node.arg)}]"  # X[0, :] is a row, as the parser reads it
    kind = _default_kind(node.order)
    if node.order == 1:
        kind = kids[0][2] if node.children[0].order == 1 else ("r" if isinstance(node.arg[0], int) else "c")
    return text, P.POWER, kind, None


def _m_mul(node: Expr, kids: list[_Entry], root: Expr) -> _Entry | None:
    ins, out = node.arg
    if len(node.children) == 1:
        return _print_unary(ins[0], tuple(out), kids[0])
    return _print_chain(ins, tuple(out), kids)


def _m_none(node: Expr, kids: list[_Entry], root: Expr) -> None:
    """No matrix notation (an embedding): the einsum language's text."""
    return None


#: The matrix-notation printer of each node kind (None: use the einsum language).
_MATRIX_PRINTERS: dict[str, Callable[[Expr, list[_Entry], Expr], _Entry | None]] = {
    "var": _m_var,
    "const": _m_const,
    "delta": _m_delta,
    "add": _m_add,
    "mul": _m_mul,
    "func": _m_func,
    "pow": _m_pow,
    "inv": _m_matrix_function,
    "det": _m_matrix_function,
    "slice": _m_slice,
    "embed": _m_none,
}


def _print_sum(node: Expr, kids: list[_Entry]) -> _Entry:
    from ..printing import text as P

    parts: list[str] = []
    for i, (entry, coef) in enumerate(zip(kids, node.arg)):
        if node.order == 1:
            entry = _oriented(entry, "c")
        if coef in (1, -1):
            if i == 0:
                parts.append(_wrap(entry, P.TERM) if coef == 1 else "-" + _wrap(entry, P.POWER))
            else:
                parts.append((" + " if coef == 1 else " - ") + _wrap(entry, P.TERM))
            continue
        scaled = f"{P.format_number(abs(coef))}*{_wrap(entry, P.FACTOR)}"
        if i == 0:
            parts.append(scaled if coef > 0 else "-" + scaled)
        else:
            parts.append((" - " if coef < 0 else " + ") + scaled)
    prec = P.SUM if len(kids) > 1 else (P.FACTOR if node.arg[0] < 0 else P.TERM)
    return "".join(parts), prec, _default_kind(node.order), None


def _print_unary(spec: tuple, out: tuple, child: _Entry) -> _Entry | None:
    from ..printing import text as P

    spec = tuple(spec)
    order, n_out = len(spec), len(out)
    if order > 2 or n_out > 2:
        return None
    if len(set(spec)) == order and spec == out:
        return child  # the identity
    if order == 2 and len(set(spec)) == 2 and out == spec[::-1]:
        return _oriented(child, "mt")
    if n_out == 0 and len(set(spec)) == order:
        return f"sum({child[0]})", P.ATOM, "s", None
    if order == 2 and spec[0] == spec[1]:
        if n_out == 0:
            return f"tr({child[0]})", P.ATOM, "s", None
        if n_out == 1:
            return f"diag({child[0]})", P.ATOM, "c", None
    if order == 1 and n_out == 2 and out[0] == out[1] == spec[0]:
        return f"diag({_oriented(child, 'c')[0]})", P.ATOM, "m", None
    return None


def _print_chain(ins: tuple, out: tuple, kids: list[_Entry]) -> _Entry | None:
    """A product of two or more operands as a chain of matrix products, trying
    every order of up to five operands and keeping the cheapest printable one."""
    import itertools

    from ..printing.text import _chain_order

    n = len(kids)
    orders = itertools.permutations(range(n)) if n <= 5 else [_chain_order(ins, out)]
    best: tuple[int, _Entry] | None = None
    for perm in orders:
        specs = [tuple(ins[k]) for k in perm]
        entry, spec, total = kids[perm[0]], specs[0], 0
        for k, result in enumerate(N.chain_specs(specs, out), start=1):
            step = _print_binary(entry, spec, kids[perm[k]], specs[k], tuple(result))
            if step is None:
                break
            cost, entry = step
            total += cost
            spec = tuple(result)
        else:
            total += sum(1 for a, b in zip(perm, range(n)) if a != b)  # keep the written order
            if best is None or total < best[0]:
                best = (total, entry)
    return None if best is None else best[1]


def _product(left: _Entry, right: _Entry, operator: str = "*") -> str:
    from ..printing.text import FACTOR, TERM

    space = " " if operator != "*" else ""
    return f"{_wrap(left, TERM)}{space}{operator}{space}{_wrap(right, FACTOR)}"


def _as_in(entry: _Entry, spec: tuple, out: tuple) -> _Entry:
    """An operand whose letters are the output's, transposed if they come reversed."""
    if len(spec) == 2 and spec != out:
        return _oriented(entry, "mt")
    if len(spec) == 1:
        return _oriented(entry, "c")
    return entry


def _orientations(spec: tuple) -> list[tuple[tuple, str, int]]:
    """(row letter, column letter), how to write the operand, and a cost (a
    transposed matrix costs 2) for each way an operand can enter a matrix product."""
    if len(spec) == 1:
        return [((spec[0], None), "c", 0), ((None, spec[0]), "r", 0)]
    return [((spec[0], spec[1]), "m", 0), ((spec[1], spec[0]), "mt", 2)]


def _print_binary(ea: _Entry, sa: tuple, eb: _Entry, sb: tuple, out: tuple) -> tuple[int, _Entry] | None:
    """``a *(sa,sb->out) b`` in matrix notation with its cost, or None."""
    from ..printing import text as P

    if len(set(sa)) < len(sa) or len(set(sb)) < len(sb) or len(set(out)) < len(out):
        return None
    if not sa or not sb:  # scaling: the scalar first
        (s, t), st = ((ea, eb), sb) if not sa else ((eb, ea), sa)
        if st == out or (len(st) == 2 and st == out[::-1]):
            oriented = _as_in(t, st, out) if len(st) <= 2 else t
            alt = None
            if oriented[2] in "cr" and oriented[3] is not None:
                alt = (_product(s, oriented[3]), P.TERM, oriented[3][2], None)
            return 0, (_product(s, oriented), P.TERM, oriented[2], alt)
        return None
    if max(len(sa), len(sb), len(out)) > 2:
        return None
    if set(sa) == set(sb) == set(out) and len(sa) == len(sb) == len(out):  # entry by entry
        text = _product(_as_in(ea, sa, out), _as_in(eb, sb, out), ".*")
        return 0, (text, P.TERM, _default_kind(len(out)), None)
    if not out and len(sa) == len(sb) == 2 and set(sa) == set(sb):
        inner = _product(ea, _as_in(eb, sb, sa), ".*")
        return 0, (f"sum({inner})", P.ATOM, "s", None)
    found: dict[str, tuple[int, _Entry]] = {}
    pairs = (((ea, sa), (eb, sb)), ((eb, sb), (ea, sa)))
    for swap, ((le, ls), (re_, rs)) in enumerate(pairs):
        for (lr, lc), lwant, lcost in _orientations(ls):
            for (rr, rc), rwant, rcost in _orientations(rs):
                if lc != rr or (lc is not None and (lc in out or lc in (lr, rc))):
                    continue
                if tuple(x for x in (lr, rc) if x is not None) != out:
                    continue
                kind = {(False, False): "s", (True, False): "c", (False, True): "r"}.get(
                    (lr is not None, rc is not None), "m"
                )
                left, right = _oriented(le, lwant), _oriented(re_, rwant)
                cost = (
                    lcost
                    + rcost
                    + swap
                    + (left[0].endswith("'") and lwant in "cr")
                    + (right[0].endswith("'") and rwant in "cr")
                )
                if kind not in found or cost < found[kind][0]:
                    found[kind] = (cost, (_product(left, right), P.TERM, kind, None))
    if not found:
        return None
    if "c" in found and "r" in found:  # the same vector both ways: keep both
        (cc, col), (rc_, row) = found["c"], found["r"]
        main, other = (col, row) if cc <= rc_ else (row, col)
        return min(cc, rc_), main[:3] + (other,)
    return min(found.values(), key=lambda item: item[0])
