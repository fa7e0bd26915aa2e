"""The face of an expression: its Python operators and its display hooks.

:class:`tenscalc.core.nodes.Expr` is the interned DAG node; what a user *does*
with one (``A @ x``, ``x + 1``, ``X.T``, ``x[1:]``, ``print(f)``, showing it in a
notebook) is policy of the layers above the foundation: the builder, the NumPy
style API and the printers.  ``Expr`` inherits that behaviour from
:class:`ExprFace`, so that ``core/nodes.py`` imports nothing above ``core/``.
(SymPy does the same with ``sympy.core._print_helpers.Printable``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .nodes import Expr

PRINTERS: dict[str, Callable[..., str | None]] = {}
"""The LaTeX and drawing printers of an expression's face, by name: ``latex``
(``latex(expr, notation)``), ``notebook_latex``, ``svg`` and ``html`` (a drawing).

The printing package fills it when it is imported, and ``import tenscalc`` (which
any import of a submodule runs first) imports it: so the foundation never imports
the LaTeX printer or the drawing, and their many modules stay out of the face's
import cycle.  A name with no entry falls back to plain text in a notebook.
"""


OPERATIONS: dict[str, Callable[..., Any]] = {}
"""Operations of the layers above that an expression's face offers by a method name:
``diff`` (``diff(expr, wrt, n)``) and ``derivative`` (``tc.derivative`` itself, for the
parsed ``Problem.derivative``), registered by ``tenscalc.calculus.api`` as the printers
are, so that the calculus stays out of the face's import cycle and the front end never
imports the calculus."""


class ExprFace:
    """Operators and display hooks of :class:`~tenscalc.core.nodes.Expr`.

    Every method imports what it needs when it is called: these deferred imports
    are the only references of the foundation (``tenscalc/core/``) to the layers
    above it, and they are all here:

    * ``tenscalc.frontend.builder``: ``+ - * / **`` and unary ``-`` (numbers
      broadcast, sums chain flat as the parser builds them);
    * ``tenscalc.frontend.numpy_api``: ``@``, ``.T``, ``.sum()``, ``[...]``
      indexing and NumPy's ``__array_ufunc__`` / ``__array_function__`` protocol;
    * ``tenscalc.printing.text``: ``str`` and ``repr``;

    LaTeX (``to_latex`` and the notebook's LaTeX) and the notebook's drawings
    (SVG and HTML) are not imported: ``tenscalc.printing.latex`` and
    ``tenscalc.printing.drawing`` register them in :data:`PRINTERS`.

    (``repr`` also imports ``tenscalc.core.checks`` late, for ``count_nodes``:
    that module imports ``nodes``, which imports this one.)
    """

    __slots__ = ()

    # -- text ----------------------------------------------------------------------------
    def __str__(self) -> str:
        from ..printing.text import to_text

        return to_text(self)

    def __repr__(self) -> str:
        from ..printing.text import text_length, to_text
        from .checks import count_nodes

        variables = ", ".join(f"{k}:{v}" for k, v in self.variables.items())
        text = to_text(self) if text_length(self) < 20_000 else f"... ({count_nodes(self)} nodes)"
        if len(text) > 200:
            text = text[:197] + "..."
        return f"<Expr order={self.order} vars={{{variables}}}: {text}>"

    # -- SymPy's names (issue 25) -------------------------------------------------------
    def diff(self, wrt: Any, n: int = 1) -> Expr:
        """The derivative by ``wrt`` (SymPy's ``f.diff(x)``); ``n`` times for ``n > 1``.

        >>> import tenscalc as tc
        >>> print(tc.parse("x'*x").diff("x"))
        2 *(,i->i) x
        """
        return OPERATIONS["diff"](self, wrt, n)  # type: ignore[no-any-return]

    @property
    def free_symbols(self) -> set[str]:
        """The names of the variables (SymPy's ``free_symbols``; ``variables`` has their orders)."""
        return set(self.variables)

    def __getattr__(self, name: str) -> Any:
        hint = _OTHER_NAMES.get(name)
        if hint is None:
            raise AttributeError(f"'Expr' object has no attribute {name!r}")
        raise AttributeError(f"'Expr' object has no attribute {name!r}; {hint}")

    # -- arithmetic (tenscalc/frontend/builder.py) ---------------------------------------
    def __add__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.add(self, other)

    def __radd__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.add(other, self)

    def __sub__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.sub(self, other)

    def __rsub__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.sub(other, self)

    def __mul__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.multiply(self, other)

    def __rmul__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.multiply(other, self)

    def __truediv__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.divide(self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.divide(other, self)

    def __pow__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.power(self, other)

    def __rpow__(self, other: Any) -> Expr:
        from ..frontend import builder

        return builder.power(other, self)

    def __neg__(self) -> Expr:
        from ..frontend import builder

        return builder.negate(self)

    def __pos__(self) -> Expr:
        return self

    def __abs__(self) -> Expr:
        """``abs(x)``: the entrywise absolute value, as ``tc.abs(x)`` and NumPy's ``abs``."""
        from ..frontend import builder

        return builder.abs(self)

    # -- NumPy style (tenscalc/frontend/numpy_api.py) ------------------------------------
    def __matmul__(self, other: Any) -> Expr:
        from ..frontend import numpy_api

        return numpy_api.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Expr:
        from ..frontend import numpy_api

        return numpy_api.matmul(other, self)

    @property
    def T(self) -> Expr:  # noqa: N802 - NumPy's name
        """The transpose (axes reversed, as NumPy's ``.T``)."""
        from ..frontend import numpy_api

        return numpy_api.transpose(self)

    def sum(self, axis: int | tuple[int, ...] | None = None) -> Expr:
        """The sum of all entries, or over ``axis`` (see ``tenscalc.sum``)."""
        from ..frontend import numpy_api

        return numpy_api.sum(self, axis)

    def __getitem__(self, key: Any) -> Expr:
        """A slice or an entry, NumPy's basic indexing: ``x[1:]``, ``X[:, 0]``, ``x[::2]``."""
        from ..frontend import numpy_api

        return numpy_api.getitem(self, key)

    def __iter__(self) -> Any:  # without this, Python would iterate through __getitem__ forever
        raise TypeError("a tenscalc expression cannot be iterated; slice it (x[1:]) or evaluate it")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Expr:
        from ..frontend import numpy_api

        return numpy_api.array_ufunc(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from ..frontend import numpy_api

        raise numpy_api.numpy_refusal(func.__name__)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "a tenscalc expression is symbolic and has no array value: evaluate it with tc.evaluate "
            "(or tc.compile) to get numbers"
        )

    # -- notebooks (tenscalc/printing/latex.py, tenscalc/printing/drawing.py) --------------
    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython plain-text display
        p.text(repr(self))

    def to_latex(self, notation: str = "auto") -> str:
        """The expression in LaTeX (see ``tenscalc.latex``)."""
        return str(PRINTERS["latex"](self, notation))

    def _repr_latex_(self) -> str | None:
        return _print("notebook_latex", self)

    def _repr_svg_(self) -> str | None:  # a drawing of the DAG (needs Graphviz)
        return _print("svg", self)

    def _repr_html_(self) -> str | None:  # text and drawing; None falls back to LaTeX
        return _print("html", self)


def _print(name: str, expr: Any) -> str | None:
    printer = PRINTERS.get(name)
    return printer(expr) if printer is not None else None


#: what SymPy, NumPy and PyTorch users call on an expression, and the tenscalc way
_OTHER_NAMES = {
    "subs": "evaluate with values instead, tc.evaluate(f, x=array), or build f from a Python function "
    "and call it with another expression",
    "evalf": "tc.evaluate(f, x=array, ...) (values for every variable)",
    "doit": "expressions are built at once; tc.simplify(f) simplifies",
    "lambdify": "tc.lambdify([x, A], f) or tc.compile(f)",
    "backward": "tc.gradient(f, 'x') (symbolic: no autograd tape)",
    "grad": "tc.gradient(f, 'x') or tc.grad(f, 'x') (a compiled function)",
    "numpy": "tc.evaluate(f, x=array, ...) gives an array",
    "shape": "f.order is its number of axes; lengths come from the arrays at evaluation",
    "ndim": "f.order (the number of axes)",
    "free_variables": "f.variables",
    "atoms": "f.variables (a dict name -> order)",
}
