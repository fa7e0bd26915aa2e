"""Matrix forms: every node in LaTeX matrix notation, where it has one.

Matrix notation exists when every node has order at most 2 and every product
has a matrix reading: :func:`.matrix_reading.read_product` finds it (chains,
transposes, ``\\operatorname{diag}`` of a vector, so that ``X *(ki,k->ik) s *(ik,kj->ij) X``
reads as ``X^\\top \\operatorname{diag}(s) X``, entrywise products ``\\odot``,
traces, sums ``\\mathbf{1}^\\top v``, norms) and :func:`latex_term` spells it; the
matrix-notation text printer spells the same reading.  The other node kinds are
read here: transposes are tracked through sums and functions (``A + A^\\top``),
inverses and determinants of matrices are recognised, and elementwise functions
and powers of vectors and matrices act entry by entry (``x^{\\circ 2}`` is the
Hadamard power).

``matrix_readings`` gives every node its ``Reading`` (or None where there is
none), by ``MATRIX_RULES`` keyed by node kind; the readings are spelled with the
pieces of :mod:`.latex_pieces`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.nodes import Expr, topological
from ..simplifier.symmetry import is_symmetric
from .latex_pieces import (
    ATOM,
    FUNCTION_LATEX,
    HADAMARD,
    NEG,
    POW,
    PROD,
    coefficient_prefix,
    display_order,
    format_name,
    format_number,
    join_terms,
    juxtapose,
    power,
    wrap,
)
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
    read_norm,
    read_product,
)
from .text import Templates


@dataclass(frozen=True)
class Reading:
    """A node in matrix notation: its text, precedence, order (0 scalar, 1 column
    vector, 2 matrix) and, when known, a nicer text for its transpose."""

    text: str
    prec: int
    kind: int
    t: str | None = None
    t_prec: int = ATOM


def transpose(r: Reading) -> Reading:
    """The reading of the transpose (a scalar is its own)."""
    if r.kind == 0:
        return r
    if r.t is not None:
        return Reading(r.t, r.t_prec, r.kind, r.text, r.prec)
    return Reading(f"{wrap(r.text, r.prec, ATOM)}^\\top", POW, r.kind, r.text, r.prec)


class Readings(dict):
    """Readings by node whose long texts are kept as marks (see
    :class:`~tenscalc.printing.text.Templates`): storing every node's whole text
    took memory quadratic in depth.  ``expand`` writes a stored text in full.

    >>> import tenscalc as tc
    >>> e = tc.var("x", 1)
    >>> for _ in range(100):
    ...     e = tc.sin(e)
    >>> readings = matrix_readings(e)
    >>> len(readings[e].text) < 100 < len(readings.expand(readings[e].text))
    True
    """

    def __init__(self) -> None:
        super().__init__()
        self.templates = Templates()

    def __setitem__(self, node: Expr, reading: Reading | None) -> None:
        if reading is not None:
            add = self.templates.add
            text = add(reading.text)[0]
            # a symmetric reading keeps t == text (one mark), as parents compare them
            t = text if reading.t == reading.text else (None if reading.t is None else add(reading.t)[0])
            reading = replace(reading, text=text, t=t)
        super().__setitem__(node, reading)

    def expand(self, text: str) -> str:
        """``text`` (a stored reading's, or one built from them) with its marks filled in."""
        return self.templates.expand(text)


def matrix_readings(root: Expr) -> Readings:
    """Matrix notation for every node of the DAG (``None`` where there is none)."""
    readings = Readings()
    for node in topological(root):
        readings[node] = read_node(node, readings)
    return readings


def read_node(node: Expr, readings: dict[Expr, Reading | None]) -> Reading | None:
    """The reading of ``node`` from its children's in ``readings`` (None: no matrix notation)."""
    kids = [k for k in (readings[c] for c in node.children) if k is not None]
    if node.order > 2 or len(kids) < len(node.children):
        return None
    reading = MATRIX_RULES[node.op](node, kids, readings)
    if reading is not None and node.order == 2 and reading.t != reading.text and is_symmetric(node, frozenset()):
        # a symmetric matrix (XᵀX, its inverse) is its own transpose: (XᵀX)^{-1}, never (XᵀX)^{-⊤}
        return Reading(reading.text, reading.prec, 2, reading.text, reading.prec)
    return reading


def _m_var(node, kids, readings):
    return Reading(format_name(node.arg[0]), ATOM, node.order)


def _m_const(node, kids, readings):
    value, order = node.arg
    number = format_number(value)
    if order == 0:
        return Reading(number, NEG if number.startswith("-") else ATOM, 0)
    ones = "\\mathbf{1}" if order == 1 else "\\mathbf{1} \\mathbf{1}^\\top"
    if value != 1:
        ones = f"{number} {ones}"
    prec = NEG if number.startswith("-") else (ATOM if ones == "\\mathbf{1}" else PROD)
    if order == 2:  # a constant matrix is symmetric
        return Reading(ones, prec, 2, ones, prec)
    return Reading(ones, prec, order)


def _m_delta(node, kids, readings):
    if node.arg == 0:
        return Reading("1", ATOM, 0)
    return Reading("I", ATOM, 2, "I", ATOM)


def _m_add(node, kids, readings):
    order = display_order(node)
    text, prec = join_terms([(node.arg[k], kids[k].text, kids[k].prec) for k in order])
    if node.order != 2:
        return Reading(text, prec, node.order)
    flipped = [transpose(kid) for kid in kids]
    t, t_prec = join_terms([(node.arg[k], flipped[k].text, flipped[k].prec) for k in order])
    return Reading(text, prec, 2, t, t_prec)


def _m_func(node, kids, readings):
    (x,) = kids
    if node.arg == "abs":
        return Reading(f"\\left|{x.text}\\right|", ATOM, node.order, f"\\left|{transpose(x).text}\\right|")
    name = FUNCTION_LATEX[node.arg]
    t = f"{name}\\left({transpose(x).text}\\right)" if node.order == 2 else None
    return Reading(f"{name}\\left({x.text}\\right)", ATOM, node.order, t)


def _m_pow(node, kids, readings):
    norm = read_norm(node)
    if norm is not None:
        return _rendered(norm, 0, readings)
    base, exponent = kids
    e = node.children[1].arg[0] if node.children[1].op == "const" else None
    hadamard = node.order > 0
    text, prec = power((base.text, base.prec), (exponent.text, exponent.prec), e, hadamard)
    t = None
    if node.order == 2:
        t = power((transpose(base).text, transpose(base).prec), (exponent.text, exponent.prec), e, True)[0]
    return Reading(text, prec, node.order, t, POW)


def _m_inv(node, kids, readings):
    (x,) = kids
    base = wrap(x.text, x.prec, ATOM)
    return Reading(f"{base}^{{-1}}", POW, 2, f"{base}^{{-\\top}}", POW)


def _m_det(node, kids, readings):
    return Reading(f"\\det\\left({kids[0].text}\\right)", ATOM, 0)


def _m_adj(node, kids, readings):
    if node.arg != 1:
        return None  # adj(X, k) has order 2k: index notation writes it
    return Reading(f"\\operatorname{{adj}}\\left({kids[0].text}\\right)", ATOM, 2)


def _m_mul(node, kids, readings):
    reading = read_product(node)
    return None if reading is None else _rendered(reading, node.order, readings)


def _rendered(reading: MatrixReading, kind: int, readings) -> Reading | None:
    """The LaTeX of a matrix reading (with its transpose's for a vector or matrix)."""
    main = latex_term(reading.term, readings)
    if main is None:
        return None
    if kind == 0:
        return Reading(main[0], main[1], 0)
    t = latex_term(reading.transpose, readings)
    assert t is not None  # the same leaves as the term's
    return Reading(main[0], main[1], kind, t[0], t[1])


def latex_term(term: Term, readings) -> tuple[str, int] | None:
    """``(LaTeX, precedence)`` of a term of a matrix reading; None where an operand has no
    matrix notation."""
    return _LATEX_TERMS[type(term)](term, readings)


def _parts(terms, readings) -> list[tuple[str, int]] | None:
    parts = [latex_term(t, readings) for t in terms]
    return None if any(p is None for p in parts) else parts  # type: ignore[return-value]


def _l_leaf(term: Leaf, readings):
    reading = readings.get(term.node)
    if reading is None:
        return None
    if term.transposed:
        reading = transpose(reading)
    return reading.text, reading.prec


def _l_ones(term: Ones, readings):
    return ("\\mathbf{1}^\\top", POW) if term.transposed else ("\\mathbf{1}", ATOM)


def _l_transposed(term: Transposed, readings):
    inner = latex_term(term.inner, readings)
    return None if inner is None else (f"{wrap(*inner, ATOM)}^\\top", POW)


def _l_chain(term: Chain, readings):
    parts = _parts(term.factors, readings)
    return None if parts is None else (" ".join(wrap(t, p, PROD) for t, p in parts), PROD)


def _operator(name: str):
    def render(term, readings):
        inner = latex_term(term.inner, readings)
        return None if inner is None else (f"\\operatorname{{{name}}}\\left({inner[0]}\\right)", ATOM)

    return render


def _l_sum(term: Sum, readings):
    inner = latex_term(term.inner, readings)
    return None if inner is None else (f"\\mathbf{{1}}^\\top {wrap(*inner, PROD)}", PROD)


def _l_hadamard(term: Hadamard, readings):
    parts = _parts(term.parts, readings)
    bases = [readings.get(base) for base, _ in term.divisors]
    if parts is None or any(b is None for b in bases):
        return None
    divisors = []
    for base, (_, e) in zip(bases, term.divisors):
        recip = (base.text, base.prec)
        if e != 1:  # b^{∘-2} is the reciprocal of b^{∘2}
            recip = power(recip, (format_number(e), ATOM), e, True)
        divisors.append(f" \\oslash {wrap(*recip, POW)}")
    return " \\odot ".join(wrap(t, p, POW) for t, p in parts) + "".join(divisors), HADAMARD


def _l_with_scalars(term: WithScalars, readings):
    """Scalar factors in front of a vector or matrix: ``c\\, x^\\top y\\, A``."""
    scalars = _parts(term.scalars, readings)
    if scalars is None:
        return None
    if term.main is None:
        return juxtapose(scalars)
    main = latex_term(term.main, readings)
    if main is None:
        return None
    front = " ".join(wrap(t, p, PROD) for t, p in scalars)
    return f"{front} {wrap(*main, PROD)}", PROD


def _l_coefficient(term: Coefficient, readings):
    inner = latex_term(term.inner, readings)
    if inner is None:
        return None
    return coefficient_prefix(term.coef) + wrap(*inner, PROD), NEG if term.coef < 0 else PROD


def _l_number(term: Number, readings):
    return str(term.value), ATOM


def _l_squared_norm(term: SquaredNorm, readings):
    """``xᵀx`` for a vector variable, ``‖v‖²`` for any other vector, ``‖X‖_F²`` for a matrix."""
    base = readings.get(term.base)
    if base is None:
        return None
    if term.base.op == "var" and term.base.order == 1:
        return f"{base.text}^\\top {base.text}", PROD
    frobenius = "_F" if term.base.order == 2 else ""
    return f"\\left\\|{base.text}\\right\\|{frobenius}^{{2}}", POW


def _l_norm(term: Norm, readings):
    """``‖v‖``, ``‖v‖^{-1}``, ``‖v‖^{3}``."""
    base = readings.get(term.base)
    if base is None:
        return None
    frobenius = "_F" if term.base.order == 2 else ""
    text = f"\\left\\|{base.text}\\right\\|{frobenius}"
    return (text, ATOM) if term.power == 1 else (f"{text}^{{{term.power}}}", POW)


#: term kind -> its LaTeX (None where an operand has no matrix notation)
_LATEX_TERMS: dict[type, Callable[..., tuple[str, int] | None]] = {
    Leaf: _l_leaf,
    Ones: _l_ones,
    Transposed: _l_transposed,
    Chain: _l_chain,
    Diag: _operator("diag"),
    DiagOf: _operator("diag"),
    Trace: _operator("tr"),
    Sum: _l_sum,
    Hadamard: _l_hadamard,
    WithScalars: _l_with_scalars,
    Coefficient: _l_coefficient,
    Number: _l_number,
    SquaredNorm: _l_squared_norm,
    Norm: _l_norm,
}


def _m_none(node, kids, readings):
    return None  # slices have no matrix notation in LaTeX: index notation writes them


#: node kind -> the matrix reading of a node from its children's (None: no matrix notation)
MATRIX_RULES: dict[str, Callable[[Expr, list[Reading], dict[Expr, Reading | None]], Reading | None]] = {
    "var": _m_var,
    "const": _m_const,
    "delta": _m_delta,
    "add": _m_add,
    "mul": _m_mul,
    "func": _m_func,
    "pow": _m_pow,
    "inv": _m_inv,
    "det": _m_det,
    "adj": _m_adj,
    "slice": _m_none,
    "embed": _m_none,
}
