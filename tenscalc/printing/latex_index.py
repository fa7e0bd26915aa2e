"""LaTeX in index notation: every tensor with its indices, every summed index under a sum.

``A *(ij,j->i) x`` is ``\\sum_{j} A_{ij} x_{j}``.  Nested products are flattened
into one sum (``x *(i,ij->j) A *(j,j->) x`` is ``\\sum_{i,j} x_{i} A_{ij} x_{j}``),
summed indices are named in order of first appearance, and ``delta(n)`` becomes
Kronecker deltas.  The printer is an explicit-stack fold (no recursion limit on
deep expressions); ``LATEX_INDEX_RULES`` holds its rule for each node kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.nodes import Expr
from ..core.products import flatten, is_power_zero
from ..errors import TensCalcError
from .latex_pieces import (
    ATOM,
    BIGSUM,
    FUNCTION_LATEX,
    NEG,
    POW,
    PROD,
    display_order,
    format_name,
    format_number,
    join_terms,
    juxtapose,
    negative_constant_exponent,
    power,
    subscript,
    wrap,
)
from .text import slice_text

if TYPE_CHECKING:
    from .matrix_forms import Reading

INDEX_LETTERS = "ijklmnpqrstuvabcdefgh"


@dataclass(frozen=True)
class _Task:
    node: Expr
    letters: tuple[str, ...]
    scope: frozenset[str]


Combine = Callable[[list[tuple[str, int]]], tuple[str, int]]
Expansion = tuple[list[_Task], Combine]  # the child tasks and how to combine their texts


class IndexPrinter:
    """Index notation by an explicit-stack fold over the expression tree."""

    MAX_TASKS = 200_000

    def __init__(self, root: Expr, readings: dict[Expr, Reading | None]):
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

    def _expand(self, task: _Task) -> Expansion:
        """The child tasks of ``task`` and how to combine their texts, by the node's kind."""
        return LATEX_INDEX_RULES[task.node.op](self, task, task.node)

    # leaves
    def _index_var(self, task: _Task, node: Expr) -> Expansion:
        text = format_name(node.arg[0]) + subscript(task.letters)
        return [], lambda args: (text, ATOM)

    def _index_const(self, task: _Task, node: Expr) -> Expansion:
        text = format_number(node.arg[0])
        return [], lambda args: (text, NEG if text.startswith("-") else ATOM)

    def _index_delta(self, task: _Task, node: Expr) -> Expansion:
        n = node.arg
        if n == 0:
            return [], lambda args: ("1", ATOM)
        letters = task.letters
        text = " ".join(f"\\delta{subscript((letters[t], letters[n + t]))}" for t in range(n))
        return [], lambda args: (text, ATOM if n == 1 else PROD)

    # elementwise
    def _index_add(self, task: _Task, node: Expr) -> Expansion:
        order = display_order(node)
        children = [_Task(node.children[k], task.letters, task.scope) for k in order]
        coefs = [node.arg[k] for k in order]

        def combine(args):
            return join_terms([(c, text, prec) for c, (text, prec) in zip(coefs, args)])

        return children, combine

    def _index_func(self, task: _Task, node: Expr) -> Expansion:
        name = node.arg

        def combine(args):
            ((text, _),) = args
            if name == "abs":
                return f"\\left|{text}\\right|", ATOM
            return f"{FUNCTION_LATEX[name]}\\left({text}\\right)", ATOM

        return [_Task(node.children[0], task.letters, task.scope)], combine

    def _index_pow(self, task: _Task, node: Expr) -> Expansion:
        base, exponent = node.children
        children = [_Task(base, task.letters, task.scope), _Task(exponent, (), task.scope)]
        e = exponent.arg[0] if exponent.op == "const" else None
        return children, lambda args: power(args[0], args[1], e, hadamard=False)

    # matrix functions
    def _matrix_function(self, task: _Task, node: Expr, write: Callable[[str, int], str]) -> Expansion:
        reading = self.readings.get(node.children[0])
        if reading is not None:
            expand = getattr(self.readings, "expand", str)  # Readings keep long texts as marks
            text = write(expand(reading.text), reading.prec)
            return [], lambda args: (text, ATOM)
        inner = self._fresh_letters(2, task.scope)
        child = _Task(node.children[0], tuple(inner), task.scope | set(inner))

        def combine(args):
            ((text, _),) = args
            matrix = f"\\left[{text}\\right]{subscript(inner)}"
            return write(matrix, ATOM), ATOM

        return [child], combine

    def _index_inv(self, task: _Task, node: Expr) -> Expansion:
        sub = subscript(task.letters)
        return self._matrix_function(
            task, node, lambda text, prec: f"\\left({wrap(text, prec, ATOM)}^{{-1}}\\right){sub}"
        )

    def _index_det(self, task: _Task, node: Expr) -> Expansion:
        return self._matrix_function(task, node, lambda text, prec: f"\\det\\left({text}\\right)")

    def _index_adj(self, task: _Task, node: Expr) -> Expansion:
        # adj(X, k)_{j1 i1 ... jk ik}: the k-th derivative of det, written as such
        sub = subscript(task.letters)
        k = node.arg
        name = "\\operatorname{adj}" if k == 1 else f"\\operatorname{{adj}}^{{({k})}}"
        return self._matrix_function(task, node, lambda text, prec: f"{name}\\left({text}\\right){sub}")

    # slices: x[1:] is x_{i+1}; the embedding of a derivative is written as an operator
    def _index_slice(self, task: _Task, node: Expr) -> Expansion:
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

    def _index_embed(self, task: _Task, node: Expr) -> Expansion:
        items, _ = node.arg
        fresh = self._fresh_letters(node.children[0].order, task.scope)
        child = _Task(node.children[0], tuple(fresh), task.scope | set(fresh))
        where = slice_text(items).replace(" ", "")
        sub = subscript(task.letters)

        def combine(args):
            ((text, _),) = args
            text = f"\\left(\\left[{text}\\right]{subscript(fresh)}\\right){sub}"
            return f"\\operatorname{{embed}}_{{[{where}]}}{text}", ATOM

        return [child], combine

    # products
    def _index_mul(self, task: _Task, node: Expr) -> Expansion:
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
            if child.op != "const" and not is_power_zero(child):
                covered.update(names[x] for x in letters)
        numerator: list[tuple[str, object]] = []  # ("task", index) or ("text", text)
        denominator: list[tuple[str, object]] = []
        children: list[_Task] = []
        for child, letters in factors:
            named = tuple(names[x] for x in letters)
            if child.op == "const" or is_power_zero(child):
                coef *= child.arg[0] if child.op == "const" else 1
                loose = [x for x in dict.fromkeys(named) if x not in covered and x in task.letters]
                if loose:
                    numerator.append(("text", ("\\mathbf{1}" + subscript(loose), ATOM)))
                    covered.update(loose)
                continue
            if child.op == "delta":
                n = child.arg
                for t in range(n):
                    numerator.append(("text", (f"\\delta{subscript((named[t], named[n + t]))}", ATOM)))
                continue
            exponent = negative_constant_exponent(child)
            if exponent is not None:
                base = child.children[0]
                children.append(_Task(base, named, scope))
                denominator.append(("task", (len(children) - 1, -exponent)))
                continue
            children.append(_Task(child, named, scope))
            numerator.append(("task", (len(children) - 1, 1)))
        for a, b in deltas:
            numerator.append(("text", (f"\\delta{subscript((names[a], names[b]))}", ATOM)))

        def combine(args):
            def piece(entry):
                kind, payload = entry
                if kind == "text":
                    return payload
                index, degree = payload
                text, prec = args[index]
                if degree != 1:
                    return f"{wrap(text, prec, ATOM)}^{{{format_number(degree)}}}", POW
                return text, prec

            num = [piece(e) for e in numerator]
            den = [piece(e) for e in denominator]
            if coef == 0:
                return "0", ATOM
            body = juxtapose(num)
            if den:
                top = body[0] if num else "1"
                bottom = den[0][0] if len(den) == 1 else juxtapose(den)[0]
                body = (f"\\frac{{{top}}}{{{bottom}}}", ATOM)
            elif not num:
                body = ("1", ATOM) if coef in (1, -1) else ("", ATOM)
            parts = []
            if summed:
                parts.append(f"\\sum_{{{','.join(summed)}}}")
            if body[0]:
                bracketed = summed or coef not in (1, -1)
                parts.append(wrap(body[0], body[1], PROD) if bracketed else body[0])
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


#: node kind -> the index printer's rule: the child tasks of a node and how to combine their texts
LATEX_INDEX_RULES: dict[str, Callable[[IndexPrinter, _Task, Expr], Expansion]] = {
    "var": IndexPrinter._index_var,
    "const": IndexPrinter._index_const,
    "delta": IndexPrinter._index_delta,
    "add": IndexPrinter._index_add,
    "mul": IndexPrinter._index_mul,
    "func": IndexPrinter._index_func,
    "pow": IndexPrinter._index_pow,
    "inv": IndexPrinter._index_inv,
    "det": IndexPrinter._index_det,
    "adj": IndexPrinter._index_adj,
    "slice": IndexPrinter._index_slice,
    "embed": IndexPrinter._index_embed,
}


def _flatten_product(node: Expr, letters: tuple[str, ...]):
    """The factors of a product tree with nested products and scalings inlined:
    ``(factors, equal letter pairs, coefficient)`` (see :func:`tenscalc.core.products.flatten`)."""
    return flatten(node, letters)
