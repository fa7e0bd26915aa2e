"""Problems of issue #27: derivatives that are sums of structured terms.

Each problem gives the tenscalc source and the transformation, its data (a maker
with the sizes as keywords: the benchmark's by default, small distinct ones in the
tests), the hand-written NumPy/SciPy closed form an expert would write (fewest
allocations, in-place updates), and the same transformation in JAX (``jax.jit``
of ``jax.hessian``/``jax.grad``) and PyTorch (``torch.func``).
``benchmarks/run_structured.py`` times them side by side.

* ``lse_hess``: log-sum-exp Hessian ``diag(p) - p pᵀ`` (n = 2,000);
* ``rayleigh_hess``: Hessian of the Rayleigh quotient ``xᵀAx / xᵀx`` (n = 2,000);
* ``gp_grad``: gradient by K of the Gaussian-process NLL ``yᵀK⁻¹y + log det K``
  (n = 1,000), K not declared: against the generic LU closed form (``np.linalg.inv``);
* ``gp_grad_pd``: the same with ``declare K 2 pd``: against Cholesky (LAPACK
  ``dpotrf`` + ``dpotri``, symmetrised in place);
* ``aopt_grad``: A-optimal design ``tr((XᵀX + 0.1 I)⁻¹)`` by X (2,000 x 400);
* ``ot_grad``: entropic optimal-transport dual, gradients by u and v (n = 2,000);
* ``cp_grad``: CP decomposition ``‖T - [[A, B, C]]‖²``, gradients by A, B and C (T 120³, rank 10).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

LSE = "log(exp(x) *(i,i->) 1)"
RAYLEIGH = "(x *(i,ij->j) A *(j,j->) x) / (x *(i,i->) x)"
GP = "y *(i,ij->j) inv(K) *(j,j->) y + log(det(K))"
AOPT = "inv(X *(ki,kj->ij) X + 0.1 *(,ij->ij) delta(1)) *(ii,->) 1"
OT = "a *(i,i->) u + b *(j,j->) v - 0.05 * (exp(20 * (u *(i,j->ij) 1 + 1 *(i,j->ij) v - C)) *(ij,->) 1)"
CP_MODEL = "(A *(ir,jr->ijr) B) *(ijr,kr->ijk) C"
CP = f"(T - {CP_MODEL}) *(ijk,ijk->) (T - {CP_MODEL})"


@dataclass
class Problem:
    """One benchmark: tenscalc's source and transformation, and the same by hand, JAX and PyTorch.

    ``closed`` is the closed form tenscalc is held to (the generic one where the
    source declares no structure); ``others`` are further hand forms timed beside it.
    """

    name: str
    what: str
    source: str
    orders: dict[str, int]
    wrt: list[str]  # one name twice: a Hessian; otherwise one gradient per name
    data: Callable[..., dict]
    closed: Callable[[dict], object]
    jax: Callable  # (jax, jnp) -> function of the data's values, in ``args`` order, to jit
    torch: Callable  # (torch) -> function of tensors, in ``args`` order (torch.func applied)
    args: list[str]
    others: dict[str, Callable[[dict], object]] = field(default_factory=dict)

    def build(self, tc) -> list:
        """The expressions tenscalc compiles (``tc.parse`` + ``tc.hessian``/``tc.gradient``)."""
        f = tc.parse(self.source, self.orders)
        if len(self.wrt) == 2 and self.wrt[0] == self.wrt[1]:
            return [tc.hessian(f, self.wrt[0])]
        return [tc.gradient(f, w) for w in self.wrt]

    def compile_options(self, tc) -> dict:
        """Keyword arguments of ``tc.compile``: the source's declared assumptions (``K`` pd)
        where this tenscalc's ``tc.compile`` takes ``assumptions=``, else none (the
        declaration in the source is then all tenscalc is told)."""
        if "assumptions" not in inspect.signature(tc.compile).parameters:
            return {}
        assumptions = tc.parse_problem(self.source, self.orders).assumptions
        return {"assumptions": assumptions} if assumptions else {}


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- log-sum-exp Hessian


def lse_data(n=2000):
    return {"x": _rng(1).standard_normal(n)}


def lse_closed(d):
    """``diag(p) - p pᵀ`` with p = softmax(x): one n x n array."""
    x = d["x"]
    p = np.exp(x - x.max())
    p /= p.sum()
    H = np.multiply.outer(p, -p)
    H.flat[:: len(p) + 1] += p
    return H


def _lse_jax(jax, jnp):
    return jax.jit(jax.hessian(lambda x: jnp.log(jnp.sum(jnp.exp(x)))))


def _lse_torch(torch):
    return torch.func.hessian(lambda x: torch.log(torch.sum(torch.exp(x))))


# ---------------------------------------------------------------- Rayleigh quotient Hessian


def rayleigh_data(n=2000):
    r = _rng(2)
    return {"x": r.standard_normal(n), "A": r.standard_normal((n, n))}


def _rank2_update(H, alpha, u, v):
    """``H += alpha (u vᵀ + v uᵀ)`` in place (BLAS ``dger`` on H's memory where SciPy has it)."""
    try:
        from scipy.linalg.blas import get_blas_funcs
    except ImportError:  # pragma: no cover - SciPy is optional: row blocks keep the temporaries small
        for start in range(0, len(u), 256):
            rows = slice(start, start + 256)
            H[rows] += alpha * (np.multiply.outer(u[rows], v) + np.multiply.outer(v[rows], u))
        return H
    # a C-ordered H is the Fortran-ordered Hᵀ: ger on it adds alpha (v uᵀ + u vᵀ), the same sum
    target = H.T if H.flags.c_contiguous else H
    ger = get_blas_funcs("ger", (target,))
    for a, b in ((u, v), (v, u)):
        out = ger(alpha, a, b, a=target, overwrite_a=True)
        assert np.shares_memory(out, target), "ger copied H"
    return H


def rayleigh_closed(d):
    """``(A + Aᵀ - 2 R I) / xᵀx - 2/xᵀx (x gᵀ + g xᵀ)`` with g the gradient: one n x n array."""
    x, A = d["x"], d["A"]
    D = x @ x
    H = np.add(A, A.T)
    s = H @ x  # (A + Aᵀ) x
    R = (x @ s) / (2 * D)
    g = (s - 2 * R * x) / D
    H *= 1 / D
    H.flat[:: len(x) + 1] -= 2 * R / D
    return _rank2_update(H, -2 / D, x, g)


def _rayleigh_jax(jax, jnp):
    return jax.jit(jax.hessian(lambda x, A: (x @ A @ x) / (x @ x)))


def _rayleigh_torch(torch):
    return torch.func.hessian(lambda x, A: (x @ A @ x) / (x @ x))


# ---------------------------------------------------------------- Gaussian-process NLL gradient by K


def gp_data(n=1000):
    r = _rng(3)
    L = r.standard_normal((n, n)) / np.sqrt(n)
    K = L @ L.T
    K.flat[:: n + 1] += 1.0  # eigenvalues in [1, 5]: well conditioned
    return {"K": K, "y": r.standard_normal(n)}


def gp_closed_lu(d):
    """The generic form, K any invertible matrix: ``K⁻ᵀ - b bᵀ`` with b = K⁻ᵀy (LU ``inv``, rank-1 update in place)."""
    Kinv_t = np.linalg.inv(d["K"]).T
    b = Kinv_t @ d["y"]
    try:
        from scipy.linalg.blas import get_blas_funcs
    except ImportError:  # pragma: no cover - SciPy is optional
        return Kinv_t - np.multiply.outer(b, b)
    ger = get_blas_funcs("ger", (Kinv_t,))
    return ger(-1.0, b, b, a=Kinv_t, overwrite_a=True)  # Kinv_t is Fortran-ordered: in place


def _symmetrise_lower(S, block=32):
    """Copy the lower triangle of S onto its upper triangle, in place (narrow blocks keep
    the temporaries at a few percent of S)."""
    n = S.shape[0]
    for start in range(0, n, block):
        stop = min(start + block, n)
        S[:start, start:stop] = S[start:stop, :start].T
        tile = S[start:stop, start:stop]
        tile[...] = np.tril(tile) + np.tril(tile, -1).T
    return S


def gp_closed_cholesky(d):
    """K positive definite: Cholesky (``dpotrf``), ``dpotri`` for K⁻¹ and ``dpotrs`` for a = K⁻¹y,
    the rank-1 ``dsyr`` on one triangle, then symmetrised: ``K⁻¹ - a aᵀ``, one n x n array."""
    from scipy.linalg import lapack
    from scipy.linalg.blas import dsyr

    c, info = lapack.dpotrf(d["K"], lower=True, clean=False)
    if info:
        raise np.linalg.LinAlgError(f"dpotrf: K is not positive definite (info {info})")
    a, info = lapack.dpotrs(c, d["y"], lower=True)
    S, info = lapack.dpotri(c, lower=True, overwrite_c=True)
    S = dsyr(-1.0, a, lower=True, a=S, overwrite_a=True)
    return _symmetrise_lower(S)


def _gp_jax(jax, jnp):
    def nll(K, y):
        return y @ jnp.linalg.solve(K, y) + jnp.linalg.slogdet(K)[1]  # det itself overflows at n = 1,000

    return jax.jit(jax.grad(nll))


def _gp_torch(torch):
    return torch.func.grad(lambda K, y: y @ torch.linalg.solve(K, y) + torch.linalg.slogdet(K)[1])


# ---------------------------------------------------------------- A-optimal design


def aopt_data(m=2000, n=400):
    return {"X": _rng(4).standard_normal((m, n))}


def aopt_closed(d):
    """``-2 X S⁻¹ S⁻¹`` with S = XᵀX + 0.1 I."""
    X = d["X"]
    S = X.T @ X
    S.flat[:: S.shape[0] + 1] += 0.1
    Si = np.linalg.inv(S)
    G = X @ (Si @ Si)
    G *= -2
    return G


def _aopt_jax(jax, jnp):
    return jax.jit(jax.grad(lambda X: jnp.trace(jnp.linalg.inv(X.T @ X + 0.1 * jnp.eye(X.shape[1])))))


def _aopt_torch(torch):
    return torch.func.grad(
        lambda X: torch.trace(torch.linalg.inv(X.T @ X + 0.1 * torch.eye(X.shape[1], dtype=X.dtype, device=X.device)))
    )


# ---------------------------------------------------------------- entropic optimal transport, dual


def ot_data(n=2000, m=None):
    m = n if m is None else m
    r = _rng(5)
    return {
        "u": 0.1 * r.standard_normal(n),
        "v": 0.1 * r.standard_normal(m),
        "C": r.random((n, m)),
        "a": np.full(n, 1 / n),
        "b": np.full(m, 1 / m),
    }


def ot_closed(d):
    """``a - E 1`` and ``b - Eᵀ 1`` with E = exp(20 (u 1ᵀ + 1 vᵀ - C)): one n x m array."""
    E = np.add.outer(d["u"], d["v"])
    E -= d["C"]
    E *= 20
    np.exp(E, out=E)
    return d["a"] - E.sum(1), d["b"] - E.sum(0)


def _ot_jax(jax, jnp):
    def dual(u, v, C, a, b):
        return a @ u + b @ v - 0.05 * jnp.sum(jnp.exp(20 * (u[:, None] + v[None, :] - C)))

    return jax.jit(jax.grad(dual, argnums=(0, 1)))


def _ot_torch(torch):
    def dual(u, v, C, a, b):
        return a @ u + b @ v - 0.05 * torch.sum(torch.exp(20 * (u[:, None] + v[None, :] - C)))

    return torch.func.grad(dual, argnums=(0, 1))


# ---------------------------------------------------------------- CP decomposition


def cp_data(i=120, j=120, k=120, rank=10):
    r = _rng(6)
    return {
        "T": r.standard_normal((i, j, k)),
        "A": r.standard_normal((i, rank)),
        "B": r.standard_normal((j, rank)),
        "C": r.standard_normal((k, rank)),
    }


def cp_closed(d):
    """The residual once, then one MTTKRP per factor: ``2 R₍₁₎ (C ⊙ B)`` and its two siblings."""
    A, B, C = d["A"], d["B"], d["C"]
    R = np.einsum("ir,jr,kr->ijk", A, B, C, optimize=True)
    R -= d["T"]
    R *= 2
    return (
        np.einsum("ijk,jr,kr->ir", R, B, C, optimize=True),
        np.einsum("ijk,ir,kr->jr", R, A, C, optimize=True),
        np.einsum("ijk,ir,jr->kr", R, A, B, optimize=True),
    )


def _cp_jax(jax, jnp):
    def loss(A, B, C, T):
        return jnp.sum((T - jnp.einsum("ir,jr,kr->ijk", A, B, C)) ** 2)

    return jax.jit(jax.grad(loss, argnums=(0, 1, 2)))


def _cp_torch(torch):
    def loss(A, B, C, T):
        return torch.sum((T - torch.einsum("ir,jr,kr->ijk", A, B, C)) ** 2)

    return torch.func.grad(loss, argnums=(0, 1, 2))


# ---------------------------------------------------------------- the list


def problems() -> list[Problem]:
    """Every problem of issue #27, in the order of the tables."""
    gp = dict(orders={"y": 1, "K": 2}, wrt=["K"], data=gp_data, jax=_gp_jax, torch=_gp_torch, args=["K", "y"])
    return [
        Problem("lse_hess", "log-sum-exp Hessian diag(p) - p pᵀ (n 2,000)", LSE, {"x": 1}, ["x", "x"],
                lse_data, lse_closed, _lse_jax, _lse_torch, ["x"]),
        Problem("rayleigh_hess", "Rayleigh quotient xᵀAx / xᵀx, Hessian (n 2,000)", RAYLEIGH, {"x": 1, "A": 2},
                ["x", "x"], rayleigh_data, rayleigh_closed, _rayleigh_jax, _rayleigh_torch, ["x", "A"]),
        Problem("gp_grad", "GP NLL yᵀK⁻¹y + log det K by K, K undeclared (n 1,000)", GP, closed=gp_closed_lu,
                others={"closed_cholesky": gp_closed_cholesky}, **gp),
        Problem("gp_grad_pd", "the same, declare K 2 pd (n 1,000)", f"declare K 2 pd y 1 expression {GP}",
                closed=gp_closed_cholesky, others={"closed_lu": gp_closed_lu}, **gp),
        Problem("aopt_grad", "A-optimal design tr((XᵀX + 0.1 I)⁻¹) by X (2,000 x 400)", AOPT, {"X": 2}, ["X"],
                aopt_data, aopt_closed, _aopt_jax, _aopt_torch, ["X"]),
        Problem("ot_grad", "entropic OT dual, gradients by u and v (n 2,000)", OT,
                {"a": 1, "b": 1, "u": 1, "v": 1, "C": 2}, ["u", "v"], ot_data, ot_closed, _ot_jax, _ot_torch,
                ["u", "v", "C", "a", "b"]),
        Problem("cp_grad", "CP decomposition, gradients by A, B, C (T 120³, rank 10)", CP,
                {"T": 3, "A": 2, "B": 2, "C": 2}, ["A", "B", "C"], cp_data, cp_closed, _cp_jax, _cp_torch,
                ["A", "B", "C", "T"]),
    ]  # fmt: skip
