"""Matrix forms: which nodes read as matrix algebra, and as what.

Matrix notation exists when every node has order at most 2 and every product
reads as a chain of matrix products: each index then joins two operands (a row
and a column), vectors close a chain, a vector on an index shared by two more
operands becomes ``\\operatorname{diag}`` (so ``X *(ki,k->ik) s *(ik,kj->ij) X``
reads as ``X^\\top \\operatorname{diag}(s) X``), equal-index vectors and matrices
multiply entrywise (``\\odot``), a closed chain is a trace, a repeated output
index a diagonal matrix.  Transposes are tracked through sums, functions and
chains (``A + A^\\top``), inverses and determinants of matrices are recognised,
and elementwise functions and powers of vectors and matrices act entry by entry
(``x^{\\circ 2}`` is the Hadamard power).

``matrix_readings`` gives every node its ``Reading`` (or None where there is
none), by ``MATRIX_RULES`` keyed by node kind; the readings are spelled with the
pieces of :mod:`.latex_pieces`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.nodes import Expr, topological
from ..core.products import is_power_zero
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
    # for an entrywise power with a negative exponent: the text of its reciprocal,
    # so that an entrywise product writes ``a \oslash b`` instead of ``a \odot b^{\circ -1}``
    recip: str | None = None
    recip_prec: int = ATOM


def transpose(r: Reading) -> Reading:
    """The reading of the transpose (a scalar is its own)."""
    if r.kind == 0:
        return r
    if r.t is not None:
        return Reading(r.t, r.t_prec, r.kind, r.text, r.prec)
    return Reading(f"{wrap(r.text, r.prec, ATOM)}^\\top", POW, r.kind, r.text, r.prec)


ONES = Reading("\\mathbf{1}", ATOM, 1)


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
            recip = None if reading.recip is None else add(reading.recip)[0]
            reading = replace(reading, text=text, t=t, recip=recip)
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
    kids = [readings[c] for c in node.children]
    if node.order > 2 or any(k is None for k in kids):
        return None
    reading = MATRIX_RULES[node.op](node, kids, readings)
    if reading is not None and node.order == 2 and reading.t != reading.text and is_symmetric(node, frozenset()):
        # a symmetric matrix (XᵀX, its inverse) is its own transpose: (XᵀX)^{-1}, never (XᵀX)^{-⊤}
        return Reading(reading.text, reading.prec, 2, reading.text, reading.prec, reading.recip, reading.recip_prec)
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


def squared_norm_base(node: Expr) -> Expr | None:
    """``v`` when ``node`` is the sum of the squares of ``v``'s entries, written as
    ``v *(i,i->) v`` (``vᵀv``) or ``v^2 *(i,->) 1`` (``sum(v.^2)``); None otherwise."""
    if node.op != "mul" or node.arg[1] or node.order:
        return None
    ins = node.arg[0]
    pairs = [(c, s) for c, s in zip(node.children, ins) if not (c.op == "const" and c.arg[0] == 1)]
    specs = {s for _, s in pairs}
    if len(specs) != 1 or len(set(ins[0])) != len(ins[0]):
        return None
    if any(c.op == "const" and set(s) - set(pairs[0][1]) for c, s in zip(node.children, ins)):
        return None  # a ones operand with a letter of its own would count entries twice
    if len(pairs) == 2 and pairs[0][0] is pairs[1][0]:
        return pairs[0][0]
    if len(pairs) == 1 and pairs[0][0].op == "pow" and pairs[0][0].children[1].op == "const":
        if pairs[0][0].children[1].arg[0] == 2:
            return pairs[0][0].children[0]
    return None


def _squared_norm(node: Expr, readings) -> Reading | None:
    """``xᵀx`` for a vector variable, ``‖v‖²`` for any other vector, ``‖X‖_F²`` for a matrix."""
    base = squared_norm_base(node)
    if base is None or base.order not in (1, 2) or readings.get(base) is None:
        return None
    reading = readings[base]
    if base.op == "var" and base.order == 1:
        return Reading(f"{reading.text}^\\top {reading.text}", PROD, 0)
    frobenius = "_F" if base.order == 2 else ""
    return Reading(f"\\left\\|{reading.text}\\right\\|{frobenius}^{{2}}", POW, 0)


def _norm(node: Expr, readings) -> Reading | None:
    """``‖v‖`` for the square root of a sum of squares (``norm2(v)``), ``‖v‖^{-1}`` for its
    power -1/2, ``‖v‖^{3}`` for 3/2: an odd multiple of 1/2 (an even one is a power of vᵀv)."""
    if node.op != "pow" or node.children[1].op != "const":
        return None
    twice = 2 * node.children[1].arg[0]
    if twice != int(twice) or int(twice) % 2 != 1:
        return None
    base = squared_norm_base(node.children[0])
    if base is None or base.order not in (1, 2) or readings.get(base) is None:
        return None
    frobenius = "_F" if base.order == 2 else ""
    text = f"\\left\\|{readings[base].text}\\right\\|{frobenius}"
    if twice == 1:
        return Reading(text, ATOM, 0)
    return Reading(f"{text}^{{{int(twice)}}}", POW, 0)


def _m_pow(node, kids, readings):
    norm = _norm(node, readings)
    if norm is not None:
        return norm
    base, exponent = kids
    e = node.children[1].arg[0] if node.children[1].op == "const" else None
    hadamard = node.order > 0
    text, prec = power((base.text, base.prec), (exponent.text, exponent.prec), e, hadamard)
    t = None
    if node.order == 2:
        t = power((transpose(base).text, transpose(base).prec), (exponent.text, exponent.prec), e, True)[0]
    recip, recip_prec = None, ATOM
    if hadamard and isinstance(e, (int, float)) and e < 0:
        # b^{∘-2} is the reciprocal of b^{∘2}
        recip, recip_prec = (base.text, base.prec)
        if e != -1:
            recip, recip_prec = power((base.text, base.prec), (format_number(-e), ATOM), -e, True)
    return Reading(text, prec, node.order, t, POW, recip, recip_prec)


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


@dataclass
class _Operand:
    reading: Reading
    letters: list


def _m_mul(node, kids, readings):
    squared = _squared_norm(node, readings)
    if squared is not None:
        return squared
    ins, out = node.arg
    coef: int | float = 1
    scalars: list[Reading] = []
    operands: list[_Operand] = []
    others = set()
    for child, spec in zip(node.children, ins):
        if child.op != "const" and not is_power_zero(child):
            others.update(spec)
    for child, spec, reading in zip(node.children, ins, kids):
        if child.op == "add" and len(child.children) == 1:  # pull a scale out
            coef *= child.arg[0]
            child = child.children[0]
            reading = readings[child]
        if child.op == "const" or is_power_zero(child):
            coef *= child.arg[0] if child.op == "const" else 1
            if not set(spec) <= others:
                operands.extend(_Operand(ONES, [letter]) for letter in dict.fromkeys(spec))
            continue
        if child.op == "delta" and child.arg == 0:
            continue
        if child.order == 0:
            scalars.append(reading)
            continue
        operands.append(_Operand(reading, list(spec)))
    if coef == 0:
        return Reading("0", ATOM, node.order)
    result = _chain_reading(operands, list(out), scalars)
    if result is None or coef == 1:
        return result
    prefix = coefficient_prefix(coef)
    text = prefix + wrap(result.text, result.prec, PROD)
    t = None if result.t is None else prefix + wrap(result.t, result.t_prec, PROD)
    prec = NEG if coef < 0 else PROD
    return Reading(text, prec, node.order, t, prec)


def _chain_reading(operands: list[_Operand], out: list, scalars: list[Reading]):
    """Read an einsum of order-1/2 operands as products of matrices.

    Returns the reading or None.
    """
    fresh = [max([x for op in operands for x in op.letters] + out + [-1]) + 1]

    def new_letter():
        fresh[0] += 1
        return fresh[0]

    # repeated letters inside one operand: a trace or the diagonal of a matrix
    kept: list[_Operand] = []
    for op in operands:
        if len(op.letters) == 2 and op.letters[0] == op.letters[1]:
            letter = op.letters[0]
            elsewhere = letter in out or any(letter in o.letters for o in operands if o is not op)
            if elsewhere:
                kept.append(
                    _Operand(Reading(f"\\operatorname{{diag}}\\left({op.reading.text}\\right)", ATOM, 1), [letter])
                )
            else:
                scalars.append(Reading(f"\\operatorname{{tr}}\\left({op.reading.text}\\right)", ATOM, 0))
        else:
            kept.append(op)
    operands = kept
    # a repeated output letter writes a diagonal matrix
    if len(out) == 2 and out[0] == out[1]:
        inner = _chain_reading(operands, [out[0]], scalars)
        if inner is None:
            return None
        text = f"\\operatorname{{diag}}\\left({inner.text}\\right)"
        return Reading(text, ATOM, 2, text, ATOM)

    def occurrences(letter) -> int:
        return out.count(letter) + sum(op.letters.count(letter) for op in operands)

    # entrywise products: vectors (or matrices) on the same letters with a third use
    merged = True
    while merged:
        merged = False
        groups: dict[tuple, list[int]] = {}
        for k, op in enumerate(operands):
            groups.setdefault(tuple(sorted(op.letters)), []).append(k)
        for key, members in groups.items():
            if len(members) < 2 or not all(occurrences(x) >= 3 for x in key):
                continue
            first = operands[members[0]]
            parts, divisors = [], []
            for k in members:
                r = operands[k].reading
                if operands[k].letters != first.letters:
                    r = transpose(r)
                if r.recip is not None:
                    divisors.append(wrap(r.recip, r.recip_prec, POW))
                else:
                    parts.append(wrap(r.text, r.prec, POW))
            if not parts:  # nothing to divide: keep the powers
                parts, divisors = [wrap(operands[k].reading.text, operands[k].reading.prec, POW) for k in members], []
            # a ⊙ b^{∘-1} -> a ⊘ b
            text = " \\odot ".join(parts) + "".join(f" \\oslash {d}" for d in divisors)
            reading = Reading(text, HADAMARD, len(first.letters))
            operands = [op for k, op in enumerate(operands) if k not in members[1:]]
            operands[members[0]] = _Operand(reading, list(first.letters))
            merged = True
            break
    # a vector on a letter used twice more: entrywise with the result, or diag(v)
    for op in list(operands):
        if len(op.letters) != 1:
            continue
        letter = op.letters[0]
        count = occurrences(letter)
        if count < 3:
            continue
        if count > 3:
            return None
        if out == [letter]:
            rest = _chain_reading([o for o in operands if o is not op], out, [])
            if rest is None:
                return None
            v = wrap(op.reading.text, op.reading.prec, POW)
            text = f"{v} \\odot {wrap(rest.text, rest.prec, POW)}"
            return _with_scalars(scalars, Reading(text, HADAMARD, 1))
        other = new_letter()
        diag = Reading(f"\\operatorname{{diag}}\\left({op.reading.text}\\right)", ATOM, 2, None)
        diag = Reading(diag.text, ATOM, 2, diag.text, ATOM)  # diagonal matrices are symmetric
        op.reading, op.letters = diag, [letter, other]
        # move one other use of the letter to the new one
        for o in operands:
            if o is not op and letter in o.letters:
                o.letters[o.letters.index(letter)] = other
                break
        else:
            out[out.index(letter)] = other
    if any(occurrences(x) > 2 for op in operands for x in op.letters):
        return None
    # summed letters used once: a sum, i.e. a product with a ones vector
    for op in list(operands):
        for letter in op.letters:
            if occurrences(letter) == 1 and letter not in out:
                operands.append(_Operand(ONES, [letter]))
    # walk the chains
    where: dict[object, list[tuple[int, int]]] = {}
    for k, op in enumerate(operands):
        for position, letter in enumerate(op.letters):
            where.setdefault(letter, []).append((k, position))
    visited: set[int] = set()

    def walk(letter, came_from: int | None) -> tuple[list[Reading], bool]:
        """Follow the chain from an index; returns the oriented factors and whether
        it ended in a vector (else at an output index)."""
        items: list[Reading] = []
        while True:
            nxt = [(k, p) for k, p in where.get(letter, []) if k != came_from and k not in visited]
            if not nxt:
                return items, False
            k, position = nxt[0]
            visited.add(k)
            op = operands[k]
            if len(op.letters) == 1:
                items.append(op.reading)
                return items, True
            items.append(op.reading if position == 0 else transpose(op.reading))
            letter, came_from = op.letters[1 - position], k

    pieces: list[Reading] = []
    transposed: list[Reading] = []
    if out:
        left, left_vector = walk(out[0], None)
        if len(out) == 2 and left_vector:  # an outer product: (M u) (N w)^T
            right, right_vector = walk(out[1], None)
            if not right_vector:
                return None
            pieces = left + [transpose(r) for r in reversed(right)]
            transposed = right + [transpose(r) for r in reversed(left)]
        elif len(out) == 2 or left_vector:
            pieces = left
            transposed = [transpose(r) for r in reversed(left)]
        else:
            return None
    # whatever is left is scalar: u^T M ... v paths and traces of cycles
    extra: list[Reading] = []
    # sums read best as 1^T v: start the paths at ones vectors
    starts = sorted(range(len(operands)), key=lambda k: operands[k].reading is not ONES)
    for k in starts:
        op = operands[k]
        if k in visited or len(op.letters) != 1:
            continue
        visited.add(k)
        rest, ended = walk(op.letters[0], k)
        if not ended:
            return None
        extra.append(_render([transpose(op.reading)] + rest, 0))
    for k, op in enumerate(operands):
        if k in visited:
            continue
        visited.add(k)
        rest, _ = walk(op.letters[1], k)
        inner = _render([op.reading] + rest, 0).text
        extra.append(Reading(f"\\operatorname{{tr}}\\left({inner}\\right)", ATOM, 0))
    all_scalars = scalars + extra
    if not pieces:
        if not all_scalars:
            return Reading("1", ATOM, 0)
        text, prec = juxtapose([(s.text, s.prec) for s in all_scalars])
        return Reading(text, prec, 0)
    main = _render(pieces, len(out))
    if transposed:
        t = _render(transposed, len(out))
        main = Reading(main.text, main.prec, main.kind, t.text, t.prec)
    return _with_scalars(all_scalars, main)


def _with_scalars(scalars: list[Reading], main: Reading) -> Reading:
    """Scalar factors in front of a vector or matrix: ``c\\, x^\\top y\\, A``."""
    if not scalars:
        return main
    front = " ".join(wrap(s.text, s.prec, PROD) for s in scalars)
    t = None if main.t is None else f"{front} {wrap(main.t, main.t_prec, PROD)}"
    return Reading(f"{front} {wrap(main.text, main.prec, PROD)}", PROD, main.kind, t, PROD)


def _render(items: list[Reading], kind: int) -> Reading:
    """Juxtaposed factors of a matrix product."""
    if len(items) == 1:
        return Reading(items[0].text, items[0].prec, kind, items[0].t, items[0].t_prec)
    return Reading(" ".join(wrap(r.text, r.prec, PROD) for r in items), PROD, kind)


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
