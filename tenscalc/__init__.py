"""tenscalc: symbolic derivatives of tensor expressions in Einstein-like notation.

The package is a pipeline and its folders are the stages: ``frontend`` (text or
Python in, DAG out) -> ``calculus`` (reverse-mode derivatives) -> ``simplifier``
-> evaluation (``interpreter``, ``compiler``), ``printing`` and ``convexity``, all
on one kind of object, the interned immutable node of ``core`` (the foundation,
which imports nothing above it).  Every stage dispatches on a node's kind through
a table; ``docs/architecture.md`` maps the modules and lists the tables.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> f.order, f.variables
(0, {'A': 2, 'x': 1})
>>> float(tc.evaluate(f, {"x": [1.0, 2.0], "A": np.eye(2)}))
5.0
"""

from __future__ import annotations

from .adapters import ScipyObjective, grad, hvp, scipy_objective, value_and_grad
from .allocator import keep_freed_memory
from .calculus.api import derivative, gradient, hessian, jacobian, nth_derivative
from .calculus.elimination import jacobian_accumulation
from .compiler import CompiledFunction, compile
from .compiler.codegen import to_python
from .core.checks import count_edges, count_nodes
from .core.nodes import Dim, Expr
from .errors import EvaluationError, ParseError, SemanticError, TensCalcError, TensCalcWarning
from .frontend.builder import (
    abs,
    adj,
    arccos,
    arcsin,
    arctan,
    constant,
    cos,
    delta,
    det,
    einsum,
    exp,
    inv,
    log,
    relu,
    sign,
    sin,
    tan,
    tanh,
    var,
)
from .frontend.numpy_api import diag, dot, logdet, logsumexp, norm, outer, sigmoid, softplus, sqrt, sum, trace
from .frontend.typecheck import Problem, build_problem
from .interpreter import evaluate
from .limits import memory_limit, set_memory_limit
from .printing.drawing import dot_source, to_dot
from .printing.latex import latex
from .printing.matrix_notation import to_matrix_notation
from .printing.text import to_text
from .progress import set_verbosity, verbose
from .simplifier import simplify
from .transforms import lambdify

__version__ = "0.1.0"


def parse(text: str, orders: dict[str, int] | None = None, *, letter_rule: bool = True) -> Expr:
    """Parse an expression (optionally with its own ``declare`` block) into a DAG.

    Parameters
    ----------
    text : str
        A bare expression such as ``"A *(ij,j->i) x"`` or a whole problem
        ``"declare A 2 x 1 expression A *(ij,j->i) x"``.
    orders : dict, optional
        Orders of variables not declared in the text.
    letter_rule : bool
        Give every name that is neither declared nor in ``orders`` matrixcalculus.org's
        type by its first letter (``a``-``g`` scalars, ``h``-``z`` vectors, ``A``-``Z``
        matrices; the default).  ``False``: every name must be declared.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.parse("A *(ij,j->i) x", {"A": 2, "x": 1}).order
    1
    >>> tc.parse("norm2(A*x - b)^2", {"b": 1}).variables     # A and x by their letters
    {'A': 2, 'b': 1, 'x': 1}
    """
    return build_problem(text, orders, letter_rule=letter_rule).expr


def parse_problem(text: str, orders: dict[str, int] | None = None, *, letter_rule: bool = True) -> Problem:
    """Parse a ``declare … expression … [derivative wrt …]`` problem (``orders`` and
    ``letter_rule`` as in ``parse``).

    Examples
    --------
    >>> import tenscalc as tc
    >>> p = tc.parse_problem("declare X 2 expression log(det(X)) derivative wrt X")
    >>> p.orders, p.wrt
    ({'X': 2}, 'X')
    """
    return build_problem(text, orders, letter_rule=letter_rule)


from .convexity import check_convexity  # noqa: E402 - the checker builds on everything above

# The public API, once, by pipeline stage.
__all__ = [
    # the foundation: expressions and errors
    "Expr", "Dim", "count_nodes", "count_edges",
    "TensCalcError", "TensCalcWarning", "ParseError", "SemanticError", "EvaluationError",
    # front end: text, or Python in the language's and NumPy's spellings
    "parse", "parse_problem", "Problem", "var", "constant", "delta", "einsum",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "tanh", "exp", "log", "abs", "sign", "relu",
    "inv", "det", "adj",
    "sum", "trace", "diag", "dot", "outer", "norm", "sqrt", "sigmoid", "softplus", "logsumexp", "logdet",
    # calculus and simplifier
    "derivative", "gradient", "jacobian", "hessian", "nth_derivative", "jacobian_accumulation", "hvp", "simplify",
    # evaluation: the interpreter, the compiler, memory
    "evaluate", "compile", "CompiledFunction", "memory_limit", "set_memory_limit", "keep_freed_memory",
    # the function API of JAX, SymPy and SciPy users
    "grad", "value_and_grad", "lambdify", "scipy_objective", "ScipyObjective",
    # printing and generated code
    "to_text", "to_matrix_notation", "latex", "to_dot", "dot_source", "to_python",
    # convexity
    "check_convexity",
    # progress and logging
    "set_verbosity", "verbose",
]  # fmt: skip

#: names JAX, SymPy and PyTorch users reach for, and the tenscalc way (module ``__getattr__``)
OTHER_LIBRARIES = {
    "vmap": "tenscalc has no vmap: give the expression a batch axis (X *(bi,ij->bj) W, or X @ W for a "
    "matrix of rows) and its derivatives carry it",
    "jit": "tc.compile(expr) (or tc.grad(fun)) derives and compiles once and reuses the plan for every call: "
    "there is nothing to jit",
    "jacfwd": "tc.jacobian(expr, 'x') (an expression; tc.compile it), or tc.jacobian(expr, 'x', mode='forward')",
    "jacrev": "tc.jacobian(expr, 'x') (an expression; tc.compile it)",
    "jvp": "tc.derivative(f, 'x') contracted with a direction: tc.einsum, or tc.hvp for Hessian-vector products",
    "vjp": "tc.gradient(v @ f, 'x') for a direction v (a new tc.var)",
    "diff": "tc.derivative(f, 'x') (or f.diff('x'))",
    "subs": "evaluate with values instead: tc.evaluate(f, x=array); to change a variable, build f from Python "
    "(def f(x): ...) and call it with another expression",
    "free_symbols": "f.variables (a dict name -> order) or f.free_symbols",
    "symbols": "tc.var('x', 1) (the order, the number of axes, is part of a variable)",
    "Symbol": "tc.var('x', 0) for a scalar, tc.var('x', 1) for a vector, tc.var('X', 2) for a matrix",
    "MatrixSymbol": "tc.var('X', 2) (lengths come from the arrays at evaluation)",
    "pprint": "print(f) (einsum language), tc.to_matrix_notation(f), tc.latex(f)",
    "latex_print": "tc.latex(f)",
    "backward": "tc.grad(fun) or tc.gradient(f, 'x'): derivatives are symbolic, no autograd tape",
    "autograd": "tc.grad(fun) or tc.gradient(f, 'x'): derivatives are symbolic, no autograd tape",
    "gradient_check": "tenscalc.testing.check_derivative(f, 'x') (finite differences)",
}


def __getattr__(name: str) -> object:
    """A helpful ``AttributeError`` for the names of JAX, SymPy and PyTorch (``tc.vmap``...)."""
    hint = OTHER_LIBRARIES.get(name)
    if hint is None:
        raise AttributeError(f"module 'tenscalc' has no attribute {name!r}")
    raise AttributeError(f"module 'tenscalc' has no attribute {name!r}; {hint}")
