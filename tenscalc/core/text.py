"""Small pieces of text every layer writes: index letters, numbers, short quotes.

* ``letter_for`` / ``letters_for``: the language's name of an int index letter
  (``0`` -> ``i``), and ``einsum_letters``: the letters of an einsum string for
  NumPy and opt_einsum (``0`` -> ``a``);
* ``format_number``: a constant as the language writes it;
* ``short`` / ``quoted``: an expression cut to a few characters for a message.

Nothing here imports the printers: ``short`` asks the node for its text
(``str``), which the display hooks of :class:`tenscalc.core.face.ExprFace` provide.

>>> letters_for((0, 1, 27)), einsum_letters((0, 1, 27)), format_number(2.0)
('ijj1', 'abB', '2.0')
"""

from __future__ import annotations

from collections.abc import Sequence

import opt_einsum

from .exact import small_fraction

#: Index letters of the language, in the order ints are named (then ``i1``, ``j1`` ...).
LETTERS = "ijklmnopqrstuvwxyzabcdefgh"


def letter_for(k: int) -> str:
    """The index letter for int ``k``: ``i`` .. ``h``, then the same letters with a
    number (``i1`` .. ``h1``, ``i2`` ...), which the parser reads back as one index.

    >>> letter_for(0), letter_for(25), letter_for(26), letter_for(53)
    ('i', 'h', 'i1', 'j2')
    """
    if k < len(LETTERS):
        return LETTERS[k]
    return f"{LETTERS[k % len(LETTERS)]}{k // len(LETTERS)}"


def letters_for(spec: Sequence[int]) -> str:
    """Index letters for an int spec (0 -> i, 1 -> j, ...).

    >>> letters_for((0, 1, 27))
    'ijj1'
    """
    return "".join(letter_for(k) for k in spec)


def einsum_letters(spec: Sequence[int]) -> str:
    """Int letters as an einsum string for NumPy and opt_einsum (0 -> a, 1 -> b, ...).

    >>> einsum_letters((0, 1, 0))
    'aba'
    """
    symbols = _EINSUM_SYMBOLS
    return "".join([symbols[k] if k < len(symbols) else opt_einsum.get_symbol(k) for k in spec])


#: opt_einsum's symbols of the first letters, looked up instead of asked for (a
#: compiled plan of a 100,000-term sum writes hundreds of thousands of these)
_EINSUM_SYMBOLS = tuple(opt_einsum.get_symbol(k) for k in range(256))


def format_number(value: int | float) -> str:
    """A number as the language writes it (``repr`` keeps floats exact).  ``inf``
    and ``nan`` have no spelling in the language; they print as Python does.

    >>> format_number(3), format_number(0.1), format_number(float("inf"))
    ('3', '0.1', 'inf')
    """
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def format_exact(value: int | float) -> str:
    """:func:`format_number`, except that a float rounded from a fraction whose decimals never
    end is written as that fraction, in parentheses so that it reads as one number:
    ``det(X)^(1/3)`` rather than ``det(X)^0.3333333333333333`` (parsing it gives the same float).

    >>> format_exact(1 / 3), format_exact(-2 / 3), format_exact(0.25), format_exact(2)
    ('(1/3)', '(-2/3)', '0.25', '2')
    """
    fraction = small_fraction(value)
    if fraction is None:
        return format_number(value)
    return f"({fraction[0]}/{fraction[1]})"


def short(node: object, limit: int = 60, fallback: str | None = None) -> str:
    """The text of ``node`` for a message, cut to ``limit`` characters (``...``
    marks a cut).  With ``fallback``, a node whose text cannot be built (too large
    to print) is described by ``fallback`` instead of raising.

    >>> short("x *(i,ij->j) A *(j,j->) x", 12)
    'x *(i,ij-...'
    """
    try:
        text = str(node)
    except Exception:  # noqa: BLE001 - too large to print: the caller's fallback
        if fallback is None:
            raise
        return fallback
    return text if len(text) <= limit else text[: limit - 3] + "..."


def quoted(node: object, limit: int = 60) -> str:
    """``short(node, limit)`` in backquotes, as error messages quote an expression.

    >>> quoted("A *(ij,j->i) x")
    '`A *(ij,j->i) x`'
    """
    return f"`{short(node, limit)}`"
