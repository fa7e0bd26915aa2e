"""The matrix reading of a product: one recogniser for both matrix printers.

A product node (``mul``) of operands of order at most 2 reads as matrix algebra
when every index joins two operands (a row and a column) and vectors close the
chains.  :func:`read_product` finds that structure once and returns it as a
:class:`MatrixReading`: a small tree of :data:`Term` nodes (a chain of factors,
transposes, ``diag`` of a vector, the diagonal of a matrix, traces, entrywise
products, ones vectors, scalar factors, a coefficient), which says nothing about
spelling.  The LaTeX printer (:mod:`.matrix_forms`) and the matrix-notation text
printer (:mod:`.matrix_notation`) render the same reading, so they agree: where
one writes ``X^\\top \\operatorname{diag}(s) X`` the other writes ``X'*diag(s)*X``.

>>> import tenscalc as tc
>>> h = tc.parse("X *(ij,i->ij) s", {"X": 2, "s": 1})
>>> reading = read_product(h)
>>> reading.kind, describe(reading.term), describe(reading.transpose)
('matrix', 'diag(s) X', "X' diag(s)")
>>> print(tc.latex(h), "|", tc.to_matrix_notation(h))
\\operatorname{diag}\\left(s\\right) X | diag(s)*X
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from ..core.nodes import DimSlot, Expr
from ..core.products import is_power_zero

KINDS = {0: "scalar", 1: "column", 2: "matrix"}  # order 3 or more: "tensor"


# ------------------------------------------------------------------------- the terms


@dataclass(frozen=True)
class Leaf:
    """An operand as its own printer writes it (transposed: its transpose)."""

    node: Expr
    transposed: bool = False


@dataclass(frozen=True)
class Ones:
    """The ones vector of length ``dim`` (``None``: unknown), a column or its transpose."""

    dim: DimSlot
    transposed: bool = False


@dataclass(frozen=True)
class Transposed:
    """The transpose of a term with no nicer form of its own (an entrywise product)."""

    inner: Term


@dataclass(frozen=True)
class Chain:
    """A matrix product of two or more vectors and matrices, left to right."""

    factors: tuple[Term, ...]


@dataclass(frozen=True)
class Diag:
    """The diagonal matrix of a vector: ``diag(v)``."""

    inner: Term


@dataclass(frozen=True)
class DiagOf:
    """The diagonal of a matrix, a vector: ``diag(M)``."""

    inner: Term


@dataclass(frozen=True)
class Trace:
    """The trace of a square matrix (a closed chain)."""

    inner: Term


@dataclass(frozen=True)
class Hadamard:
    """Entrywise product of ``parts``, divided entrywise by ``divisors`` (each the base
    and positive exponent of an entrywise power with a negative exponent: ``a ⊘ b``)."""

    parts: tuple[Term, ...]
    divisors: tuple[tuple[Expr, int | float], ...] = ()


@dataclass(frozen=True)
class Sum:
    """The sum of a vector's entries, ``1ᵀ v`` (of a matrix's: ``1ᵀ M 1``)."""

    inner: Term


@dataclass(frozen=True)
class WithScalars:
    """Scalar factors in front of a vector or matrix (or alone, ``main`` None)."""

    scalars: tuple[Term, ...]
    main: Term | None


@dataclass(frozen=True)
class Coefficient:
    """A number times a term."""

    coef: int | float
    inner: Term


@dataclass(frozen=True)
class Number:
    """A number standing alone: 1 (an empty product) or 0."""

    value: int


@dataclass(frozen=True)
class SquaredNorm:
    """``‖v‖²`` (``vᵀv`` of a vector variable), ``‖X‖_F²`` of a matrix."""

    base: Expr


@dataclass(frozen=True)
class Norm:
    """``‖v‖^power`` for an odd ``power`` (the square root of a sum of squares, its powers)."""

    base: Expr
    power: int


Term = Union[  # noqa: UP007 (a runtime alias: the dataclasses above name it in annotations)
    Leaf,
    Ones,
    Transposed,
    Chain,
    Diag,
    DiagOf,
    Trace,
    Sum,
    Hadamard,
    WithScalars,
    Coefficient,
    Number,
    SquaredNorm,
    Norm,
]


@dataclass(frozen=True)
class MatrixReading:
    """A node as matrix algebra: ``kind`` ("scalar", "column", "matrix") and its term."""

    kind: str
    term: Term

    @property
    def transpose(self) -> Term:
        """The term of the transpose (``xᵀAᵀ`` for ``A x``)."""
        return flip(self.term)


def flip(term: Term) -> Term:
    """The transpose of ``term``, pushed inside where that reads better: ``(A B)ᵀ = Bᵀ Aᵀ``,
    a diagonal matrix is its own, a scalar its own.

    >>> import tenscalc as tc
    >>> describe(flip(read_product(tc.parse("A *(ij,jk->ik) B", {"A": 2, "B": 2})).term))
    "B' A'"
    """
    if isinstance(term, Leaf):
        return Leaf(term.node, not term.transposed) if term.node.order else term
    if isinstance(term, Ones):
        return Ones(term.dim, not term.transposed)
    if isinstance(term, Transposed):
        return term.inner
    if isinstance(term, Chain):
        return Chain(tuple(flip(f) for f in reversed(term.factors)))
    if isinstance(term, WithScalars):
        return term if term.main is None else WithScalars(term.scalars, flip(term.main))
    if isinstance(term, Coefficient):
        return Coefficient(term.coef, flip(term.inner))
    if isinstance(term, (Hadamard, DiagOf)):
        return Transposed(term)
    return term  # diagonal matrices and scalars


def chain(factors: list[Term]) -> Term:
    """The product of ``factors`` (one factor: itself)."""
    return factors[0] if len(factors) == 1 else Chain(tuple(factors))


def describe(term: Term) -> str:
    """A plain spelling of a term, for tests and messages: ``X' diag(s) X``.

    >>> import tenscalc as tc
    >>> describe(read_product(tc.parse("A *(ij,kj->ik) B", {"A": 2, "B": 2})).term)
    "A B'"
    """
    if isinstance(term, Leaf):
        return f"{term.node}{chr(39) if term.transposed else ''}"
    if isinstance(term, Ones):
        return "1'" if term.transposed else "1"
    if isinstance(term, Transposed):
        return f"({describe(term.inner)})'"
    if isinstance(term, Chain):
        return " ".join(describe(f) for f in term.factors)
    if isinstance(term, (Diag, DiagOf, Trace, Sum)):
        name = {Trace: "tr", Sum: "sum"}.get(type(term), "diag")
        return f"{name}({describe(term.inner)})"
    if isinstance(term, Hadamard):
        divisors = "".join(f" ./ ({base})^{e}" for base, e in term.divisors)
        return " .* ".join(f"({describe(p)})" for p in term.parts) + divisors
    if isinstance(term, WithScalars):
        parts = [describe(s) for s in term.scalars] + ([] if term.main is None else [describe(term.main)])
        return parts[0] if len(parts) == 1 else " ".join(f"({p})" for p in parts)
    if isinstance(term, Coefficient):
        return f"{term.coef} ({describe(term.inner)})"
    if isinstance(term, Number):
        return str(term.value)
    if isinstance(term, SquaredNorm):
        return f"norm2({term.base})^2"
    return f"norm2({term.base})" + ("" if term.power == 1 else f"^{term.power}")


def structure(term: Term) -> frozenset[str]:
    """The kinds of structure a term holds (``diag``, ``transpose``, ``trace``,
    ``hadamard``, ``ones``, ``sum``, ``norm``): what both printers must show alike.

    >>> import tenscalc as tc
    >>> sorted(structure(read_product(tc.parse("X *(ki,k->ik) s", {"X": 2, "s": 1})).term))
    ['diag', 'transpose']
    """
    found: set[str] = set()
    stack = [term]
    while stack:
        t = stack.pop()
        if type(t) in _STRUCTURE:
            found.add(_STRUCTURE[type(t)])
        if isinstance(t, (Leaf, Ones)) and t.transposed:
            found.add("transpose")
        stack.extend(_children(t))
    return frozenset(found)


_STRUCTURE: dict[type, str] = {
    Diag: "diag",
    DiagOf: "diag",
    Trace: "trace",
    Hadamard: "hadamard",
    Transposed: "transpose",
    Ones: "ones",
    Sum: "sum",
    SquaredNorm: "norm",
    Norm: "norm",
}


def _children(term: Term) -> list[Term]:
    if isinstance(term, (Transposed, Diag, DiagOf, Trace, Sum, Coefficient)):
        return [term.inner]
    if isinstance(term, Chain):
        return list(term.factors)
    if isinstance(term, Hadamard):
        return list(term.parts)
    if isinstance(term, WithScalars):
        return list(term.scalars) + ([] if term.main is None else [term.main])
    return []


# ------------------------------------------------------------------- norms


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


def _norm_base(node: Expr) -> Expr | None:
    base = squared_norm_base(node)
    return base if base is not None and base.order in (1, 2) else None


def read_norm(node: Expr) -> MatrixReading | None:
    """``‖v‖`` for the square root of a sum of squares (``norm2(v)``), ``‖v‖^{-1}`` for its
    power -1/2, ``‖v‖^{3}`` for 3/2: an odd multiple of 1/2 (an even one is a power of vᵀv).

    >>> import tenscalc as tc
    >>> describe(read_norm(tc.parse("norm2(x)")).term)
    'norm2(x)'
    """
    if node.op != "pow" or node.children[1].op != "const":
        return None
    twice = 2 * node.children[1].arg[0]
    if not math.isfinite(twice) or twice != int(twice) or int(twice) % 2 != 1:  # 2 * 1e308 is inf
        return None
    base = _norm_base(node.children[0])
    return None if base is None else MatrixReading("scalar", Norm(base, int(twice)))


# ----------------------------------------------------------------- products


@dataclass
class _Operand:
    term: Term
    letters: list


def read_product(node: Expr) -> MatrixReading | None:
    """The matrix reading of a product node, or None where it has none (an operand of
    order 3 or more, an index shared by too many operands, a chain that does not close).

    >>> import tenscalc as tc
    >>> describe(read_product(tc.parse("A *(ij,j->) v", {"A": 2, "v": 1})).term)
    'sum(A v)'
    """
    if node.op != "mul":
        return None
    if node.order > 2 or any(c.order > 2 for c in node.children):
        return _scaled_tensor(node)
    kind = KINDS[node.order]
    base = _norm_base(node)
    if base is not None:
        return MatrixReading(kind, SquaredNorm(base))
    ins, out = node.arg
    coef, scalars, operands, dims = _operands(node)
    if coef == 0:
        return MatrixReading(kind, Number(0))
    term = _ChainReader(operands, list(out), dims).read(scalars)
    if term is None:
        return None
    return MatrixReading(kind, term if coef == 1 else Coefficient(coef, term))


def _scaled_tensor(node: Expr) -> MatrixReading | None:
    """``c*T``: a tensor of order 3 or more, as it is, times scalars (else None)."""
    ins, out = node.arg
    coef: int | float = 1
    scalars: list[Term] = []
    tensors = []
    for child, spec in zip(node.children, ins):
        if child.op == "add" and len(child.children) == 1:  # pull a scale out
            coef *= child.arg[0]
            child = child.children[0]
        if child.op == "const" and not spec:
            coef *= child.arg[0]
        elif child.order == 0:
            scalars.append(Leaf(child))
        else:
            tensors.append((child, tuple(spec)))
    if len(tensors) != 1 or tensors[0][1] != tuple(out) or len(set(out)) != len(out) or coef == 0:
        return None
    term = _with_scalars(scalars, Leaf(tensors[0][0]))
    return MatrixReading(KINDS.get(node.order, "tensor"), term if coef == 1 else Coefficient(coef, term))


def _operands(node: Expr) -> tuple[int | float, list[Term], list[_Operand], dict]:
    """A product's number, its scalar factors and its vector and matrix operands (constants
    of order 1 or 2 become ones vectors on their letters that no other operand has), and the
    length of each letter."""
    ins, _ = node.arg
    coef: int | float = 1
    scalars: list[Term] = []
    operands: list[_Operand] = []
    dims: dict = {}
    others: set = set()
    for child, spec in zip(node.children, ins):
        dims.update((letter, d) for letter, d in zip(spec, child.dims) if dims.get(letter) is None)
        if child.op != "const" and not is_power_zero(child):
            others.update(spec)
    for child, spec in zip(node.children, ins):
        if child.op == "add" and len(child.children) == 1:  # pull a scale out
            coef *= child.arg[0]
            child = child.children[0]
        if child.op == "const" or is_power_zero(child):
            coef *= child.arg[0] if child.op == "const" else 1
            if not set(spec) <= others:
                operands.extend(_Operand(Ones(dims[letter]), [letter]) for letter in dict.fromkeys(spec))
        elif child.op == "delta" and child.arg == 0:
            continue
        elif child.order == 0:
            scalars.append(Leaf(child))
        else:
            operands.append(_Operand(Leaf(child), list(spec)))
    return coef, scalars, operands, dims


def _reciprocal(term: Term) -> tuple[Expr, int | float] | None:
    """(base, -e) for an entrywise power ``base^{∘e}`` with a negative number ``e``."""
    if not isinstance(term, Leaf) or term.transposed:
        return None
    node = term.node
    if node.op != "pow" or not node.order or node.children[1].op != "const":
        return None
    e = node.children[1].arg[0]
    return (node.children[0], -e) if isinstance(e, (int, float)) and e < 0 else None


class _ChainReader:
    """Reads an einsum of order-1/2 operands as products of matrices, step by step."""

    def __init__(self, operands: list[_Operand], out: list, dims: dict):
        self.operands = operands
        self.out = out
        self.dims = dims
        self.fresh = max([x for op in operands for x in op.letters] + out + [-1]) + 1  # letters are ints

    def read(self, scalars: list[Term]) -> Term | None:
        """The term of the product, ``scalars`` in front; None where it has no matrix reading."""
        scalars = list(scalars)
        self.operands = self._diagonals_and_traces(scalars)
        if len(self.out) == 2 and self.out[0] == self.out[1]:  # a repeated output letter: diag(v)
            inner = _ChainReader(self.operands, [self.out[0]], self.dims).read(scalars)
            return None if inner is None else Diag(inner)
        self._merge_entrywise()
        done, term = self._vectors_as_diagonals(scalars)
        if done:
            return term
        if any(self.occurrences(x) > 2 for op in self.operands for x in op.letters):
            return None
        self._sums_as_ones()
        return self._walk_chains(scalars)

    def occurrences(self, letter) -> int:
        return self.out.count(letter) + sum(op.letters.count(letter) for op in self.operands)

    def new_letter(self):
        self.fresh += 1  # a letter no operand uses
        return self.fresh

    def _diagonals_and_traces(self, scalars: list[Term]) -> list[_Operand]:
        """A repeated letter inside one operand: the diagonal of a matrix where the letter
        is used elsewhere, else its trace (a scalar)."""
        kept: list[_Operand] = []
        for op in self.operands:
            if len(op.letters) == 2 and op.letters[0] == op.letters[1]:
                letter = op.letters[0]
                if letter in self.out or any(letter in o.letters for o in self.operands if o is not op):
                    kept.append(_Operand(DiagOf(op.term), [letter]))
                else:
                    scalars.append(Trace(op.term))
            else:
                kept.append(op)
        return kept

    def _merge_entrywise(self) -> None:
        """Vectors (or matrices) on the same letters with a third use of each multiply entrywise."""
        while True:
            groups: dict[tuple, list[int]] = {}
            for k, op in enumerate(self.operands):
                groups.setdefault(tuple(sorted(op.letters)), []).append(k)
            found = [m for key, m in groups.items() if len(m) > 1 and all(self.occurrences(x) >= 3 for x in key)]
            if not found:
                return
            members = found[0]
            first = self.operands[members[0]]
            parts: list[Term] = []
            divisors: list[tuple[Expr, int | float]] = []
            for k in members:
                op = self.operands[k]
                term = op.term if op.letters == first.letters else flip(op.term)
                recip = _reciprocal(term)
                if recip is None:
                    parts.append(term)
                else:
                    divisors.append(recip)
            if not parts:  # nothing to divide: keep the powers
                parts, divisors = [self.operands[k].term for k in members], []
            merged = _Operand(Hadamard(tuple(parts), tuple(divisors)), list(first.letters))
            self.operands = [op for k, op in enumerate(self.operands) if k not in members[1:]]
            self.operands[members[0]] = merged

    def _vectors_as_diagonals(self, scalars: list[Term]) -> tuple[bool, Term | None]:
        """A vector on a letter used twice more: entrywise with the rest when the letter is
        the output's (returns (True, that term or None)), else ``diag(v)`` in the chain
        (returns (False, None): the reading goes on)."""
        for op in list(self.operands):
            if len(op.letters) != 1:
                continue
            letter = op.letters[0]
            count = self.occurrences(letter)
            if count < 3:
                continue
            if count > 3:
                return True, None
            if self.out == [letter]:
                rest = _ChainReader([o for o in self.operands if o is not op], self.out, self.dims).read([])
                return True, None if rest is None else _with_scalars(scalars, Hadamard((op.term, rest)))
            self._diagonal(op, letter)
        return False, None

    def _diagonal(self, op: _Operand, letter) -> None:
        """``v`` on ``letter`` becomes ``diag(v)`` between ``letter`` and a new letter, which
        takes over one other use of ``letter``."""
        other = self.new_letter()
        self.dims[other] = self.dims.get(letter)
        op.term, op.letters = Diag(op.term), [letter, other]
        for o in self.operands:
            if o is not op and letter in o.letters:
                o.letters[o.letters.index(letter)] = other
                return
        self.out[self.out.index(letter)] = other

    def _sums_as_ones(self) -> None:
        """A summed letter used once: a sum, i.e. a product with a ones vector."""
        for op in list(self.operands):
            for letter in op.letters:
                if self.occurrences(letter) == 1 and letter not in self.out:
                    self.operands.append(_Operand(Ones(self.dims.get(letter)), [letter]))

    def _walk_chains(self, scalars: list[Term]) -> Term | None:
        """Follow the chains: from the output letters (the vector or matrix), then the scalar
        paths ``uᵀ M … v`` (sums first: ``1ᵀ v``), then the closed cycles (traces)."""
        walker = _Walker(self.operands)
        pieces: list[Term] = []
        out = self.out
        if out:
            left, left_vector = walker.walk(out[0], None)
            if len(out) == 2 and left_vector:  # an outer product: (M u) (N w)ᵀ
                right, right_vector = walker.walk(out[1], None)
                if not right_vector:
                    return None
                pieces = left + [flip(r) for r in reversed(right)]
            elif len(out) == 2 or left_vector:
                pieces = left
            else:
                return None
        extra = walker.scalar_paths()
        if extra is None:
            return None
        all_scalars = scalars + extra
        if not pieces:
            return WithScalars(tuple(all_scalars), None) if all_scalars else Number(1)
        return _with_scalars(all_scalars, chain(pieces))


class _Walker:
    """Walks the chains of operands joined by shared letters."""

    def __init__(self, operands: list[_Operand]):
        self.operands = operands
        self.where: dict[object, list[tuple[int, int]]] = {}
        for k, op in enumerate(operands):
            for position, letter in enumerate(op.letters):
                self.where.setdefault(letter, []).append((k, position))
        self.visited: set[int] = set()

    def walk(self, letter, came_from: int | None) -> tuple[list[Term], bool]:
        """The oriented factors from an index on, and whether the chain ended in a vector
        (else at an output index)."""
        items: list[Term] = []
        while True:
            nxt = [(k, p) for k, p in self.where.get(letter, []) if k != came_from and k not in self.visited]
            if not nxt:
                return items, False
            k, position = nxt[0]
            self.visited.add(k)
            op = self.operands[k]
            if len(op.letters) == 1:
                items.append(op.term)
                return items, True
            items.append(op.term if position == 0 else flip(op.term))
            letter, came_from = op.letters[1 - position], k

    def scalar_paths(self) -> list[Term] | None:
        """What the walk from the output left: paths between two vectors (None if one does
        not close) and traces of cycles."""
        extra: list[Term] = []
        # sums read best as 1ᵀ v: start the paths at ones vectors
        starts = sorted(range(len(self.operands)), key=lambda k: not isinstance(self.operands[k].term, Ones))
        for k in starts:
            op = self.operands[k]
            if k in self.visited or len(op.letters) != 1:
                continue
            self.visited.add(k)
            rest, ended = self.walk(op.letters[0], k)
            if not ended:
                return None
            extra.append(Sum(chain(rest)) if isinstance(op.term, Ones) else chain([flip(op.term)] + rest))
        for k, op in enumerate(self.operands):
            if k in self.visited:
                continue
            self.visited.add(k)
            rest, _ = self.walk(op.letters[1], k)
            extra.append(Trace(chain([op.term] + rest)))
        return extra


def _with_scalars(scalars: list[Term], main: Term) -> Term:
    return WithScalars(tuple(scalars), main) if scalars else main
