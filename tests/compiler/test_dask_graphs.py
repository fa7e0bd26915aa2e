"""Dask graphs stay small and lazy (issue 31 item 2, issue 30 items 2 and 3).

* ``inv``/``det``/``adj`` take their matrix in square blocks (``da.einsum`` cut an outer
  product of 3-vectors into (2, 1) chunks, which dask's ``inv`` refused);
* a contraction whose arrays fit one chunk stays one chunk (the same cutting made the
  third derivative of a 3x3 det a graph of 12,575 tasks);
* identities, diagonals and filled arrays are made by ``da.eye`` / ``da.diag`` / ``da.full``
  on the workers, never NumPy constants in the graph (the Hessian of Σ sin(x) at
  n = 8,000 embedded 488 MiB, a Gram Hessian with a ridge term at d = 5,000 200 MB);
* the memory limit applies to the blocks dask computes, not to whole lazy arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import tenscalc as tc
from tests.cost import traced_peak

da = pytest.importorskip("dask.array", reason='Dask is not installed (pip install "tenscalc[dask]")')
pytest.importorskip("autoray", reason="autoray is not installed (pip install autoray)")


def embedded_bytes(array) -> int:
    """The bytes of the NumPy arrays held in the graph of a dask array (constants shipped with it)."""
    seen: set[int] = set()
    total = 0

    def walk(value) -> None:
        nonlocal total
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        else:  # dask's task objects: DataNode(value), Task(args, kwargs)
            for attr in ("value", "args", "kwargs"):
                inner = getattr(value, attr, None)
                if inner is not None and not callable(inner):
                    walk(inner)

    for value in dict(array.__dask_graph__()).values():
        walk(value)
    return total


def test_embedded_bytes_sees_a_numpy_constant():
    # the measure itself: a graph holding a NumPy array counts its bytes
    constant = np.ones((100, 100))
    assert embedded_bytes(da.from_array(constant) + 1) >= constant.nbytes
    assert embedded_bytes(da.ones((100, 100)) + 1) == 0


def test_inv_of_an_outer_product_update():
    # issue 31 item 2: "All chunks must be a square matrix"
    x, A = np.array([0.1, 0.2, 0.3]), 2 * np.eye(3)
    result = tc.compile(tc.parse("inv(x*x' + A)"), backend="dask")(x=x, A=A)
    np.testing.assert_allclose(result.compute(), np.linalg.inv(np.outer(x, x) + A), rtol=1e-14)
    assert len(result.__dask_graph__()) <= 10


#: 8 x 8 float64 matrices in 4 x 4 blocks: the chunk size holds one 4 x 4 block (128 bytes)
SMALL_CHUNKS = {"array.chunk-size": "128B"}


def _inv_in_blocks(M: np.ndarray) -> np.ndarray:
    import dask

    with dask.config.set(SMALL_CHUNKS):  # M does not fit one block
        result = tc.compile(tc.parse("inv(A)"), backend="dask")(A=da.from_array(M, chunks=4))
        return result.compute()


def test_inv_of_a_matrix_larger_than_a_block_is_accurate():
    """Larger than a block, inv is one LAPACK inverse (partial pivoting over all rows): dask's
    blocked inv pivots inside its diagonal blocks only, and was wrong in the first digit here."""
    rng = np.random.default_rng(0)
    M = rng.standard_normal((8, 8))
    M[:4, :4] = 1e-14 * rng.standard_normal((4, 4))  # a tiny leading block: pivots must come from below
    np.testing.assert_allclose(_inv_in_blocks(M) @ M, np.eye(8), atol=1e-10)
    dominant = rng.standard_normal((60, 60)) + 60 * np.eye(60)
    import dask

    with dask.config.set({"array.chunk-size": "8KiB"}):  # 28 KiB: no one block, as before
        result = tc.compile(tc.parse("inv(A)"), backend="dask")(A=da.from_array(dominant, chunks=(7, 60)))
        np.testing.assert_allclose(result.compute(), np.linalg.inv(dominant), rtol=1e-10)


def test_inv_of_a_permutation_larger_than_a_block_is_its_transpose():
    """[[0, I], [I, 0]] is invertible: dask's blocked LU raised LinAlgError "singular matrix"."""
    swap = np.block([[np.zeros((4, 4)), np.eye(4)], [np.eye(4), np.zeros((4, 4))]])
    np.testing.assert_array_equal(_inv_in_blocks(swap), swap.T)


def test_inv_larger_than_the_memory_limit_is_refused_by_name():
    import dask

    old = tc.set_memory_limit(1024)  # 20 x 20 floats: 3,200 bytes
    try:
        with dask.config.set(SMALL_CHUNKS), pytest.raises(tc.EvaluationError) as caught:
            tc.compile(tc.parse("inv(A)"), backend="dask")(A=da.from_array(np.eye(20), chunks=4))
    finally:
        tc.set_memory_limit(old)
    assert "the block dask's inv computes on of shape (20, 20)" in str(caught.value)


@pytest.mark.parametrize("order, most", [(1, 5), (2, 5), (3, 5), (4, 5)])
def test_det_derivatives_of_a_small_matrix_are_small_graphs(order, most):
    # the third derivative of a 3x3 det was a 12,575-task graph
    A = np.array([[1.0, 2, 0.5], [2, 4, 1], [0.3, -1, 2]])
    expr = tc.parse("det(A)")
    for _ in range(order):
        expr = tc.derivative(expr, "A")
    result = tc.compile(expr, backend="dask")(A=A)
    assert len(result.__dask_graph__()) <= most
    np.testing.assert_allclose(result.compute(), tc.evaluate(expr, A=A), atol=1e-12)


@pytest.mark.parametrize(
    "text, wrt, values, most",
    [
        ("x'*inv(A + x*x')*x", "x", {"x": [0.1, 0.2, 0.3], "A": 2 * np.eye(3)}, 80),
        ("sum(tanh(X*W))", "W", {"X": np.arange(6.0).reshape(2, 3) / 7, "W": np.arange(12.0).reshape(3, 4) / 9}, 30),
        ("log(det(A))", "A", {"A": np.eye(3) * 2 + 0.1}, 10),
    ],
)
def test_hessians_of_small_problems_are_small_graphs(text, wrt, values, most):
    hessian = tc.hessian(tc.parse(text), wrt)
    result = tc.compile(hessian, backend="dask")(**values)
    assert len(result.__dask_graph__()) <= most
    np.testing.assert_allclose(result.compute(), tc.evaluate(hessian, values), rtol=1e-12, atol=1e-14)


def test_the_sum_of_sines_hessian_embeds_no_identity():
    # issue 30 item 3: n = 8,000 embedded 488 MiB (a NumPy identity, built on the client)
    n = 8000
    hessian = tc.hessian(tc.parse("sum(sin(x))"), "x")
    x = da.from_array(np.linspace(0, 3, n), chunks=n // 4)
    result = tc.compile(hessian, backend="dask")(x=x)
    assert embedded_bytes(result) < 2**20 + x.nbytes  # the input itself, nothing of n x n
    corner = result[:3, :3].compute()
    np.testing.assert_allclose(corner, np.diag(-np.sin(np.linspace(0, 3, n)[:3])), atol=1e-15)


def test_a_gram_hessian_with_a_ridge_term_embeds_no_identity():
    # issue 30 item 3: the identity of the ridge term (d x d) was a NumPy constant in the graph
    d, n = 3000, 400
    f = tc.parse("exp(X *(ij,j->i) w) *(i,i->) 1 + w *(i,i->) w", {"X": 2, "w": 1})
    X = da.random.default_rng(1).random((n, d), chunks=(100, d)) / d
    result = tc.compile(tc.hessian(f, "w"), backend="dask")(X=X, w=np.zeros(d))
    assert embedded_bytes(result) < 2**20  # w (24 KB) and small pieces; the identity was 72 MB
    small_X, w = np.random.default_rng(2).random((5, 4)), np.array([0.1, -0.2, 0.3, 0.0])
    small = tc.compile(tc.hessian(f, "w"), backend="dask")(X=small_X, w=w).compute()
    np.testing.assert_allclose(small, tc.evaluate(tc.hessian(f, "w"), X=small_X, w=w), rtol=1e-12)


def test_the_memory_limit_applies_to_chunks_not_to_lazy_wholes():
    # issue 30 item 2: the lazy Hessian of x·x at n = 400,000 could not be built at the default limit
    n = 20_000  # a dense n x n Hessian: 3.2 GB
    hessian = tc.hessian(tc.parse("x'*x"), "x")
    old = tc.set_memory_limit(64 * 2**20)
    try:
        with pytest.raises(tc.EvaluationError, match="memory limit"):
            tc.compile(hessian)(x=np.ones(n))  # NumPy would allocate it all
        result = tc.compile(hessian, backend="dask")(x=da.ones(n, chunks=n // 4))
        assert max(np.prod(block) for block in _block_shapes(result)) * 8 <= 128 * 2**20
        np.testing.assert_array_equal(result[:2, :3].compute(), 2 * np.eye(2, 3))
        with pytest.raises(tc.EvaluationError, match="block dask's inv"):  # one block of 3.2 GB
            tc.compile(tc.parse("inv(A)"), backend="dask")(A=da.ones((n, n), chunks=(2000, 2000)) + da.eye(n))
    finally:
        tc.set_memory_limit(old)


def _block_shapes(array):
    import itertools

    return itertools.product(*array.chunks)


@pytest.mark.parametrize(
    "eq, shapes, chunks",
    [
        ("ij,ik->jk", [(5, 3), (5, 4)], [(2, 3), (3, 2)]),  # a Gram form, rows in blocks
        ("ij,ik->jk", [(5, 3), (5, 4)], [(1, 3), (1, 4)]),  # 5 partial sums: groups of 4 and of 1
        ("ijk,jkl->il", [(2, 3, 4), (3, 4, 5)], [(1, 2, 3), (2, 3, 2)]),  # two contracted axes, both cut
        ("ii->i", [(4, 4)], [(2, 2)]),
        ("ii->", [(5, 5)], [(2, 2)]),
        ("i,i->", [(5,), (5,)], [(2,), (3,)]),  # blocks that do not line up
        ("i,j->ij", [(5,), (4,)], [(2,), (3,)]),
        ("ij->ji", [(2, 3)], [(1, 2)]),
        ("iij,jk->ik", [(3, 3, 4), (4, 5)], [(2, 2, 3), (3, 2)]),
        (",ij->ij", [(), (3, 4)], [(), (2, 3)]),
        ("ij,ij->", [(3, 4), (3, 4)], [(2, 3), (1, 4)]),
    ],
)
def test_the_adding_einsum_matches_numpy(eq, shapes, chunks):
    from tenscalc.compiler.dask_einsum import einsum

    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    result = einsum(eq, *(da.from_array(a, chunks=c) for a, c in zip(arrays, chunks)))
    expected = np.einsum(eq, *arrays)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result.compute(), expected, rtol=1e-13, atol=1e-14)


def test_the_adding_einsum_takes_blocks_of_unknown_length():
    # a boolean selection leaves the row blocks' lengths unknown (NaN) until computed
    from tenscalc.compiler.dask_einsum import einsum

    values = np.arange(24.0).reshape(8, 3) - 5
    X = da.from_array(values, chunks=(3, 3))
    kept = X[X[:, 0] > 0]
    assert np.isnan(kept.chunks[0][0])
    selected = values[values[:, 0] > 0]
    np.testing.assert_allclose(einsum("ij,ik->jk", kept, kept).compute(), selected.T @ selected, rtol=1e-14)


@pytest.mark.filterwarnings("ignore:Increasing number of chunks")  # the outer product's blocks: meant
def test_the_adding_einsum_cuts_a_result_only_past_the_chunk_size():
    import dask

    from tenscalc.compiler.dask_einsum import einsum

    # the Gram matrix of X in blocks of fewer than d rows stays one block, as by matmul
    # (da.einsum cuts it in 4: 1.5x the flops, 4x the tasks)
    X = da.ones((2000, 300), chunks=(100, 300))
    assert einsum("ij,ik->jk", X, X).chunks == ((300,), (300,))
    with dask.config.set({"array.chunk-size": "8KiB", "array.chunk-size-tolerance": 1.25}):
        x, y = da.ones(400, chunks=200), da.ones(300, chunks=300)
        outer = einsum("i,j->ij", x, y)  # one block would be 480 KB
        largest = max(outer.chunks[0]) * max(outer.chunks[1]) * 8
        assert 8 * 2**10 / 1.25 <= largest <= 8 * 2**10 * 1.25
        np.testing.assert_array_equal(outer.compute(), np.ones((400, 300)))
        assert einsum("i,j->ij", x[:30], y[:30]).numblocks == (1, 1)  # 7 KB: one block


def _sequential_peak(array) -> int:
    """The peak of the bytes tracemalloc traces (NumPy's buffers included) while dask's
    synchronous scheduler computes ``array`` one task at a time: what the graph holds at
    once, with no timing in it."""
    return traced_peak(lambda: array.compute(scheduler="sync"), warm=0)


def test_the_gram_hessian_holds_no_more_than_hand_written_dask():
    # issue 30: dask's tensordot (tenscalc's route before) concatenated the partial d x d
    # sums before adding them and copied each once more: 10 d x d blocks at the peak where
    # 2 * (X.T @ X) holds 7; benchmarks/dask_gram.py measures the workers of a cluster
    d, rows, blocks = 240, 240, 8
    X = da.from_array(np.random.default_rng(4).random((rows * blocks, d)), chunks=(rows, d)).persist(scheduler="sync")
    compiled = tc.compile(tc.hessian(tc.parse("norm2(X*w - y)^2"), "w"), backend="dask")
    ours, theirs = compiled(X=X, w=np.zeros(d), y=np.zeros(rows * blocks)), 2 * (X.T @ X)
    np.testing.assert_allclose(ours.compute(), theirs.compute(), rtol=1e-12)  # also the warm-up
    assert len(ours.__dask_graph__()) <= len(theirs.__dask_graph__())
    assert _sequential_peak(ours) <= _sequential_peak(theirs) + d * d * 8 / 2
