"""Shapes given by hand (``CompiledFunction.cost``, ``tc.to_python(shapes=...)``), checked.

A length must be a non-negative integer: ``(5, -3)`` or ``(3.5,)`` once gave negative flops
or a length silently truncated to 3.
"""

from __future__ import annotations

import operator
from typing import Any

from ..errors import TensCalcError


def lengths(name: str, value: Any, error: type[TensCalcError] = TensCalcError) -> tuple[int, ...]:
    """The shape ``value`` given for variable ``name`` as a tuple of ints (an array given
    in its place stands for its own shape), or ``error`` saying what is wrong with it.

    >>> import numpy as np
    >>> lengths("X", (5, 3)), lengths("X", np.ones((5, 3)))
    ((5, 3), (5, 3))
    >>> lengths("X", (5, -3))
    Traceback (most recent call last):
    ...
    tenscalc.errors.TensCalcError: the shape of 'X' must be a tuple of lengths (integers >= 0), not (5, -3)
    """
    if hasattr(value, "shape") and not isinstance(value, (tuple, list)):  # NumPy, torch, JAX ... arrays
        value = tuple(value.shape)
    try:
        shape = tuple(operator.index(n) for n in value)
    except TypeError:
        shape = None
    if shape is None or any(n < 0 for n in shape) or isinstance(value, (str, bytes)):
        raise error(f"the shape of '{name}' must be a tuple of lengths (integers >= 0), not {value!r}")
    return shape
