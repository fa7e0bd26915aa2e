"""How generated code spells the language's elementwise functions in NumPy.

One table for both writers of Python source: :mod:`.codegen` (``tc.to_python``
without shapes) and :mod:`.source` (with shapes).  The generated module imports
NumPy as ``_np``.
"""

from __future__ import annotations

NUMPY_FUNCTIONS: dict[str, str] = {
    "sin": "_np.sin",
    "cos": "_np.cos",
    "tan": "_np.tan",
    "arcsin": "_np.arcsin",
    "arccos": "_np.arccos",
    "arctan": "_np.arctan",
    "tanh": "_np.tanh",
    "exp": "_np.exp",
    "log": "_np.log",
    "abs": "_np.abs",
    "sign": "_np.sign",
    "sqrt": "_np.sqrt",
}


def numpy_call(name: str, argument: str) -> str:
    """Source applying function ``name`` to the Python expression ``argument``.

    >>> numpy_call("exp", "x"), numpy_call("relu", "x")
    ('_np.exp(x)', '_np.maximum(x, 0.0)')
    """
    if name == "relu":  # NumPy has no relu: the larger of x and 0
        return f"_np.maximum({argument}, 0.0)"
    return f"{NUMPY_FUNCTIONS[name]}({argument})"
