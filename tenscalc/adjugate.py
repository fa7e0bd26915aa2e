"""The adjugate and the higher derivatives of ``det``, exact at any rank.

``adj(X, k)[j1, i1, ..., jk, ik] = d^k det(X) / dX[i1, j1] ... dX[ik, jk]``; ``adj(X, 1)``
is the adjugate.  These are polynomials in the entries of ``X``, defined everywhere,
so they are not computed through ``inv(X)`` where that loses digits (``det(X) inv(X)``
is 0 times infinity at a singular ``X``, and cancels badly near one; the NumPy adjugate
takes ``det(X) inv(X)``, a sixth of the SVD's time, only where the 1-norm condition
number is below 1e6).  With the SVD ``X = U diag(s) Vh`` and ``c = det(U) det(Vh)`` (a unit), ``det`` is multilinear, so

    adj(X, k)[J, I] = c  sum over distinct b1..bk and permutations p of 1..k of
                      sign(p) prod(s[r] for r not among b) prod_m U[i_m, b_m] Vh[b_p(m), j_m]

(conjugated ``U`` and ``Vh`` for a complex ``X``): products of singular values, no
division, exact for every rank (``k = 1``: ``adj(X) = c Vhᵀ diag(prod of the other
s) Uᵀ``), and exactly zero once ``k`` exceeds the size of ``X``.

:func:`_adjugate` is written against a NumPy-like namespace ``xp`` (NumPy, CuPy,
``jax.numpy``, or :class:`TorchNamespace`); its source is also copied into the
code ``tc.to_python`` writes, which imports NumPy as ``_np``.

>>> import numpy as np
>>> A = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]])  # singular
>>> (np.round(adjugate(A, 1).T, 12) + 0.0).tolist()  # the cofactor matrix, jax.grad of det (+ 0.0: no -0.0)
[[9.0, -3.7, -3.2], [-4.5, 1.85, 1.6], [0.0, 0.0, 0.0]]
>>> bool(adjugate(A, 4).any())  # the fourth derivative of a 3x3 det
False
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as _np

from .linalg import lapack_dtype


def _adjugate(x, k, xp=_np):
    """``d^k det(x) / dx[i1, j1] ... dx[ik, jk]`` laid out ``[j1, i1, ..., jk, ik]``, exact at any rank."""
    n = x.shape[0]
    if n == 0:
        return x.reshape((0,) * (2 * k))
    if k == 1 and xp is _np:  # well conditioned: det(x) inv(x), about a sixth of the SVD's time
        with _np.errstate(all="ignore"):
            try:
                inv = _np.linalg.inv(x)
            except _np.linalg.LinAlgError:  # exactly singular: the SVD below
                inv = None
            if inv is not None:
                norm1 = _np.abs(x).sum(axis=0).max() * _np.abs(inv).sum(axis=0).max()
                adj = _np.linalg.det(x) * inv
                # both factors accurate to about cond * eps: below 1e6, 10 digits or better
                if norm1 < 1e6 and _np.isfinite(adj).all():
                    return adj
    u, s, vh = xp.linalg.svd(x)
    c = xp.linalg.det(u) * xp.linalg.det(vh)
    # taken[r, b1..bk]: whether r is one of the b; the b are distinct where k of the r are taken
    taken = (_np.indices((n,) * k)[None] == _np.arange(n).reshape((n,) + (1,) * (k + 1))).any(axis=1)
    p = xp.where(xp.asarray(taken.sum(axis=0) == k), c, 0 * c)
    taken = xp.asarray(taken)
    for r in range(n):  # times the singular values not among the b: products only, exact at any rank
        p = p * xp.where(taken[r], 1.0, s[r])
    if u.dtype != s.dtype:  # complex: the derivative by x[i, j] reads conj(u)[i, b] conj(vh)[b, j]
        u, vh = xp.conj(u), xp.conj(vh)
    if k == 1:  # t[j, i] = sum_b vh[b, j] p[b] u[i, b]: one product, no n x n^2 intermediate
        return (vh.T * p) @ u.T
    g = (vh[:, :, None] * u.T[:, None, :]).reshape(n, n * n)  # g[b, (j, i)] = vh[b, j] u[i, b]
    t = p
    for _ in range(k):  # sum the leading b against g: its (j, i) pair goes last
        t = t.reshape(n, -1).T @ g
    t = t.reshape((n,) * (2 * k))
    # antisymmetrise the j axes (even positions): sum over p of sign(p) t[j_p(1), i1, ..., j_p(k), ik]
    perms = [((), 1)]
    for m in range(k):
        perms = [(q[:i] + (m,) + q[i:], sign * (-1) ** (len(q) - i)) for q, sign in perms for i in range(len(q) + 1)]
    out = None
    for q, sign in perms:
        axes = [a for m in range(k) for a in (2 * q[m], 2 * m + 1)]
        term = xp.transpose(t, axes)
        out = (term if sign > 0 else -term) if out is None else (out + term if sign > 0 else out - term)
    return out


#: the source of :func:`_adjugate`, written into generated modules that need it
ADJUGATE_SOURCE = inspect.getsource(_adjugate)


def adjugate(x: Any, k: int = 1) -> Any:
    """``adj(x, k)`` of a square NumPy array (see the module docstring), in its dtype
    (float16 and longdouble computed in the nearest dtype LAPACK has, as ``inv``)."""
    x = _np.asarray(x)
    wider = lapack_dtype(x.dtype.name)
    if wider is None:
        return _adjugate(x, k)
    return _adjugate(x.astype(wider), k).astype(x.dtype)


class TorchNamespace:
    """The few NumPy functions :func:`_adjugate` uses, for PyTorch tensors on ``device``."""

    def __init__(self, device: Any):
        import torch

        self.torch = torch
        self.linalg = torch.linalg
        self.device = device

    def asarray(self, value: Any) -> Any:
        return self.torch.as_tensor(value, device=self.device)

    def where(self, condition: Any, a: Any, b: Any) -> Any:
        return self.torch.where(condition, a, b)

    def conj(self, x: Any) -> Any:
        return self.torch.conj(x).resolve_conj()

    def transpose(self, x: Any, axes: Any) -> Any:
        return x.permute(*axes)
