"""The NumPy contraction kernels (``compiler/kernels.py``): values equal ``np.einsum``
along any path, and results laid out in the target's order where that costs no copy."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest

from tenscalc.compiler.kernels import numpy_contraction

LENGTHS = dict(zip("ijklmn", (2, 3, 4, 5, 6, 7)))  # distinct lengths: a swapped axis shows


def _random_equation(rng: np.random.Generator) -> str:
    letters = list(LENGTHS)
    n_ops = int(rng.integers(2, 5))
    specs = []
    for _ in range(n_ops):
        k = int(rng.integers(1, 4))
        specs.append("".join(rng.choice(letters, size=k, replace=False)))
    used = sorted(set("".join(specs)))
    out = "".join(rng.permutation([c for c in used if rng.random() < 0.5]))
    return ",".join(specs) + "->" + out


@pytest.mark.parametrize("seed", range(200))
def test_kernel_equals_einsum_along_every_path_kind(seed):
    rng = np.random.default_rng(seed)
    eq = _random_equation(rng)
    specs = eq.split("->")[0].split(",")
    arrays = [rng.standard_normal([LENGTHS[c] for c in s]) for s in specs]
    expected = np.einsum(eq, *arrays)
    for optimize in ("greedy", "optimal", "dp"):
        path, _ = opt_einsum.contract_path(eq, *arrays, optimize=optimize)
        kernel = numpy_contraction(eq, [a.shape for a in arrays], path)
        np.testing.assert_allclose(kernel(*arrays), expected, rtol=1e-12, atol=1e-12, err_msg=f"{eq} {path}")


@pytest.mark.parametrize(
    "eq, path",
    [
        # a backpropagated factor D W (D: m x h, W: j x h), then entrywise with an (m, j)
        # array: computed as W D^T it came out (j, m) and was handed out transposed
        ("mh,mj,jh->mj", [(0, 2), (0, 1)]),
        ("mh,jh->mj", [(0, 1)]),
        # a layer's gradient: the (m, h) factor D W meets an (m, h) array before X^T
        ("mj,jh,mh,mk->hk", [(0, 1), (0, 1), (0, 1)]),
        ("mj,mh,jh,mk->hk", [(0, 2), (0, 2), (0, 1)]),
    ],
)
def test_results_are_laid_out_in_the_targets_order(eq, path):
    sizes = {"m": 9, "h": 5, "j": 6, "k": 4}
    specs = eq.split("->")[0].split(",")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal([sizes[c] for c in s]) for s in specs]
    result = numpy_contraction(eq, [a.shape for a in arrays], path)(*arrays)
    np.testing.assert_allclose(result, np.einsum(eq, *arrays), rtol=1e-12)
    assert result.flags.c_contiguous


def test_a_batched_product_is_not_reoriented():
    # swapping the operands of a batched matmul would copy a transposed operand; the
    # kernel keeps the order opt_einsum gave (correct values either way)
    eq = "bij,bjk->bki"
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5, 6))]
    result = numpy_contraction(eq, [a.shape for a in arrays], [(0, 1)])(*arrays)
    np.testing.assert_allclose(result, np.einsum(eq, *arrays), rtol=1e-12)


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("i,j->ij", [(1000,), (2,)]),
        ("j,i->ij", [(3,), (700,)]),  # the kernel orders the pair itself
        ("ij,k->ijk", [(600, 2), (2,)]),
        ("ji,k->ijk", [(2, 600), (4,)]),  # a transposed long operand
        ("i,jk->ijk", [(512,), (2, 2)]),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_long_by_short_outer_products_equal_the_broadcast_product_bit_for_bit(eq, shapes, dtype):
    # written one trailing column at a time (kernels._column_outer): the same single
    # rounding per entry, the same dtype, a C-ordered result
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in shapes]
    if dtype is np.complex128:
        arrays = [a + 1j * rng.standard_normal(a.shape) for a in arrays]
    result = numpy_contraction(eq, shapes, [(0, 1)])(*arrays)
    specs, target = eq.split("->")
    # the broadcast product, long operand first (complex products are not bitwise
    # commutative under FMA), axes put in the target's order
    (long_spec, long), (short_spec, short) = sorted(zip(specs.split(","), arrays), key=lambda p: -p[1].size)
    labels = long_spec + short_spec
    expected = np.multiply.outer(long, short).transpose([labels.index(c) for c in target])
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)
