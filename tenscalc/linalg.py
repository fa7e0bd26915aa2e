"""``inv`` and ``det`` for every floating dtype.

LAPACK (behind NumPy, PyTorch, JAX and CuPy alike) factorises float32, float64,
complex64 and complex128 only; ``np.linalg.inv`` of a float16 or longdouble array
raises a bare ``TypeError``.  tenscalc computes instead: the matrix is converted
to the nearest dtype LAPACK has (float16 and bfloat16 up to float32; longdouble
down to float64, whose precision the factorisation then has) and the result is
converted back, so the result keeps the input's dtype as every other operation
does.

>>> import numpy as np
>>> from tenscalc.linalg import numpy_inv
>>> numpy_inv(np.eye(2, dtype=np.float16) * 2)
array([[0.5, 0. ],
       [0. , 0.5]], dtype=float16)
"""

from __future__ import annotations

import numpy as np

#: dtype name -> the dtype LAPACK factorises in its place
LAPACK_DTYPE = {
    "float16": "float32",
    "bfloat16": "float32",
    "float96": "float64",
    "float128": "float64",
    "complex192": "complex128",
    "complex256": "complex128",
}


def lapack_dtype(name: str) -> str | None:
    """The dtype to factorise a ``name`` matrix in, or None when LAPACK takes it as it is.

    >>> lapack_dtype("float16"), lapack_dtype("float64")
    ('float32', None)
    """
    return LAPACK_DTYPE.get(name)


def _numpy_linalg(function, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    wider = lapack_dtype(x.dtype.name)
    if wider is None:
        return np.asarray(function(x))
    return np.asarray(function(x.astype(wider))).astype(x.dtype)


def numpy_inv(x: np.ndarray) -> np.ndarray:
    """``np.linalg.inv`` in the input's dtype, float16 and longdouble included."""
    return _numpy_linalg(np.linalg.inv, x)


def numpy_det(x: np.ndarray) -> np.ndarray:
    """``np.linalg.det`` (a 0-d array) in the input's dtype, float16 and longdouble included.

    >>> numpy_det(np.eye(3, dtype=np.longdouble) * 2).dtype == np.longdouble
    True
    """
    return _numpy_linalg(np.linalg.det, x)
