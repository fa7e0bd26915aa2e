"""``det``, its derivatives and ``adj`` are exact at singular matrices on every path.

Both are polynomials in the matrix's entries.  They were built through ``inv``
(``d det(A)/dA = det(A) inv(A)ᵀ``, ``adj(A) = det(A) inv(A)``), which is undefined at
a singular ``A`` (``tc.evaluate`` refused, ``backend="jax"`` returned NaN) and cancels
badly near one.  Now ``adj(A, k)`` is the k-th derivative of det, evaluated through an
SVD with products of singular values only.

References, each independent of tenscalc: the permutation expansion of det
(``∂^k det / ∂A[i1,j1]..∂A[ik,jk] = Σ_{π: π(i_m) = j_m} sgn(π) Π_{r ∉ I} A[r, π(r)]``),
``jax.grad`` / ``jax.hessian``, and SymPy's exact derivatives at rational points.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import tenscalc as tc
from tenscalc.compiler.backends import available_backends
from tenscalc.oracle import exact_mismatches


def permutation_sign(perm) -> int:
    inversions = sum(1 for a, b in itertools.combinations(perm, 2) if a > b)
    return -1 if inversions % 2 else 1


def det_derivative(A: np.ndarray, k: int) -> np.ndarray:
    """``∂^k det(A) / ∂A[i1,j1]..∂A[ik,jk]`` laid out ``[i1, j1, ..., ik, jk]``, by brute force."""
    n = A.shape[0]
    out = np.zeros((n,) * (2 * k))
    for perm in itertools.permutations(range(n)):
        sign = permutation_sign(perm)
        for rows in itertools.product(range(n), repeat=k):
            if len(set(rows)) < k:
                continue
            rest = [r for r in range(n) if r not in rows]
            value = sign * np.prod([A[r, perm[r]] for r in rest])
            out[tuple(x for r in rows for x in (r, perm[r]))] += value
    return out


def matrices():
    """Singular, rank-1, zero, rank-deficient and well-conditioned matrices of sizes 1 to 4."""
    rng = np.random.default_rng(31)
    cases = {
        "issue 31 (rank 2)": np.array([[1, 2, 0.5], [2, 4, 1], [0.3, -1, 2]]),
        "1x1 zero": np.zeros((1, 1)),
        "1x1": np.array([[-1.5]]),
        "2x2 rank 1": np.outer([1.0, -2.0], [0.5, 3.0]),
        "2x2 zero": np.zeros((2, 2)),
        "2x2 well": np.array([[2.0, 1.0], [-1.0, 3.0]]),
        "3x3 rank 1": np.outer([1.0, 2.0, -1.0], [0.3, -0.7, 2.0]),
        "4x4 rank 2": rng.standard_normal((4, 2)) @ rng.standard_normal((2, 4)),
        "4x4 rank 3": rng.standard_normal((4, 3)) @ rng.standard_normal((3, 4)),
        "4x4 well": rng.standard_normal((4, 4)) + 4 * np.eye(4),
    }
    return list(cases.items())


MATRICES = matrices()
IDS = [name for name, _ in MATRICES]


def det_expr(k: int) -> tc.Expr:
    e = tc.parse("det(A)", {"A": 2})
    for _ in range(k):
        e = tc.derivative(e, "A")
    return e


def to_numpy(value) -> np.ndarray:
    if hasattr(value, "compute"):
        value = value.compute()
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=float)


def generated(expr, shapes):
    namespace: dict = {}
    exec(tc.to_python(expr, shapes=shapes), namespace)  # noqa: S102 - tenscalc's own generated source
    return namespace["f"]


def every_path(expr: tc.Expr, A: np.ndarray, name: str = "A"):
    """(path name, value) of ``expr`` at ``name = A`` on every evaluator and backend installed."""
    yield "evaluate", tc.evaluate(expr, **{name: A})
    run = tc.compile(expr)
    yield "compile (loop)", run(**{name: A})
    yield "compile (fused)", run(**{name: A})  # the second call runs the fused function
    yield "to_python", generated(expr, None)(**{name: A})
    yield "to_python(shapes)", generated(expr, {name: A.shape})(**{name: A})
    for backend in ("torch", "jax", "dask"):
        if backend in available_backends():
            yield backend, tc.compile(expr, backend=backend)(**{name: A})


@pytest.fixture(scope="module", autouse=True)
def jax_float64():
    try:
        import jax
    except ImportError:
        return
    jax.config.update("jax_enable_x64", True)  # float64, as tests/compiler/test_backends.py does


@pytest.mark.parametrize("name, A", MATRICES, ids=IDS)
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_det_derivatives_are_exact_at_any_rank_on_every_path(name, A, k):
    expected = det_derivative(A, k)
    expr = det_expr(k)
    for path, value in every_path(expr, A):
        value = to_numpy(value)
        assert not np.isnan(value).any(), f"{path}: NaN"
        np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(A).max()) ** A.shape[0])


@pytest.mark.parametrize("name, A", MATRICES, ids=IDS)
def test_adj_is_the_transposed_cofactor_on_every_path(name, A):
    expected = det_derivative(A, 1).T
    expr = tc.parse("adj(A)", {"A": 2})
    for path, value in every_path(expr, A):
        np.testing.assert_allclose(to_numpy(value), expected, rtol=1e-10, atol=1e-12, err_msg=path)


# JAX's own Hessian of det is NaN at rank n - 2 ("4x4 rank 2"): compared with the brute force above only
@pytest.mark.parametrize(
    "name, A", [(name, A) for name, A in MATRICES if np.linalg.matrix_rank(A) >= A.shape[0] - 1 or A.shape[0] < 3]
)
def test_against_jax_grad_and_hessian(name, A):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    grad = tc.evaluate(det_expr(1), A=A)
    hessian = tc.evaluate(det_expr(2), A=A)
    np.testing.assert_allclose(grad, np.asarray(jax.grad(jnp.linalg.det)(jnp.asarray(A))), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hessian, np.asarray(jax.hessian(jnp.linalg.det)(jnp.asarray(A))), rtol=1e-9, atol=1e-12)


def test_the_issue_31_reproducer_on_every_path():
    A = np.array([[1, 2, 0.5], [2, 4, 1], [0.3, -1, 2]])
    cofactor = np.array([[9, -3.7, -3.2], [-4.5, 1.85, 1.6], [0, 0, 0]])
    for path, value in every_path(tc.derivative(tc.parse("det(A)"), "A"), A):
        np.testing.assert_allclose(to_numpy(value), cofactor, rtol=1e-12, atol=1e-13, err_msg=path)


def test_a_function_of_a_singular_product_with_distinct_lengths():
    # det(X Xᵀ) with X 3x2: X Xᵀ (3x3, rank 2) is singular at every X, its gradient defined
    X = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]])
    f = tc.parse("det(X *(ij,kj->ik) X)", {"X": 2})
    G = X @ X.T
    # chain rule by hand: d det(G) / dX[k,l] = sum_ij cof(G)[i,j] (δ_ik X[j,l] + X[i,l] δ_jk)
    cof = det_derivative(G, 1)
    expected = cof @ X + cof.T @ X
    for path, value in every_path(tc.derivative(f, "X"), X, "X"):
        np.testing.assert_allclose(to_numpy(value), expected, rtol=1e-10, atol=1e-12, err_msg=path)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_exact_against_sympy_at_a_rational_singular_matrix(k):
    A = [[Fraction(1), Fraction(2), Fraction(1, 2)], [Fraction(2), Fraction(4), Fraction(1)], [Fraction(3, 10), -1, 2]]
    point = {"A": np.array(A, dtype=object)}
    expr = det_expr(k - 1)
    assert exact_mismatches(expr, "A", point, tc.derivative(expr, "A")) == []


def test_exact_against_sympy_for_adj_of_a_rank_one_2x2():
    point = {"A": np.array([[Fraction(1), Fraction(-2)], [Fraction(1, 2), -1]], dtype=object)}
    adj = tc.parse("adj(A)", {"A": 2})
    assert exact_mismatches(adj, "A", point, tc.derivative(adj, "A")) == []


def test_derivatives_beyond_the_size_are_exactly_zero_in_float32_near_a_singular_matrix():
    # issue 31: the 4th derivative of a 3x3 det came out 1.8e-4 in float32
    A = np.array([[1, 2, 0.5], [2, 4, 1 + 1e-6], [0.3, -1, 2]], dtype=np.float32)
    fourth = det_expr(4)
    for path, value in every_path(fourth, A):
        if path == "to_python(shapes)":
            continue  # that form computes in float64 by design
        assert np.abs(to_numpy(value)).max() <= 1e-6, path
    third = tc.evaluate(det_expr(3), A=A)  # the constant Levi-Civita product
    np.testing.assert_allclose(third, det_derivative(A.astype(float), 3), atol=1e-5)
    second = tc.compile(det_expr(2))(A=A)
    np.testing.assert_allclose(second, det_derivative(A.astype(float), 2), rtol=1e-5, atol=1e-5)


def test_adj_prints_and_reparses():
    second = det_expr(2)
    assert "adj(A, 2)" in str(second)
    again = tc.parse(str(second), {"A": 2})
    A = MATRICES[0][1]
    np.testing.assert_array_equal(tc.evaluate(again, A=A), tc.evaluate(second, A=A))
    assert tc.to_matrix_notation(tc.parse("adj(A)", {"A": 2})) == "adj(A)"


def test_adj_of_a_non_square_argument_is_a_clear_error():
    with pytest.raises(tc.TensCalcError, match="adj needs a square matrix"):
        tc.parse("adj(x)", {"x": 1})
    with pytest.raises(tc.TensCalcError, match="k >= 1"):
        tc.adj(tc.var("A", 2), 0)
    with pytest.raises(tc.TensCalcError):
        tc.evaluate(tc.parse("adj(A)", {"A": 2}), A=np.ones((2, 3)))


def test_det_of_a_rank_one_update_differentiates_to_the_textbook_forms():
    # issue 31 item 8: det(I + x xᵀ) by x printed 177 characters for 2x (858 for 2I); adj(I + c u vᵀ) is
    # (1 + c vᵀu) I - c u vᵀ, a polynomial identity, so the derivatives are 2x and 2I
    f = tc.parse("det(delta(1) + x *(i,j->ij) x)", {"x": 1})
    grad, hessian = tc.derivative(f, "x"), tc.hessian(f, "x")
    assert str(grad) == "2 *(,i->i) x"
    assert str(hessian) == "2 *(,ij->ij) delta(1){x.0}"
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(tc.evaluate(grad, x=x), 2 * x)
    np.testing.assert_allclose(tc.evaluate(hessian, x=x), 2 * np.eye(3))


def test_adj_of_a_complex_matrix_on_every_path():
    # the SVD route conjugates U and Vh for complex input; det(C) inv(C) at an invertible C
    rng = np.random.default_rng(3)
    C = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    expected = np.linalg.det(C) * np.linalg.inv(C)
    expr = tc.parse("adj(A)", {"A": 2})
    for path, value in every_path(expr, C):
        if path == "dask":
            value = value.compute()
        if hasattr(value, "detach"):
            value = value.detach().numpy()
        np.testing.assert_allclose(np.asarray(value), expected, rtol=1e-12, err_msg=path)


def test_the_gradient_of_det_needs_no_cubic_memory():
    """adj(X) is one product of the SVD's factors: peak memory a few n x n arrays (an
    n x n^2 intermediate at n = 300 would be 206 MiB), and it equals det(X) inv(X)ᵀ
    where X is well conditioned."""
    import tracemalloc

    import tenscalc as tc

    n = 300
    X = np.random.default_rng(1).normal(size=(n, n)) / np.sqrt(n)
    run = tc.compile(tc.gradient(tc.parse("det(X)"), "X"))
    tracemalloc.start()
    result = run(X=X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 12 * X.nbytes, peak
    expected = np.linalg.det(X) * np.linalg.inv(X).T
    np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())


class _SVDOnly:
    """A NumPy namespace :func:`_adjugate` does not recognise as NumPy: the SVD route always."""

    linalg = np.linalg
    where = staticmethod(np.where)
    asarray = staticmethod(np.asarray)
    conj = staticmethod(np.conj)
    transpose = staticmethod(np.transpose)


@pytest.mark.parametrize("n", [2, 3, 5, 40])
@pytest.mark.parametrize("complex_", [False, True])
def test_well_conditioned_adjugate_takes_det_times_inverse_and_agrees_with_the_svd(n, complex_, monkeypatch):
    from tenscalc.adjugate import _adjugate, adjugate

    rng = np.random.default_rng(n)
    A = np.eye(n) + rng.standard_normal((n, n)) / (4 * np.sqrt(n))
    if complex_:
        A = A + 1j * rng.standard_normal((n, n)) / (4 * np.sqrt(n))
    reference = _adjugate(A, 1, _SVDOnly())
    with monkeypatch.context() as patch:  # the fast route: no SVD at all
        patch.setattr(np.linalg, "svd", lambda *a, **k: pytest.fail("well conditioned: det(A) inv(A), no SVD"))
        fast = adjugate(A)
    assert np.abs(fast - reference).max() <= 1e-12 * np.abs(reference).max()


def test_ill_conditioned_adjugate_keeps_the_svd():
    from tenscalc.adjugate import adjugate

    A = np.array([[1.0, 2.0, 0.5], [2.0, 4.0 + 1e-9, 1.0], [0.3, -1.0, 2.0]])  # condition number ~1e10
    expected = det_derivative(A, 1).T  # the cofactor matrix transposed, by the permutation expansion
    assert np.allclose(adjugate(A), expected, rtol=0, atol=1e-12)
