"""A matrix declared positive definite, on Dask: one Cholesky factor per call, a task of the graph.

``tc.compile(..., backend="dask", assumptions={"K": "pd"})`` factorises ``K`` once per call
(:mod:`.cholesky` decides which steps read the factor), as the NumPy, PyTorch and JAX
backends do, with the NumPy runners' own text (:data:`.generated.CHOLESKY_HELPER`):

* the factor is one task on one block holding the matrix (as dask's ``inv`` and ``det`` take
  it, :meth:`.backends.DaskBackend.checked_linalg`; the memory limit checked): ``cholesky_factor``,
  which checks the declaration too (symmetric, finite, positive definite) and raises NumPy's
  ``EvaluationError``, same message, when dask computes;
* ``inv(K)``, ``det(K)`` and ``log(det(K))`` are tasks reading it (``cholesky_inv``,
  ``cholesky_det``): NumPy's numbers, and ``log(det(K))`` finite where ``det(K)`` overflows.

Dask's arrays are lazy, so the check cannot be raised at the call: the factor is made where
the call checks the declaration (:meth:`.backends.DaskBackend.checked_declaration`), every
block of the matrix handed on waits for a small task that reads it (a result reading ``K``
itself, not its factor, raises all the same), and the factor step of the program finds that
factor again in the checked matrix's graph (:func:`dask_factor`): one factorisation per call.

One factor, two readers: ``cholesky_inv`` spends the factor (LAPACK's ``potri`` overwrites it
and the list marks it spent), while ``cholesky_det`` reads only the diagonal, which the factor
keeps apart, and the matrix where there is no factor to spend (complex: LU).  So the ``inv``
and ``det`` tasks may run in any order, or at once, on one factor without a copy; a second
``inv`` of the same matrix is LU (:func:`.cholesky.plan_factors`).

>>> import numpy as np
>>> from tenscalc.compiler.dask_factor import block_cholesky, block_det
>>> factor = block_cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]), "K")
>>> round(float(block_det(factor, True)[0, 0]), 12)  # log(det) = log 8, from the factor's diagonal
2.07944154168
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .generated import cholesky_det, cholesky_factor, cholesky_inv

#: the names of a checked matrix's blocks and of its factor: the same token after each, so the
#: factor step finds the factor the call's check made (:func:`dask_factor`)
CHECKED, FACTOR = "tenscalc-pd-checked-", "tenscalc-pd-factor-"


@dataclass(frozen=True)
class DaskFactor:
    """The factor of an ``n`` x ``n`` matrix of ``dtype`` (results are in it): ``factor``, a
    1 x 1 dask array of object dtype holding the NumPy runners' factor (a list)."""

    factor: Any
    n: int
    dtype: Any


def checked_with_factor(name: str, x: Any) -> Any:
    """``x`` (a dask array, the value of ``name`` declared positive definite) with every block
    waiting for its factor, which checks it: the factor step finds that factor by its name."""
    import dask.array as da
    from dask.base import tokenize

    token = tokenize(x.name, name)
    factor = _factor_task(name, x, FACTOR + token)
    verdict = da.map_blocks(_block_factored, factor, chunks=((1,), (1,)), dtype=bool)[0, 0]
    return da.blockwise(_block_checked, "ij", x, "ij", verdict, "", dtype=x.dtype, name=CHECKED + token)


def dask_factor(name: str, x: Any) -> DaskFactor:
    """The factor of the dask array ``x``, the value of ``name`` declared positive definite: the
    one its check made (:func:`checked_with_factor`), or a new task that checks it."""
    import dask.array as da

    n = x.shape[0]
    meta = np.empty((0, 0), dtype=object)
    key = FACTOR + x.name[len(CHECKED) :]
    graph = x.dask  # a HighLevelGraph: the check's layers, the factor's among them
    if x.name.startswith(CHECKED) and key in getattr(graph, "layers", ()):
        factor = da.Array(graph, key, ((1,), (1,)), meta=meta)
    else:  # not checked at the call (a matrix of no entries): the factor checks it here
        factor = _factor_task(name, x, None)
    return DaskFactor(factor, n, x.dtype)


def _factor_task(name: str, x: Any, key: str | None) -> Any:
    """The task factorising ``x`` as one block (the memory limit checked), named ``key``."""
    import dask.array as da

    from ..limits import check_shape

    check_shape(x.shape, x.dtype.itemsize, what="the block dask's Cholesky factor computes on")
    meta = np.empty((0, 0), dtype=object)
    whole = x.rechunk(x.shape)
    return da.map_blocks(block_cholesky, whole, name, chunks=((1,), (1,)), dtype=object, meta=meta, name=key)


def dask_factor_inv(factor: DaskFactor) -> Any:
    """``inv`` of the factorised matrix: one block, NumPy's numbers (``cholesky_inv``)."""
    import dask.array as da

    n = factor.n
    return da.map_blocks(block_inv, factor.factor, chunks=((n,), (n,)), dtype=factor.dtype)


def dask_factor_det(factor: DaskFactor, log: bool) -> Any:
    """``det`` (or ``log(det)``) of the factorised matrix, a 0-d dask array."""
    import dask.array as da

    return da.map_blocks(block_det, factor.factor, log, chunks=((1,), (1,)), dtype=factor.dtype)[0, 0]


# the functions dask's tasks run: module-level, so that dask names each task by reference
def block_cholesky(block: np.ndarray, name: str) -> np.ndarray:
    """The NumPy runners' factor of ``block`` (the whole value of ``name``), in a 1 x 1 object
    array, or their error."""
    record = np.empty((1, 1), dtype=object)
    record[0, 0] = cholesky_factor(block, name)
    return record


def block_inv(record: np.ndarray) -> np.ndarray:
    """``inv`` from the factor in ``record`` (``cholesky_inv`` spends it: see the module)."""
    return cholesky_inv(record[0, 0])


def block_det(record: np.ndarray, log: bool) -> np.ndarray:
    """``det`` or ``log(det)`` from the factor's diagonal, as a 1 x 1 block."""
    return np.reshape(cholesky_det(record[0, 0], log), (1, 1))


def _block_factored(record: np.ndarray) -> np.ndarray:
    """True: the factor exists (its task raised otherwise)."""
    return np.ones((1, 1), dtype=bool)


def _block_checked(block: np.ndarray, verdict: np.ndarray) -> np.ndarray:
    """``block`` of a declared matrix, once its factor exists."""
    return block
