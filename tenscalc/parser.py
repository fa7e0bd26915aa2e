"""Recursive-descent parser: tokens -> syntax tree (with source positions).

The syntax tree is untyped: a number does not know its order yet, because that
comes from its context (LANGUAGE.md, "Constants and broadcasting").  The typing
pass in :mod:`tenscalc.typing_pass` turns it into interned DAG nodes.

The four rules that nest (``expr``, ``term``, ``factor``, ``atom``) are
generators: where they would call another rule they ``yield`` its generator and
receive its result, and :meth:`Parser.run` drives them with an explicit stack.
So nesting depth is bounded by memory, not by Python's recursion limit, and no
process-wide setting is touched (threads parse safely side by side).

Grammar (LANGUAGE.md §2, plus what the 2022 thesis tool also accepted: repeated
``^``, a bare ``delta`` meaning ``delta(0)``, ``- >`` split by spaces)::

    problem = [ "declare" { name natural } "expression" ] expr [ "derivative" "wrt" name ]
    expr    = term { ("+" | "-") term }
    term    = factor { "*" "(" ixs "," ixs "-" ">" ixs ")" factor | "/" factor }
    factor  = { "-" } atom { "^" ( "(" expr ")" | atom ) }
    atom    = number | func "(" expr ")" | name | "(" expr ")" | "delta" [ "(" natural ")" ]
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

from .errors import ParseError, SemanticError
from .lexer import Token, tokenize

ASSUMPTION_WORDS = ("positive", "nonnegative", "negative", "nonpositive", "symmetric", "psd", "pd", "diagonal")

# -------------------------------------------------------------------- syntax tree


@dataclass(frozen=True, slots=True)
class Syn:
    """A syntax-tree node: ``kind`` is one of num, name, delta, call, neg, pow, sum,
    prod, div; ``pos``/``end`` delimit its source text."""

    kind: str
    pos: int
    end: int
    children: tuple[Syn, ...] = ()
    value: object = None  # number value, name, function name, delta n, signs, specs


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
        raise ParseError(f"expected {expected} but found {token.describe()}", self.text, token.pos)

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
        while self.at("*") or self.at("/"):
            op = self.advance()
            if op.kind == "/":
                right = yield self.factor()
                left = Syn("div", start, self.prev_end(), (left, right), op.pos)
                continue
            if not self.at("("):
                self.fail("'(' and an index spec after '*' (as in *(ij,j->i))")
            self.advance()
            specs = self.index_specs()
            right = yield self.factor()
            left = Syn("prod", start, self.prev_end(), (left, right), (specs, op.pos))
        return left

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

    def factor(self) -> Rule:
        start = self.tok.pos
        minus = 0
        while self.at("-"):
            self.advance()
            minus += 1
        node = yield self.atom()
        while self.at("^"):
            self.advance()
            if self.at("("):
                self.advance()
                exponent = yield self.expr()
                self.expect(")", "')' closing the exponent")
            else:
                exponent = yield self.atom()
            node = Syn("pow", node.pos, self.prev_end(), (node, exponent))
        if minus % 2:
            if node.kind == "num":  # -2 is the constant -2, not a negation node
                return Syn("num", start, node.end, (), -node.value)
            return Syn("neg", start, node.end, (node,))
        return node

    def atom(self) -> Rule:
        tok = self.tok
        if tok.kind == "number":
            self.advance()
            text = tok.text
            is_int = all(c.isdigit() for c in text)
            value = int(text) if is_int else float(text)
            if value > 1.7976931348623157e308:  # float64's largest (compared exactly for integers)
                raise SemanticError(f"the number {text} is too large for a float64", self.text, tok.pos)
            return Syn("num", tok.pos, tok.pos + len(text), (), value)
        if tok.kind == "name":
            self.advance()
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
                return Syn("delta", tok.pos, self.prev_end(), (), n)
            if not self.at("("):
                self.fail(f"'(' after the function name '{tok.text}'")
            self.advance()
            if self.at(")"):
                self.fail(f"an argument for '{tok.text}'")
            argument = yield self.expr()
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
