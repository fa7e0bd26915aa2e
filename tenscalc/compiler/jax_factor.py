"""A matrix declared positive definite, on JAX: one Cholesky factor per call, checked.

``tc.compile(..., backend="jax", assumptions={"K": "pd"})`` factorises ``K`` once per call
(:mod:`.cholesky` decides which steps read the factor), as the NumPy and PyTorch backends do:

* the factor is XLA's own Cholesky (``jax.lax.linalg.cholesky``: LAPACK's ``potrf`` on a CPU,
  n³/3 flops where an LU factorisation takes 2n³/3);
* ``inv(K)`` on a CPU is LAPACK's ``potri`` of that factor through SciPy, called from the
  program (``jax.pure_callback``): 2n³/3 flops, where XLA's own inverse (``jnp.linalg.inv``,
  or ``cho_solve`` against the identity) solves two triangular systems of n right-hand sides,
  2n³.  Elsewhere (a GPU, or no SciPy) it is ``cho_solve``.  Differentiating through it
  (the caller's ``jax.grad``) uses ``d inv(K) = -inv(K) dK inv(K)``;
* ``det(K)`` and ``log(det(K))`` read the factor's diagonal (the log stays finite where the
  determinant overflows).

The declaration is checked on the data, never trusted: the program computes one flag (the
matrix finite, equal to its transpose up to rounding as the NumPy runners' text checks it,
and its factor finite), which the call reads after it runs (:meth:`.JaxBackend.whole_call`).
Where it is false the call raises the error the NumPy runners raise for that value: the
NumPy runners' own check runs on it then, so the words are theirs (the entries that differ,
or the row where the factorisation breaks down).  Run eagerly (``jit=False``), the flag is
read at once.  Inside the caller's own ``jax.jit`` nothing can be read: a matrix that is not
positive definite gives NaN there.  A complex matrix is checked the same way, then takes
the generic path (LU ``inv`` and ``det``), as on the other backends.

>>> import numpy as np, tenscalc as tc
>>> from tenscalc.compiler.jax_factor import host_potri_inverse
>>> lower = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
>>> host_potri_inverse(lower).round(12).tolist()  # the inverse from the factor: potri, mirrored
[[0.375, -0.25], [-0.25, 0.5]]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..linalg import lapack_dtype
from .backends import Backend, jax_linalg_flag, pd_error
from .generated import SYMMETRY_ULPS, cholesky_mirror


@dataclass(frozen=True)
class JaxFactor:
    """The factorisation of ``matrix`` (in a dtype LAPACK has; ``dtype`` its own, results are
    cast back): ``lower`` its Cholesky factor and ``diagonal`` that factor's, both None for a
    complex matrix (LU ``inv`` and ``det`` of ``matrix``); ``name`` the variable."""

    matrix: Any
    dtype: Any
    lower: Any
    diagonal: Any
    name: str


def jax_factor(name: str, x: Any) -> JaxFactor:
    """The Cholesky factor of the JAX array ``x``, the value of ``name`` declared positive
    definite, with its check (flagged under jit, raised at once otherwise)."""
    import jax
    import jax.numpy as jnp

    wider = lapack_dtype(np.dtype(x.dtype).name)
    work = x.astype(wider) if wider is not None else x
    ok = _declared_ok(work)
    lower = diagonal = None
    if not jnp.iscomplexobj(work):
        # symmetrize_input=False: the flag checks the symmetry, and XLA's (K + Kᵀ)/2 is an n² pass
        lower = jax.lax.linalg.cholesky(work, symmetrize_input=False)
        diagonal = jnp.diagonal(lower)
        ok = ok & jnp.isfinite(diagonal).all()  # XLA's factor is NaN where potrf breaks down
    if isinstance(ok, jax.core.Tracer):
        jax_linalg_flag("pd", name, ok)  # read after the program runs
    elif not bool(ok):
        raise pd_error(name, np.asarray(x))
    return JaxFactor(work, x.dtype, lower, diagonal, name)


def _declared_ok(work: Any) -> Any:
    """Whether ``work`` is finite and equals its transpose up to rounding (SYMMETRY_ULPS n eps max|x|,
    the NumPy runners' ``_symmetric``): one reduction XLA fuses, n² reads."""
    import jax.numpy as jnp

    n = work.shape[0]
    if n == 0:
        return jnp.bool_(True)
    eps = float(np.finfo(np.dtype(work.dtype)).eps)
    gap = jnp.abs(work - work.T).max()
    return jnp.isfinite(work).all() & (gap <= SYMMETRY_ULPS * n * eps * jnp.abs(work).max())


def jax_factor_inv(factor: JaxFactor, backend: Backend) -> Any:
    """``inv`` of the factorised matrix, symmetric, in its own dtype."""
    if factor.lower is None:  # complex: LU, checked as every runner checks an inv
        return backend.checked_linalg("inv", factor.matrix, factor.name)
    import jax
    import jax.numpy as jnp

    if jax.default_backend() == "cpu" and _potri_routine(np.dtype(factor.lower.dtype)) is not None:
        inverse = _potri_inverse()(factor.lower)
    else:  # on a device, or without SciPy: XLA's triangular solves
        eye = jnp.eye(factor.lower.shape[0], dtype=factor.lower.dtype)
        inverse = jax.scipy.linalg.cho_solve((factor.lower, True), eye)
    return inverse if inverse.dtype == factor.dtype else inverse.astype(factor.dtype)


def jax_factor_det(factor: JaxFactor, log: bool, backend: Backend) -> Any:
    """``det`` (or ``log(det)``) of the factorised matrix, a 0-d array in its own dtype."""
    if factor.lower is None:
        det = backend.checked_linalg("det", factor.matrix, factor.name)
        return backend.func("log")(det) if log else det
    import jax.numpy as jnp

    diagonal = factor.diagonal
    value = 2 * jnp.log(diagonal).sum() if log else jnp.prod(diagonal) ** 2
    return value.astype(factor.dtype)


@functools.cache  # SciPy's lookup takes microseconds, and the host inverse runs each call
def _potri_routine(dtype: np.dtype) -> Any:
    """SciPy's ``potri`` for ``dtype`` (float32 or float64), None without SciPy."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        return None
    return lapack.get_lapack_funcs(("potri",), dtype=dtype)[0]


def host_potri_inverse(lower: np.ndarray) -> np.ndarray:
    """``inv(L Lᵀ)`` from the lower Cholesky factor ``lower`` (a NumPy array): LAPACK's
    ``potri`` of ``Lᵀ`` (Fortran-ordered as ``lower`` is C-ordered: no copy to hand it over),
    its triangles then made equal block by block (the NumPy runners' text).  NaN where
    ``potri`` fails (a factor that is NaN: the flag names the error)."""
    lower = np.asarray(lower)
    potri = _potri_routine(lower.dtype)
    inverse, info = potri(lower.T, lower=0)  # the upper triangle of Lᵀ's array: L's lower one
    if info != 0:
        return np.full(lower.shape, np.nan, dtype=lower.dtype)
    # the result holds inv's upper triangle (Fortran-ordered): its transpose, C-ordered with the
    # lower one, is what the mirror reads; symmetric, the mirrored array's transpose is C-ordered
    return cholesky_mirror(inverse.T).T


@functools.cache
def _potri_inverse() -> Any:
    """``inv(L Lᵀ)`` of a traced factor ``L`` through :func:`host_potri_inverse`, differentiable
    (``d inv = -inv dK inv``, ``dK = dL Lᵀ + L dLᵀ``) and batched one matrix at a time under vmap."""
    import jax

    @jax.custom_jvp
    def inverse(lower: Any) -> Any:
        result = jax.ShapeDtypeStruct(lower.shape, lower.dtype)
        return jax.pure_callback(host_potri_inverse, result, lower, vmap_method="sequential")

    @inverse.defjvp
    def _inverse_jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
        (lower,), (dlower,) = primals, tangents
        value = inverse(lower)
        dk = dlower @ lower.T + lower @ dlower.T
        return value, -(value @ dk @ value)

    return inverse
