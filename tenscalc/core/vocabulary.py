"""The vocabulary of tenscalc: node kinds, function names and the language's words.

This module is the bottom of the package: it imports nothing.  Every list of
names that more than one layer needs lives here, once:

* the node kinds of the DAG (``NODE_KINDS``; see :mod:`tenscalc.core.nodes`),
  and the leaves whose axis lengths come from their context;
* the function names of the language: elementwise (``sin`` ...), matrix
  (``inv``, ``det``, ``adj``) and those of matrix notation (``sum``, ``tr`` ...);
* the keywords of a problem text and the words no variable may be named.

>>> "mul" in NODE_KINDS, is_reserved("sin"), is_reserved("sum")
(True, True, False)
"""

from __future__ import annotations

#: Every node kind of the DAG; each rule table (derivatives, evaluators, printers ...)
#: has one entry per kind.
NODE_KINDS = ("var", "const", "delta", "add", "mul", "func", "pow", "inv", "det", "adj", "slice", "embed")
#: Leaves whose dimensions come from the context they are used in.
DIMENSIONED_LEAVES = ("const", "delta")

#: Functions applied entry by entry (the argument of a ``func`` node): the names of the
#: specs in :mod:`tenscalc.core.functions`, whose ``register`` appends a new one here.
ELEMENTWISE_FUNCTIONS = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log", "abs", "sign", "relu",
]  # fmt: skip
#: Functions of a square matrix (``adj(X, k)``: the k-th derivative of ``det``, ``adj(X)`` for k = 1).
MATRIX_FUNCTIONS = ("inv", "det", "adj")
#: Function names of matrix notation, besides the language's own.  They are
#: functions only where a ``(`` follows, so they stay valid variable names.
NOTATION_FUNCTIONS = ("sum", "norm1", "norm2", "tr", "logdet", "diag", "sqrt", "vector", "matrix")

#: The keywords of a problem (``declare x 1 expression ... derivative wrt x``).
KEYWORDS = ("declare", "expression", "derivative", "wrt")


def language_functions() -> tuple[str, ...]:
    """Every name the lexer reads as a function: elementwise, matrix, and ``delta``."""
    return (*ELEMENTWISE_FUNCTIONS, *MATRIX_FUNCTIONS, "delta")


def is_reserved(word: str) -> bool:
    """Whether ``word`` cannot name a variable (a keyword or a function, in any case)."""
    lower = word.lower()
    return lower in KEYWORDS or lower in language_functions()


#: Assumptions that may follow a declared order (``declare X 2 pd``).
ASSUMPTION_WORDS = ("positive", "nonnegative", "negative", "nonpositive", "symmetric", "psd", "pd", "diagonal")
