"""How generated code spells the language's elementwise functions in NumPy.

One spelling for both writers of Python source: :mod:`.codegen` (``tc.to_python``
without shapes) and :mod:`.source` (with shapes), read from each function's spec
(``numpy_source`` in :mod:`tenscalc.core.functions`).  The generated module imports
NumPy as ``_np``.
"""

from __future__ import annotations

from ..core.functions import FUNCTIONS

SQRT_SOURCE = "_np.sqrt({})"
"""``sqrt`` is no function of the language (a power of 1/2), but the writers spell it too."""


def numpy_call(name: str, argument: str) -> str:
    """Source applying function ``name`` to the Python expression ``argument``.

    >>> numpy_call("exp", "x"), numpy_call("relu", "x")
    ('_np.exp(x)', '_np.maximum(x, 0.0)')
    """
    source = SQRT_SOURCE if name == "sqrt" else FUNCTIONS[name].numpy_source
    return source.format(argument)
