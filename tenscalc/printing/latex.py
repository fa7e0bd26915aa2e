"""LaTeX for expressions: index notation always, matrix notation when it reads as one.

``latex`` is the entry point: it writes the matrix reading of
:mod:`.matrix_forms` where one exists (``"auto"``), else the index notation of
:mod:`.latex_index`.  So the Hessian of ``x *(i,ij->j) A *(j,j->) x`` prints as
``A + A^\\top`` and the Hessian of logistic regression as
``X^\\top \\operatorname{diag}(\\ldots) X``.  This module also names shared
subexpressions (``temporaries``) and turns the matrix reading into plain text
(``matrix_text``).  Numbers and names are spelled by ``format_number`` and
``format_name`` (from :mod:`.latex_pieces`).
"""

from __future__ import annotations

import re

from ..core.face import PRINTERS
from ..core.nodes import Expr, topological
from ..errors import TensCalcError
from .latex_index import IndexPrinter
from .latex_pieces import ATOM, FUNCTION_LATEX, POW, format_name, format_number
from .matrix_forms import Reading, Readings, matrix_readings, read_node
from .text import INLINE, MARK, text_length

__all__ = ["MAX_TEXT", "NOTATIONS", "format_name", "format_number", "latex", "matrix_text", "notebook_latex"]

NOTATIONS = ("auto", "index", "matrix")
MAX_TEXT = 200_000


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
        reading = readings.get(expr)
        if reading is not None:
            return _with_temporaries(expr, readings) if temporaries else readings.expand(reading.text)
        if notation == "matrix":
            raise TensCalcError(
                "this expression has no matrix notation (it has a node of order 3 or more, or a product that "
                "is not a chain of matrix products); use notation='index'"
            )
        return IndexPrinter(expr, readings).run()
    return IndexPrinter(expr, matrix_readings(expr)).run()


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
    """About how many characters a LaTeX formula shows (markup not counted); a text
    holding a mark stands for more than ``INLINE`` characters: long enough to name."""
    if MARK in text:
        return INLINE
    return len(re.sub(r"\\(?:left|right|operatorname|mathbf)|[{}\\ ]", "", text))


def _uses(root: Expr, named: set[Expr]) -> dict[Expr, int]:
    """How often each node's text appears once every named node is written once."""
    count: dict[Expr, int] = {root: 1}
    for node in reversed(topological(root)):  # parents before children
        times = 1 if node in named else count.get(node, 0)
        for child in node.children:
            count[child] = count.get(child, 0) + times
    return count


def _name_temporaries(root: Expr, readings: dict[Expr, Reading | None]) -> set[Expr]:
    """The nodes to name: used twice or more in the formula, and long.

    A node is judged by its text with its own named parts already short; naming a
    node can leave a part of it used once, which is then written out again.
    """
    nodes = topological(root)
    candidates = {
        n for n in nodes if n is not root and n.op not in ("var", "const", "delta") and readings.get(n) is not None
    }
    named: set[Expr] = set()
    for _ in range(4):  # naming a parent can leave a child used once: drop it and redo
        uses = _uses(root, named)
        named = {k for k in named if uses.get(k, 0) >= 2}
        new = Readings()
        chosen: set[Expr] = set()
        for node in nodes:
            reading = read_node(node, new)
            if (
                node in candidates
                and reading is not None
                and (
                    node in named or (uses.get(node, 0) >= 2 and _visible_length(reading.text) >= TEMPORARY_MIN_LENGTH)
                )
            ):
                chosen.add(node)
            new[node] = reading
        if chosen == named:
            break
        named = chosen
    return named


def _with_temporaries(root: Expr, readings: Readings) -> str:
    """The matrix formula with shared subexpressions named (see ``latex``)."""
    named = _name_temporaries(root, readings)
    if not named:
        return readings.expand(readings[root].text)
    nodes = topological(root)
    taken = {format_name(name) for name, _ in root.varset}
    prefix = "t" if not any(t.startswith("t_") for t in taken) else "\\tau"
    new = Readings()
    definitions: list[str] = []
    for node in nodes:
        reading = read_node(node, new)
        if node in named and reading is not None:
            name = f"{prefix}_{{{len(definitions)}}}"
            definitions.append(f"{name} = {new.expand(reading.text)}")
            symmetric = reading.kind == 2 and reading.t == reading.text
            t = name if symmetric else None
            reading = Reading(name, ATOM, reading.kind, t, ATOM if symmetric else POW)
        new[node] = reading
    main = new[root]
    return f"{new.expand(main.text)} \\quad\\text{{where}}\\quad " + ",\\quad ".join(definitions)


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


# the face of every Expr (to_latex and the notebook hooks) reads these
PRINTERS.update(latex=latex, notebook_latex=notebook_latex)
