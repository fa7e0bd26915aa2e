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
from .matrix_reading import (
    Chain,
    Coefficient,
    Diag,
    DiagOf,
    Hadamard,
    Leaf,
    MatrixReading,
    Norm,
    Number,
    Ones,
    SquaredNorm,
    Sum,
    Term,
    Trace,
    Transposed,
    WithScalars,
    chain,
    read_norm,
    read_product,
)
from .text import FACTOR, MAX_TEXT, POWER, TERM, Templates, text_length, to_text

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
        same = entry[3] is not None and entry[3][0] == entry[0]
        if node.order == 2 and entry[2] == "m" and not same and is_symmetric(node, frozenset()):
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
    entry = _print_sum(node, kids)
    if node.order != 2:
        return entry
    # the transpose of a sum of matrices is the sum of their transposes (A' + A), as in LaTeX
    return (*entry[:3], _print_sum(node, [_oriented(k, "mt") for k in kids]))


def _m_func(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry:
    t = None
    if node.order == 2:  # entry by entry: f(X)' is f(X')
        t = (f"{node.arg}({_oriented(kids[0], 'mt')[0]})", P.ATOM, "m", None)
    return f"{node.arg}({kids[0][0]})", P.ATOM, kids[0][2], t


def _m_pow(node: Expr, kids: list[_Entry], root: Expr, texts: dict[Expr, _Entry]) -> _Entry | None:
    norm = read_norm(node)
    if norm is not None:  # (vᵀv)^0.5 is norm2(v)
        return _rendered(norm, 0, texts)
    base, exponent = kids
    exp_text = exponent[0] if exponent[1] >= P.ATOM else f"({exponent[0]})"
    # `X^2` of a matrix is the matrix power in matrix notation: its entrywise power is `X.^2`
    op = ".^" if node.children[0].order == 2 else "^"
    t = None
    if node.order == 2 and node.children[1].order == 0:  # entry by entry: (X.^2)' is X'.^2
        t = (f"{_wrap(_oriented(base, 'mt'), P.ATOM)}{op}{exp_text}", P.POWER, "m", None)
    return f"{_wrap(base, P.ATOM)}{op}{exp_text}", P.POWER, base[2], t


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
    """A product as the matrix reading of :mod:`.matrix_reading` writes it (the LaTeX
    printer writes the same reading), else None: the einsum language."""
    reading = read_product(node)
    return None if reading is None else _rendered(reading, node.order, texts)


def _rendered(reading: MatrixReading, order: int, texts: Mapping[Expr, _Entry]) -> _Entry | None:
    """The text of a matrix reading, with its transpose's as the alternative."""
    if isinstance(reading.term, Number) and order:
        return None  # a zero vector or matrix: the einsum language states its lengths
    text, prec = text_term(reading.term, texts)
    kind = _default_kind(order)
    if order not in (1, 2):
        return text, prec, kind, None
    t_text, t_prec = text_term(reading.transpose, texts)
    return text, prec, kind, (t_text, t_prec, "r" if kind == "c" else "m", None)


def text_term(term: Term, texts: Mapping[Expr, _Entry]) -> tuple[str, int]:
    """``(text, precedence)`` of a term of a matrix reading in matrix notation.

    >>> import tenscalc as tc
    >>> from tenscalc.printing.matrix_reading import read_product
    >>> f = tc.parse("A *(ij,j->) v", {"A": 2, "v": 1})
    >>> text_term(read_product(f).term, {c: (c.arg[0], P.ATOM, "m" if c.order == 2 else "c", None) for c in f.children})
    ('sum(A*v)', 4)
    """
    return _TEXT_TERMS[type(term)](term, texts)


def _t_leaf(term: Leaf, texts):
    entry = texts[term.node]
    if term.node.order == 1:
        entry = _oriented(entry, "r" if term.transposed else "c")
    elif term.transposed:
        entry = _oriented(entry, "mt")
    return entry[0], entry[1]


def _t_ones(term: Ones, texts):
    # sized by a variable's axis as the parser reads it; vector(1) takes its length from the product
    text = f"ones({term.dim})" if N.is_known(term.dim) else "vector(1)"
    return (text + "'", P.POWER) if term.transposed else (text, P.ATOM)


def _t_transposed(term: Transposed, texts):
    return _wrap(text_term(term.inner, texts), P.POWER) + "'", P.POWER


def _joined(parts: list[tuple[str, int]], operator: str) -> tuple[str, int]:
    """``a*b*c``: left to right, so a right operand that is itself a product keeps its parentheses."""
    text = _wrap(parts[0], TERM) + "".join(operator + _wrap(p, FACTOR) for p in parts[1:])
    return text, TERM


def _t_chain(term: Chain, texts):
    return _joined([text_term(f, texts) for f in term.factors], "*")


def _function(name: str):
    def render(term, texts):
        return f"{name}({text_term(term.inner, texts)[0]})", P.ATOM

    return render


def _t_sum(term: Sum, texts):
    inner = term.inner
    if isinstance(inner, Chain) and isinstance(inner.factors[-1], Ones) and not inner.factors[-1].transposed:
        inner = chain(list(inner.factors[:-1]))  # 1ᵀ M 1: the sum of M's entries
    return f"sum({text_term(inner, texts)[0]})", P.ATOM


def _t_hadamard(term: Hadamard, texts):
    text, prec = _joined([text_term(p, texts) for p in term.parts], " .* ")
    for base, e in term.divisors:
        entry = _oriented(texts[base], "c") if base.order == 1 else texts[base]
        if e != 1:  # b.^(-2) is the reciprocal of b.^2
            entry = (f"{_wrap(entry, P.ATOM)}{'.^' if base.order == 2 else '^'}{P.format_exact(e)}", P.POWER)
        text += " ./ " + _wrap(entry, FACTOR)
    return text, prec


def _t_with_scalars(term: WithScalars, texts):
    parts = [text_term(s, texts) for s in term.scalars]
    if term.main is not None:
        parts.append(text_term(term.main, texts))
    return parts[0] if len(parts) == 1 else _joined(parts, "*")


def _t_coefficient(term: Coefficient, texts):
    inner = text_term(term.inner, texts)
    if term.coef == -1:
        return "-" + _wrap(inner, P.POWER), P.FACTOR
    sign = "-" if term.coef < 0 else ""
    # "-2.7*(...)" is a TERM: after a product's operator it needs its parentheses
    return f"{sign}{P.format_exact(abs(term.coef))}*{_wrap(inner, FACTOR)}", TERM


def _t_number(term: Number, texts):
    return str(term.value), P.ATOM


def _norm_text(base: Expr, texts) -> str:
    entry = _oriented(texts[base], "c") if base.order == 1 else texts[base]
    return f"norm2({entry[0]})"


def _t_squared_norm(term: SquaredNorm, texts):
    """``x'*x`` for a vector variable, ``norm2(v)^2`` for any other vector or a matrix."""
    if term.base.op == "var" and term.base.order == 1:
        text = _oriented(texts[term.base], "c")[0]
        return f"{text}'*{text}", TERM
    return _norm_text(term.base, texts) + "^2", P.POWER


def _t_norm(term: Norm, texts):
    text = _norm_text(term.base, texts)
    if term.power == 1:
        return text, P.ATOM
    return text + (f"^{term.power}" if term.power > 0 else f"^({term.power})"), P.POWER


#: term kind -> its text in matrix notation
_TEXT_TERMS: dict[type, Callable[..., tuple[str, int]]] = {
    Leaf: _t_leaf,
    Ones: _t_ones,
    Transposed: _t_transposed,
    Chain: _t_chain,
    Diag: _function("diag"),
    DiagOf: _function("diag"),
    Trace: _function("tr"),
    Sum: _t_sum,
    Hadamard: _t_hadamard,
    WithScalars: _t_with_scalars,
    Coefficient: _t_coefficient,
    Number: _t_number,
    SquaredNorm: _t_squared_norm,
    Norm: _t_norm,
}


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
