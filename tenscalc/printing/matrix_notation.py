"""Printing in matrix notation: a DAG as matrixcalculus.org's users write it.

``to_matrix_notation`` writes ``x'*A*x``, ``A'*x + A*x``, ``tr(X*Y)`` where a
product reads as matrix algebra, and falls back to the einsum language for
tensors of order 3 or more; what it writes parses back to the same node
(:mod:`tenscalc.frontend.matrix_notation` reads it).

>>> import tenscalc as tc
>>> f = tc.parse("x'*A*x")
>>> print(tc.to_matrix_notation(tc.derivative(f, "x")))
A'*x + A*x
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from ..core import nodes as N
from ..core.nodes import Expr
from ..simplifier.symmetry import is_symmetric
from . import text as P
from .latex_pieces import common_factor, divide_coefficient
from .matrix_forms import squared_norm_base
from .text import FACTOR, MAX_TEXT, POWER, TERM, Templates, chain_order, text_length, to_text

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
    if text_length(root) > MAX_TEXT:
        return to_text(root)  # raises its clear "too large to print" error
    # long texts are marked and filled in at the end: copying each into its parent's
    # text was quadratic in depth (see printing.text.Templates)
    templates = Templates()
    texts: dict[Expr, _Entry] = {}
    for node in N.topological(root):
        text, prec, kind, alternative = _print_node(node, texts, root)
        if alternative is not None:
            alternative = (templates.add(alternative[0])[0], *alternative[1:])
        texts[node] = (templates.add(text)[0], prec, kind, alternative)
    entry = texts[root]
    return templates.expand(_oriented(entry, "c")[0] if entry[2] == "r" else entry[0])


class _TextView(Mapping[Expr, tuple[str, int]]):
    """``(text, precedence)`` of the printed nodes, as the einsum-language printers read them."""

    def __init__(self, texts: dict[Expr, _Entry]):
        self._texts = texts

    def __getitem__(self, node: Expr) -> tuple[str, int]:
        return self._texts[node][:2]

    def __iter__(self) -> Iterator[Expr]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


def _default_kind(order: int) -> str:
    return {0: "s", 1: "c", 2: "m"}.get(order, "t")


def _wrap(entry: _Entry, minimum: int) -> str:
    return entry[0] if entry[1] >= minimum else f"({entry[0]})"


def _oriented(entry: _Entry, want: str) -> _Entry:
    """The entry written as ``want``: "c"/"r" for a vector, "m" (as is) / "mt"
    (transposed) for a matrix; a ``'`` is added where needed."""
    kind = entry[2]
    if kind in "cr" and want in "cr" and kind != want:
        if entry[3] is not None:
            return entry[3]
        return _wrap(entry, POWER) + "'", POWER, want, None
    if want == "mt":
        if kind == "m" and entry[3] is not None:  # a symmetric matrix: its own transpose
            return entry[3]
        return _wrap(entry, POWER) + "'", POWER, kind, None
    return entry


def _print_node(node: Expr, texts: dict[Expr, _Entry], root: Expr) -> _Entry:
    entry = _print_matrix(node, texts, root)
    if entry is not None:
        if node.order == 2 and entry[2] == "m" and entry[3] is None and is_symmetric(node, frozenset()):
            return (*entry[:3], entry[:3] + (None,))  # XᵀX, inv(XᵀX): written the same transposed
        return entry
    # the einsum printers read (text, precedence) of children and, for a quotient, of
    # the denominator's base (a grandchild): a view of every printed node, not a copy
    text, prec = P.TEXT_PRINTERS[node.op](node, _TextView(texts))
    return text, prec, _default_kind(node.order), None


def _print_matrix(node: Expr, texts: dict[Expr, _Entry], root: Expr) -> _Entry | None:
    """The node in matrix notation, or None where the einsum language is needed."""
    return MATRIX_NOTATION_PRINTERS[node.op](node, [texts[c] for c in node.children], root, texts)


def _m_var(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    return node.arg[0], P.ATOM, _default_kind(node.order), None


def _m_const(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    number = P.format_exact(node.arg[0]) if node.order == 0 else P.format_number(node.arg[0])
    if node.order and node.arg[0] in (1, -1) and all(map(N.is_known, node.dims)):
        # a ones vector or matrix, sized by variables' axes: ones(x.0), as the parser reads it
        ones = f"ones({', '.join(str(d) for d in node.dims)})"
        return ("-" if node.arg[0] < 0 else "") + ones, P.FACTOR, _default_kind(node.order), None
    if node.order:
        number += P.dimensions_text(node)  # states the order and the lengths
    return number, (P.FACTOR if number.startswith("-") else P.ATOM), _default_kind(node.order), None


def _m_delta(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    if node.arg == 1 and not any(map(N.is_known, node.dims)) and "eye" not in root.variables:
        return "eye", P.ATOM, "m", None
    dims = P.dimensions_text(node) if any(map(N.is_known, node.dims)) else ""
    return f"delta({node.arg}){dims}", P.ATOM, _default_kind(node.order), None


def _m_add(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    return _print_sum(node, kids)


def _m_func(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    return f"{node.arg}({kids[0][0]})", P.ATOM, kids[0][2], None


def _vector_norm_base(node: Expr) -> Expr | None:
    """``v`` when ``node`` is ``vᵀv`` or ``sum(v.^2)`` of a vector ``v``."""
    base = squared_norm_base(node)
    return base if base is not None and base.order == 1 else None


def _m_pow(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    inner = _vector_norm_base(node.children[0])
    if inner is not None and node.children[1].op == "const" and node.children[1].arg[0] == 0.5:
        return f"norm2({texts[inner][0]})", P.ATOM, "s", None  # (vᵀv)^0.5
    base, exponent = kids
    exp_text = exponent[0] if exponent[1] >= P.ATOM else f"({exponent[0]})"
    # `X^2` of a matrix is the matrix power in matrix notation: its entrywise power is `X.^2`
    op = ".^" if node.children[0].order == 2 else "^"
    return f"{_wrap(base, P.ATOM)}{op}{exp_text}", P.POWER, base[2], None


def _m_matrix_function(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    return f"{node.op}({kids[0][0]})", P.ATOM, _default_kind(node.order), None


def _m_adj(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry | None:
    """``adj(X)`` is a matrix; ``adj(X, k)`` of order 2k the einsum language's text."""
    if node.arg != 1:
        return None
    return f"adj({kids[0][0]})", P.ATOM, "m", None


def _m_slice(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    text = f"{_wrap(kids[0], P.ATOM)}[{P.slice_text(node.arg)}]"  # X[0, :] is a row, as the parser reads it
    kind = _default_kind(node.order)
    if node.order == 1:
        kind = kids[0][2] if node.children[0].order == 1 else ("r" if isinstance(node.arg[0], int) else "c")
    return text, P.POWER, kind, None


def _m_mul(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry | None:
    vector = _vector_norm_base(node)
    if vector is not None:  # x'*x for a variable, norm2(A*x - y)^2 for anything else
        text = _oriented(texts[vector], "c")[0]
        if vector.op == "var":
            return f"{text}'*{text}", P.TERM, "s", None
        return f"norm2({text})^2", P.POWER, "s", None
    ins, out = node.arg
    if len(node.children) == 1:
        return _print_unary(ins[0], tuple(out), kids[0])
    return _print_chain(ins, tuple(out), kids)


def _m_none(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> None:
    """No matrix notation (an embedding): the einsum language's text."""
    return None


#: The matrix-notation printer of each node kind (None: use the einsum language).
MATRIX_NOTATION_PRINTERS: dict[str, Callable[[Expr, list[_Entry], Expr, dict[Expr, _Entry]], _Entry | None]] = {
    "var": _m_var,
    "const": _m_const,
    "delta": _m_delta,
    "add": _m_add,
    "mul": _m_mul,
    "func": _m_func,
    "pow": _m_pow,
    "inv": _m_matrix_function,
    "det": _m_matrix_function,
    "adj": _m_adj,
    "slice": _m_slice,
    "embed": _m_none,
}


def _print_sum(node: Expr, kids: list[_Entry]) -> _Entry:
    factor = common_factor(node.arg)
    coefficients = [divide_coefficient(c, factor) for c in node.arg] if factor != 1 else list(node.arg)
    parts: list[str] = []
    for i, (entry, coef) in enumerate(zip(kids, coefficients)):
        if node.order == 1:
            entry = _oriented(entry, "c")
        if coef in (1, -1):
            if i == 0:
                parts.append(_wrap(entry, P.TERM) if coef == 1 else "-" + _wrap(entry, P.POWER))
            else:
                parts.append((" + " if coef == 1 else " - ") + _wrap(entry, P.TERM))
            continue
        scaled = f"{P.format_exact(abs(coef))}*{_wrap(entry, P.FACTOR)}"
        if i == 0:
            parts.append(scaled if coef > 0 else "-" + scaled)
        else:
            parts.append((" - " if coef < 0 else " + ") + scaled)
    # "-x" is a factor, but "-2.7*x" is not: after a product's operator, "*x" would bind to
    # the product ("A *(ij,jk->ik) -2.7*B" reads as (A *(...) -2.7)*B)
    prec = P.SUM if len(kids) > 1 else (P.FACTOR if node.arg[0] == -1 else P.TERM)
    text = "".join(parts)
    if factor != 1:  # 0.5*A'*x + 0.5*A*x -> 0.5*(A'*x + A*x)
        magnitude = P.format_exact(abs(factor))
        return (
            f"{'-' if factor < 0 else ''}{magnitude}*({text})",
            P.TERM,  # "-2.7*(...)" too: a product's right operand needs it in parentheses
            _default_kind(node.order),
            None,
        )
    return text, prec, _default_kind(node.order), None


def _print_unary(spec: tuple, out: tuple, child: _Entry) -> _Entry | None:
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

    n = len(kids)
    orders = itertools.permutations(range(n)) if n <= 5 else [chain_order(ins, out)]
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
