"""Hessian-vector products built symbolically, without the Hessian.

``hvp(f, x)`` is the gradient by ``x`` of the scalar ``<grad f, v>``, where ``v``
is a new variable of ``x``'s shape: ``H v = d/dx (g · v)``.  Evaluating it costs
a small multiple of evaluating ``f`` (reverse mode applied to a scalar), so the
Hessian — order 4 for a matrix variable — is never formed.

The module is not called ``hvp`` so that ``tenscalc.hvp`` (the function) does
not shadow it.

The direction variable is named ``v_<wrt>`` (``v_W`` for ``W``).  Names written
in the language are letters and digits only, so an underscore cannot clash with
a parsed variable; if an expression built in Python already uses that name,
underscores are added (``v__W``) until it is new.  Pass ``direction=`` to choose
the name yourself.

>>> import numpy as np, tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> hv = tc.hvp(f, "x")
>>> sorted(hv.variables)
['A', 'v_x']
>>> tc.evaluate(hv, {"A": np.eye(2), "v_x": [1.0, 3.0], "x": [0.0, 0.0]}).tolist()
[2.0, 6.0]
"""

from __future__ import annotations

from ..core import nodes as N
from ..core.nodes import Expr
from ..errors import SemanticError
from .api import derivative, gradient, resolve_wrt


def direction_name(expr: Expr, wrt: str | Expr) -> str:
    """The name ``hvp`` gives the direction variable for ``expr`` and ``wrt``."""
    x = resolve_wrt(expr, wrt)
    taken = expr.variables
    name = f"v_{x.arg[0]}"
    while name in taken:
        name = name.replace("_", "__", 1)
    return name


def hvp(expr: Expr, wrt: str | Expr, direction: str | None = None) -> Expr:
    """The Hessian-vector product ``H v`` of a scalar expression, as an expression.

    Parameters
    ----------
    expr : Expr
        A scalar (order 0) expression.
    wrt : str or Expr
        The variable ``x``; the result has its shape.
    direction : str, optional
        Name of the direction variable (default ``v_<wrt>``, see the module notes).

    Returns
    -------
    Expr
        ``sum_b H[a, b] v[b]`` with ``H`` the Hessian by ``x``, built as the
        gradient of ``gradient(expr, x) · v``; evaluate or compile it with a
        value for the direction variable too.

    Examples
    --------
    >>> import numpy as np, tenscalc as tc
    >>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
    >>> hv = tc.hvp(f, "x")       # (A + A^T) v, without forming the Hessian
    >>> tc.evaluate(hv, x=np.ones(2), A=np.array([[1.0, 2.0], [3.0, 4.0]]), v_x=np.array([1.0, 0.0]))
    array([2., 5.])
    """
    if not isinstance(expr, Expr) or expr.order != 0:
        raise SemanticError("hvp needs a scalar (order 0) expression")
    x = resolve_wrt(expr, wrt)
    name = direction if direction is not None else direction_name(expr, x)
    if name == x.arg[0] or (name in expr.variables and expr.variables[name] != x.order):
        raise SemanticError(f"the direction variable '{name}' clashes with a variable of the expression")
    v = N.var(name, x.order)
    spec = tuple(range(x.order))
    g = gradient(expr, x)
    return derivative(N.mul((g, v), (spec, spec), ()), x)
