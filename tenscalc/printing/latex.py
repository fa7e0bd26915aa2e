"""LaTeX for expressions: index notation always, matrix notation when it reads as one.

Index notation writes every tensor with its indices and every summed index under
a sum sign: ``A *(ij,j->i) x`` is ``\\sum_{j} A_{ij} x_{j}``.  Nested products are
flattened into one sum (``x *(i,ij->j) A *(j,j->) x`` is
``\\sum_{i,j} x_{i} A_{ij} x_{j}``), summed indices are named in order of first
appearance, and ``delta(n)`` becomes Kronecker deltas.

Matrix notation exists when every node has order at most 2 and every product
reads as a chain of matrix products: each index then joins two operands (a row
and a column), vectors close a chain, a vector on an index shared by two more
operands becomes ``\\operatorname{diag}``, equal-index vectors and matrices
multiply entrywise (``\\odot``), a closed chain is a trace.  So the Hessian of
``x *(i,ij->j) A *(j,j->) x`` prints as ``A + A^\\top`` and the Hessian of
logistic regression as ``X^\\top \\operatorname{diag}(\\ldots) X``.
Elementwise functions and powers of vectors and matrices act entry by entry
(``x^{\\circ 2}`` is the Hadamard power).

Both printers are iterative (no recursion limit on deep expressions).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.nodes import Expr, topological
from ..core.products import flatten
from ..core.products import is_power_zero as _is_power_zero
from ..errors import TensCalcError
from .text import text_length

NOTATIONS = ("auto", "index", "matrix")
MAX_TEXT = 200_000

# precedence: what a piece of LaTeX may stand next to without parentheses
# (NEG: one term with a leading minus, which a sum may absorb: ``a - x``)
SUM, NEG, BIGSUM, HADAMARD, PROD, POW, ATOM = 0, 1, 2, 3, 4, 5, 6

INDEX_LETTERS = "ijklmnpqrstuvabcdefgh"
GREEK = frozenset(
    "alpha beta gamma epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi varphi chi psi omega Gamma Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()
)
FUNCTION_LATEX = {
    "sin": r"\sin",
    "cos": r"\cos",
    "tan": r"\tan",
    "arcsin": r"\arcsin",
    "arccos": r"\arccos",
    "arctan": r"\arctan",
    "tanh": r"\tanh",
    "exp": r"\exp",
    "log": r"\log",
    "sign": r"\operatorname{sign}",
    "relu": r"\operatorname{relu}",
}


def latex(expr: Expr, notation: str = "auto", temporaries: bool = False) -> str:
    """The expression as a LaTeX formula (without ``$`` delimiters).

    Parameters
    ----------
    expr : Expr
        Any tenscalc expression.
    notation : {"auto", "index", "matrix"}
        ``"index"`` writes indices and sums; ``"matrix"`` uses matrix notation
        and raises ``TensCalcError`` when the expression has none (a node of
        order 3 or more, or a product that is no chain of matrix products);
        ``"auto"`` (default) picks matrix notation when it exists.
    temporaries : bool
        Name the subexpressions that matrix notation would write more than once
        (``t_{0}``, ``t_{1}`` ...) and define them after the formula:
        ``-X^\\top \\operatorname{diag}(...t_{0}...) X \\quad\\text{where}\\quad t_{0} = ...``.
        Only matrix notation names temporaries; index notation ignores this.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1})
    >>> tc.latex(f, notation="index")
    '\\\\sum_{j} A_{ij} x_{j}'
    >>> tc.latex(f)
    'A x'
    """
    if not isinstance(expr, Expr):
        raise TensCalcError(f"latex needs a tenscalc expression, got {type(expr).__name__}")
    if notation not in NOTATIONS:
        raise TensCalcError(f"notation must be one of {', '.join(NOTATIONS)}, not {notation!r}")
    size = text_length(expr)
    if size > MAX_TEXT:
        raise TensCalcError(
            f"the expression is too large for a formula (about {size:,} characters once shared "
            "subexpressions are written out); draw it with tc.to_dot instead"
        )
    if notation != "index":
        readings = matrix_readings(expr)
        reading = readings.get(id(expr))
        if reading is not None:
            return _with_temporaries(expr, readings) if temporaries else reading.text
        if notation == "matrix":
            raise TensCalcError(
                "this expression has no matrix notation (it has a node of order 3 or more, or a product that "
                "is not a chain of matrix products); use notation='index'"
            )
        return _IndexPrinter(expr, readings).run()
    return _IndexPrinter(expr, matrix_readings(expr)).run()


# ------------------------------------------------------------------------- pieces


def format_number(value: int | float) -> str:
    """A number in LaTeX: ``2``, ``0.5``, ``1.5 \\cdot 10^{-5}``."""
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return r"\mathrm{NaN}"
    if math.isinf(value):
        return r"\infty" if value > 0 else r"-\infty"
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa} \\cdot 10^{{{int(exponent)}}}"
    return text


def format_name(name: str) -> str:
    """A variable name: single letters as they are, Greek names as Greek letters,
    longer names upright-italic (``\\mathit{w1}``) so they never read as products."""
    if name in GREEK:
        return "\\" + name
    if len(name) == 1:
        return name
    return "\\mathit{" + name.replace("_", r"\_") + "}"


def _subscript(letters: Sequence[str]) -> str:
    joined = "".join(letters) if all(len(x) == 1 for x in letters) else ",".join(letters)
    return f"_{{{joined}}}" if letters else ""


def _wrap(text: str, prec: int, minimum: int) -> str:
    return text if prec >= minimum else f"\\left({text}\\right)"


def _coefficient_prefix(coef: int | float) -> str:
    if coef == 1:
        return ""
    if coef == -1:
        return "-"
    return format_number(coef) + " "


def _join_terms(terms: list[tuple[int | float, str, int]]) -> tuple[str, int]:
    """``c1 t1 + c2 t2 - ...`` from (coefficient, text, precedence) triples."""
    parts: list[str] = []
    for i, (coef, text, prec) in enumerate(terms):
        body = _wrap(text, prec, NEG if abs(coef) == 1 else BIGSUM)
        if coef != 1 and coef != -1:
            body = f"{format_number(abs(coef))} {body}"
        negative = coef < 0
        if abs(coef) == 1 and body.startswith("-"):  # a term that carries its own sign
            negative, body = not negative, body[1:]
        if i == 0:
            parts.append(("-" if negative else "") + body)
        else:
            parts.append((" - " if negative else " + ") + body)
    text = "".join(parts)
    if len(terms) == 1:
        return text, NEG if text.startswith("-") else (PROD if terms[0][0] != 1 else terms[0][2])
    return text, SUM


def _display_order(node: Expr) -> list[int]:
    """Summands in reading order: positive before negative, variables first, constants last."""
    keys = [
        (coef < 0, child.op == "const", child.op != "var", k)
        for k, (child, coef) in enumerate(zip(node.children, node.arg))
    ]
    return [key[-1] for key in sorted(keys)]


def _negative_constant_exponent(node: Expr) -> int | float | None:
    if node.op == "pow" and node.children[1].op == "const" and node.children[1].arg[0] < 0:
        return node.children[1].arg[0]
    return None


# ------------------------------------------------------------------ index notation


@dataclass(frozen=True)
class _Task:
    node: Expr
    letters: tuple[str, ...]
    scope: frozenset[str]


Combine = Callable[[list[tuple[str, int]]], tuple[str, int]]


class _IndexPrinter:
    """Index notation by an explicit-stack fold over the expression tree."""

    MAX_TASKS = 200_000

    def __init__(self, root: Expr, readings: dict[int, _Reading | None]):
        self.root = root
        self.readings = readings

    def run(self) -> str:
        free = tuple(self._fresh_letters(self.root.order, frozenset()))
        values: list[tuple[str, int]] = []
        stack: list[tuple] = [("visit", _Task(self.root, free, frozenset(free)))]
        tasks = 0
        while stack:
            entry = stack.pop()
            if entry[0] == "visit":
                tasks += 1
                if tasks > self.MAX_TASKS:
                    raise TensCalcError("the expression is too large to write in index notation")
                children, combine = self._expand(entry[1])
                stack.append(("combine", combine, len(children)))
                stack.extend(("visit", child) for child in reversed(children))
            else:
                _, combine, count = entry
                args = values[len(values) - count :] if count else []
                del values[len(values) - count :]
                values.append(combine(args))
        return values[0][0]

    @staticmethod
    def _fresh_letters(count: int, taken: frozenset[str] | set[str]) -> list[str]:
        found: list[str] = []
        k = 0
        while len(found) < count:
            if k < len(INDEX_LETTERS):
                letter = INDEX_LETTERS[k]
            else:
                letter = f"{INDEX_LETTERS[(k - len(INDEX_LETTERS)) % 4]}_{{{(k - len(INDEX_LETTERS)) // 4 + 1}}}"
            if letter not in taken:
                found.append(letter)
            k += 1
        return found

    def _expand(self, task: _Task) -> tuple[list[_Task], Combine]:
        node = task.node
        return getattr(self, "_index_" + node.op)(task, node)

    # leaves
    def _index_var(self, task, node):
        text = format_name(node.arg[0]) + _subscript(task.letters)
        return [], lambda args: (text, ATOM)

    def _index_const(self, task, node):
        text = format_number(node.arg[0])
        return [], lambda args: (text, NEG if text.startswith("-") else ATOM)

    def _index_delta(self, task, node):
        n = node.arg
        if n == 0:
            return [], lambda args: ("1", ATOM)
        letters = task.letters
        text = " ".join(f"\\delta{_subscript((letters[t], letters[n + t]))}" for t in range(n))
        return [], lambda args: (text, ATOM if n == 1 else PROD)

    # elementwise
    def _index_add(self, task, node):
        order = _display_order(node)
        children = [_Task(node.children[k], task.letters, task.scope) for k in order]
        coefs = [node.arg[k] for k in order]

        def combine(args):
            return _join_terms([(c, text, prec) for c, (text, prec) in zip(coefs, args)])

        return children, combine

    def _index_func(self, task, node):
        name = node.arg

        def combine(args):
            ((text, _),) = args
            if name == "abs":
                return f"\\left|{text}\\right|", ATOM
            return f"{FUNCTION_LATEX[name]}\\left({text}\\right)", ATOM

        return [_Task(node.children[0], task.letters, task.scope)], combine

    def _index_pow(self, task, node):
        base, exponent = node.children
        children = [_Task(base, task.letters, task.scope), _Task(exponent, (), task.scope)]
        e = exponent.arg[0] if exponent.op == "const" else None
        return children, lambda args: _power(args[0], args[1], e, hadamard=False)

    # matrix functions
    def _matrix_function(self, task, node, write):
        reading = self.readings.get(id(node.children[0]))
        if reading is not None:
            text = write(reading.text, reading.prec)
            return [], lambda args: (text, ATOM)
        inner = self._fresh_letters(2, task.scope)
        child = _Task(node.children[0], tuple(inner), task.scope | set(inner))

        def combine(args):
            ((text, _),) = args
            matrix = f"\\left[{text}\\right]{_subscript(inner)}"
            return write(matrix, ATOM), ATOM

        return [child], combine

    def _index_inv(self, task, node):
        sub = _subscript(task.letters)
        return self._matrix_function(
            task, node, lambda text, prec: f"\\left({_wrap(text, prec, ATOM)}^{{-1}}\\right){sub}"
        )

    def _index_det(self, task, node):
        return self._matrix_function(task, node, lambda text, prec: f"\\det\\left({text}\\right)")

    # slices: x[1:] is x_{i+1}; the embedding of a derivative is written as an operator
    def _index_slice(self, task, node):
        letters = iter(task.letters)
        inner = []
        for item in node.arg:
            if isinstance(item, int):
                inner.append(str(item))
                continue
            letter = next(letters)
            start, _, step = item
            scaled = letter if step == 1 else f"{step}{letter}"
            inner.append(scaled if start == 0 else f"{scaled}{start:+d}")
        return [_Task(node.children[0], tuple(inner), task.scope)], lambda args: args[0]

    def _index_embed(self, task, node):
        items, _ = node.arg
        fresh = self._fresh_letters(node.children[0].order, task.scope)
        child = _Task(node.children[0], tuple(fresh), task.scope | set(fresh))
        from .text import slice_text

        where = slice_text(items).replace(" ", "")
        sub = _subscript(task.letters)

        def combine(args):
            ((text, _),) = args
            text = f"\\left(\\left[{text}\\right]{_subscript(fresh)}\\right){sub}"
            return f"\\operatorname{{embed}}_{{[{where}]}}{text}", ATOM

        return [child], combine

    # products
    def _index_mul(self, task, node):
        factors, deltas, coef = _flatten_product(node, task.letters)
        # name the summed letters in order of first appearance
        names: dict[object, str] = {letter: letter for letter in task.letters}
        summed: list[str] = []
        taken = set(task.scope)
        # a letter only a written diagonal mentions (x *(i,->ii) 1 read as (ij)) is summed too
        for letters in [letters for _, letters in factors] + [pair for pair in deltas]:
            for letter in letters:
                if letter not in names:
                    (fresh,) = self._fresh_letters(1, taken)
                    names[letter] = fresh
                    taken.add(fresh)
                    summed.append(fresh)
        scope = frozenset(taken)
        covered = set()
        for child, letters in factors:
            if child.op != "const" and not _is_power_zero(child):
                covered.update(names[x] for x in letters)
        numerator: list[tuple[str, object]] = []  # ("task", index) or ("text", text)
        denominator: list[tuple[str, object]] = []
        children: list[_Task] = []
        for child, letters in factors:
            named = tuple(names[x] for x in letters)
            if child.op == "const" or _is_power_zero(child):
                coef *= child.arg[0] if child.op == "const" else 1
                loose = [x for x in dict.fromkeys(named) if x not in covered and x in task.letters]
                if loose:
                    numerator.append(("text", ("\\mathbf{1}" + _subscript(loose), ATOM)))
                    covered.update(loose)
                continue
            if child.op == "delta":
                n = child.arg
                for t in range(n):
                    numerator.append(("text", (f"\\delta{_subscript((named[t], named[n + t]))}", ATOM)))
                continue
            exponent = _negative_constant_exponent(child)
            if exponent is not None:
                base = child.children[0]
                children.append(_Task(base, named, scope))
                denominator.append(("task", (len(children) - 1, -exponent)))
                continue
            children.append(_Task(child, named, scope))
            numerator.append(("task", (len(children) - 1, 1)))
        for a, b in deltas:
            numerator.append(("text", (f"\\delta{_subscript((names[a], names[b]))}", ATOM)))

        def combine(args):
            def piece(entry):
                kind, payload = entry
                if kind == "text":
                    return payload
                index, power = payload
                text, prec = args[index]
                if power != 1:
                    return f"{_wrap(text, prec, ATOM)}^{{{format_number(power)}}}", POW
                return text, prec

            num = [piece(e) for e in numerator]
            den = [piece(e) for e in denominator]
            if coef == 0:
                return "0", ATOM
            body = _juxtapose(num)
            if den:
                top = body[0] if num else "1"
                bottom = den[0][0] if len(den) == 1 else _juxtapose(den)[0]
                body = (f"\\frac{{{top}}}{{{bottom}}}", ATOM)
            elif not num:
                body = ("1", ATOM) if coef in (1, -1) else ("", ATOM)
            parts = []
            if summed:
                parts.append(f"\\sum_{{{','.join(summed)}}}")
            if body[0]:
                wrap = summed or coef not in (1, -1)
                parts.append(_wrap(body[0], body[1], PROD) if wrap else body[0])
            text = " ".join(parts)
            if coef == -1:
                text = "-" + text
            elif coef != 1:
                text = format_number(coef) + (" " + text if text else "")
            if coef < 0:
                return text, NEG
            if summed:
                return text, BIGSUM
            if coef != 1 or len(num) > 1:
                return text, PROD
            return text, body[1]

        return children, combine


def _juxtapose(pieces: list[tuple[str, int]]) -> tuple[str, int]:
    if len(pieces) == 1:
        return pieces[0]
    return " ".join(_wrap(text, prec, PROD) for text, prec in pieces), PROD


def _power(base: tuple[str, int], exponent: tuple[str, int], e, hadamard: bool) -> tuple[str, int]:
    """``base ^ exponent``; with ``hadamard`` the power is the entrywise one, ``^{\\circ e}``."""
    text, prec = base
    if e == -1 and not hadamard:
        return f"\\frac{{1}}{{{text}}}", ATOM
    if e == 0.5 and not hadamard:
        return f"\\sqrt{{{text}}}", ATOM
    circ = "\\circ " if hadamard else ""
    return f"{_wrap(text, prec, ATOM)}^{{{circ}{exponent[0]}}}", POW


def _flatten_product(node: Expr, letters: tuple[str, ...]):
    """The factors of a product tree with nested products and scalings inlined:
    ``(factors, equal letter pairs, coefficient)`` (see :func:`tenscalc.core.products.flatten`)."""
    return flatten(node, letters)


# ----------------------------------------------------------------- matrix notation


@dataclass(frozen=True)
class _Reading:
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


def transpose(r: _Reading) -> _Reading:
    if r.kind == 0:
        return r
    if r.t is not None:
        return _Reading(r.t, r.t_prec, r.kind, r.text, r.prec)
    return _Reading(f"{_wrap(r.text, r.prec, ATOM)}^\\top", POW, r.kind, r.text, r.prec)


ONES = _Reading("\\mathbf{1}", ATOM, 1)


def matrix_readings(root: Expr) -> dict[int, _Reading | None]:
    """Matrix notation for every node of the DAG (``None`` where there is none)."""
    readings: dict[int, _Reading | None] = {}
    for node in topological(root):
        kids = [readings[id(c)] for c in node.children]
        if node.order > 2 or any(k is None for k in kids):
            readings[id(node)] = None
            continue
        readings[id(node)] = _MATRIX_RULES[node.op](node, kids, readings)
    return readings


def _m_var(node, kids, readings):
    return _Reading(format_name(node.arg[0]), ATOM, node.order)


def _m_const(node, kids, readings):
    value, order = node.arg
    number = format_number(value)
    if order == 0:
        return _Reading(number, NEG if number.startswith("-") else ATOM, 0)
    ones = "\\mathbf{1}" if order == 1 else "\\mathbf{1} \\mathbf{1}^\\top"
    if value != 1:
        ones = f"{number} {ones}"
    prec = NEG if number.startswith("-") else (ATOM if ones == "\\mathbf{1}" else PROD)
    if order == 2:  # a constant matrix is symmetric
        return _Reading(ones, prec, 2, ones, prec)
    return _Reading(ones, prec, order)


def _m_delta(node, kids, readings):
    if node.arg == 0:
        return _Reading("1", ATOM, 0)
    return _Reading("I", ATOM, 2, "I", ATOM)


def _m_add(node, kids, readings):
    order = _display_order(node)
    text, prec = _join_terms([(node.arg[k], kids[k].text, kids[k].prec) for k in order])
    if node.order != 2:
        return _Reading(text, prec, node.order)
    flipped = [transpose(kid) for kid in kids]
    t, t_prec = _join_terms([(node.arg[k], flipped[k].text, flipped[k].prec) for k in order])
    return _Reading(text, prec, 2, t, t_prec)


def _m_func(node, kids, readings):
    (x,) = kids
    if node.arg == "abs":
        return _Reading(f"\\left|{x.text}\\right|", ATOM, node.order, f"\\left|{transpose(x).text}\\right|")
    name = FUNCTION_LATEX[node.arg]
    t = f"{name}\\left({transpose(x).text}\\right)" if node.order == 2 else None
    return _Reading(f"{name}\\left({x.text}\\right)", ATOM, node.order, t)


def _m_pow(node, kids, readings):
    base, exponent = kids
    e = node.children[1].arg[0] if node.children[1].op == "const" else None
    hadamard = node.order > 0
    text, prec = _power((base.text, base.prec), (exponent.text, exponent.prec), e, hadamard)
    t = None
    if node.order == 2:
        t = _power((transpose(base).text, transpose(base).prec), (exponent.text, exponent.prec), e, True)[0]
    recip, recip_prec = None, ATOM
    if hadamard and isinstance(e, (int, float)) and e < 0:
        # b^{∘-2} is the reciprocal of b^{∘2}
        recip, recip_prec = (base.text, base.prec)
        if e != -1:
            recip, recip_prec = _power((base.text, base.prec), (format_number(-e), ATOM), -e, True)
    return _Reading(text, prec, node.order, t, POW, recip, recip_prec)


def _m_inv(node, kids, readings):
    (x,) = kids
    base = _wrap(x.text, x.prec, ATOM)
    return _Reading(f"{base}^{{-1}}", POW, 2, f"{base}^{{-\\top}}", POW)


def _m_det(node, kids, readings):
    return _Reading(f"\\det\\left({kids[0].text}\\right)", ATOM, 0)


@dataclass
class _Operand:
    reading: _Reading
    letters: list


def _m_mul(node, kids, readings):
    ins, out = node.arg
    coef: int | float = 1
    scalars: list[_Reading] = []
    operands: list[_Operand] = []
    others = set()
    for child, spec in zip(node.children, ins):
        if child.op != "const" and not _is_power_zero(child):
            others.update(spec)
    for child, spec, reading in zip(node.children, ins, kids):
        if child.op == "add" and len(child.children) == 1:  # pull a scale out
            coef *= child.arg[0]
            child = child.children[0]
            reading = readings[id(child)]
        if child.op == "const" or _is_power_zero(child):
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
        return _Reading("0", ATOM, node.order)
    result = _chain_reading(operands, list(out), scalars)
    if result is None or coef == 1:
        return result
    prefix = _coefficient_prefix(coef)
    text = prefix + _wrap(result.text, result.prec, PROD)
    t = None if result.t is None else prefix + _wrap(result.t, result.t_prec, PROD)
    prec = NEG if coef < 0 else PROD
    return _Reading(text, prec, node.order, t, prec)


def _chain_reading(operands: list[_Operand], out: list, scalars: list[_Reading]):
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
                    _Operand(_Reading(f"\\operatorname{{diag}}\\left({op.reading.text}\\right)", ATOM, 1), [letter])
                )
            else:
                scalars.append(_Reading(f"\\operatorname{{tr}}\\left({op.reading.text}\\right)", ATOM, 0))
        else:
            kept.append(op)
    operands = kept
    # a repeated output letter writes a diagonal matrix
    if len(out) == 2 and out[0] == out[1]:
        inner = _chain_reading(operands, [out[0]], scalars)
        if inner is None:
            return None
        text = f"\\operatorname{{diag}}\\left({inner.text}\\right)"
        return _Reading(text, ATOM, 2, text, ATOM)

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
                    divisors.append(_wrap(r.recip, r.recip_prec, POW))
                else:
                    parts.append(_wrap(r.text, r.prec, POW))
            if not parts:  # nothing to divide: keep the powers
                parts, divisors = [_wrap(operands[k].reading.text, operands[k].reading.prec, POW) for k in members], []
            # a ⊙ b^{∘-1} -> a ⊘ b
            text = " \\odot ".join(parts) + "".join(f" \\oslash {d}" for d in divisors)
            reading = _Reading(text, HADAMARD, len(first.letters))
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
            v = _wrap(op.reading.text, op.reading.prec, POW)
            text = f"{v} \\odot {_wrap(rest.text, rest.prec, POW)}"
            return _with_scalars(scalars, _Reading(text, HADAMARD, 1))
        other = new_letter()
        diag = _Reading(f"\\operatorname{{diag}}\\left({op.reading.text}\\right)", ATOM, 2, None)
        diag = _Reading(diag.text, ATOM, 2, diag.text, ATOM)  # diagonal matrices are symmetric
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

    def walk(letter, came_from: int | None) -> tuple[list[_Reading], bool]:
        """Follow the chain from an index; returns the oriented factors and whether
        it ended in a vector (else at an output index)."""
        items: list[_Reading] = []
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

    pieces: list[_Reading] = []
    transposed: list[_Reading] = []
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
    extra: list[_Reading] = []
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
        extra.append(_Reading(f"\\operatorname{{tr}}\\left({inner}\\right)", ATOM, 0))
    all_scalars = scalars + extra
    if not pieces:
        if not all_scalars:
            return _Reading("1", ATOM, 0)
        text, prec = _juxtapose([(s.text, s.prec) for s in all_scalars])
        return _Reading(text, prec, 0)
    main = _render(pieces, len(out))
    if transposed:
        t = _render(transposed, len(out))
        main = _Reading(main.text, main.prec, main.kind, t.text, t.prec)
    return _with_scalars(all_scalars, main)


def _with_scalars(scalars: list[_Reading], main: _Reading) -> _Reading:
    """Scalar factors in front of a vector or matrix: ``c\\, x^\\top y\\, A``."""
    if not scalars:
        return main
    front = " ".join(_wrap(s.text, s.prec, PROD) for s in scalars)
    t = None if main.t is None else f"{front} {_wrap(main.t, main.t_prec, PROD)}"
    return _Reading(f"{front} {_wrap(main.text, main.prec, PROD)}", PROD, main.kind, t, PROD)


def _render(items: list[_Reading], kind: int) -> _Reading:
    """Juxtaposed factors of a matrix product."""
    if len(items) == 1:
        return _Reading(items[0].text, items[0].prec, kind, items[0].t, items[0].t_prec)
    return _Reading(" ".join(_wrap(r.text, r.prec, PROD) for r in items), PROD, kind)


def _m_none(node, kids, readings):
    return None  # slices have no matrix notation in LaTeX: index notation writes them


_MATRIX_RULES = {
    "var": _m_var,
    "const": _m_const,
    "delta": _m_delta,
    "add": _m_add,
    "mul": _m_mul,
    "func": _m_func,
    "pow": _m_pow,
    "inv": _m_inv,
    "det": _m_det,
    "slice": _m_none,
    "embed": _m_none,
}


def notebook_latex(expr: Expr) -> str | None:
    """``$...$`` for notebooks, or None when the formula would be too long to read."""
    try:
        if text_length(expr) > 4_000:
            return None
        return f"${latex(expr, temporaries=True)}$"
    except TensCalcError:
        return None


# ------------------------------------------------------------ named temporaries

# a shared subexpression gets a name when its formula shows at least this many
# characters: naming ``X w`` or ``diag(x)`` would make the formula harder to read
TEMPORARY_MIN_LENGTH = 12


def _visible_length(text: str) -> int:
    """About how many characters a LaTeX formula shows (markup not counted)."""
    return len(re.sub(r"\\(?:left|right|operatorname|mathbf)|[{}\\ ]", "", text))


def _uses(root: Expr, named: set[int]) -> dict[int, int]:
    """How often each node's text appears once every named node is written once."""
    count: dict[int, int] = {id(root): 1}
    for node in reversed(topological(root)):  # parents before children
        times = 1 if id(node) in named else count.get(id(node), 0)
        for child in node.children:
            count[id(child)] = count.get(id(child), 0) + times
    return count


def _name_temporaries(root: Expr, readings: dict[int, _Reading | None]) -> set[int]:
    """The nodes (by id) to name: used twice or more in the formula, and long.

    A node is judged by its text with its own named parts already short; naming a
    node can leave a part of it used once, which is then written out again.
    """
    nodes = topological(root)
    candidates = {
        id(n)
        for n in nodes
        if n is not root and n.op not in ("var", "const", "delta") and readings.get(id(n)) is not None
    }
    named: set[int] = set()
    for _ in range(4):  # naming a parent can leave a child used once: drop it and redo
        uses = _uses(root, named)
        named = {k for k in named if uses.get(k, 0) >= 2}
        new: dict[int, _Reading | None] = {}
        chosen: set[int] = set()
        for node in nodes:
            kids = [new[id(c)] for c in node.children]
            if node.order > 2 or any(k is None for k in kids):
                new[id(node)] = None
                continue
            reading = _MATRIX_RULES[node.op](node, kids, new)
            if (
                id(node) in candidates
                and reading is not None
                and (
                    id(node) in named
                    or (uses.get(id(node), 0) >= 2 and _visible_length(reading.text) >= TEMPORARY_MIN_LENGTH)
                )
            ):
                chosen.add(id(node))
            new[id(node)] = reading
        if chosen == named:
            break
        named = chosen
    return named


def _with_temporaries(root: Expr, readings: dict[int, _Reading | None]) -> str:
    """The matrix formula with shared subexpressions named (see ``latex``)."""
    named = _name_temporaries(root, readings)
    if not named:
        return readings[id(root)].text
    nodes = topological(root)
    taken = {format_name(name) for name, _ in root.varset}
    prefix = "t" if not any(t.startswith("t_") for t in taken) else "\\tau"
    new: dict[int, _Reading | None] = {}
    definitions: list[str] = []
    for node in nodes:
        kids = [new[id(c)] for c in node.children]
        if node.order > 2 or any(k is None for k in kids):
            new[id(node)] = None
            continue
        reading = _MATRIX_RULES[node.op](node, kids, new)
        if id(node) in named and reading is not None:
            name = f"{prefix}_{{{len(definitions)}}}"
            definitions.append(f"{name} = {reading.text}")
            symmetric = reading.kind == 2 and reading.t == reading.text
            t = name if symmetric else None
            reading = _Reading(name, ATOM, reading.kind, t, ATOM if symmetric else POW)
        new[id(node)] = reading
    main = new[id(root)]
    return f"{main.text} \\quad\\text{{where}}\\quad " + ",\\quad ".join(definitions)


# ------------------------------------------------------- plain-text matrix notation

# LaTeX of the matrix printer -> plain text, longest pieces first
_PLAIN = [
    (" \\quad\\text{where}\\quad ", "\n  where "),
    (",\\quad ", "\n        "),
    ("^{-\\top}", "⁻ᵀ"),
    ("^{-1}", "⁻¹"),
    ("^\\top", "ᵀ"),
    ("\\operatorname{diag}", "diag"),
    ("\\operatorname{tr}", "tr"),
    ("\\operatorname{sign}", "sign"),
    ("\\operatorname{relu}", "relu"),
    ("\\left|", "|"),
    ("\\right|", "|"),
    ("\\left(", "("),
    ("\\right)", ")"),
    ("\\mathbf{1}", "𝟏"),
    ("\\odot", "⊙"),
    ("\\oslash", "⊘"),
    ("\\cdot", "·"),
    ("\\det", "det"),
    ("\\sqrt", "sqrt"),
]


def matrix_text(expr: Expr) -> str | None:
    """Matrix notation as plain text (``Aᵀ x + A x``), or None where there is none.

    It is the LaTeX printer's matrix reading with named temporaries, its LaTeX
    commands written as Unicode; an expression without a matrix reading (a node
    of order 3 or more) gives None, and the caller prints the einsum language.

    Examples
    --------
    >>> import tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> matrix_text(tc.gradient(f, "x"))
    'Aᵀ x + A x'
    >>> print(matrix_text(tc.parse("T *(ijk,k->ij) x", {"T": 3, "x": 1})))
    None
    """
    try:
        text = latex(expr, notation="matrix", temporaries=True)
    except TensCalcError:
        return None
    for old, new in _PLAIN:
        text = text.replace(old, new)
    for name, plain in FUNCTION_LATEX.items():
        text = text.replace(plain + "(", name + "(")
    text = re.sub(r"\^\{\\circ (-?[\d.]+)\}", r"^∘\1", text)  # entrywise powers
    text = re.sub(r"\^\{(-?[\d.]+)\}", r"^\1", text)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"([A-Za-z])_\{(\w+)\}", r"\1\2", text)  # t_{0} -> t0, names with subscripts
    return text
