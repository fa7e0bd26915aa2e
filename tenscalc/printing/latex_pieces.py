"""LaTeX spelling shared by both notations: numbers, names, subscripts, precedence
and parentheses, sums of terms, products and powers.

Every piece of LaTeX travels with its precedence: what it may stand next to without
parentheses (``wrap`` adds them where needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.exact import small_fraction
from ..core.functions import SpecTable
from ..core.nodes import Expr

# precedence: what a piece of LaTeX may stand next to without parentheses
# (NEG: one term with a leading minus, which a sum may absorb: ``a - x``)
SUM, NEG, BIGSUM, HADAMARD, PROD, POW, ATOM = 0, 1, 2, 3, 4, 5, 6

GREEK = frozenset(
    "alpha beta gamma epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi varphi chi psi omega Gamma Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()
)
FUNCTION_LATEX = SpecTable("latex")  # each function's LaTeX operator, from its spec (abs is |x|)


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
    fraction = small_fraction(value)
    if fraction is not None:  # 1/3 rather than 0.3333333333333333
        p, q = fraction
        return f"{'-' if p < 0 else ''}\\frac{{{abs(p)}}}{{{q}}}"
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


def subscript(letters: Sequence[str]) -> str:
    joined = "".join(letters) if all(len(x) == 1 for x in letters) else ",".join(letters)
    return f"_{{{joined}}}" if letters else ""


def wrap(text: str, prec: int, minimum: int) -> str:
    return text if prec >= minimum else f"\\left({text}\\right)"


def coefficient_prefix(coef: int | float) -> str:
    if coef == 1:
        return ""
    if coef == -1:
        return "-"
    return format_number(coef) + " "


def common_factor(coefficients: Sequence[int | float]) -> int | float:
    """The factor a reader pulls out of a sum: the shared magnitude (``0.5 a + 0.5 b``), or
    the greatest common divisor of integers (``2 a - 4 b``); negative when every term is.
    1 when there is none (a single term, or nothing shared).

    >>> common_factor([0.5, 0.5]), common_factor([2, -4]), common_factor([-3, -3]), common_factor([1, 2])
    (0.5, 2, -3, 1)
    """
    if len(coefficients) < 2:
        return 1
    magnitudes = {abs(c) for c in coefficients}
    factor: int | float = 1
    if len(magnitudes) == 1:
        factor = magnitudes.pop()
    elif all(isinstance(c, int) for c in coefficients):
        factor = math.gcd(*(int(c) for c in coefficients))
    if factor in (0, 1) or not math.isfinite(factor):
        return 1
    return -factor if all(c < 0 for c in coefficients) else factor


def join_terms(terms: list[tuple[int | float, str, int]]) -> tuple[str, int]:
    """``c1 t1 + c2 t2 - ...`` from (coefficient, text, precedence) triples; a factor
    common to every coefficient is written once in front (``0.5 (A^\top x + A x)``)."""
    factor = common_factor([coef for coef, _, _ in terms])
    if factor != 1:
        reduced = [(divide_coefficient(coef, factor), text, prec) for coef, text, prec in terms]
        inner, _ = join_terms(reduced)
        text = f"{coefficient_prefix(factor)}\\left({inner}\\right)"
        return text, NEG if factor < 0 else PROD
    parts: list[str] = []
    for i, (coef, text, prec) in enumerate(terms):
        body = wrap(text, prec, NEG if abs(coef) == 1 else BIGSUM)
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


def divide_coefficient(coef: int | float, factor: int | float) -> int | float:
    """``coef / factor`` exactly where both are integers (the factor divides them)."""
    if isinstance(coef, int) and isinstance(factor, int):
        return coef // factor
    quotient = coef / factor
    return int(quotient) if float(quotient).is_integer() else quotient


def display_order(node: Expr) -> list[int]:
    """Summands in reading order: positive before negative, variables first, constants last."""
    keys = [
        (coef < 0, child.op == "const", child.op != "var", k)
        for k, (child, coef) in enumerate(zip(node.children, node.arg))
    ]
    return [key[-1] for key in sorted(keys)]


def negative_constant_exponent(node: Expr) -> int | float | None:
    if node.op == "pow" and node.children[1].op == "const" and node.children[1].arg[0] < 0:
        return node.children[1].arg[0]
    return None


def juxtapose(pieces: list[tuple[str, int]]) -> tuple[str, int]:
    if len(pieces) == 1:
        return pieces[0]
    return " ".join(wrap(text, prec, PROD) for text, prec in pieces), PROD


def power(base: tuple[str, int], exponent: tuple[str, int], e, hadamard: bool) -> tuple[str, int]:
    """``base ^ exponent``; with ``hadamard`` the power is the entrywise one, ``^{\\circ e}``."""
    text, prec = base
    if e == -1 and not hadamard:
        return f"\\frac{{1}}{{{text}}}", ATOM
    if e == 0.5 and not hadamard:
        return f"\\sqrt{{{text}}}", ATOM
    circ = "\\circ " if hadamard else ""
    return f"{wrap(text, prec, ATOM)}^{{{circ}{exponent[0]}}}", POW
