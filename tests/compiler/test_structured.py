"""Structured outputs (issue #13, item 2): sums of terms on one diagonal are
added as diagonal cores and written once into a zeroed result.

Extended Rosenbrock without slices: X has shape (n, 2) and its columns are read
with the data vectors p = (1, 0) and q = (0, 1); the Hessian by X (order 4,
n×2×n×2) lies on the i = k diagonal.  Checked by the cost model and by values.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc

SRC = "(100 *(,i->i) (X *(ij,j->i) q - (X *(ij,j->i) p) ^ 2) ^ 2 + (1 - X *(ij,j->i) p) ^ 2) *(i,i->) 1"
ORDERS = {"X": 2, "p": 1, "q": 1}


def closed_form(X):
    a, b = X[:, 0], X[:, 1]
    n = len(a)
    H = np.zeros((n, 2, n, 2))
    D = np.einsum("iaib->iab", H)  # writeable view of the diagonal blocks
    D[:, 0, 0] = 1200 * a * a - 400 * b + 2
    D[:, 0, 1] = D[:, 1, 0] = -400 * a
    D[:, 1, 1] = 200
    return H


def test_block_diagonal_hessian_is_built_from_cores():
    n = 1000
    H = tc.hessian(tc.parse(SRC, ORDERS), "X")
    cost = tc.compile(H).cost({"X": (n, 2), "p": (2,), "q": (2,)})
    out = n * 2 * n * 2
    # before: four dense n×2×n terms, two dense n×2×n×2 terms and their sums (2.8e7 flops,
    # peak 1.2e7 entries); now the cores (O(n) each) and one write of the result
    assert cost.largest_intermediate == out
    assert cost.peak_memory <= out + 100 * n
    assert cost.flops <= out + 200 * n


def test_block_diagonal_hessian_values():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((6, 2))
    data = {"X": X, "p": np.array([1.0, 0.0]), "q": np.array([0.0, 1.0])}
    H = tc.hessian(tc.parse(SRC, ORDERS), "X")
    expected = closed_form(X)
    np.testing.assert_allclose(tc.compile(H)(data), expected, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tc.evaluate(H, data), expected, rtol=1e-12, atol=1e-9)
    # the compiled result is an ordinary writeable array
    result = tc.compile(H)(data)
    result[0, 0, 1, 1] = 5.0
    assert result[0, 0, 1, 1] == 5.0


@pytest.mark.parametrize("shape", [(3, 4), (5, 2)])
def test_diagonal_cores_with_distinct_lengths(shape):
    # a Hessian whose terms all lie on the i = k diagonal, distinct lengths, also
    # read by a function afterwards (there the diagonal slot must be dense)
    src = "(sin(X *(ij,j->i) a) + (X *(ij,j->i) b) ^ 3) *(i,i->) 1"
    orders = {"X": 2, "a": 1, "b": 1}
    f = tc.parse(src, orders)
    H = tc.hessian(f, "X")
    rng = np.random.default_rng(shape[0])
    data = {"X": rng.standard_normal(shape), "a": rng.standard_normal(shape[1]), "b": rng.standard_normal(shape[1])}
    got = tc.compile(H)(data)
    np.testing.assert_allclose(got, tc.evaluate(H, data), rtol=1e-12, atol=1e-12)
    # against finite differences of the compiled gradient
    grad = tc.compile(tc.gradient(f, "X"))
    eps = 1e-6
    fd = np.zeros(shape + shape)
    for idx in np.ndindex(*shape):
        step = np.zeros(shape)
        step[idx] = eps
        fd[(...,) + idx] = (grad({**data, "X": data["X"] + step}) - grad({**data, "X": data["X"] - step})) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    # a function of the Hessian reads the diagonal slot: it gets the dense array
    from tenscalc.frontend import builder as B

    exp_h = B.exp(H)
    np.testing.assert_allclose(tc.compile(exp_h)(data), np.exp(got), rtol=1e-12)
    np.testing.assert_allclose(tc.compile(exp_h)(data), tc.evaluate(exp_h, data), rtol=1e-12)
    both = tc.compile([H, tc.gradient(f, "X")])(data)
    np.testing.assert_allclose(both[0], got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["torch", "jax", "dask"])
def test_block_diagonal_hessian_on_other_backends(backend):
    module = pytest.importorskip(backend)
    if backend == "jax":
        module.config.update("jax_enable_x64", True)  # float64, as tests/compiler/test_backends.py does
    rng = np.random.default_rng(11)
    data = {"X": rng.standard_normal((5, 2)), "p": np.array([1.0, 0.0]), "q": np.array([0.0, 1.0])}
    H = tc.hessian(tc.parse(SRC, ORDERS), "X")
    result = tc.compile(H, backend=backend)(data)
    if backend == "dask":
        import dask

        (result,) = dask.compute(result)
    result = result.numpy() if hasattr(result, "numpy") else np.asarray(result)
    np.testing.assert_allclose(result, closed_form(data["X"]), rtol=1e-12, atol=1e-9)
