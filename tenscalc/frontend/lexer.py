"""Tokenizer for the tenscalc language.

Keywords and function names are matched case-insensitively (the 2022 thesis tool
did so: ``EXP(x)`` and ``Declare`` were valid there); variable names are
case-sensitive.  ``#`` starts a comment that runs to the end of the line.

Matrix notation (:mod:`tenscalc.frontend.matrix_notation`) adds the postfix transpose
``'`` and the elementwise operators ``.*``, ``./``, ``.^``.  Its function names
(``sum``, ``tr`` ...) are lexed as names: the parser makes them functions only
where a ``(`` follows, so they remain valid variable names.  A UTF-8 byte-order
mark at the start is skipped; Unicode look-alikes of operators (``−``, ``ᵀ``,
``→``, ``’``) are refused with a hint naming the ASCII character to type.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.vocabulary import KEYWORDS, language_functions
from ..errors import ParseError

#: the longest number literal (digits, point and exponent included), and the most
#: digits of an integer: float64's largest has 309 (the parser refuses larger values;
#: Python's int() refuses 4,300 digits)
MAX_NUMBER_LENGTH = 330
MAX_INTEGER_DIGITS = 309
_SYMBOLS = {
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/",
    "^": "^",
    "(": "(",
    ")": ")",
    ",": ",",
    ">": ">",
    "{": "{",
    "}": "}",  # the dimensions of a constant or delta: 1{X.0}
    "'": "'",  # matrix notation: postfix transpose
    "[": "[",
    "]": "]",
    ":": ":",  # slices: x[1:], X[:, 0]
}
# matrix notation's elementwise operators
_DOT_OPERATORS = {".*": ".*", "./": "./", ".^": ".^"}
# characters that look like an operator but are not ASCII: what to type instead
LOOKALIKES = {
    "\u2212": "-",  # minus sign
    "\u2013": "-",  # en dash
    "\u2014": "-",  # em dash
    "\u1d40": "'",  # modifier letter capital T (x\u1d40)
    "\u2019": "'",  # right single quotation mark
    "\u2032": "'",  # prime
    "\u2192": "->",  # rightwards arrow
    "\u00d7": "*",  # multiplication sign
    "\u22c5": "*",  # dot operator
    "\u00b7": "*",  # middle dot
    "\u2217": "*",  # asterisk operator
    "\u2215": "/",  # division slash
    "\u00f7": "/",  # division sign
    "\u00a0": " ",  # no-break space
}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is ``number``, ``name``, ``keyword``, ``function``, a
    symbol such as ``+`` or ``(``, or ``end``; ``text`` is its spelling
    (lower-cased for keywords and functions) and ``pos`` its character offset."""

    kind: str
    text: str
    pos: int

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the input"
        if self.kind in ("number", "name", "keyword", "function"):
            return f"{self.kind} '{self.text}'"
        return f"'{self.text}'"


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``end`` token.

    >>> [t.text for t in tokenize("x *(i,i->) y")]
    ['x', '*', '(', 'i', ',', 'i', '-', '>', ')', 'y', '']
    """
    tokens: list[Token] = []
    i, n = 0, len(text)
    if text.startswith("\ufeff"):  # a UTF-8 byte-order mark (files saved by some editors)
        i = 1
    while True:
        while i < n and (text[i].isspace() or text[i] == "#"):
            if text[i] == "#":
                newline = text.find("\n", i)
                i = n if newline == -1 else newline
            else:
                i += 1
        if i >= n:
            # "end of input" is reported right after the last token, not past trailing
            # blank lines and comments (a file ending in a newline would otherwise
            # show an empty line under the message)
            end = tokens[-1].pos + len(tokens[-1].text) if tokens else 0
            tokens.append(Token("end", "", end))
            return tokens
        ch = text[i]
        if _digit(ch) or (ch == "." and i + 1 < n and _digit(text[i + 1])):
            j = _scan_number(text, i)
            if j - i > MAX_NUMBER_LENGTH:
                raise ParseError(f"a number of {j - i} characters is too long (at most {MAX_NUMBER_LENGTH})", text, i)
            if j - i > MAX_INTEGER_DIGITS and text[i:j].isdigit():
                raise ParseError(f"an integer of {j - i} digits is too long (at most {MAX_INTEGER_DIGITS})", text, i)
            tokens.append(Token("number", text[i:j], i))
            i = j
        elif ch.isascii() and (ch.isalpha() or ch == "_"):
            j = i  # names are ASCII identifiers (v_x, the direction of an HVP, is one)
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            lower = word.lower()
            if lower in KEYWORDS:
                tokens.append(Token("keyword", lower, i))
            elif lower in language_functions():
                tokens.append(Token("function", lower, i))
            else:
                tokens.append(Token("name", word, i))
            i = j
        elif text[i : i + 2] == "**":  # Python's power, as SymPy and NumPy users type it: the same as ^
            tokens.append(Token("^", "**", i))
            i += 2
        elif text[i : i + 2] in _DOT_OPERATORS:
            tokens.append(Token(text[i : i + 2], text[i : i + 2], i))
            i += 2
        elif ch in _SYMBOLS:
            tokens.append(Token(_SYMBOLS[ch], ch, i))
            i += 1
        elif ch in LOOKALIKES:
            import unicodedata

            name = unicodedata.name(ch, f"U+{ord(ch):04X}")
            ascii_ = LOOKALIKES[ch]
            raise ParseError(f"unexpected character {ch!r} ({name}); type the ASCII {ascii_!r} instead", text, i)
        else:
            raise ParseError(f"unexpected character {ch!r}", text, i)


def _digit(ch: str) -> bool:
    """An ASCII digit (``str.isdigit`` also accepts ``²`` and ``٣``, which ``int`` misreads or refuses)."""
    return "0" <= ch <= "9"


def _scan_number(text: str, i: int) -> int:
    """End offset of the number starting at ``i`` (``12``, ``1.5``, ``.5``, ``2.``, ``1e-3``)."""
    n = len(text)
    j = i
    while j < n and _digit(text[j]):
        j += 1
    if j < n and text[j] == ".":
        j += 1
        while j < n and _digit(text[j]):
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and _digit(text[k]):
            while k < n and _digit(text[k]):
                k += 1
            j = k
        else:
            raise ParseError("expected digits in the exponent of a number", text, k)
    return j
