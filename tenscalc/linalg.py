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

Their errors (a matrix with a NaN or inf entry, a singular one) are said alike by every
runner, naming the matrix (:func:`matrix_label`): ``tc.evaluate`` and ``tc.compile``'s
backends call :func:`matrix_error`, the code ``tc.to_python`` writes embeds its text
(:data:`MATRIX_ERROR_SOURCE`).

>>> str(matrix_error("inv", "A", "singular"))
'inv(A): the matrix A is singular'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import EvaluationError
from .printing.text import text_length, to_text

#: the errors of inv, det and adj of a matrix: one text, which ``tc.evaluate`` and every
#: backend of ``tc.compile`` run (exec'd below) and the code ``tc.to_python`` writes embeds
#: (:data:`tenscalc.compiler.generated.LINALG_HELPER`), so that every runner says the same words
MATRIX_ERROR_SOURCE = '''
_matrix_problems = {
    "finite": "has an entry that is not finite (NaN or inf)",
    "singular": "is singular",
    "svd": "has an SVD that did not converge",
}


def _matrix_error(what, label, problem):
    """The error of what (inv, det or adj) of the matrix label (None: unnamed) that problem
    ("finite", "singular" or "svd") names."""
    named = f"{what}({label}): the matrix {label}" if label else f"{what}: the matrix"
    return _EvaluationError(f"{named} {_matrix_problems[problem]}")
'''

_namespace: dict[str, Any] = {"_EvaluationError": EvaluationError}
exec(compile(MATRIX_ERROR_SOURCE, "<tenscalc matrix errors>", "exec"), _namespace)  # noqa: S102 - the text above
#: :data:`MATRIX_ERROR_SOURCE`'s function itself
matrix_error = _namespace["_matrix_error"]

#: the longest text of a computed matrix an error quotes (longer ones are cut, ``...`` marking the cut)
LABEL_LENGTH = 40


def matrix_label(node: Any) -> str:
    """How the errors of ``inv``, ``det`` and ``adj`` name their matrix ``node``: an input by
    its name, a computed matrix by its text cut to :data:`LABEL_LENGTH` characters (a huge one,
    whose text would cost more than the error is worth, by its kind).

    >>> import tenscalc as tc
    >>> A, B = tc.var("A", 2), tc.var("B", 2)
    >>> matrix_label(A), matrix_label(A + B)  # a sum prints in the canonical order of its terms
    ('A', 'B + A')
    >>> matrix_label(tc.parse("exp(A) + exp(B) *(ij,jk->ik) A + B *(ij,jk->ik) B", {"A": 2, "B": 2}))
    'B *(ij,jk->ik) B + exp(A) + exp(B) *(...'
    """
    if text_length(node) > 20 * LABEL_LENGTH:  # an estimate, linear in the DAG: a shared DAG's text is exponential
        return f"<a {node.op} node>"
    text = to_text(node)
    return text if len(text) <= LABEL_LENGTH else text[: LABEL_LENGTH - 3] + "..."


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
