"""The error family of tenscalc: every problem a user can cause is a ``TensCalcError``."""

from __future__ import annotations


class TensCalcError(ValueError):
    """Base class of every error tenscalc raises for bad input.

    Examples
    --------
    >>> import tenscalc as tc
    >>> try:
    ...     tc.parse("x *(i,i) y", {"x": 1, "y": 1})
    ... except tc.TensCalcError as error:
    ...     print(error)
    expected '->' after the input index strings but found ')' (line 1, column 8)
      x *(i,i) y
             ^
    """


class ParseError(TensCalcError):
    """The text is not a well-formed tenscalc expression or problem.

    ``position`` is the 0-based character offset of the offending token and the
    message shows the source line with a caret under it.
    """

    def __init__(self, message: str, text: str | None = None, position: int | None = None):
        self.reason = message
        self.text = text
        self.position = position
        super().__init__(_with_location(message, text, position))


class SemanticError(TensCalcError):
    """The expression is well formed but meaningless: wrong orders, unknown names, ..."""

    def __init__(self, message: str, text: str | None = None, position: int | None = None):
        self.reason = message
        self.text = text
        self.position = position
        super().__init__(_with_location(message, text, position))


class EvaluationError(TensCalcError):
    """The arrays given for evaluation do not fit the expression."""


def line_and_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, position) + 1
    start = text.rfind("\n", 0, position) + 1
    return line, position - start + 1


def _with_location(message: str, text: str | None, position: int | None) -> str:
    """Append the source line and a caret under ``position`` to ``message``."""
    if text is None or position is None:
        return message
    position = max(0, min(position, len(text)))
    line, column = line_and_column(text, position)
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    source_line = text[start : end if end != -1 else len(text)].expandtabs(1)
    return f"{message} (line {line}, column {column})\n  {source_line}\n  {' ' * (column - 1)}^"


class TensCalcWarning(UserWarning):
    """Something computed, but not quite as asked (``backend="jax"`` downcasting float64
    inputs to float32 while JAX's 64-bit mode is off)."""
