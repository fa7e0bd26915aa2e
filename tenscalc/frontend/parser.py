"""Recursive-descent parser: tokens -> syntax tree (with source positions).

The syntax tree is untyped: a number does not know its order yet, because that
comes from its context (docs/language.md, "Constants and broadcasting").  The typing
pass in :mod:`tenscalc.frontend.typecheck` turns it into interned DAG nodes.

The four rules that nest (``expr``, ``term``, ``factor``, ``atom``) are
generators: where they would call another rule they ``yield`` its generator and
receive its result, and :meth:`Parser.run` drives them with an explicit stack.
So nesting depth is bounded by memory, not by Python's recursion limit, and no
process-wide setting is touched (threads parse safely side by side).

Grammar (docs/language.md, "Expressions", plus what the 2022 thesis tool also accepted: repeated
``^``, a bare ``delta`` meaning ``delta(0)``, ``- >`` split by spaces)::

    problem = [ "declare" { name natural } "expression" ] expr [ "derivative" "wrt" name ]
    expr    = term { ("+" | "-") term }
    term    = factor { "*" "(" ixs "," ixs "-" ">" ixs ")" factor | "/" factor }
    factor  = { "-" } atom { ("^" | "**") ( "(" expr ")" | { "-" } atom ) }
    atom    = number | func "(" expr ")" | name | "(" expr ")" | "delta" [ "(" natural ")" ]
            | "adj" "(" expr [ "," natural ] ")"

Matrix notation (:mod:`tenscalc.frontend.matrix_notation`) extends ``term`` with ``*``
followed by a factor (a matrix product: ``*(`` starts an index spec only when a
``,`` or ``>`` comes before its ``)``, which no expression contains), ``.*`` and
``./``; ``factor`` with a postfix ``'`` (transpose) and ``.^``; ``atom`` with
``name "(" expr ")"`` for the notation's functions (``sum``, ``tr`` ...) and
``ones(x.0)``/``eye(x.0)`` (constants sized by a variable's axis).
Slices are a postfix ``[items]`` (``x[1:]``, ``X[:, 0]``, ``x[::2]``); their
transpose, which derivatives contain, is written ``embed(part)[items]{dims}``:
zeros of the dimensions ``dims`` with ``part`` at ``items``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

from ..core.nodes import MAX_ORDER, default_start
from ..core.vocabulary import ASSUMPTION_WORDS, KEYWORDS, NOTATION_FUNCTIONS
from ..errors import ParseError, SemanticError
from .lexer import Token, tokenize
from .matrix_notation import unknown_function_message

# -------------------------------------------------------------------- syntax tree


@dataclass(frozen=True, slots=True)
class Syn:
    """A syntax-tree node: ``kind`` is one of num, name, delta, call, adj (value: k), neg, pow, sum,
    prod, div, and of matrix notation mprod (``*``), ewmul (``.*``), ewdiv (``./``),
    transpose (``'``); ``pos``/``end`` delimit its source text."""

    kind: str
    pos: int
    end: int
    children: tuple[Syn, ...] = ()
    value: object = None  # number value, name, function name, delta n, signs, specs
    # written dimensions of a number or delta (`1{X.0}`, `1{x.0[1:]}`): (name, axis, position,
    # slices) or None for `_`
    dims: tuple[tuple | None, ...] | None = None


@dataclass
class Declarations:
    """Declared variables: name -> order, with the position of each declaration."""

    orders: dict[str, int] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    # assumptions written after an order (`declare X 2 pd x 1 positive t 0 (0, 1)`)
    assumptions: dict[str, tuple] = field(default_factory=dict)


@dataclass
class ParsedProblem:
    """What the parser read: declarations (if any), the expression tree, ``wrt``."""

    text: str
    declarations: Declarations | None
    tree: Syn
    wrt: str | None
    wrt_pos: int | None


# ------------------------------------------------------------------------- parser

#: ``ones(x.0)`` and ``eye(x.0)``: constants sized by variables' axes (see ``Parser.sized_constant``)
SIZED_CONSTANTS = ("ones", "eye")
SIZED_NUMBER_HINT = {
    "eye": "eye({n}): tenscalc takes lengths from the arrays, not from the text: write eye (the identity, "
    "its size from what it meets, as on matrixcalculus.org) or eye(x.0) (the identity of x's length)",
    "ones": "ones({n}): tenscalc takes lengths from the arrays, not from the text: write vector(1) or "
    "matrix(1) (sized by what they meet, as on matrixcalculus.org) or ones(x.0) (ones of x's length)",
}

# a grammar rule: yields the rules it needs (receiving their results), returns a Syn
Rule = Generator["Rule", Syn, Syn]


class Parser:
    """Parses one text.  State lives in the instance, never in module globals."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    # token helpers ---------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != "end":
            self.i += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        tok = self.tok
        return tok.kind == kind and (text is None or tok.text == text)

    def expect(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            self.fail(what)
        return self.advance()

    def fail(self, expected: str, token: Token | None = None) -> None:
        token = token or self.tok
        message = f"expected {expected} but found {token.describe()}"
        raise ParseError(message + self.keyword_hint(token), self.text, token.pos)

    def keyword_hint(self, token: Token) -> str:
        """``; did you mean 'expression'?`` when the failing token or the one
        before it is a name close to a keyword (``expresion``, ``declar``)."""
        import difflib

        k = self.tokens.index(token) if token in self.tokens else self.i
        for candidate in (token, self.tokens[k - 1] if k else None):
            if candidate is not None and candidate.kind == "name":
                match = difflib.get_close_matches(candidate.text.lower(), KEYWORDS, n=1, cutoff=0.75)
                if match:
                    return f"; did you mean the keyword '{match[0]}' (for '{candidate.text}')?"
        return ""

    def spelling(self, token: Token) -> str:
        """The token as the user wrote it (keywords and functions are lower-cased)."""
        return self.text[token.pos : token.pos + len(token.text)]

    def prev_end(self) -> int:
        token = self.tokens[self.i - 1] if self.i else self.tok
        return token.pos + len(token.text)

    # problem ---------------------------------------------------------------------
    def problem(self) -> ParsedProblem:
        declarations = None
        if self.at("keyword", "declare"):
            self.advance()
            declarations = self.declarations()
            self.expect_keyword("expression", "'expression' after the declarations")
        elif self.at("keyword", "expression"):
            self.advance()
        tree = self.run(self.expr())
        wrt, wrt_pos = None, None
        if self.at("keyword", "derivative"):
            self.advance()
            self.expect_keyword("wrt", "'wrt' after 'derivative'")
            if not self.at("name"):
                self.fail("the name of the variable to differentiate by")
            token = self.advance()
            wrt, wrt_pos = token.text, token.pos
            if self.at("name"):
                raise ParseError(
                    f"expected exactly one variable after 'wrt' but found a second one, '{self.tok.text}'",
                    self.text,
                    self.tok.pos,
                )
        if not self.at("end"):
            self.fail("an operator ('+', '-', '*(', '/', '^') or the end of the expression")
        return ParsedProblem(self.text, declarations, tree, wrt, wrt_pos)

    def expect_keyword(self, word: str, what: str) -> None:
        if not self.at("keyword", word):
            self.fail(what)
        self.advance()

    def declarations(self) -> Declarations:
        decl = Declarations()
        while self.at("name") or self.at("function"):
            token = self.advance()
            if token.kind == "function":
                raise ParseError(
                    f"'{self.spelling(token)}' is reserved and cannot name a variable", self.text, token.pos
                )
            if not self.at("number") or not self.tok.text.isdigit():
                self.fail(f"the order (a natural number) of '{token.text}'")
            order_token = self.advance()
            if int(order_token.text) > MAX_ORDER:  # before anything is sized by it
                raise ParseError(
                    f"the order of variable '{token.text}' must be a natural number of at most {MAX_ORDER}",
                    self.text,
                    order_token.pos,
                )
            if token.text in decl.orders:
                raise ParseError(f"variable '{token.text}' is declared twice", self.text, token.pos)
            decl.orders[token.text] = int(order_token.text)
            decl.positions[token.text] = token.pos
            attributes = self.assumption_attributes()
            if attributes:
                decl.assumptions[token.text] = attributes
        # a keyword followed by an order was meant as a name (`declare wrt 1`); any
        # other keyword means 'expression' is missing (`declare x 1 derivative ...`)
        if self.at("keyword") and self.tok.text != "expression" and self.tokens[self.i + 1].kind == "number":
            raise ParseError(
                f"'{self.spelling(self.tok)}' is reserved and cannot name a variable", self.text, self.tok.pos
            )
        return decl

    def assumption_attributes(self) -> tuple:
        """Assumptions after a declaration: words such as ``positive`` or ``pd`` (a word
        followed by an order is the next declaration instead) and intervals ``(lo, hi)``
        whose ends may be ``inf``, ``-inf`` or empty (unbounded)."""
        found: list = []
        while True:
            word = self.tok.text.lower() if self.at("name") else None
            if word in ASSUMPTION_WORDS and self.tokens[self.i + 1].kind != "number":
                self.advance()
                found.append(word)
            elif self.at("("):
                self.advance()
                low = self.interval_end(-1)
                self.expect(",", "',' between the ends of the interval (lo, hi)")
                high = self.interval_end(1)
                self.expect(")", "')' closing the interval (lo, hi)")
                found.append((low, high))
            else:
                return tuple(found)

    def interval_end(self, side: int) -> float | None:
        negative = False
        if self.at("-"):
            self.advance()
            negative = True
        if self.at("number"):
            value = float(self.advance().text)
            return -value if negative else value
        if self.at("name") and self.tok.text.lower() == "inf":
            if (side < 0) != negative:
                self.fail("'-inf' as the lower end or 'inf' as the upper end")
            self.advance()
            return None
        if not negative and (self.at(",") or self.at(")")):
            return None  # an empty end: unbounded
        self.fail("a number, 'inf' or nothing as an end of the interval (lo, hi)")
        raise AssertionError  # unreachable: fail raises

    # expressions -----------------------------------------------------------------
    @staticmethod
    def run(rule: Rule) -> Syn:
        """Drive a rule and the rules it yields with an explicit stack (no recursion)."""
        stack = [rule]
        value: Syn | None = None
        while stack:
            try:
                inner = stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                value = done.value
                continue
            stack.append(inner)
            value = None
        assert value is not None
        return value

    def expr(self) -> Rule:
        start = self.tok.pos
        terms = [(yield self.term())]
        signs = [1]
        while self.at("+") or self.at("-"):
            signs.append(1 if self.advance().kind == "+" else -1)
            terms.append((yield self.term()))
        if len(terms) == 1:
            return terms[0]
        return Syn("sum", start, self.prev_end(), tuple(terms), tuple(signs))

    def term(self) -> Rule:
        start = self.tok.pos
        left = yield self.factor()
        while self.tok.kind in ("*", "/", ".*", "./"):
            op = self.advance()
            if op.kind in ("/", ".*", "./"):
                right = yield self.factor()
                kind = {"/": "div", ".*": "ewmul", "./": "ewdiv"}[op.kind]
                left = Syn(kind, start, self.prev_end(), (left, right), op.pos)
                continue
            if not self.at_index_spec():  # matrix notation: `A*x`, `A*(x - z)`
                right = yield self.factor()
                left = Syn("mprod", start, self.prev_end(), (left, right), op.pos)
                continue
            self.advance()
            specs = self.index_specs()
            right = yield self.factor()
            left = Syn("prod", start, self.prev_end(), (left, right), (specs, op.pos))
        return left

    def at_index_spec(self) -> bool:
        """Whether ``*`` is followed by an index spec ``(ij,j->i)`` rather than by a
        bracketed factor ``(x - z)``: a spec holds only letters, ``,``, ``-`` and ``>``
        and always a ``,`` or ``>`` before its ``)``; an expression never does."""
        if not self.at("("):
            return False
        k = self.i + 1
        seen = False
        while self.tokens[k].kind in ("name", "keyword", "function", ",", "-", ">"):
            seen = seen or self.tokens[k].kind in (",", ">")
            k += 1
        return seen or (k == self.i + 1 and self.tokens[k].kind == ")")  # `*()`: an empty, malformed spec

    def index_specs(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        first = self.index_letters()
        self.expect(",", "',' between the two input index strings")
        second = self.index_letters()
        if not self.at("-"):
            self.fail("'->' after the input index strings")
        self.advance()
        if not self.at(">"):
            self.fail("'>' completing '->'")
        self.advance()
        out = self.index_letters()
        self.expect(")", "')' closing the index spec")
        return first, second, out

    def index_letters(self) -> tuple[str, ...]:
        """One index string: lowercase letters, each optionally followed by digits
        (``ij``, ``i1j1``: the printer numbers letters past the 26th this way)."""
        letters: list[str] = []
        while self.at("name") or self.at("function") or self.at("keyword"):
            token = self.advance()
            # keywords and function names are lower-cased by the lexer; index letters
            # are read from the source, so `*(abs,s->ab)` is the letters a, b, s and
            # `*(ABS,...)` is an error like any other uppercase letter
            word = self.spelling(token)
            bad = next((k for k, ch in enumerate(word) if not ("a" <= ch <= "z" or "0" <= ch <= "9")), None)
            if bad is not None:  # the caret goes under the offending character
                raise ParseError(
                    f"index strings are lowercase letters, found '{word[bad]}' in '{word}'",
                    self.text,
                    token.pos + bad,
                )
            for ch in word:
                if ch.isalpha():
                    letters.append(ch)
                else:  # the lexer starts names with a letter, so a digit follows one
                    letters[-1] += ch
        return tuple(letters)

    def dimensions(self) -> tuple[tuple | None, ...] | None:
        """``{X.0, y.0}`` after a number or delta: the lengths of its axes, each the
        length of a variable's axis (``_``: unknown, taken from the context)."""
        if not self.at("{"):
            return None
        self.advance()
        dims: list[tuple | None] = []
        while True:
            tok = self.tok
            if tok.kind == "name" and tok.text == "_":
                self.advance()
                dims.append(None)
            elif tok.kind == "name":
                self.advance()
                axis = self.tok
                if axis.kind != "number" or not axis.text.startswith(".") or not axis.text[1:].isdigit():
                    self.fail(f"'.' and an axis number after '{tok.text}' in a dimension (as in {tok.text}.0)")
                self.advance()
                slices = []
                while self.at("["):  # a sliced length: x.0[1:]
                    slices.append(self.slice_items())
                dims.append((tok.text, int(axis.text[1:]), tok.pos, tuple(slices)))
            else:
                self.fail("a dimension: a variable's axis such as X.0, or _")
            if self.at("}"):
                self.advance()
                return tuple(dims)
            self.expect(",", "',' or '}' in the dimensions {...}")

    def factor(self) -> Rule:
        start, minus = self.tok.pos, self.minus_signs()
        node = yield self.atom()
        while self.tok.kind in ("^", ".^", "'", "["):
            if self.at("["):
                items = self.slice_items()
                node = Syn("slice", node.pos, self.prev_end(), (node,), items)
                continue
            op = self.advance()
            if op.kind == "'":
                node = Syn("transpose", node.pos, self.prev_end(), (node,))
                continue
            if self.at("("):
                self.advance()
                exponent = yield self.expr()
                self.expect(")", "')' closing the exponent")
            else:
                exponent = yield self.signed_atom()  # x^-2, x.^-1 as MATLAB and Python read them
            # the operator is kept: in matrix notation `X^-1` is the inverse, `X.^-1` entrywise
            node = Syn("pow", node.pos, self.prev_end(), (node, exponent), op.kind)
        return _negated(node, start) if minus % 2 else node

    def signed_atom(self) -> Rule:
        """An exponent's ``{"-"} atom``: ``2^-1`` is ``2^(-1)``, as in MATLAB and Python's ``2**-1``."""
        start, minus = self.tok.pos, self.minus_signs()
        node = yield self.atom()
        return _negated(node, start) if minus % 2 else node

    def minus_signs(self) -> int:
        """Read the unary minus signs in front of an operand; how many there were."""
        count = 0
        while self.at("-"):
            self.advance()
            count += 1
        return count

    def sized_constant(self, tok: Token) -> Syn:
        """``ones(x.0)``, ``ones(X.0, X.1)``, ``eye(x.0)``: a ones tensor or the identity with
        the lengths of variables' axes (the printer writes ones this way).  A number as the
        size is refused: lengths come from the arrays, never from the text."""
        self.advance()  # '('
        dims: list[tuple | None] = []
        while True:
            if self.at("number") and self.tok.text.isdigit():
                raise ParseError(SIZED_NUMBER_HINT[tok.text].format(n=self.tok.text), self.text, self.tok.pos)
            name = self.tok
            if name.kind != "name" or not self.tokens[self.i + 1].text.startswith("."):
                self.fail(f"a variable's axis such as x.0 as the size in {tok.text}( )")
            self.advance()
            axis = self.advance()
            if axis.kind != "number" or not axis.text[1:].isdigit():
                self.fail(f"'.' and an axis number after '{name.text}' (as in {name.text}.0)", axis)
            slices = []
            while self.at("["):  # a sliced length: x.0[1:]
                slices.append(self.slice_items())
            dims.append((name.text, int(axis.text[1:]), name.pos, tuple(slices)))
            if self.at(")"):
                self.advance()
                break
            self.expect(",", f"',' or ')' in {tok.text}( )")
        if tok.text == "eye":
            if len(dims) != 1:
                raise ParseError("eye( ) takes one length, as in eye(x.0)", self.text, tok.pos)
            return Syn("delta", tok.pos, self.prev_end(), (), 1, tuple(dims))
        return Syn("num", tok.pos, self.prev_end(), (), 1, tuple(dims))

    def slice_items(self) -> tuple:
        """``[1:, 0, ::2]``: per axis an index or ``(start, stop, step)``."""
        self.expect("[", "'['")
        items: list = []
        while True:
            first = self.slice_bound()
            if self.at(":"):
                self.advance()
                stop = None if self.at(":") or self.at(",") or self.at("]") else self.slice_bound()
                step = 1
                if self.at(":"):
                    self.advance()
                    if not (self.at(",") or self.at("]")):
                        step = self.slice_bound()
                        if step is None:  # `x[:::-1]`: a third colon where the step belongs
                            self.fail("a slice step (a nonzero integer)")
                        if step == 0:
                            where = self.tokens[self.i - 1].pos
                            raise ParseError("a slice step cannot be zero", self.text, where)
                items.append((default_start(step) if first is None else first, stop, step))
            elif first is None:
                self.fail("an index or a slice such as 1: or :-1")
            else:
                items.append(first)
            if self.at("]"):
                self.advance()
                return tuple(items)
            self.expect(",", "',' or ']' in the slice [...]")

    def slice_bound(self) -> int | None:
        """An integer (possibly negative) in a slice, or None where there is none."""
        if self.at(":") or self.at("]") or self.at(","):
            return None
        negative = self.at("-")
        if negative:
            self.advance()
        if not (self.at("number") and self.tok.text.isdigit()):
            self.fail("an integer in the slice")
        value = int(self.advance().text)
        return -value if negative else value

    def atom(self) -> Rule:
        tok = self.tok
        if tok.kind == "number":
            self.advance()
            text = tok.text
            is_int = all(c.isdigit() for c in text)
            value = int(text) if is_int else float(text)
            if value > 1.7976931348623157e308:  # float64's largest (compared exactly for integers)
                raise SemanticError(f"the number {text} is too large for a float64", self.text, tok.pos)
            dims = self.dimensions()
            return Syn("num", tok.pos, self.prev_end(), (), value, dims)
        if tok.kind == "name":
            self.advance()
            if self.at("(") and tok.text in SIZED_CONSTANTS:
                return self.sized_constant(tok)
            if self.at("(") and tok.text.lower() == "embed":  # embed(part)[items]{dims}
                self.advance()
                part = yield self.expr()
                self.expect(")", "')' closing embed(")
                if not self.at("["):
                    self.fail("'[' and the items where embed( ) places its part, as in embed(p)[1:]{x.0}")
                items = self.slice_items()
                if not self.at("{"):
                    self.fail("the dimensions of the result of embed, as in embed(p)[1:]{x.0}")
                dims = self.dimensions()
                return Syn("embed", tok.pos, self.prev_end(), (part,), items, dims)
            if self.at("("):  # a name followed by '(' is a function of matrix notation
                name = tok.text.lower()
                if name not in NOTATION_FUNCTIONS:
                    raise ParseError(unknown_function_message(tok.text), self.text, tok.pos)
                self.advance()
                if self.at(")"):
                    self.fail(f"an argument for '{name}'")
                argument = yield self.expr()
                self.expect(")", f"')' closing {name}(")
                return Syn("call", tok.pos, self.prev_end(), (argument,), name)
            return Syn("name", tok.pos, tok.pos + len(tok.text), (), tok.text)
        if tok.kind == "function":
            self.advance()
            if tok.text == "delta":
                if not self.at("("):  # bare `delta` is delta(0), as in the thesis tool
                    return Syn("delta", tok.pos, self.prev_end(), (), 0)
                self.advance()
                if not (self.at("number") and self.tok.text.isdigit()):
                    self.fail("a natural number n in delta(n)")
                n = int(self.advance().text)
                self.expect(")", "')' closing delta(n)")
                dims = self.dimensions()
                return Syn("delta", tok.pos, self.prev_end(), (), n, dims)
            if not self.at("("):
                self.fail(f"'(' after the function name '{tok.text}'")
            self.advance()
            if self.at(")"):
                self.fail(f"an argument for '{tok.text}'")
            argument = yield self.expr()
            if tok.text == "adj":  # adj(X) or adj(X, k): the k-th derivative of det(X)
                k = 1
                if self.at(","):
                    self.advance()
                    natural = self.at("number") and self.tok.text.isdigit()
                    if not (natural and 1 <= int(self.tok.text) <= MAX_ORDER // 2):
                        self.fail(f"a whole number k from 1 to {MAX_ORDER // 2} in adj(X, k)")
                    k = int(self.advance().text)
                self.expect(")", "')' closing adj(")
                return Syn("adj", tok.pos, self.prev_end(), (argument,), k)
            self.expect(")", f"')' closing {tok.text}(")
            return Syn("call", tok.pos, self.prev_end(), (argument,), tok.text)
        if tok.kind == "(":
            self.advance()
            if self.at(")"):
                self.fail("an expression inside the parentheses")
            inner = yield self.expr()
            self.expect(")", "')'")
            return inner
        if tok.kind == "keyword":
            self.fail("an operand (a number, a variable, a function or '(')")
        self.fail("an operand (a number, a variable, a function or '(')")
        raise AssertionError  # unreachable: fail raises


def parse_text(text: str) -> ParsedProblem:
    """Parse a problem or a bare expression into a syntax tree.

    The parser keeps its own stack (see :meth:`Parser.run`), so any nesting depth
    that fits in memory parses, without touching the recursion limit.
    """
    if not isinstance(text, str):
        raise ParseError(f"expected the expression as a string, got {type(text).__name__}")
    return Parser(text).problem()


def _negated(node: Syn, start: int) -> Syn:
    """``-node`` from ``start``: a number is the negative constant (-2 is the constant -2,
    not a negation node)."""
    if node.kind == "num":
        return Syn("num", start, node.end, (), -node.value, node.dims)
    return Syn("neg", start, node.end, (node,))
